// A blocking HTTP/1.1 client for `headroom bench serve`: one request per connection, the response
// read as it arrives so that each server-sent event gets the time it came in. Plain http:// only
// (the benchmark talks to a router on its own network); chunked and close-delimited bodies.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::cli {

struct HttpTarget {
  std::string host;
  int port = 80;
  std::string path_prefix;  // what the base URL has after host:port ("" or "/something")
};

// "http://host[:port][/prefix]" -> its parts; InvalidArgument naming what is wrong otherwise.
absl::StatusOr<HttpTarget> ParseBaseUrl(std::string_view url);

struct StreamedResponse {
  int status = 0;
  std::string body;  // the whole body (decoded), for errors and non-streamed answers
};

// POSTs `body` (JSON) to `target` + `path` with `headers` (full lines without CRLF) and calls
// `on_event(arrival, payload)` for each "data: <payload>" event of the body as it arrives
// (payload "[DONE]" included). Fails (Unavailable) when the connection cannot be made or breaks,
// or (DeadlineExceeded) when nothing arrives for `idle_timeout`.
absl::StatusOr<StreamedResponse> PostStreaming(
    const HttpTarget& target, const std::string& path, const std::string& body,
    const std::vector<std::string>& headers,
    const std::function<void(std::chrono::steady_clock::time_point, std::string_view)>& on_event,
    std::chrono::seconds idle_timeout);

// A plain request (GET or POST) read whole.
absl::StatusOr<StreamedResponse> Request(const HttpTarget& target, const std::string& method,
                                         const std::string& path, const std::string& body,
                                         const std::vector<std::string>& headers,
                                         std::chrono::seconds idle_timeout);

}  // namespace headroom::cli
