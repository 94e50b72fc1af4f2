#include "router/http/http_server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <iostream>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "common/asio_listen.h"

namespace headroom::router::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using Headers = std::vector<std::pair<std::string, std::string>>;

// How long a connection being closed after an error (or a `Connection: close` response) keeps
// reading and discarding what the client still sends, so that closing with unread data does not
// reset the connection before the client read the response.
constexpr std::chrono::seconds kLingerTime{1};
// Size of one read while a response is in progress (watching for a disconnect).
constexpr size_t kWatchReadBytes = 4096;
// Idle timeouts at or above this are treated as "never".
constexpr absl::Duration kNoTimeout = absl::Hours(24 * 365);

// Replaces CR and LF (header injection) in a handler-provided header name or value.
std::string CleanHeaderText(std::string_view text) {
  std::string out(text);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return out;
}

bool IsServerHeader(std::string_view name) {
  const absl::string_view n(name.data(), name.size());
  return absl::EqualsIgnoreCase(n, "content-length") ||
         absl::EqualsIgnoreCase(n, "transfer-encoding") || absl::EqualsIgnoreCase(n, "connection");
}

// What a response head says about framing.
struct HeadFraming {
  std::optional<size_t> content_length;  // Content-Length, for a complete response
  bool chunked = false;                  // Transfer-Encoding: chunked, for a stream
  bool keep_alive = true;
  bool http10 = false;
  bool no_cache = false;  // add Cache-Control: no-cache unless the handler set Cache-Control
};

// Status line and headers of a response, ending in the empty line.
std::string BuildHead(int status, std::string_view content_type, const Headers& extra,
                      const HeadFraming& framing) {
  const beast::string_view reason =
      status == 499 ? beast::string_view("Client Closed Request")
                    : bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(status)));
  std::string head = absl::StrCat("HTTP/1.1 ", status, " ",
                                  absl::string_view(reason.data(), reason.size()), "\r\n");
  if (!content_type.empty()) {
    absl::StrAppend(&head, "Content-Type: ", CleanHeaderText(content_type), "\r\n");
  }
  if (framing.content_length.has_value()) {
    absl::StrAppend(&head, "Content-Length: ", *framing.content_length, "\r\n");
  }
  if (framing.chunked) head += "Transfer-Encoding: chunked\r\n";
  bool has_cache_control = false;
  for (const auto& [name, value] : extra) {
    if (IsServerHeader(name)) continue;
    has_cache_control = has_cache_control || absl::EqualsIgnoreCase(name, "cache-control");
    absl::StrAppend(&head, CleanHeaderText(name), ": ", CleanHeaderText(value), "\r\n");
  }
  if (framing.no_cache && !has_cache_control) head += "Cache-Control: no-cache\r\n";
  if (!framing.keep_alive) {
    head += "Connection: close\r\n";
  } else if (framing.http10) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return head;
}

// A status a response may carry: 200..599 (1xx cannot be sent this way); others become 500.
int ValidStatus(int status) { return status >= 200 && status <= 599 ? status : 500; }

// State shared by the server and every writer; writers keep it after the server is gone.
struct ServerShared {
  explicit ServerShared(HttpServerOptions o) : options(std::move(o)) {}

  std::pair<std::string, std::string> ErrorBody(int status, const std::string& message) const {
    if (options.error_body) {
      try {
        return options.error_body(status, message);
      } catch (const std::exception& e) {
        std::cerr << "http server: error_body formatter threw: " << e.what() << "\n";
      }
    }
    return {"text/plain; charset=utf-8", message + "\n"};
  }

  const HttpServerOptions options;
  // Held shared while a writer posts to a connection, exclusively by Stop() to flip `stopped`:
  // after that no writer touches a connection (or the io_context) again.
  std::shared_mutex mu;
  bool stopped = false;  // guarded by mu
};

enum class Phase { kNotStarted, kStreaming, kDone };

// One request's response, shared by its writer (any thread) and its connection (strand).
struct ResponseState {
  ResponseState(bool keep_alive_in, bool http10_in, bool head_in)
      : http10(http10_in), head(head_in), keep_alive(keep_alive_in) {}

  const bool http10;  // HTTP/1.0 request: no chunked encoding
  const bool head;    // HEAD request: headers only

  std::mutex mu;
  // Everything below is guarded by mu.
  bool keep_alive;  // serve another request after this response
  Phase phase = Phase::kNotStarted;
  bool gone = false;                 // client gone, connection closed or server stopped
  bool finished = false;             // every byte of the response was sent
  bool flush_posted = false;         // a Flush of this state is queued on the strand
  std::vector<std::string> pending;  // bytes not yet handed to the socket, in order
  size_t unsent_bytes = 0;           // pending + in flight
  std::function<void()> on_disconnect;
};

class Connection;

// Posts `fn(connection)` to the connection's strand, unless the server stopped or the connection
// is gone; false then.
template <typename Fn>
bool PostToConnection(ServerShared& shared, const std::weak_ptr<Connection>& weak, Fn fn);

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpServerOptions options, Handler handler_in)
      : shared(std::make_shared<ServerShared>(std::move(options))),
        handler(std::move(handler_in)) {}

  void Accept();
  void Run();
  void StopOnce();
  void Unregister(Connection* connection);

  const std::shared_ptr<ServerShared> shared;
  const Handler handler;

  // Open connections, for Stop(). Declared before `io`: a connection destroyed with the
  // io_context's pending handlers still unregisters itself here.
  std::mutex connections_mu;
  bool stopping = false;  // guarded by connections_mu; no connection is added once set
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;

  asio::io_context io;
  tcp::acceptor acceptor{asio::make_strand(io)};
  asio::steady_timer accept_retry{acceptor.get_executor()};
  std::vector<std::thread> threads;
  int port = 0;
  std::once_flag stop_once;
};

namespace {

// One TCP connection. Every member function runs on the connection's strand.
//
// Stages: reading a request (idle timer armed) -> handling (the handler has the writer; a read
// stays posted to notice a disconnect) -> responding (queued bytes being written) -> reading the
// next request, or closing (error reply / `Connection: close`: shut down sending, discard input
// for up to kLingerTime) -> closed.
//
// Lifetime: owned by the shared_ptrs its pending operations hold (there is always one until it
// closes: the request read, the watch read, a write or a timer); writers hold a weak_ptr and
// the server's registry a weak_ptr. It is destroyed when the last operation completes after
// Close(), or with the io_context.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, HttpServer::Impl* server)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        server_(server),
        options_(server->shared->options) {}

  ~Connection() {
    // A safety net: Close() normally ran and fired the callback already.
    FailCurrent();
    server_->Unregister(this);
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  asio::any_io_executor executor() { return socket_.get_executor(); }

  void Start() {
    beast::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);  // SSE events must not wait for Nagle
    ReadRequest();
  }

  // Refuses the connection at once (the server is at max_connections): 429 with Retry-After,
  // then close, without reading a request.
  void Refuse(const std::string& message) {
    beast::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    WriteError(429, message, {{"Retry-After", "1"}});
  }

  // Writes what `state` has queued, if it is still this connection's response.
  void Flush(const std::shared_ptr<ResponseState>& state) {
    {
      std::lock_guard lock(state->mu);
      state->flush_posted = false;
    }
    if (closed_ || state != current_) return;
    WriteMore();
  }

  // Closes the socket; fires the current response's OnDisconnect if it was not completely sent.
  void Close() {
    if (closed_) return;
    closed_ = true;
    stage_ = Stage::kClosed;
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    DisarmTimer();
    FailCurrent();
  }

 private:
  enum class Stage { kReading, kHandling, kResponding, kClosing, kClosed };

  // Marks the current response gone and runs its disconnect callback (if not finished).
  void FailCurrent() {
    std::shared_ptr<ResponseState> state = std::move(current_);
    if (state == nullptr) return;
    std::function<void()> callback;
    {
      std::lock_guard lock(state->mu);
      state->gone = true;
      state->pending.clear();
      state->unsent_bytes = 0;
      if (!state->finished) callback = std::move(state->on_disconnect);
      state->on_disconnect = nullptr;
    }
    if (callback == nullptr) return;
    try {
      callback();
    } catch (const std::exception& e) {
      std::cerr << "http server: OnDisconnect callback threw: " << e.what() << "\n";
    }
  }

  void ArmTimer(absl::Duration timeout) {
    const uint64_t seq = ++timer_seq_;
    if (timeout <= absl::ZeroDuration() || timeout >= kNoTimeout) {
      timer_.cancel();
      return;
    }
    timer_.expires_after(absl::ToChronoNanoseconds(timeout));
    timer_.async_wait([self = shared_from_this(), seq](beast::error_code ec) {
      if (ec || seq != self->timer_seq_ || self->closed_) return;
      // Idle between requests, too slow sending one, done lingering, or too slow taking a
      // response's bytes.
      if (self->stage_ == Stage::kReading || self->stage_ == Stage::kClosing ||
          (self->stage_ == Stage::kResponding && self->writing_)) {
        self->Close();
      }
    });
  }

  void DisarmTimer() {
    ++timer_seq_;
    timer_.cancel();
  }

  void ReadRequest() {
    // Stop() may have closed the connection before its Start() ran: arm nothing.
    if (closed_) return;
    stage_ = Stage::kReading;
    ArmTimer(options_.idle_timeout);
    parser_.emplace();
    parser_->header_limit(options_.max_header_bytes);
    // Checked against Content-Length in OnHeader (to name the number), then set for chunked.
    parser_->body_limit(std::numeric_limits<uint64_t>::max());
    bhttp::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (closed_) return;
    if (ec) return OnReadError(ec);
    if (const boost::optional<uint64_t> length = parser_->content_length();
        length.has_value() && *length > options_.max_body_bytes) {
      return WriteError(413,
                        absl::StrCat("request body of ", *length, " bytes exceeds the limit of ",
                                     options_.max_body_bytes, " bytes"),
                        ErrorHeaders());
    }
    parser_->body_limit(options_.max_body_bytes);
    if (parser_->is_done()) return OnRequest();
    const auto& message = parser_->get();
    const beast::string_view expect = message[bhttp::field::expect];
    if (message.version() >= 11 && beast::iequals(expect, "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = shared_from_this()](beast::error_code write_ec, size_t) {
                          if (self->closed_) return;
                          if (write_ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    bhttp::async_read(socket_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (self->closed_) return;
                        if (ec) return self->OnReadError(ec);
                        self->OnRequest();
                      });
  }

  void OnReadError(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream ||
        ec.category() != bhttp::make_error_code(bhttp::error::bad_method).category()) {
      return Close();  // the client closed between requests, a reset, a timeout
    }
    if (ec == bhttp::error::header_limit) {
      return WriteError(431, absl::StrCat("request headers exceed the limit of ",
                                          options_.max_header_bytes, " bytes"));
    }
    if (ec == bhttp::error::body_limit) {  // a chunked body: its head was read
      return WriteError(
          413,
          absl::StrCat("request body exceeds the limit of ", options_.max_body_bytes, " bytes"),
          ErrorHeaders());
    }
    WriteError(400, absl::StrCat("malformed HTTP request: ", ec.message()));
  }

  // The request's head as read so far: method, path, query, headers (names lowercased), version.
  HttpRequest Head() const {
    const auto& message = parser_->get();
    HttpRequest request;
    request.method = std::string(message.method_string());
    const beast::string_view target = message.target();
    const size_t question = target.find('?');
    request.path = std::string(target.substr(0, question));
    if (question != beast::string_view::npos)
      request.query = std::string(target.substr(question + 1));
    request.headers.reserve(static_cast<size_t>(std::distance(message.begin(), message.end())));
    for (const auto& field : message) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      request.headers.emplace_back(std::move(name), std::string(field.value()));
    }
    request.version = message.version() >= 11 ? 11 : 10;
    return request;
  }

  // options_.error_headers for the head read so far (none when unset or it throws).
  Headers ErrorHeaders() const {
    if (!options_.error_headers) return {};
    try {
      return options_.error_headers(Head());
    } catch (const std::exception& e) {
      std::cerr << "http server: error_headers threw: " << e.what() << "\n";
      return {};
    }
  }

  void OnRequest() {
    DisarmTimer();
    HttpRequest request = Head();
    auto& message = parser_->get();
    request.body = std::move(message.body());
    const bool keep_alive = message.keep_alive();
    const bool head = message.method() == bhttp::verb::head;
    parser_.reset();

    current_ = std::make_shared<ResponseState>(keep_alive, request.version == 10, head);
    stage_ = Stage::kHandling;
    Watch();
    std::shared_ptr<ResponseWriter> writer = MakeWriter();
    const std::string what = absl::StrCat(request.method, " ", request.path);
    try {
      server_->handler(std::move(request), std::move(writer));
    } catch (const std::exception& e) {
      // The writer (released by the unwinding) answers 500 if nothing was sent.
      std::cerr << "http server: handler for " << what << " threw: " << e.what() << "\n";
    } catch (...) {
      std::cerr << "http server: handler for " << what << " threw\n";
    }
  }

  std::shared_ptr<ResponseWriter> MakeWriter();

  // Keeps one read posted while a response is in progress (to notice a client that goes away)
  // and while closing (to discard input). Bytes read while responding are the next request's.
  void Watch() {
    if (watching_ || closed_) return;
    if (stage_ == Stage::kClosing) buffer_.consume(buffer_.size());
    if (buffer_.size() >= uint64_t{options_.max_header_bytes} + options_.max_body_bytes) {
      return Close();  // pipelining far ahead of the responses
    }
    watching_ = true;
    socket_.async_read_some(
        buffer_.prepare(kWatchReadBytes),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnWatch(ec, n); });
  }

  void OnWatch(beast::error_code ec, size_t n) {
    watching_ = false;
    if (closed_) return;
    if (!ec) buffer_.commit(n);
    switch (stage_) {
      case Stage::kHandling:
      case Stage::kResponding:
        if (ec) {
          // EOF or a reset while responding: the client is gone. With a write in flight that
          // may have been the last one (the client read it all and left): its completion
          // decides whether the response was completely sent.
          if (writing_) {
            peer_closed_ = true;
            return;
          }
          return Close();
        }
        return Watch();
      case Stage::kClosing:
        if (ec) return Close();
        return Watch();
      case Stage::kReading:
        // The response completed while this read was posted (or it was cancelled to parse
        // pipelined bytes): the next request starts here.
        if (ec && ec != asio::error::operation_aborted) return Close();
        return ReadRequest();
      case Stage::kClosed:
        return;
    }
  }

  void WriteMore() {
    if (writing_ || closed_ || current_ == nullptr) return;
    bool done = false;
    {
      std::lock_guard lock(current_->mu);
      if (current_->pending.empty()) {
        done = current_->phase == Phase::kDone;
      } else {
        in_flight_.swap(current_->pending);
      }
    }
    if (in_flight_.empty()) {
      if (done) {
        OnResponseDone();
      } else if (peer_closed_) {
        Close();
      }
      return;
    }
    if (peer_closed_) {
      in_flight_.clear();
      return Close();
    }
    stage_ = Stage::kResponding;
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(in_flight_.size());
    for (const std::string& piece : in_flight_) buffers.push_back(asio::buffer(piece));
    unwritten_.emplace(std::move(buffers));
    writing_ = true;
    WriteSome();
  }

  // One write_some of what is left of in_flight_, under the send timeout: the client must take
  // some bytes within it (progress, not the whole write, so a large body to a client that reads
  // steadily never times out).
  void WriteSome() {
    ArmTimer(options_.send_timeout);
    socket_.async_write_some(
        *unwritten_,
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnWritten(ec, n); });
  }

  void OnWritten(beast::error_code ec, size_t n) {
    if (closed_) return;
    DisarmTimer();
    if (ec) {
      writing_ = false;
      return Close();
    }
    {
      std::lock_guard lock(current_->mu);
      current_->unsent_bytes -= std::min(n, current_->unsent_bytes);
    }
    unwritten_->consume(n);
    if (beast::buffer_bytes(*unwritten_) > 0) return WriteSome();
    writing_ = false;
    unwritten_.reset();
    in_flight_.clear();
    WriteMore();
  }

  void OnResponseDone() {
    bool keep_alive = false;
    std::function<void()> dropped;
    {
      std::lock_guard lock(current_->mu);
      current_->finished = true;
      dropped = std::move(current_->on_disconnect);
      keep_alive = current_->keep_alive;
    }
    current_.reset();
    dropped = nullptr;
    if (peer_closed_) return Close();
    if (!keep_alive) return Linger();
    stage_ = Stage::kReading;
    if (!watching_) return ReadRequest();
    // The watch read is still posted; it becomes the wait for the next request. Bytes already
    // buffered are parsed at once: cancel it (no write is in flight now).
    ArmTimer(options_.idle_timeout);
    if (buffer_.size() > 0) {
      beast::error_code ignored;
      socket_.cancel(ignored);
    }
  }

  // A server-generated error response, then close.
  void WriteError(int status, const std::string& message, const Headers& extra = {}) {
    stage_ = Stage::kClosing;
    ArmTimer(std::min(options_.idle_timeout, absl::FromChrono(kLingerTime)));
    auto [content_type, body] = server_->shared->ErrorBody(status, message);
    HeadFraming framing;
    framing.content_length = body.size();
    framing.keep_alive = false;
    error_out_ = BuildHead(status, content_type, extra, framing) + body;
    writing_ = true;
    asio::async_write(socket_, asio::buffer(error_out_),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->writing_ = false;
                        if (self->closed_) return;
                        if (ec) return self->Close();
                        self->Linger();
                      });
  }

  // Shuts down sending and discards input until the client closes or kLingerTime passed.
  void Linger() {
    stage_ = Stage::kClosing;
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    ArmTimer(absl::FromChrono(kLingerTime));
    Watch();
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  HttpServer::Impl* const server_;
  const HttpServerOptions& options_;
  Stage stage_ = Stage::kReading;
  bool closed_ = false;
  bool watching_ = false;     // a read for Watch() is posted
  bool writing_ = false;      // a response's (or an error's) bytes are being written
  bool peer_closed_ = false;  // the watch read failed while a write was in flight
  uint64_t timer_seq_ = 0;    // a timer callback with an older number is stale
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<ResponseState> current_;  // the response in progress, if any
  std::vector<std::string> in_flight_;      // the bytes of the write in flight
  // The part of in_flight_ not yet taken by the socket.
  std::optional<beast::buffers_suffix<std::vector<asio::const_buffer>>> unwritten_;
  std::string error_out_;
};

// The ResponseWriter handed to handlers. Every call takes the response's lock briefly and, to
// get bytes written, posts at most one Flush to the connection's strand at a time.
class Writer final : public ResponseWriter {
 public:
  Writer(std::shared_ptr<ServerShared> shared, std::weak_ptr<Connection> connection,
         std::shared_ptr<ResponseState> state)
      : shared_(std::move(shared)), connection_(std::move(connection)), state_(std::move(state)) {}

  ~Writer() override {
    Phase phase = Phase::kDone;
    {
      std::lock_guard lock(state_->mu);
      if (state_->gone) return;
      phase = state_->phase;
      if (phase == Phase::kStreaming) {
        // Abandoned mid-stream: close, so the client sees a truncated response instead of
        // waiting forever. Nobody is left to tell.
        state_->gone = true;
        state_->pending.clear();
        state_->on_disconnect = nullptr;
      }
    }
    if (phase == Phase::kNotStarted) {
      auto [content_type, body] = shared_->ErrorBody(500, "handler did not respond");
      Respond(500, std::move(content_type), std::move(body), {});
    } else if (phase == Phase::kStreaming) {
      PostToConnection(*shared_, connection_, [](Connection& c) { c.Close(); });
    }
  }

  void Respond(int status, std::string content_type, std::string body,
               Headers extra_headers) override {
    status = ValidStatus(status);
    const bool no_body = status == 204 || status == 304;
    HeadFraming framing;
    if (!no_body) framing.content_length = body.size();
    framing.http10 = state_->http10;
    framing.keep_alive = true;  // set below under the lock
    std::unique_lock lock(state_->mu);
    if (state_->phase != Phase::kNotStarted) return;
    state_->phase = Phase::kDone;
    if (state_->gone) return;
    framing.keep_alive = state_->keep_alive;
    Queue(BuildHead(status, content_type, extra_headers, framing));
    if (!no_body && !state_->head && !body.empty()) Queue(std::move(body));
    Kick(lock);
  }

  void StartStream(int status, std::string content_type, Headers extra_headers) override {
    status = ValidStatus(status);
    HeadFraming framing;
    framing.http10 = state_->http10;
    framing.chunked = !state_->http10 && !state_->head;
    framing.no_cache = absl::StartsWithIgnoreCase(content_type, "text/event-stream");
    std::unique_lock lock(state_->mu);
    if (state_->phase != Phase::kNotStarted) return;
    state_->phase = Phase::kStreaming;
    if (state_->http10) state_->keep_alive = false;  // the end of the body is the close
    if (state_->gone) return;
    framing.keep_alive = state_->keep_alive;
    Queue(BuildHead(status, content_type, extra_headers, framing));
    Kick(lock);
  }

  bool Write(std::string data) override {
    const bool chunked = !state_->http10 && !state_->head;
    std::string chunk_head = chunked ? absl::StrCat(absl::Hex(data.size()), "\r\n") : "";
    std::unique_lock lock(state_->mu);
    if (state_->gone || state_->phase != Phase::kStreaming) return false;
    if (data.empty() || state_->head) return true;
    const size_t size = chunk_head.size() + data.size() + (chunked ? 2 : 0);
    if (state_->unsent_bytes + size > kMaxUnsentStreamBytes) {
      // The client does not keep up: close rather than buffer without bound. Close() fires
      // OnDisconnect on the strand.
      state_->gone = true;
      state_->pending.clear();
      lock.unlock();
      PostToConnection(*shared_, connection_, [](Connection& c) { c.Close(); });
      return false;
    }
    if (chunked) Queue(std::move(chunk_head));
    Queue(std::move(data));
    if (chunked) Queue("\r\n");
    Kick(lock);
    return true;
  }

  void End() override {
    std::unique_lock lock(state_->mu);
    if (state_->phase != Phase::kStreaming) return;
    state_->phase = Phase::kDone;
    if (state_->gone) return;
    if (!state_->http10 && !state_->head) Queue("0\r\n\r\n");
    // Even with nothing to send, the flush completes the response.
    Kick(lock);
  }

  void OnDisconnect(std::function<void()> callback) override {
    std::unique_lock lock(state_->mu);
    if (state_->finished) return;
    if (state_->gone) {
      lock.unlock();
      if (callback) callback();
      return;
    }
    std::swap(state_->on_disconnect, callback);
    lock.unlock();  // the replaced callback is destroyed outside the lock
  }

 private:
  // Requires state_->mu.
  void Queue(std::string bytes) {
    state_->unsent_bytes += bytes.size();
    state_->pending.push_back(std::move(bytes));
  }

  // Posts a Flush unless one is queued already; releases `lock`.
  void Kick(std::unique_lock<std::mutex>& lock) {
    if (state_->flush_posted) return;
    state_->flush_posted = true;
    lock.unlock();
    std::shared_ptr<ResponseState> state = state_;
    if (PostToConnection(*shared_, connection_, [state](Connection& c) { c.Flush(state); })) {
      return;
    }
    // The server stopped or the connection is gone (its Close() already ran).
    lock.lock();
    state_->gone = true;
    state_->flush_posted = false;
    state_->pending.clear();
    state_->unsent_bytes = 0;
  }

  const std::shared_ptr<ServerShared> shared_;
  const std::weak_ptr<Connection> connection_;
  const std::shared_ptr<ResponseState> state_;
};

std::shared_ptr<ResponseWriter> Connection::MakeWriter() {
  return std::make_shared<Writer>(server_->shared, weak_from_this(), current_);
}

template <typename Fn>
bool PostToConnection(ServerShared& shared, const std::weak_ptr<Connection>& weak, Fn fn) {
  std::shared_lock lock(shared.mu);
  if (shared.stopped) return false;
  std::shared_ptr<Connection> connection = weak.lock();
  if (connection == nullptr) return false;
  asio::any_io_executor executor = connection->executor();
  asio::post(executor, [connection = std::move(connection), fn = std::move(fn)]() mutable {
    fn(*connection);
  });
  return true;
}

}  // namespace

std::optional<std::string> HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

void HttpServer::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      // E.g. out of file descriptors: back off instead of spinning.
      std::cerr << "http server: accept failed: " << ec.message() << "\n";
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && acceptor.is_open()) Accept();
      });
      return;
    }
    std::shared_ptr<Connection> connection;
    std::string refusal;  // non-empty: over max_connections
    {
      std::lock_guard lock(connections_mu);
      if (stopping) return;  // `socket` closes here
      const int limit = shared->options.max_connections;
      if (limit > 0 && connections.size() >= static_cast<size_t>(limit)) {
        refusal =
            absl::StrCat("the server has ", connections.size(), " open connections, its limit (",
                         limit, "); retry after 1 s or on another replica");
      }
      // A refused connection is registered too, so Stop() closes it while it lingers.
      connection = std::make_shared<Connection>(std::move(socket), this);
      connections.emplace(connection.get(), connection);
    }
    asio::any_io_executor executor = connection->executor();
    if (refusal.empty()) {
      asio::post(executor, [connection = std::move(connection)] { connection->Start(); });
    } else {
      if (shared->options.on_refused_connection) shared->options.on_refused_connection();
      asio::post(executor, [connection = std::move(connection), refusal = std::move(refusal)] {
        connection->Refuse(refusal);
      });
    }
    Accept();
  });
}

void HttpServer::Impl::Unregister(Connection* connection) {
  std::lock_guard lock(connections_mu);
  connections.erase(connection);
}

void HttpServer::Impl::Run() { RunIoThread(io, "http server"); }

void HttpServer::Impl::StopOnce() {
  {
    // From here on writers leave connections alone; what they queued before is written or
    // dropped by the Close() below.
    std::unique_lock lock(shared->mu);
    shared->stopped = true;
  }
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard lock(connections_mu);
    stopping = true;
    open.reserve(connections.size());
    for (const auto& [raw, weak] : connections) {
      if (std::shared_ptr<Connection> connection = weak.lock())
        open.push_back(std::move(connection));
    }
  }
  asio::post(acceptor.get_executor(), [this] {
    beast::error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
  });
  for (std::shared_ptr<Connection>& connection : open) {
    asio::any_io_executor executor = connection->executor();
    asio::post(executor, [connection = std::move(connection)] { connection->Close(); });
  }
  open.clear();
  // Every socket and timer is closed now or soon, so the threads run out of work and return.
  for (std::thread& thread : threads) {
    if (thread.joinable()) thread.join();
  }
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              Handler handler) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("http port must be in [0, 65535], got ", options.port));
  }
  if (options.threads < 1 || options.threads > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("http server threads must be in [1, 1024], got ", options.threads));
  }
  if (options.max_header_bytes == 0) {
    return absl::InvalidArgumentError("http max_header_bytes must be positive");
  }
  if (options.max_connections < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http max_connections must be >= 0 (0: no limit), got ", options.max_connections));
  }
  if (handler == nullptr) return absl::InvalidArgumentError("http server needs a handler");
  const std::string host = options.host;
  const int port = options.port;
  const int threads = options.threads;
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));

  if (absl::Status listening = Listen(impl->acceptor, host, port, "http"); !listening.ok()) {
    return listening;
  }
  beast::error_code ec;
  impl->port = impl->acceptor.local_endpoint(ec).port();
  impl->Accept();
  Impl* raw = impl.get();
  impl->threads.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) impl->threads.emplace_back([raw] { raw->Run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  std::call_once(impl_->stop_once, [this] { impl_->StopOnce(); });
}

}  // namespace headroom::router::http
