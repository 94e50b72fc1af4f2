#include "router/frontend/cors.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace headroom::router {
namespace {

// "*" among the allowed methods means these (Starlette's ALL_METHODS).
const std::vector<std::string> kAllMethods = {"DELETE", "GET",  "HEAD", "OPTIONS",
                                              "PATCH",  "POST", "PUT"};
// Headers a browser may always send, allowed whatever the policy lists.
const std::vector<std::string> kSafelistedHeaders = {"Accept", "Accept-Language",
                                                     "Content-Language", "Content-Type"};
constexpr char kMaxAgeSeconds[] = "600";

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool AllOrigins(const CorsPolicy& p) { return Contains(p.origins, "*"); }

bool AllowedOrigin(const CorsPolicy& p, const std::string& origin) {
  return AllOrigins(p) || Contains(p.origins, origin);
}

class HeaderAddingWriter : public http::ResponseWriter {
 public:
  HeaderAddingWriter(std::shared_ptr<http::ResponseWriter> inner, HeaderList headers)
      : inner_(std::move(inner)), headers_(std::move(headers)) {}

  void Respond(int status, std::string content_type, std::string body,
               HeaderList extra_headers) override {
    inner_->Respond(status, std::move(content_type), std::move(body),
                    Joined(std::move(extra_headers)));
  }
  void StartStream(int status, std::string content_type, HeaderList extra_headers) override {
    inner_->StartStream(status, std::move(content_type), Joined(std::move(extra_headers)));
  }
  bool Write(std::string data) override { return inner_->Write(std::move(data)); }
  void End() override { inner_->End(); }
  void OnDisconnect(std::function<void()> callback) override {
    inner_->OnDisconnect(std::move(callback));
  }

 private:
  HeaderList Joined(HeaderList extra) const {
    extra.insert(extra.end(), headers_.begin(), headers_.end());
    return extra;
  }

  const std::shared_ptr<http::ResponseWriter> inner_;
  const HeaderList headers_;
};

}  // namespace

std::optional<CorsPreflight> CorsPreflightAnswer(const CorsPolicy& policy,
                                                 const http::HttpRequest& request) {
  const std::optional<std::string> origin = request.Header("origin");
  const std::optional<std::string> method = request.Header("access-control-request-method");
  if (request.method != "OPTIONS" || !origin.has_value() || !method.has_value()) {
    return std::nullopt;
  }
  const std::optional<std::string> asked = request.Header("access-control-request-headers");
  const bool all_headers = Contains(policy.headers, "*");
  const std::vector<std::string>& methods =
      Contains(policy.methods, "*") ? kAllMethods : policy.methods;
  // The allowed headers: the safelisted ones and the policy's, sorted as Starlette sorts them.
  std::set<std::string> allowed(kSafelistedHeaders.begin(), kSafelistedHeaders.end());
  allowed.insert(policy.headers.begin(), policy.headers.end());

  CorsPreflight answer;
  // Listed origins, or credentials, answer with the request's own origin.
  const bool explicit_origin = !AllOrigins(policy) || policy.credentials;
  if (explicit_origin) {
    answer.headers.emplace_back("Vary", "Origin");
  } else {
    answer.headers.emplace_back("Access-Control-Allow-Origin", "*");
  }
  answer.headers.emplace_back("Access-Control-Allow-Methods", absl::StrJoin(methods, ", "));
  answer.headers.emplace_back("Access-Control-Max-Age", kMaxAgeSeconds);
  if (!all_headers) {
    answer.headers.emplace_back("Access-Control-Allow-Headers", absl::StrJoin(allowed, ", "));
  }
  if (policy.credentials) answer.headers.emplace_back("Access-Control-Allow-Credentials", "true");

  std::vector<std::string> failures;
  if (AllowedOrigin(policy, *origin)) {
    if (explicit_origin) answer.headers.emplace_back("Access-Control-Allow-Origin", *origin);
  } else {
    failures.emplace_back("origin");
  }
  if (!Contains(methods, *method)) failures.emplace_back("method");
  if (asked.has_value() && all_headers) {
    answer.headers.emplace_back("Access-Control-Allow-Headers", *asked);  // mirrored
  } else if (asked.has_value()) {
    std::set<std::string> allowed_lower;
    for (const std::string& h : allowed) allowed_lower.insert(absl::AsciiStrToLower(h));
    const std::vector<std::string> names = absl::StrSplit(*asked, ',');
    for (const std::string& h : names) {
      if (allowed_lower.count(absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(h)))) ==
          0) {
        failures.emplace_back("headers");
        break;
      }
    }
  }
  answer.status = failures.empty() ? 200 : 400;
  answer.body =
      failures.empty() ? "OK" : absl::StrCat("Disallowed CORS ", absl::StrJoin(failures, ", "));
  return answer;
}

HeaderList CorsResponseHeaders(const CorsPolicy& policy, const http::HttpRequest& request) {
  const std::optional<std::string> origin = request.Header("origin");
  if (!origin.has_value()) return {};
  HeaderList headers;
  // With every origin allowed, a request carrying a cookie still gets its own origin back (a
  // browser refuses "*" for a request with credentials).
  const bool echo =
      AllOrigins(policy) ? request.Header("cookie").has_value() : Contains(policy.origins, *origin);
  if (echo) {
    headers.emplace_back("Access-Control-Allow-Origin", *origin);
    headers.emplace_back("Vary", "Origin");
  } else if (AllOrigins(policy)) {
    headers.emplace_back("Access-Control-Allow-Origin", "*");
  }
  if (policy.credentials) headers.emplace_back("Access-Control-Allow-Credentials", "true");
  return headers;
}

std::shared_ptr<http::ResponseWriter> WithHeaders(std::shared_ptr<http::ResponseWriter> inner,
                                                  HeaderList headers) {
  if (headers.empty()) return inner;
  return std::make_shared<HeaderAddingWriter>(std::move(inner), std::move(headers));
}

absl::StatusOr<std::vector<std::string>> ParseJsonStringList(const std::string& flag,
                                                             const std::string& text) {
  const nlohmann::json list = nlohmann::json::parse(text, nullptr, false);
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag,
                     " takes a JSON list of strings, as vLLM's does (e.g. '[\"*\"]' or "
                     "'[\"https://app.example\"]'), got ",
                     text));
  };
  if (!list.is_array()) return bad();
  std::vector<std::string> out;
  for (const nlohmann::json& item : list) {
    if (!item.is_string()) return bad();
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace headroom::router
