// The router's CORS answers against Starlette's CORSMiddleware, the one vLLM serves behind
// (tests/router/frontend/fixtures/cors_cases.json, scripts/gen_cors_fixtures.py): for every
// policy and request of the fixture, the same preflight answer or the same headers added.
#include "router/frontend/cors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace headroom::router {
namespace {

using Json = nlohmann::json;

Json LoadCases() {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  std::ifstream in(std::string(root != nullptr ? root : ".") +
                   "/tests/router/frontend/fixtures/cors_cases.json");
  EXPECT_TRUE(in.good()) << "cannot open the fixture (is HEADROOM_SOURCE_DIR set?)";
  return in.good() ? Json::parse(in) : Json::object();
}

// Names lowercased, sorted: how the fixture lists them.
std::vector<std::pair<std::string, std::string>> Normalized(HeaderList headers) {
  for (auto& [name, value] : headers) {
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  std::sort(headers.begin(), headers.end());
  return headers;
}

TEST(CorsTest, AnswersAsStarlettesMiddlewareDoes) {
  const Json fixture = LoadCases();
  ASSERT_TRUE(fixture.contains("cases"));
  int preflights = 0, refused = 0, simple = 0;
  for (const Json& c : fixture["cases"]) {
    CorsPolicy policy;
    policy.origins = c["policy"]["origins"].get<std::vector<std::string>>();
    policy.methods = c["policy"]["methods"].get<std::vector<std::string>>();
    policy.headers = c["policy"]["headers"].get<std::vector<std::string>>();
    policy.credentials = c["policy"]["credentials"].get<bool>();
    http::HttpRequest request;
    request.method = c["request"]["method"].get<std::string>();
    request.path = "/v1/completions";
    for (const Json& h : c["request"]["headers"]) {
      request.headers.emplace_back(h[0].get<std::string>(), h[1].get<std::string>());
    }
    const auto expected = c["headers"].get<std::vector<std::pair<std::string, std::string>>>();
    const std::optional<CorsPreflight> answer = CorsPreflightAnswer(policy, request);
    const std::string where = c.dump();
    ASSERT_EQ(answer.has_value(), c["preflight"].get<bool>()) << where;
    if (answer.has_value()) {
      ++preflights;
      refused += answer->status != 200;
      EXPECT_EQ(answer->status, c["status"].get<int>()) << where;
      EXPECT_EQ(answer->body, c["body"].get<std::string>()) << where;
      EXPECT_EQ(Normalized(answer->headers), expected) << where;
    } else {
      ++simple;
      EXPECT_EQ(Normalized(CorsResponseHeaders(policy, request)), expected) << where;
    }
  }
  // The fixture covers refusals of each kind as well as successes.
  EXPECT_GE(preflights, 60);
  EXPECT_GE(refused, 20);
  EXPECT_GE(simple, 30);
}

TEST(CorsTest, ListFlagsAreJsonListsOfStrings) {
  EXPECT_EQ(*ParseJsonStringList("allowed-origins", R"(["https://a.example", "*"])"),
            (std::vector<std::string>{"https://a.example", "*"}));
  EXPECT_TRUE(ParseJsonStringList("allowed-methods", "[]")->empty());
  for (const char* bad : {"https://a.example", R"({"a": 1})", "[1]", "[\"a\""}) {
    const absl::StatusOr<std::vector<std::string>> parsed =
        ParseJsonStringList("allowed-origins", bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("--allowed-origins"), std::string::npos);
  }
}

}  // namespace
}  // namespace headroom::router
