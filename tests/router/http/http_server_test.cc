#include "router/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/open_files.h"
#include "gtest/gtest.h"

namespace headroom::router::http {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;  // upper bound on any wait; a broken server fails instead of hanging

// The head of a response as the client saw it.
struct Head {
  int status = 0;                              // 0: no (parsable) response
  std::map<std::string, std::string> headers;  // names lowercased
  std::string Get(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

struct Response {
  Head head;
  std::string body;
  std::vector<std::string> chunks;  // for a chunked body, each chunk's data
};

// A blocking HTTP/1.1 client over a raw loopback socket, reading with a timeout (kWait).
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return;
    timeval timeout{.tv_sec = std::chrono::seconds(kWait).count(), .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Client() { Close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return fd_ >= 0; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  Head ReadHead() {
    Head head;
    std::optional<std::string> status_line = ReadLine();
    if (!status_line || !status_line->starts_with("HTTP/1.")) return head;
    int status = 0;
    if (!absl::SimpleAtoi(absl::string_view(*status_line).substr(9, 3), &status)) return head;
    while (true) {
      std::optional<std::string> line = ReadLine();
      if (!line) return head;
      if (line->empty()) break;
      const size_t colon = line->find(':');
      if (colon == std::string::npos) return head;
      std::string name = line->substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      size_t value_start = colon + 1;
      while (value_start < line->size() && (*line)[value_start] == ' ') ++value_start;
      head.headers[name] = line->substr(value_start);
    }
    head.status = status;
    return head;
  }

  // The next chunk's data; nullopt at the last chunk (or on an error).
  std::optional<std::string> ReadChunk() {
    std::optional<std::string> size_line = ReadLine();
    if (!size_line) return std::nullopt;
    const size_t size = std::strtoul(size_line->c_str(), nullptr, 16);
    if (size == 0) {
      ReadLine();  // the empty line after the last chunk
      return std::nullopt;
    }
    std::optional<std::string> data = ReadBytes(size);
    if (!data || ReadLine() != std::string()) return std::nullopt;
    return data;
  }

  // One whole response (Content-Length or chunked).
  Response ReadResponse() {
    Response response;
    response.head = ReadHead();
    if (response.head.status == 0) return response;
    if (response.head.Get("transfer-encoding") == "chunked") {
      while (std::optional<std::string> chunk = ReadChunk()) {
        response.body += *chunk;
        response.chunks.push_back(*std::move(chunk));
      }
    } else if (!response.head.Get("content-length").empty()) {
      size_t length = 0;
      if (!absl::SimpleAtoi(response.head.Get("content-length"), &length)) return response;
      response.body = ReadBytes(length).value_or("<short body>");
    } else {
      response.body = ReadToEof();
    }
    return response;
  }

  std::optional<std::string> ReadBytes(size_t n) {
    while (buffer_.size() < n) {
      if (!Fill()) return std::nullopt;
    }
    std::string out = buffer_.substr(0, n);
    buffer_.erase(0, n);
    return out;
  }

  std::string ReadToEof() {
    while (Fill()) {
    }
    return std::exchange(buffer_, "");
  }

  // True when the server closed the connection (EOF or reset) with nothing more to read.
  bool AtEof() {
    if (!buffer_.empty()) return false;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n == 1) buffer_.push_back(c);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  bool Fill() {
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  std::optional<std::string> ReadLine() {
    size_t end;
    while ((end = buffer_.find("\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    std::string line = buffer_.substr(0, end);
    buffer_.erase(0, end + 2);
    return line;
  }

  int fd_ = -1;
  std::string buffer_;
};

std::string Get(const std::string& target, const std::string& extra_headers = "") {
  return absl::StrCat("GET ", target, " HTTP/1.1\r\nHost: test\r\n", extra_headers, "\r\n");
}

std::string Post(const std::string& target, const std::string& body,
                 const std::string& extra_headers = "") {
  return absl::StrCat("POST ", target, " HTTP/1.1\r\nHost: test\r\nContent-Type: text/plain\r\n",
                      "Content-Length: ", body.size(), "\r\n", extra_headers, "\r\n", body);
}

// Answers every request with "METHOD PATH?QUERY x-test=... body=BODY".
void Echo(const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
  writer->Respond(200, "text/plain",
                  absl::StrCat(request.method, " ", request.path, "?", request.query, " x-test=",
                               request.Header("x-test").value_or("<none>"), " body=", request.body),
                  {{"X-Served-By", "echo"}});
}

// Counts events and lets a test wait for a count.
class Counter {
 public:
  void Add(int n = 1) {
    std::lock_guard lock(mu_);
    count_ += n;
    cv_.notify_all();
  }
  bool WaitFor(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return count_ >= n; });
  }
  int count() {
    std::lock_guard lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(Handler handler, HttpServerOptions options = {}) {
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(std::move(options), std::move(handler));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
  }
  int port() const { return server_->port(); }

  void JoinThreads() {
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }
  // Tests whose handlers or callbacks refer to their locals stop the server before returning.
  void StopServer() {
    JoinThreads();
    server_.reset();
  }
  void TearDown() override { StopServer(); }

  std::unique_ptr<HttpServer> server_;
  std::vector<std::thread> threads_;  // producers started by handlers, joined at the end
};

TEST_F(HttpServerTest, EchoesGetAndPost) {
  StartServer(Echo);
  Client client(port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(Get("/v1/models?a=1&b=2", "X-Test: Hello\r\n")));
  Response response = client.ReadResponse();
  EXPECT_EQ(response.head.status, 200);
  EXPECT_EQ(response.head.Get("content-type"), "text/plain");
  EXPECT_EQ(response.head.Get("x-served-by"), "echo");
  EXPECT_EQ(response.body, "GET /v1/models?a=1&b=2 x-test=Hello body=");

  Client poster(port());
  ASSERT_TRUE(poster.Send(Post("/v1/completions", "{\"prompt\": \"hi\"}")));
  response = poster.ReadResponse();
  EXPECT_EQ(response.head.status, 200);
  EXPECT_EQ(response.body, "POST /v1/completions? x-test=<none> body={\"prompt\": \"hi\"}");
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsThenConnectionCloseCloses) {
  StartServer(Echo);
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/one")));
  Response first = client.ReadResponse();
  EXPECT_EQ(first.body, "GET /one? x-test=<none> body=");
  EXPECT_EQ(first.head.Get("connection"), "");
  ASSERT_TRUE(client.Send(Post("/two", "2")));
  EXPECT_EQ(client.ReadResponse().body, "POST /two? x-test=<none> body=2");
  ASSERT_TRUE(client.Send(Get("/three", "Connection: close\r\n")));
  Response last = client.ReadResponse();
  EXPECT_EQ(last.body, "GET /three? x-test=<none> body=");
  EXPECT_EQ(last.head.Get("connection"), "close");
  EXPECT_TRUE(client.AtEof());
}

TEST_F(HttpServerTest, Http10ClosesUnlessKeepAlive) {
  StartServer(Echo);
  Client client(port());
  ASSERT_TRUE(client.Send("GET /old HTTP/1.0\r\n\r\n"));
  Response response = client.ReadResponse();
  EXPECT_EQ(response.head.status, 200);
  EXPECT_EQ(response.body, "GET /old? x-test=<none> body=");
  EXPECT_TRUE(client.AtEof());

  Client keep(port());
  ASSERT_TRUE(keep.Send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  response = keep.ReadResponse();
  EXPECT_EQ(response.head.Get("connection"), "keep-alive");
  ASSERT_TRUE(keep.Send("GET /b HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(keep.ReadResponse().body, "GET /b? x-test=<none> body=");
  EXPECT_TRUE(keep.AtEof());
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer(Echo);
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/1") + Post("/2", "two") + Get("/3")));
  EXPECT_EQ(client.ReadResponse().body, "GET /1? x-test=<none> body=");
  EXPECT_EQ(client.ReadResponse().body, "POST /2? x-test=<none> body=two");
  EXPECT_EQ(client.ReadResponse().body, "GET /3? x-test=<none> body=");
}

TEST_F(HttpServerTest, HeadGetsHeadersWithoutTheBody) {
  StartServer(Echo);
  Client client(port());
  ASSERT_TRUE(client.Send("HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n" + Get("/g")));
  const Head head = client.ReadHead();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Get("content-length"), "28");  // of "HEAD /h? x-test=<none> body="
  // The next response follows the head directly.
  EXPECT_EQ(client.ReadResponse().body, "GET /g? x-test=<none> body=");
}

TEST_F(HttpServerTest, ExpectContinueGetsAnInterimResponse) {
  StartServer(Echo);
  Client client(port());
  ASSERT_TRUE(client.Send(
      "POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(client.ReadHead().status, 100);
  ASSERT_TRUE(client.Send("hello"));
  EXPECT_EQ(client.ReadResponse().body, "POST /up? x-test=<none> body=hello");
}

// Past max_connections a new connection gets 429 with Retry-After and the numbers at once, not a
// wait in the accept queue; once a connection closes, the next one is served.
TEST_F(HttpServerTest, ConnectionsPastTheLimitGet429AndRoomIsMadeWhenOneCloses) {
  HttpServerOptions options;
  options.max_connections = 3;
  StartServer(Echo, options);
  std::vector<std::unique_ptr<Client>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<Client>(port()));
    ASSERT_TRUE(open.back()->Send(Get("/kept")));
    EXPECT_EQ(open.back()->ReadResponse().head.status, 200);  // and kept alive
  }
  Client refused(port());
  ASSERT_TRUE(refused.connected());
  ASSERT_TRUE(refused.Send(Get("/refused")));
  const Response response = refused.ReadResponse();
  EXPECT_EQ(response.head.status, 429);
  EXPECT_EQ(response.head.Get("retry-after"), "1");
  EXPECT_NE(response.body.find("has 3 open connections, its limit (3)"), std::string::npos)
      << response.body;
  EXPECT_TRUE(refused.AtEof());
  refused.Close();

  // The three still work; close one and a new connection is served (the server notices the
  // close, and the refused connection's own close, asynchronously).
  ASSERT_TRUE(open[1]->Send(Get("/still")));
  EXPECT_EQ(open[1]->ReadResponse().head.status, 200);
  open[0]->Close();
  int status = 0;
  for (const auto deadline = std::chrono::steady_clock::now() + kWait;
       status != 200 && std::chrono::steady_clock::now() < deadline;) {
    Client next(port());
    if (next.Send(Get("/next"))) status = next.ReadResponse().head.status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, 200);

  options.max_connections = -1;
  EXPECT_EQ(HttpServer::Start(options, Echo).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpServerTest, OversizedBodyGets413NamingTheNumbers) {
  std::atomic<int> handled{0};
  HttpServerOptions options;
  options.error_body = [](int status, const std::string& message) {
    return std::pair<std::string, std::string>(
        "application/json", absl::StrCat("{\"code\":", status, ",\"message\":\"", message, "\"}"));
  };
  // The 413 also carries what error_headers makes of the request's head (a front's CORS).
  options.error_headers = [](const HttpRequest& head) {
    return std::vector<std::pair<std::string, std::string>>{
        {"X-Head", absl::StrCat(head.method, " ", head.path, " ",
                                head.Header("origin").value_or("no origin"))}};
  };
  StartServer(
      [&](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
        ++handled;
        Echo(request, writer);
      },
      options);
  Client client(port());
  ASSERT_TRUE(
      client.Send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n"
                  "Content-Length: 2000000\r\n\r\n" +
                  std::string(1000, 'x')));
  Response response = client.ReadResponse();
  EXPECT_EQ(response.head.status, 413);
  EXPECT_EQ(response.head.Get("x-head"), "POST /v1/completions https://a.example");
  EXPECT_EQ(response.head.Get("content-type"), "application/json");
  EXPECT_EQ(response.head.Get("connection"), "close");
  EXPECT_EQ(response.body,
            "{\"code\":413,\"message\":\"request body of 2000000 bytes exceeds the limit of "
            "1048576 bytes\"}");
  EXPECT_TRUE(client.AtEof());

  // A chunked body is counted as it arrives.
  Client chunked(port());
  const std::string chunk =
      absl::StrCat(absl::Hex(600 * 1024), "\r\n", std::string(600 * 1024, 'y'), "\r\n");
  ASSERT_TRUE(chunked.Send("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                           chunk + chunk + "0\r\n\r\n"));
  response = chunked.ReadResponse();
  EXPECT_EQ(response.head.status, 413);
  EXPECT_EQ(response.head.Get("x-head"), "POST /c no origin");
  EXPECT_NE(response.body.find("exceeds the limit of 1048576 bytes"), std::string::npos)
      << response.body;
  EXPECT_EQ(handled.load(), 0);

  // Exactly at the limit is fine.
  Client at_limit(port());
  ASSERT_TRUE(at_limit.Send(Post("/ok", std::string(1 << 20, 'z'))));
  EXPECT_EQ(at_limit.ReadResponse().head.status, 200);
  EXPECT_EQ(handled.load(), 1);
}

TEST_F(HttpServerTest, MalformedRequestsGet400AndOversizedHeaders431) {
  std::atomic<int> handled{0};
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  StartServer(
      [&](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
        ++handled;
        Echo(request, writer);
      },
      options);
  for (const std::string& garbage :
       {std::string("\x01\x02\xff garbage\r\n\r\n"),
        std::string("GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n"),
        std::string("GET /x HTTP/9.9\r\n\r\n"),
        std::string("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nnothex\r\n")}) {
    Client client(port());
    ASSERT_TRUE(client.Send(garbage));
    Response response = client.ReadResponse();
    EXPECT_EQ(response.head.status, 400) << garbage;
    EXPECT_EQ(response.head.Get("content-type"), "text/plain; charset=utf-8");
    EXPECT_TRUE(response.body.starts_with("malformed HTTP request")) << response.body;
    EXPECT_TRUE(client.AtEof());
  }
  Client big(port());
  ASSERT_TRUE(big.Send(Get("/x", "X-Big: " + std::string(2000, 'a') + "\r\n")));
  Response response = big.ReadResponse();
  EXPECT_EQ(response.head.status, 431);
  EXPECT_EQ(response.body, "request headers exceed the limit of 1024 bytes\n");
  EXPECT_TRUE(big.AtEof());
  // A client that goes away mid-request, then the server still serves.
  {
    Client partial(port());
    ASSERT_TRUE(partial.Send("GET /par"));
  }
  EXPECT_EQ(handled.load(), 0);
  Client fine(port());
  ASSERT_TRUE(fine.Send(Get("/fine")));
  EXPECT_EQ(fine.ReadResponse().head.status, 200);
}

TEST_F(HttpServerTest, SurvivesRandomInput) {
  StartServer(Echo);
  std::mt19937 rng(1234);
  const std::vector<std::string> prefixes = {
      "", "GET / HTTP/1.1\r\n", "POST /p HTTP/1.1\r\n",
      "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n"};
  for (int i = 0; i < 200; ++i) {
    std::string bytes = prefixes[static_cast<size_t>(i) % prefixes.size()];
    const size_t length = std::uniform_int_distribution<size_t>(1, 3000)(rng);
    for (size_t j = 0; j < length; ++j) {
      bytes.push_back(static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng)));
    }
    Client client(port());
    ASSERT_TRUE(client.connected());
    client.Send(bytes);  // and go away without reading
  }
  Client fine(port());
  ASSERT_TRUE(fine.Send(Get("/fine")));
  EXPECT_EQ(fine.ReadResponse().head.status, 200);
}

TEST_F(HttpServerTest, WriterDroppedWithoutResponseGets500) {
  StartServer([](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
    if (request.path == "/throw") throw std::runtime_error("boom");
    if (request.path == "/ok") writer->Respond(200, "text/plain", "ok");
    // "/drop": nothing.
  });
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/drop")));
  Response response = client.ReadResponse();
  EXPECT_EQ(response.head.status, 500);
  EXPECT_EQ(response.body, "handler did not respond\n");
  ASSERT_TRUE(client.Send(Get("/throw")));
  EXPECT_EQ(client.ReadResponse().head.status, 500);
  // The connection is still good.
  ASSERT_TRUE(client.Send(Get("/ok")));
  EXPECT_EQ(client.ReadResponse().body, "ok");
}

TEST_F(HttpServerTest, SecondResponseIsIgnored) {
  StartServer([](const HttpRequest&, std::shared_ptr<ResponseWriter> writer) {
    writer->Respond(201, "text/plain", "first");
    writer->Respond(202, "text/plain", "second");
    writer->StartStream(200, "text/event-stream");
    EXPECT_FALSE(writer->Write("nope"));
    writer->End();
  });
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/") + Get("/")));
  Response response = client.ReadResponse();
  EXPECT_EQ(response.head.status, 201);
  EXPECT_EQ(response.body, "first");
  EXPECT_EQ(client.ReadResponse().body, "first");
}

TEST_F(HttpServerTest, StreamsEventsFromAnotherThreadAsTheyAreWritten) {
  std::promise<void> client_saw_first;
  std::shared_future<void> first_seen = client_saw_first.get_future().share();
  std::atomic<bool> wrote_last{false};
  StartServer([&](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
    if (request.path != "/stream") return writer->Respond(200, "text/plain", "plain");
    writer->StartStream(200, "text/event-stream", {{"X-Request-Id", "r1"}});
    threads_.emplace_back([writer, first_seen, &wrote_last] {
      EXPECT_TRUE(writer->Write("data: 1\n\n"));
      // The client must see event 1 before event 2 is written: the server really streams.
      EXPECT_EQ(first_seen.wait_for(kWait), std::future_status::ready);
      EXPECT_TRUE(writer->Write("data: 2\n\n"));
      EXPECT_TRUE(writer->Write(""));  // nothing is sent for an empty write
      wrote_last = true;
      EXPECT_TRUE(writer->Write("data: [DONE]\n\n"));
      writer->End();
      EXPECT_FALSE(writer->Write("late"));
    });
  });
  Client client(port());
  ASSERT_TRUE(client.Send(Post("/stream", "{}")));
  const Head head = client.ReadHead();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Get("content-type"), "text/event-stream");
  EXPECT_EQ(head.Get("cache-control"), "no-cache");
  EXPECT_EQ(head.Get("transfer-encoding"), "chunked");
  EXPECT_EQ(head.Get("x-request-id"), "r1");
  EXPECT_EQ(client.ReadChunk(), "data: 1\n\n");
  EXPECT_FALSE(wrote_last.load());
  client_saw_first.set_value();
  EXPECT_EQ(client.ReadChunk(), "data: 2\n\n");
  EXPECT_EQ(client.ReadChunk(), "data: [DONE]\n\n");
  EXPECT_EQ(client.ReadChunk(), std::nullopt);  // the last chunk
  // Keep-alive after a stream.
  ASSERT_TRUE(client.Send(Get("/after")));
  EXPECT_EQ(client.ReadResponse().body, "plain");
  StopServer();
}

TEST_F(HttpServerTest, Http10StreamIsRawBytesThenClose) {
  StartServer([](const HttpRequest&, std::shared_ptr<ResponseWriter> writer) {
    writer->StartStream(200, "text/event-stream");
    writer->Write("data: a\n\n");
    writer->Write("data: b\n\n");
    writer->End();
  });
  Client client(port());
  ASSERT_TRUE(client.Send("GET /s HTTP/1.0\r\n\r\n"));
  const Head head = client.ReadHead();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Get("transfer-encoding"), "");
  EXPECT_EQ(head.Get("connection"), "close");
  EXPECT_EQ(client.ReadToEof(), "data: a\n\ndata: b\n\n");
}

TEST_F(HttpServerTest, ClientDisconnectMidStreamFiresOnDisconnect) {
  std::promise<std::shared_ptr<ResponseWriter>> stream;
  Counter disconnects;
  StartServer([&](const HttpRequest&, std::shared_ptr<ResponseWriter> writer) {
    writer->OnDisconnect([&] { disconnects.Add(); });
    writer->StartStream(200, "text/event-stream");
    writer->Write("data: hello\n\n");
    stream.set_value(writer);
  });
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/s")));
  EXPECT_EQ(client.ReadHead().status, 200);
  EXPECT_EQ(client.ReadChunk(), "data: hello\n\n");
  std::shared_ptr<ResponseWriter> writer = stream.get_future().get();
  EXPECT_EQ(disconnects.count(), 0);
  client.Close();
  ASSERT_TRUE(disconnects.WaitFor(1));
  EXPECT_FALSE(writer->Write("data: more\n\n"));
  // Registered after the fact: runs at once.
  bool late = false;
  writer->OnDisconnect([&] { late = true; });
  EXPECT_TRUE(late);
  writer->End();
  EXPECT_EQ(disconnects.count(), 1);
  StopServer();
}

TEST_F(HttpServerTest, CompletedResponseNeverFiresOnDisconnect) {
  std::atomic<int> first_disconnects{0};
  StartServer([&](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
    if (request.path == "/first") writer->OnDisconnect([&] { ++first_disconnects; });
    writer->Respond(200, "text/plain", "done");
  });
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/first")));
  EXPECT_EQ(client.ReadResponse().body, "done");
  // The server reads the next request only once the first response is complete, so after this
  // answer the first one is surely done on the server's side too.
  ASSERT_TRUE(client.Send(Get("/second")));
  EXPECT_EQ(client.ReadResponse().body, "done");
  client.Close();
  server_->Stop();
  EXPECT_EQ(first_disconnects.load(), 0);
}

TEST_F(HttpServerTest, ClientThatStopsReadingIsClosedAtTheQueueLimit) {
  Counter disconnects;
  std::atomic<size_t> accepted_bytes{0};
  std::atomic<bool> refused{false};
  StartServer([&](const HttpRequest&, std::shared_ptr<ResponseWriter> writer) {
    writer->OnDisconnect([&] { disconnects.Add(); });
    writer->StartStream(200, "text/event-stream");
    threads_.emplace_back([writer, &accepted_bytes, &refused] {
      const std::string event(256 * 1024, 'e');
      for (int i = 0; i < 512; ++i) {  // at most 128 MiB
        if (!writer->Write(event)) {
          refused = true;
          return;
        }
        accepted_bytes += event.size();
      }
    });
  });
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/firehose")));
  // Never reads: kernel buffers fill, then the server's queue.
  ASSERT_TRUE(disconnects.WaitFor(1));
  JoinThreads();
  EXPECT_TRUE(refused.load());
  // The queue limit plus what the socket buffers took.
  EXPECT_GE(accepted_bytes.load(), kMaxUnsentStreamBytes - 256 * 1024);
  EXPECT_LT(accepted_bytes.load(), size_t{128} << 20);
}

TEST_F(HttpServerTest, ClientThatStopsReadingIsClosedAfterTheSendTimeout) {
  // A complete response larger than every socket buffer, so the write cannot finish unless the
  // client reads: the queue limit of streams does not apply to it, the send timeout does.
  const std::string body(size_t{48} << 20, 'b');
  HttpServerOptions options;
  options.send_timeout = absl::Milliseconds(300);
  Counter disconnects;
  StartServer(
      [&](const HttpRequest&, std::shared_ptr<ResponseWriter> writer) {
        writer->OnDisconnect([&] { disconnects.Add(); });
        writer->Respond(200, "application/octet-stream", body);
      },
      options);

  Client stalled(port());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(stalled.Send(Get("/big")));
  ASSERT_TRUE(disconnects.WaitFor(1));  // closed long before kWait
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);

  // A client that keeps reading gets the whole body, however long the write takes in total.
  Client reader(port());
  ASSERT_TRUE(reader.Send(Get("/big")));
  const Response response = reader.ReadResponse();
  EXPECT_EQ(response.head.status, 200);
  EXPECT_EQ(response.body.size(), body.size());
  EXPECT_EQ(response.body, body);
  StopServer();
  EXPECT_EQ(disconnects.count(), 1);
}

TEST_F(HttpServerTest, IdleConnectionsTimeOutButOpenStreamsDoNot) {
  HttpServerOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  std::promise<std::shared_ptr<ResponseWriter>> stream;
  StartServer(
      [&](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
        if (request.path == "/plain") return writer->Respond(200, "text/plain", "ok");
        writer->StartStream(200, "text/event-stream");
        stream.set_value(writer);
      },
      options);
  Client idle(port());
  ASSERT_TRUE(idle.Send(Get("/plain")));
  EXPECT_EQ(idle.ReadResponse().body, "ok");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle.AtEof());  // closed by the idle timeout, well before kWait
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);

  Client slow(port());
  ASSERT_TRUE(slow.Send("GET /plain HTTP/1.1\r\nHo"));  // never finishes its request
  EXPECT_TRUE(slow.AtEof());

  Client streaming(port());
  ASSERT_TRUE(streaming.Send(Get("/stream")));
  EXPECT_EQ(streaming.ReadHead().status, 200);
  std::shared_ptr<ResponseWriter> writer = stream.get_future().get();
  // What is under test is a duration: the stream outlives several idle timeouts.
  std::this_thread::sleep_for(700ms);
  EXPECT_TRUE(writer->Write("data: still here\n\n"));
  EXPECT_EQ(streaming.ReadChunk(), "data: still here\n\n");
  writer->End();
  EXPECT_EQ(streaming.ReadChunk(), std::nullopt);
  StopServer();
}

TEST_F(HttpServerTest, StopWithOpenStreamsFiresTheirCallbacks) {
  constexpr int kStreams = 50;
  std::mutex mu;
  std::vector<std::shared_ptr<ResponseWriter>> writers;
  Counter disconnects;
  StartServer([&](const HttpRequest&, std::shared_ptr<ResponseWriter> writer) {
    writer->OnDisconnect([&] { disconnects.Add(); });
    writer->StartStream(200, "text/event-stream");
    writer->Write("data: open\n\n");
    std::lock_guard lock(mu);
    writers.push_back(std::move(writer));
  });
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(std::make_unique<Client>(port()));
    ASSERT_TRUE(clients.back()->Send(Get("/s")));
  }
  for (auto& client : clients) {
    ASSERT_EQ(client->ReadHead().status, 200);
    ASSERT_EQ(client->ReadChunk(), "data: open\n\n");
  }
  // An idle keep-alive connection and one mid-request are closed too.
  Client idle(port());
  Client partial(port());
  ASSERT_TRUE(partial.Send("GET / HTTP/1.1\r\n"));

  server_->Stop();
  EXPECT_EQ(disconnects.count(), kStreams);
  server_->Stop();  // idempotent
  for (auto& client : clients) EXPECT_TRUE(client->AtEof());
  EXPECT_TRUE(idle.AtEof());
  EXPECT_TRUE(partial.AtEof());
  Client refused(port());
  EXPECT_FALSE(refused.connected());
  // The writers outlive the server: their calls are no-ops.
  server_.reset();
  for (auto& writer : writers) {
    EXPECT_FALSE(writer->Write("data: after\n\n"));
    writer->End();
  }
  EXPECT_EQ(disconnects.count(), kStreams);
}

TEST_F(HttpServerTest, WriterOutlivingTheServerBeforeResponding) {
  std::promise<std::shared_ptr<ResponseWriter>> pending;
  StartServer([&](const HttpRequest&, std::shared_ptr<ResponseWriter> writer) {
    pending.set_value(std::move(writer));
  });
  Client client(port());
  ASSERT_TRUE(client.Send(Get("/")));
  std::shared_ptr<ResponseWriter> writer = pending.get_future().get();
  server_.reset();
  bool fired = false;
  writer->OnDisconnect([&] { fired = true; });
  EXPECT_TRUE(fired);
  writer->Respond(200, "text/plain", "too late");
  writer.reset();  // no 500 either: nothing to send it on
  EXPECT_TRUE(client.AtEof());
}

TEST_F(HttpServerTest, ThousandsOfConcurrentStreamsOnTwoThreads) {
  // Each stream needs two descriptors here (client and server side). With a hard limit below
  // ~4200 the count is scaled down to what fits.
  const uint64_t limit = RaiseOpenFileLimit().soft;
  const int streams = static_cast<int>(std::min<uint64_t>(2000, (limit - 200) / 2));
  ASSERT_GE(streams, 100) << "RLIMIT_NOFILE " << limit << " is too low for this test";

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::string, std::shared_ptr<ResponseWriter>>> open;
  HttpServerOptions options;
  options.threads = 2;
  StartServer(
      [&](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
        writer->StartStream(200, "text/event-stream");
        std::lock_guard lock(mu);
        open.emplace_back(request.query, std::move(writer));
        cv.notify_all();
      },
      options);
  std::vector<std::unique_ptr<Client>> clients;
  clients.reserve(static_cast<size_t>(streams));
  for (int i = 0; i < streams; ++i) {
    clients.push_back(std::make_unique<Client>(port()));
    ASSERT_TRUE(clients.back()->connected()) << i;
    ASSERT_TRUE(clients.back()->Send(Get(absl::StrCat("/v1/completions?", i))));
  }
  {
    // Every stream is open at once before any event is written.
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, kWait, [&] { return open.size() == static_cast<size_t>(streams); }))
        << open.size() << " of " << streams << " streams started";
  }
  // Events go out from this thread, round-robin over the streams.
  for (int event = 0; event < 3; ++event) {
    for (auto& [id, writer] : open) {
      ASSERT_TRUE(writer->Write(absl::StrCat("data: ", id, "-", event, "\n\n")));
    }
  }
  for (auto& [id, writer] : open) {
    ASSERT_TRUE(writer->Write("data: [END]\n\n"));
    writer->End();
  }
  for (int i = 0; i < streams; ++i) {
    Client& client = *clients[static_cast<size_t>(i)];
    const Response response = client.ReadResponse();
    ASSERT_EQ(response.head.status, 200) << i;
    const std::vector<std::string> expected = {
        absl::StrCat("data: ", i, "-0\n\n"), absl::StrCat("data: ", i, "-1\n\n"),
        absl::StrCat("data: ", i, "-2\n\n"), "data: [END]\n\n"};
    ASSERT_EQ(response.chunks, expected) << i;
  }
}

TEST(HttpServerStartTest, BadOptionsAreErrors) {
  const Handler handler = Echo;
  HttpServerOptions options;
  options.host = "256.1.1.1";
  EXPECT_EQ(HttpServer::Start(options, handler).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = {};
  options.port = 70000;
  EXPECT_EQ(HttpServer::Start(options, handler).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = {};
  options.threads = 0;
  EXPECT_EQ(HttpServer::Start(options, handler).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(HttpServer::Start({}, nullptr).ok());
  // A port in use.
  absl::StatusOr<std::unique_ptr<HttpServer>> first = HttpServer::Start({}, handler);
  ASSERT_TRUE(first.ok());
  options = {};
  options.port = (*first)->port();
  EXPECT_EQ(HttpServer::Start(options, handler).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace headroom::router::http
