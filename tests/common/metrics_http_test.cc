#include "common/metrics_http.h"

#include <atomic>
#include <string>

#include "boost/asio/connect.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "gtest/gtest.h"

namespace headroom::metrics {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// One request on a fresh connection; status 0 if the exchange failed.
Reply Fetch(int port, http::verb method, const std::string& target) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port)),
                 ec);
  if (ec) return {};
  http::request<http::empty_body> request(method, target, 11);
  request.set(http::field::host, "127.0.0.1");
  http::write(stream, request, ec);
  if (ec) return {};
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response, ec);
  if (ec) return {};
  return {static_cast<int>(response.result_int()),
          std::string(response[http::field::content_type]), response.body()};
}

// Sends raw bytes and returns whatever comes back until the server closes the connection.
std::string SendRaw(int port, const std::string& bytes, bool read_reply = true) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port)),
                 ec);
  if (ec) return "connect failed";
  asio::write(stream.socket(), asio::buffer(bytes), ec);
  if (!read_reply) return "";
  std::string out;
  char chunk[4096];
  while (true) {
    const size_t n = stream.socket().read_some(asio::buffer(chunk), ec);
    if (ec || n == 0) break;
    out.append(chunk, n);
  }
  return out;
}

class MetricsHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddGauge("vllm:num_requests_running", "Running requests.").WithLabels({}).Set(3);
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
        MetricsHttpServer::Start("127.0.0.1", 0, &registry_, [this] { return healthy_.load(); });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
  }

  Registry registry_;
  std::atomic<bool> healthy_{true};
  std::unique_ptr<MetricsHttpServer> server_;
};

TEST_F(MetricsHttpServerTest, ServesMetrics) {
  const Reply reply = Fetch(server_->port(), http::verb::get, "/metrics");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, kExpositionContentType);
  EXPECT_EQ(reply.body,
            "# HELP vllm:num_requests_running Running requests.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running 3\n");
  EXPECT_EQ(Fetch(server_->port(), http::verb::get, "/metrics?x=1").status, 200);
}

TEST_F(MetricsHttpServerTest, HealthFollowsTheFunction) {
  Reply reply = Fetch(server_->port(), http::verb::get, "/health");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "ok\n");
  healthy_ = false;
  reply = Fetch(server_->port(), http::verb::get, "/health");
  EXPECT_EQ(reply.status, 503);
}

TEST_F(MetricsHttpServerTest, UnknownPathsAndMethods) {
  EXPECT_EQ(Fetch(server_->port(), http::verb::get, "/").status, 404);
  EXPECT_EQ(Fetch(server_->port(), http::verb::get, "/metricsx").status, 404);
  EXPECT_EQ(Fetch(server_->port(), http::verb::post, "/metrics").status, 405);
}

TEST_F(MetricsHttpServerTest, SurvivesGarbage) {
  EXPECT_TRUE(SendRaw(server_->port(), "\x01\x02\xff garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(SendRaw(server_->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n")
                  .starts_with("HTTP/1.1 400"));
  // Headers beyond the limit.
  EXPECT_TRUE(SendRaw(server_->port(), "GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'a') +
                                           "\r\n\r\n")
                  .starts_with("HTTP/1.1 400"));
  // A client that goes away mid-request.
  SendRaw(server_->port(), "GET /metr", /*read_reply=*/false);
  // Two pipelined requests on one connection are both answered.
  const std::string two = SendRaw(server_->port(),
                                  "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                                  "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(two.find("HTTP/1.1 200"), 0u);
  EXPECT_NE(two.find("HTTP/1.1 200", 5), std::string::npos);
  EXPECT_EQ(Fetch(server_->port(), http::verb::get, "/metrics").status, 200);
}

TEST_F(MetricsHttpServerTest, StopJoinsAndRefusesConnections) {
  const int port = server_->port();
  server_->Stop();
  server_->Stop();  // idempotent
  EXPECT_EQ(Fetch(port, http::verb::get, "/metrics").status, 0);
}

TEST(MetricsHttpServerStartTest, BadAddressIsAnError) {
  Registry registry;
  EXPECT_FALSE(MetricsHttpServer::Start("256.1.1.1", 0, &registry, nullptr).ok());
  EXPECT_FALSE(MetricsHttpServer::Start("127.0.0.1", 70000, &registry, nullptr).ok());
}

}  // namespace
}  // namespace headroom::metrics
