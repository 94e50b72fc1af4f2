// Generation's all-or-nothing rules for several choices, against a scripted Inference service on
// a loopback gRPC server (the real service and the whole HTTP path are tested end to end in
// tests/e2e/http_e2e_test.cc; the races below cannot be forced there): a stream is held until
// every choice has started, so a late refusal is a real status; the first failure cancels the
// other calls; a client that goes away cancels every call; `ended` runs once, at the end.
#include "router/frontend/generation.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace headroom::router {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

// Generate by prompt text:
//   "ok:<k>"  streams k messages "x" (the last finishes with usage), after the first one sets
//             first_sent_.
//   "late"    waits for first_sent_, then fails RESOURCE_EXHAUSTED with retry-after 7.
//   "bad"     fails INVALID_ARGUMENT at once.
//   "hold"    is in flight for 20 ms (counted in held_, the most at once in max_held_), then
//             answers as "ok:1"; a cancellation ends it early, CANCELLED.
//   "hang"    streams nothing until the call is cancelled (counted in hangs_ when it starts and in
//             cancelled_ when it sees the cancellation; it gives up after 60 s, far beyond the
//             10 s a test waits for its Generation to end). A call cancelled before it reached
//             the server never starts here.
class ScriptedInference final : public v1::Inference::Service {
 public:
  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    const std::string& text = request->text();
    int count = 0;
    if (absl::StartsWith(text, "ok:") && absl::SimpleAtoi(text.substr(3), &count)) {
      for (int i = 0; i < count; ++i) {
        v1::GenerateResponse message;
        message.set_text("x");
        message.add_token_ids(120);
        if (i + 1 == count) {
          message.set_finish_reason(v1::FINISH_REASON_LENGTH);
          message.mutable_usage()->set_prompt_tokens(4);
          message.mutable_usage()->set_completion_tokens(count);
        }
        writer->Write(message);
        if (i == 0) std::call_once(first_once_, [this] { first_sent_.Notify(); });
      }
      return grpc::Status::OK;
    }
    if (text == "late") {
      first_sent_.WaitForNotificationWithTimeout(absl::Seconds(10));
      context->AddTrailingMetadata("retry-after", "7");
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full"};
    }
    if (text == "bad") return {grpc::StatusCode::INVALID_ARGUMENT, "text must not be \"bad\""};
    if (text == "hold") {
      ++holds_;
      const int now = ++held_;
      for (int most = max_held_.load();
           now > most && !max_held_.compare_exchange_weak(most, now);) {
      }
      for (int i = 0; i < 10 && !context->IsCancelled(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      --held_;
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      v1::GenerateResponse message;
      message.set_text("x");
      message.add_token_ids(120);
      message.set_finish_reason(v1::FINISH_REASON_LENGTH);
      message.mutable_usage()->set_prompt_tokens(4);
      message.mutable_usage()->set_completion_tokens(1);
      writer->Write(message);
      return grpc::Status::OK;
    }
    if (text == "hang") {
      ++hangs_;
      const auto give_up = std::chrono::steady_clock::now() + seconds(60);
      while (!context->IsCancelled() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (context->IsCancelled()) ++cancelled_;
      return grpc::Status::CANCELLED;
    }
    return {grpc::StatusCode::UNIMPLEMENTED, text};
  }

  std::atomic<int> hangs_{0};
  std::atomic<int> cancelled_{0};
  std::atomic<int> holds_{0};
  std::atomic<int> held_{0};
  std::atomic<int> max_held_{0};

 private:
  std::once_flag first_once_;
  absl::Notification first_sent_;
};

// Every "hang" call that reached the server saw its cancellation (the server sees it after the
// client has already ended the call: wait for it).
bool EveryHangWasCancelled(const ScriptedInference& service) {
  for (int i = 0; i < 1000 && service.cancelled_.load() < service.hangs_.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return service.cancelled_.load() == service.hangs_.load();
}

// Records everything written, in order.
class RecordingWriter final : public http::ResponseWriter {
 public:
  void Respond(int status, std::string, std::string body,
               std::vector<std::pair<std::string, std::string>> headers) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    body_ = std::move(body);
    headers_ = std::move(headers);
  }
  void StartStream(int status, std::string,
                   std::vector<std::pair<std::string, std::string>>) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    ++streams_started_;
  }
  bool Write(std::string data) override {
    std::lock_guard<std::mutex> lock(mu_);
    body_ += data;
    return true;
  }
  void End() override {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
  }
  void OnDisconnect(std::function<void()> callback) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_disconnect_ = std::move(callback);
  }
  void Disconnect() {
    std::function<void()> callback;
    {
      std::lock_guard<std::mutex> lock(mu_);
      callback = std::move(on_disconnect_);
    }
    if (callback) callback();
  }

  std::mutex mu_;
  int status_ = 0;
  int streams_started_ = 0;
  bool ended_ = false;
  std::string body_;
  std::vector<std::pair<std::string, std::string>> headers_;

 private:
  std::function<void()> on_disconnect_;
};

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(port, 0);
    stub_ = v1::Inference::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  // Starts a Generation of `prompts` (one choice each); returns when `ended` ran (at most 10 s).
  ::testing::AssertionResult Run(const std::vector<std::string>& prompts, bool stream,
                                 std::function<void()> after_start = nullptr, int32_t n = 1) {
    openai::ParsedRequest parsed;
    parsed.stream = stream;
    parsed.n = n;
    parsed.generate.set_text(prompts[0]);
    for (size_t i = 1; i < prompts.size(); ++i) {
      parsed.more_prompts.emplace_back().set_text(prompts[i]);
    }
    std::vector<v1::GenerateRequest> choices;
    for (int32_t i = 0; i < openai::ChoiceCount(parsed); ++i) {
      choices.push_back(openai::ChoiceRequest(parsed, i));
    }
    auto generation =
        std::make_shared<Generation>(GenerationHooks{.stub = stub_.get(),
                                                     .tokenizer = nullptr,
                                                     .shutting_down = [] { return false; },
                                                     .ended =
                                                         [this] {
                                                           ++ended_calls_;
                                                           ended_.set_value();
                                                         },
                                                     .finished_prompt =
                                                         [this](int32_t samples, int64_t most) {
                                                           std::lock_guard<std::mutex> lock(mu_);
                                                           finished_.emplace_back(samples, most);
                                                         }},
                                     writer_, parsed, choices, "cmpl-1", 1, "m");
    generation->Start();
    generation.reset();  // the calls keep it alive
    if (after_start) after_start();
    if (ended_.get_future().wait_for(seconds(10)) != std::future_status::ready) {
      return ::testing::AssertionFailure() << "ended did not run";
    }
    return ::testing::AssertionSuccess();
  }

  ScriptedInference service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Inference::Stub> stub_;
  std::shared_ptr<RecordingWriter> writer_ = std::make_shared<RecordingWriter>();
  std::promise<void> ended_;
  std::atomic<int> ended_calls_{0};
  std::mutex mu_;
  std::vector<std::pair<int32_t, int64_t>> finished_;  // guarded by mu_: finished_prompt calls
};

// Choice 0 has streamed its first message before choice 1 is refused: the client still gets a
// 429 with Retry-After, not a 200 stream that ends in an error.
TEST_F(GenerationTest, AStreamIsHeldUntilEveryChoiceStartedSoALateRefusalIsAReal429) {
  ASSERT_TRUE(Run({"ok:3", "late"}, /*stream=*/true));
  EXPECT_EQ(writer_->streams_started_, 0);
  EXPECT_EQ(writer_->status_, 429);
  EXPECT_EQ(writer_->headers_,
            (std::vector<std::pair<std::string, std::string>>{{"Retry-After", "7"}}));
  EXPECT_EQ(Json::parse(writer_->body_)["error"]["message"], "queue full");
  EXPECT_EQ(ended_calls_.load(), 1);
}

// The first failure answers (naming the prompt of the list) and cancels the other calls.
TEST_F(GenerationTest, TheFirstFailureAnswersAndCancelsTheOtherCalls) {
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "stream" : "whole");
    ASSERT_TRUE(Run({"hang", "bad", "hang"}, stream));
    EXPECT_EQ(writer_->status_, 400);
    EXPECT_EQ(Json::parse(writer_->body_)["error"]["message"],
              "prompt[1]: text must not be \"bad\"");
    EXPECT_EQ(Json::parse(writer_->body_)["error"]["param"], "prompt");
    {
      std::lock_guard<std::mutex> lock(mu_);
      EXPECT_TRUE(finished_.empty()) << "a failed request reports no finished prompt";
    }
    // Run returned: every call ended, which the hanging ones do only when cancelled.
    EXPECT_TRUE(EveryHangWasCancelled(service_))
        << service_.cancelled_ << " of " << service_.hangs_;
    EXPECT_EQ(ended_calls_.load(), 1);
    service_.hangs_ = 0;
    service_.cancelled_ = 0;
    ended_calls_ = 0;
    ended_ = std::promise<void>();
    writer_ = std::make_shared<RecordingWriter>();
  }
}

// A non-streaming request of more choices than kMaxCallsInFlight (an embeddings list) runs at
// most that many calls at once, starting the next as one ends, and answers every choice.
TEST_F(GenerationTest, ALongListRunsABoundedWindowOfCalls) {
  constexpr int kChoices = 300;
  ASSERT_TRUE(Run(std::vector<std::string>(kChoices, "hold"), /*stream=*/false));
  EXPECT_EQ(writer_->status_, 200) << writer_->body_;
  EXPECT_EQ(Json::parse(writer_->body_)["choices"].size(), static_cast<size_t>(kChoices));
  EXPECT_EQ(service_.holds_.load(), kChoices);
  EXPECT_LE(service_.max_held_.load(), static_cast<int>(Generation::kMaxCallsInFlight));
  EXPECT_GT(service_.max_held_.load(), 1) << "the calls of the window run together";
}

// A failure inside a long list answers at once: the calls not started never start, the running
// ones (which would never end by themselves) are cancelled, and `ended` still runs once.
TEST_F(GenerationTest, AFailureInALongListDropsTheCallsNotStarted) {
  std::vector<std::string> prompts(300, "hang");
  prompts[0] = "bad";
  ASSERT_TRUE(Run(prompts, /*stream=*/false));
  EXPECT_EQ(writer_->status_, 400);
  EXPECT_EQ(Json::parse(writer_->body_)["error"]["message"], "prompt[0]: text must not be \"bad\"");
  EXPECT_LT(service_.hangs_.load(), static_cast<int>(Generation::kMaxCallsInFlight))
      << "only the first window's calls started";
  EXPECT_TRUE(EveryHangWasCancelled(service_)) << service_.cancelled_ << " of " << service_.hangs_;
  EXPECT_EQ(ended_calls_.load(), 1);
}

TEST_F(GenerationTest, AClientThatGoesAwayCancelsEveryCall) {
  ASSERT_TRUE(Run({"hang", "hang", "hang"}, /*stream=*/true, [this] {
    // Both calls are running (or about to): cancel from the HTTP side.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    writer_->Disconnect();
  }));
  EXPECT_TRUE(EveryHangWasCancelled(service_)) << service_.cancelled_ << " of " << service_.hangs_;
  EXPECT_EQ(ended_calls_.load(), 1);
}

// Several choices that all succeed: one stream, every choice's events, [DONE] last, then End.
TEST_F(GenerationTest, ChoicesThatAllSucceedShareOneStreamEndedByDone) {
  ASSERT_TRUE(Run({"ok:3", "ok:2", "ok:1"}, /*stream=*/true));
  EXPECT_EQ(writer_->streams_started_, 1);
  EXPECT_EQ(writer_->status_, 200);
  EXPECT_TRUE(writer_->ended_);
  const std::string& sse = writer_->body_;
  ASSERT_TRUE(absl::EndsWith(sse, "data: [DONE]\n\n")) << sse;
  EXPECT_EQ(sse.find("[DONE]"), sse.size() - 8) << "one [DONE], last";
  std::vector<int> texts(3, 0);
  size_t pos = 0;
  while ((pos = sse.find("data: {", pos)) != std::string::npos) {
    const size_t end = sse.find("\n\n", pos);
    const Json chunk = Json::parse(sse.substr(pos + 6, end - pos - 6));
    texts[chunk["choices"][0]["index"].get<size_t>()] +=
        static_cast<int>(chunk["choices"][0]["text"].get<std::string>().size());
    pos = end;
  }
  EXPECT_EQ(texts, (std::vector<int>{3, 2, 1}));
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(finished_, (std::vector<std::pair<int32_t, int64_t>>{{1, 3}, {1, 2}, {1, 1}}))
      << "each prompt reports n and its most generated tokens, once";
}

// With n = 2 the samples of one prompt are reported together: n, and the most tokens one of them
// generated.
TEST_F(GenerationTest, EachPromptReportsItsNSamplesOnceAllFinished) {
  ASSERT_TRUE(Run({"ok:4", "ok:2"}, /*stream=*/false, nullptr, /*n=*/2));
  EXPECT_EQ(writer_->status_, 200);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(finished_, (std::vector<std::pair<int32_t, int64_t>>{{2, 4}, {2, 2}}));
}

}  // namespace
}  // namespace headroom::router
