// HttpServer: the router's event-driven HTTP/1.1 server (Boost.Beast/Asio) for the OpenAI API.
//
// Threads: `threads` io_context threads serve every connection; there is no thread per
// connection, so thousands of open Server-Sent-Events streams cost a socket and a few KiB each.
// Each connection runs on its own strand: reads, writes, timers and the handler call for one
// connection never run concurrently.
//
// One request at a time per connection: the request (headers and the whole body, up to
// `max_body_bytes`) is read, the handler is called on a server thread with it and a
// ResponseWriter, and the next request is read once the response was completely sent (keep-alive;
// HTTP/1.0 without keep-alive and `Connection: close` end the connection instead).
//
// Server-generated errors (the body from `error_body`, then the connection is closed):
//   400 malformed request, 413 body over max_body_bytes, 431 headers over max_header_bytes,
//   429 (Retry-After: 1) for a connection beyond max_connections,
//   500 "handler did not respond" when the writer is destroyed without a response (or the
//   handler throws before responding). The server never answers 404 itself.
//
// Streaming and backpressure: ResponseWriter calls from any thread append to the response's queue
// under a short lock and post one flush to the connection's strand; the strand writes the queue in
// order, one gathered write at a time. Unsent bytes of a stream are bounded: past 8 MiB
// (kMaxUnsentStreamBytes) the connection is closed, Write returns false and OnDisconnect fires.
// A stream is not subject to the idle timeout; a read stays posted while a response is in
// progress, so a client that goes away (EOF or reset) is noticed without a write. A client that
// stays connected but stops reading is closed by the send timeout: each write (everything queued
// when it started, at most 8 MiB of a stream) must be taken by the client within `send_timeout`,
// else the connection is closed and OnDisconnect fires, so a stalled reader never holds a socket,
// its buffered bytes or the upstream generation for longer than that.
//
// Lifetimes: the writer may outlive its connection and the server; once the client is gone or
// the server stopped, its calls are no-ops (Write returns false). Stop() closes the listener and
// every connection (OnDisconnect callbacks of unfinished responses run on a server thread),
// waits for the threads to finish what was queued, and joins them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace headroom::router::http {

// A stream whose unsent bytes exceed this is closed (see the file comment).
inline constexpr size_t kMaxUnsentStreamBytes = size_t{8} << 20;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query string, e.g. "/v1/completions"
  std::string query;   // after '?', may be empty
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased, in order
  std::string body;
  int version = 11;  // 10 = HTTP/1.0, 11 = HTTP/1.1

  // First value of header `name` (lowercase), or nullopt.
  [[nodiscard]] std::optional<std::string> Header(std::string_view name) const;
};

// One response. Thread-safe: may be used from any thread, and kept after the handler returns.
// Exactly one of Respond, or StartStream followed by Writes and End, per request; later calls are
// ignored. Header names/values containing CR or LF are sanitised; Content-Length,
// Transfer-Encoding and Connection in `extra_headers` are ignored (the server sets them).
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A complete response (Content-Length). extra_headers e.g. {"Retry-After","2"}.
  virtual void Respond(int status, std::string content_type, std::string body,
                       std::vector<std::pair<std::string, std::string>> extra_headers = {}) = 0;
  // Starts a streamed response (chunked transfer encoding; for SSE content_type
  // "text/event-stream", and the server adds Cache-Control: no-cache). An HTTP/1.0 client gets
  // the raw bytes and the connection is closed at End.
  virtual void StartStream(int status, std::string content_type,
                           std::vector<std::pair<std::string, std::string>> extra_headers = {}) = 0;
  // Queues bytes of a started stream; false once the client is gone (nothing is sent then), or
  // when no stream was started. An empty `data` sends nothing and returns whether the client is
  // still there.
  virtual bool Write(std::string data) = 0;
  // Ends the stream (last chunk); the connection then serves the next request (keep-alive).
  virtual void End() = 0;
  // `callback` runs once (on a server thread) if the client disconnects before the response was
  // completely sent; runs immediately (on the calling thread) if it already did. Used to cancel
  // the upstream work. A later call replaces an earlier callback.
  virtual void OnDisconnect(std::function<void()> callback) = 0;
};

// Called on a server thread (the connection's strand) with the whole request, which it owns (a
// handler that hands the work to another thread moves it there). It may respond before
// returning or keep the writer and respond later from any thread; it should not block for long
// (it holds a server thread).
using Handler = std::function<void(HttpRequest, std::shared_ptr<ResponseWriter>)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                           // 0 = pick a free one
  int threads = 2;                        // io_context threads
  uint64_t max_body_bytes = 1 << 20;      // larger -> 413 via error_body, connection closed
  uint32_t max_header_bytes = 16 * 1024;  // larger -> 431 and close
  // Keep-alive idle time, and the time a client has to send a whole request. NOT applied while
  // the handler runs or a response (streamed or not) is being sent.
  absl::Duration idle_timeout = absl::Seconds(60);
  // The time a client has to take the bytes of one write (see the file comment). A client
  // reading at 140 KB/s takes the largest write (8 MiB) in 60 s.
  absl::Duration send_timeout = absl::Seconds(60);
  // Most open connections (0: no limit). A connection beyond it is answered at once, without
  // reading its request: 429 with Retry-After: 1 and error_body, then closed. Refused
  // connections count while they close (at most kLingerTime), so a flood of them is refused too.
  int max_connections = 0;
  // Called (on a server thread) for each connection refused that way, e.g. to count it.
  std::function<void()> on_refused_connection;
  // Body of server-generated errors (400 malformed, 413, 429 over max_connections, 431, 500 no
  // response; the server never
  // 404s itself). Returns {content_type, body}. Default: text/plain with the message.
  std::function<std::pair<std::string, std::string>(int status, const std::string& message)>
      error_body;
  // More headers for a server-generated error to a request whose head was read (413 for a body
  // over max_body_bytes), from that head (its body empty): the front's CORS headers, so a browser
  // sees the 413 rather than a CORS failure. Not called for 431 or 429 (no head read). May be
  // empty.
  std::function<std::vector<std::pair<std::string, std::string>>(const HttpRequest& head)>
      error_headers;
};

class HttpServer {
 public:
  // Listens on host:port and starts the threads. InvalidArgument for a bad port, thread count or
  // host; Unavailable if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           Handler handler);
  ~HttpServer();  // Stop()s

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  [[nodiscard]] int port() const;
  // Stops accepting, closes every connection (open streams' OnDisconnect callbacks run), joins
  // the threads. Idempotent. Must not be called from a handler or a callback (a server thread).
  void Stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace headroom::router::http
