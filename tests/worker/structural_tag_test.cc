// StructuralTag and StructuralTagMatcher (vLLM's structural_tag) against xgrammar, vLLM's default
// backend, as the reference: tests/worker/fixtures/structural_tag.json
// (scripts/gen_structural_tag_fixtures.py, xgrammar 0.2.8) labels 12 tags' inputs (4 in xgrammar's
// newer "format" form) with whether
// xgrammar takes them whole and how many of their bytes it reads before refusing one, lists tags
// it refuses, and gives the token lists its bitmask allows after prefixes, for two of the
// tokenizer fixtures. Then: the state keys, and the refusals headroom adds.
#include "worker/engine/structural_tag.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/worker/fixture_vocabulary.h"
#include "tests/worker/json_fixture.h"
#include "worker/engine/json_matcher.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

Json LoadFixture() { return testdata::LoadJsonFixture("structural_tag.json"); }

std::shared_ptr<const StructuralTag> MustCompile(const std::string& text) {
  absl::StatusOr<std::shared_ptr<const StructuralTag>> tag = StructuralTag::Compile(text);
  EXPECT_TRUE(tag.ok()) << text << ": " << tag.status();
  return tag.ok() ? *std::move(tag) : nullptr;
}

// The bytes of `text` read one by one until one is refused: how many were read.
size_t Viable(StructuralTagMatcher& matcher, std::string_view text) {
  size_t read = 0;
  for (const char c : text) {
    if (!matcher.Feed(static_cast<uint8_t>(c))) break;
    ++read;
  }
  return read;
}

TEST(StructuralTagXgrammarTest, ReadsEveryInputAsXgrammarDoes) {
  const Json fixture = LoadFixture();
  ASSERT_FALSE(fixture["tags"].empty());
  int compared = 0;
  int complete = 0;
  int finished = 0;  // Complete(): nothing may follow (stop_after_first)
  for (const Json& t : fixture["tags"]) {
    const std::shared_ptr<const StructuralTag> tag = MustCompile(t["tag"].get<std::string>());
    ASSERT_NE(tag, nullptr);
    for (const Json& c : t["cases"]) {
      const std::string input = testdata::HexBytes(c["hex"]);
      StructuralTagMatcher matcher(tag.get());
      const size_t read = Viable(matcher, input);
      const std::string where = t["name"].get<std::string>() + " on " + c.dump();
      EXPECT_EQ(read, c["viable"].get<size_t>()) << where;
      EXPECT_EQ(read == input.size() && matcher.CanEnd(), c["complete"].get<bool>()) << where;
      if (read == input.size() && matcher.Complete()) {
        ++finished;
        EXPECT_TRUE(matcher.CanEnd()) << where;
        for (int b = 0; b < 256; ++b) {
          StructuralTagMatcher next = matcher;
          EXPECT_FALSE(next.Feed(static_cast<uint8_t>(b))) << where << " then byte " << b;
        }
      }
      complete += c["complete"].get<bool>() ? 1 : 0;
      ++compared;
    }
  }
  EXPECT_GT(compared, 700);
  EXPECT_GT(complete, 200);
  EXPECT_GT(finished, 10) << "stop_after_first's whole outputs are complete";
}

TEST(StructuralTagXgrammarTest, RefusesWhatXgrammarRefuses) {
  const Json fixture = LoadFixture();
  ASSERT_FALSE(fixture["refused"].empty());
  for (const Json& r : fixture["refused"]) {
    const absl::StatusOr<std::shared_ptr<const StructuralTag>> tag =
        StructuralTag::Compile(r["tag"].get<std::string>());
    EXPECT_EQ(tag.status().code(), absl::StatusCode::kInvalidArgument)
        << r["name"] << " (xgrammar: " << r["error"].get<std::string>() << ")";
  }
}

TEST(StructuralTagXgrammarTest, AllowsTheTokensXgrammarsBitmaskAllows) {
  const Json fixture = LoadFixture();
  ASSERT_FALSE(fixture["masks"].empty());
  std::map<std::string, std::string> tags;
  for (const Json& t : fixture["tags"]) tags[t["name"]] = t["tag"];
  std::map<std::string, std::shared_ptr<const JsonVocabulary>> vocabularies;
  for (const Json& m : fixture["masks"]) {
    const auto tokenizer = m["tokenizer"].get<std::string>();
    auto& vocabulary = vocabularies[tokenizer];
    if (vocabulary == nullptr) vocabulary = testdata::FixtureVocabulary(tokenizer);
    ASSERT_NE(vocabulary, nullptr);
    const std::shared_ptr<const StructuralTag> tag = MustCompile(tags.at(m["name"]));
    ASSERT_NE(tag, nullptr);
    StructuralTagMatcher matcher(tag.get());
    ASSERT_TRUE(matcher.Feed(testdata::HexBytes(m["prefix_hex"]))) << m.dump();
    std::vector<int32_t> allowed;
    JsonAllowedTokens(matcher, *vocabulary, &allowed);
    std::sort(allowed.begin(), allowed.end());
    const std::string where = tokenizer + " " + m["name"].get<std::string>() + " after " +
                              m.value("prefix_text", m["prefix_hex"].get<std::string>());
    EXPECT_EQ(allowed, m["allowed"].get<std::vector<int32_t>>()) << where;
    EXPECT_EQ(matcher.CanEnd(), m["can_end"].get<bool>()) << where;
  }
}

// Matchers whose keys are equal must allow the same tokens (the token-list cache serves one's
// list to the other); every viable prefix of every fixture input is tried.
TEST(StructuralTagTest, EqualStateKeysAllowTheSameTokens) {
  const Json fixture = LoadFixture();
  const std::shared_ptr<const JsonVocabulary> vocabulary = testdata::FixtureVocabulary("gpt2");
  ASSERT_NE(vocabulary, nullptr);
  int shared = 0;
  for (const Json& t : fixture["tags"]) {
    const std::shared_ptr<const StructuralTag> tag = MustCompile(t["tag"].get<std::string>());
    ASSERT_NE(tag, nullptr);
    std::map<std::string, std::pair<std::string, std::vector<int32_t>>> by_key;
    for (const Json& c : t["cases"]) {
      const std::string input = testdata::HexBytes(c["hex"]);
      StructuralTagMatcher matcher(tag.get());
      for (size_t i = 0; i <= c["viable"].get<size_t>(); ++i) {
        if (i > 0) {
          ASSERT_TRUE(matcher.Feed(static_cast<uint8_t>(input[i - 1])));
        }
        std::string key;
        matcher.AppendStateKey(&key);
        std::vector<int32_t> allowed;
        JsonAllowedTokens(matcher, *vocabulary, &allowed);
        std::sort(allowed.begin(), allowed.end());
        allowed.push_back(matcher.CanEnd() ? 1 : 0);
        const auto [it, inserted] = by_key.try_emplace(key, input.substr(0, i), allowed);
        if (!inserted) {
          ++shared;
          EXPECT_EQ(it->second.second, allowed)
              << t["name"] << ": " << it->second.first << " | " << input.substr(0, i);
        }
      }
    }
  }
  EXPECT_GT(shared, 1000);
}

std::string Message(const Json& tag) {
  const absl::StatusOr<std::shared_ptr<const StructuralTag>> compiled =
      StructuralTag::Compile(tag.dump());
  EXPECT_FALSE(compiled.ok()) << tag.dump();
  return compiled.ok() ? "" : std::string(compiled.status().message());
}

Json Tag(const Json& structures, const Json& triggers) {
  return {{"structures", structures}, {"triggers", triggers}};
}

TEST(StructuralTagTest, RefusalsSayWhatAndWhere) {
  const Json city = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}};
  const Json one = Json::array({{{"begin", "<f=a>"}, {"schema", city}, {"end", "</f>"}}});
  EXPECT_EQ(Message(Tag(one, {"<f=", "f="})),
            "triggers[1] \"f=\" is part of triggers[0] \"<f=\"; which one a text holding both "
            "would start is ambiguous");
  EXPECT_EQ(Message(Tag(one, {"<f=", "<f="})),
            "triggers[0] \"<f=\" is part of triggers[1] \"<f=\"; which one a text holding both "
            "would start is ambiguous");
  EXPECT_EQ(Message(Tag(one, {"<g="})),
            "structures[0].begin \"<f=a>\" does not start with any of the triggers");
  EXPECT_EQ(Message(Tag(Json::array({{{"begin", "<f=a>"}, {"end", "</f>"}}}), {"<f="})),
            "structures[0].schema must be a JSON schema (an object)");
  EXPECT_EQ(
      Message(Tag(Json::array({{{"begin", ""}, {"schema", city}, {"end", "</f>"}}}), {"<f="})),
      "structures[0].begin must be a non-empty string");
  EXPECT_EQ(Message(Tag(Json::array({{{"begin", "<f=a>"}, {"schema", city}}}), {"<f="})),
            "structures[0].end must be a string");
  const Json multiple_of = {{"type", "number"}, {"multipleOf", 2}};
  EXPECT_TRUE(absl::StartsWith(
      Message(Tag(Json::array({{{"begin", "<f=a>"}, {"schema", multiple_of}, {"end", "</f>"}}}),
                  {"<f="})),
      "structures[0].schema: at the root: multipleOf is not supported"));
  // xgrammar's newer form: triggered_tags of json_schema contents, nothing else.
  const Json tag_a = {{"type", "tag"},
                      {"begin", "<f=a>"},
                      {"content", {{"type", "json_schema"}, {"json_schema", city}}},
                      {"end", "</f>"}};
  const auto format = [&](const Json& tag, const Json& more) {
    Json f = {{"type", "triggered_tags"}, {"triggers", {"<f="}}, {"tags", Json::array({tag})}};
    f.update(more);
    return Json{{"type", "structural_tag"}, {"format", f}};
  };
  EXPECT_EQ(Message({{"format", {{"type", "sequence"}, {"elements", Json::array()}}}}),
            "format.type \"sequence\" is not supported (\"triggered_tags\" is)");
  Json regex_tag = tag_a;
  regex_tag["content"] = {{"type", "regex"}, {"pattern", "a+"}};
  EXPECT_EQ(Message(format(regex_tag, Json::object())),
            "format.tags[0].content.type \"regex\" is not supported (\"json_schema\" is)");
  EXPECT_EQ(Message(format(tag_a, {{"at_least_one", "yes"}})),
            "format.at_least_one must be a boolean");
  EXPECT_EQ(Message(format(tag_a, {{"triggers", {"<g="}}})),
            "format.tags[0].begin \"<f=a>\" does not start with any of the triggers");
  EXPECT_EQ(Message(format(tag_a, {{"triggers", {"<f=", "f"}}})),
            "format.triggers[1] \"f\" is part of format.triggers[0] \"<f=\"; which one a text "
            "holding both would start is ambiguous");
  EXPECT_TRUE(StructuralTag::Compile(format(tag_a, {{"stop_after_first", true}}).dump()).ok());
  Json many = Json::array();
  for (int i = 0; i <= 128; ++i) {
    many.push_back({{"begin", absl::StrCat("<f=", i, ">")}, {"schema", true}, {"end", "</f>"}});
  }
  EXPECT_EQ(Message(Tag(many, {"<f="})), "at most 128 structures are supported, got 129");
  EXPECT_EQ(Message(Tag(one, {"<f=", std::string(1022, 'x')})),
            "the triggers add up to 1025 bytes; at most 1024 are supported");
  EXPECT_EQ(Message(Json::array()),
            "the structural tag must be a JSON object with \"structures\" and \"triggers\", or "
            "with \"format\"");
}

}  // namespace
}  // namespace headroom::worker
