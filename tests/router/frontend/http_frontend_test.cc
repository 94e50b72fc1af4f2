// HttpFrontend's threading: the POST routes run on its HandlerPool, not on the calling (HTTP
// event) thread, and a full pool answers 429 at once (and reports it). The routes themselves are
// tested end to end (tests/e2e/http_e2e_test.cc).
#include "router/frontend/http_frontend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/metrics.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "router/tokenizer/byte_tokenizer.h"

namespace headroom::router {
namespace {

// Records the one response and the thread that gave it.
class RecordingWriter final : public http::ResponseWriter {
 public:
  void Respond(int status, std::string /*content_type*/, std::string body,
               std::vector<std::pair<std::string, std::string>> extra_headers) override {
    status_ = status;
    body_ = std::move(body);
    headers_ = std::move(extra_headers);
    thread_ = std::this_thread::get_id();
    done_.set_value();
  }
  void StartStream(int, std::string, std::vector<std::pair<std::string, std::string>>) override {
    ADD_FAILURE() << "no stream expected";
  }
  bool Write(std::string) override { return false; }
  void End() override {}
  void OnDisconnect(std::function<void()>) override {}

  // Waits (at most 10 s) for the response.
  bool Wait() {
    return done_.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }

  int status_ = 0;
  std::string body_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::thread::id thread_;

 private:
  std::promise<void> done_;
};

http::HttpRequest Post(std::string path, std::string body) {
  http::HttpRequest request;
  request.method = "POST";
  request.path = std::move(path);
  request.body = std::move(body);
  return request;
}

class HttpFrontendTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpFrontend> Make(size_t max_queued) {
    return std::make_unique<HttpFrontend>(HttpFrontendOptions{
        // Never dialled: /tokenize needs no worker.
        .channel = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()),
        .tokenizer = tokenizer_.get(),
        .chat_format = std::nullopt,
        .api_key = "",
        .registry = &registry_,
        .healthy = [] { return true; },
        .model_name = [] { return std::string("m"); },
        .max_model_len = [] { return 256; },
        .handler_threads = 1,
        .max_queued_requests = max_queued,
        .on_busy = [this] { ++busy_; }});
  }

  std::unique_ptr<Tokenizer> tokenizer_ = *MakeByteTokenizer(256);
  metrics::Registry registry_;
  std::atomic<int> busy_{0};  // on_busy calls
};

TEST_F(HttpFrontendTest, PostRoutesRunOnThePoolNotOnTheCallingThread) {
  std::unique_ptr<HttpFrontend> frontend = Make(16);
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(Post("/tokenize", R"({"prompt": "hi"})"), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->status_, 200) << writer->body_;
  EXPECT_EQ(nlohmann::json::parse(writer->body_)["tokens"], nlohmann::json::array({'h', 'i'}));
  EXPECT_NE(writer->thread_, std::this_thread::get_id());
  EXPECT_EQ(busy_, 0);
}

TEST_F(HttpFrontendTest, AFullPoolAnswers429AtOnceAndCheapRoutesStillAnswer) {
  std::unique_ptr<HttpFrontend> frontend = Make(0);  // no request may wait
  auto refused = std::make_shared<RecordingWriter>();
  frontend->Handle(Post("/tokenize", R"({"prompt": "hi"})"), refused);
  ASSERT_TRUE(refused->Wait());
  EXPECT_EQ(refused->status_, 429);
  EXPECT_EQ(refused->thread_, std::this_thread::get_id());
  EXPECT_EQ(refused->headers_,
            (std::vector<std::pair<std::string, std::string>>{{"Retry-After", "1"}}));
  EXPECT_NE(refused->body_.find("requests wait to be parsed and tokenized"), std::string::npos)
      << refused->body_;
  EXPECT_EQ(busy_, 1) << "the refusal is reported for the router's metrics";

  http::HttpRequest health;
  health.method = "GET";
  health.path = "/health";
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(std::move(health), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->status_, 200);
}

}  // namespace
}  // namespace headroom::router
