#include "common/metrics_http.h"

#include <chrono>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/asio_listen.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"

namespace headroom::metrics {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::chrono::seconds kIdleTimeout{30};
constexpr uint32_t kHeaderLimit = 8 * 1024;
constexpr uint64_t kBodyLimit = 64 * 1024;

}  // namespace

struct MetricsHttpServer::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  const Registry* registry = nullptr;
  std::function<bool()> health_fn;
  int port = 0;
  std::thread thread;
  std::once_flag stop_once;

  void Accept();
  void Run();
  // The response to one parsed request.
  http::response<http::string_body> Handle(const http::request<http::string_body>& request) const;
};

namespace {

// One connection: read a request, write its response, repeat while keep-alive.
// Lifetime: owned by the shared_ptrs its pending handlers hold; it ends when no handler is left
// (the connection closed, or the io_context was destroyed with handlers pending).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const MetricsHttpServer::Impl* server)
      : stream_(std::move(socket)), server_(server) {}

  void Read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnRead(ec);
                     });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return Close();
    if (ec) {
      // A parse error (garbage, limits exceeded) gets a 400; a transport error (reset, timeout)
      // just closes.
      if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
        response_ = {};
        response_.result(http::status::bad_request);
        response_.version(11);
        response_.set(http::field::content_type, "text/plain");
        response_.keep_alive(false);
        response_.body() = "bad request\n";
        response_.prepare_payload();
        return Write();
      }
      return Close();
    }
    response_ = server_->Handle(parser_->get());
    Write();
  }

  void Write() {
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (ec || !self->response_.keep_alive()) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  const MetricsHttpServer::Impl* const server_;
};

}  // namespace

http::response<http::string_body> MetricsHttpServer::Impl::Handle(
    const http::request<http::string_body>& request) const {
  http::response<http::string_body> response;
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  const beast::string_view target = request.target();
  const std::string path(target.substr(0, target.find('?')));
  if (path != "/metrics" && path != "/health") {
    response.result(http::status::not_found);
    response.body() = "not found\n";
  } else if (request.method() != http::verb::get) {
    response.result(http::status::method_not_allowed);
    response.set(http::field::allow, "GET");
    response.body() = "method not allowed\n";
  } else if (path == "/metrics") {
    response.result(http::status::ok);
    response.set(http::field::content_type, kExpositionContentType);
    response.body() = registry->Render();
  } else if (health_fn == nullptr || health_fn()) {
    response.result(http::status::ok);
    response.body() = "ok\n";
  } else {
    response.result(http::status::service_unavailable);
    response.body() = "not serving\n";
  }
  response.prepare_payload();
  return response;
}

void MetricsHttpServer::Impl::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(socket), this)->Read();
    Accept();
  });
}

void MetricsHttpServer::Impl::Run() { RunIoThread(io, "metrics http server"); }

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, int port, const Registry* registry,
    std::function<bool()> health_fn) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics port must be in [0, 65535], got ", port));
  }
  auto impl = std::make_unique<Impl>();
  impl->registry = registry;
  impl->health_fn = std::move(health_fn);
  if (absl::Status listening = Listen(impl->acceptor, host, port, "metrics"); !listening.ok()) {
    return listening;
  }
  beast::error_code ec;
  impl->port = impl->acceptor.local_endpoint(ec).port();
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(impl)));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

int MetricsHttpServer::port() const { return impl_->port; }

void MetricsHttpServer::Stop() {
  std::call_once(impl_->stop_once, [this] {
    // Pending handlers (and the sessions they own) are destroyed with the io_context.
    impl_->io.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
}

}  // namespace headroom::metrics
