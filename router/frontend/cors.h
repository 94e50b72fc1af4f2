// CORS for the router's HTTP API, as vLLM serves it: vLLM puts Starlette's CORSMiddleware in
// front of its routes, configured by --allowed-origins, --allowed-methods, --allowed-headers (JSON
// lists, ["*"] by default) and --allow-credentials, so a browser page on any origin may call it
// (the API key still applies). The router takes the same flags and answers as that middleware
// does (checked against Starlette itself: scripts/gen_cors_fixtures.py):
//   - A request without Origin is not touched.
//   - A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here,
//     before the API key is checked (browsers send none): 200 "OK", or 400 "Disallowed CORS
//     origin, method, headers" naming what the policy refuses, with the allowed methods, the
//     requested headers (or the allowed ones), the origin ("*", or the request's when origins are
//     listed or credentials allowed) and Access-Control-Max-Age 600.
//   - Any other response to a request with Origin gets Access-Control-Allow-Origin: "*" when
//     every origin is allowed (the request's own, with Vary: Origin, when it carries a cookie),
//     the request's own when it is listed, none otherwise; and Access-Control-Allow-Credentials:
//     true with --allow-credentials.
// Errors the HTTP server writes itself (413, 431, 429 past --max-connections) get no CORS headers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "router/http/http_server.h"

namespace headroom::router {

struct CorsPolicy {
  std::vector<std::string> origins = {"*"};
  std::vector<std::string> methods = {"*"};
  std::vector<std::string> headers = {"*"};
  bool credentials = false;
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct CorsPreflight {
  int status = 200;
  std::string body;  // text/plain
  HeaderList headers;
};

// The answer to `request` when it is a preflight; nullopt when it is not.
std::optional<CorsPreflight> CorsPreflightAnswer(const CorsPolicy& policy,
                                                 const http::HttpRequest& request);

// The headers to add to the response to `request` (none without Origin).
HeaderList CorsResponseHeaders(const CorsPolicy& policy, const http::HttpRequest& request);

// A writer that sends `headers` with the response `inner` sends (complete or streamed).
std::shared_ptr<http::ResponseWriter> WithHeaders(std::shared_ptr<http::ResponseWriter> inner,
                                                  HeaderList headers);

// A vLLM list flag's value: a JSON list of strings ('["https://a.example"]'); InvalidArgument
// naming `flag` otherwise.
absl::StatusOr<std::vector<std::string>> ParseJsonStringList(const std::string& flag,
                                                             const std::string& text);

}  // namespace headroom::router
