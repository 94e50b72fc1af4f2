// InferenceService's handler pool: text prompts (Generate, Tokenize) are tokenized on the pool,
// which refuses RESOURCE_EXHAUSTED + retry-after when full (counted as reason "busy"); a prompt of
// token ids never waits for it. No worker group here: a Generate that gets past validation and
// reaches the dispatcher ends UNAVAILABLE "no worker group is serving". The rest of Generate is
// tested end to end (tests/e2e/router_e2e_test.cc).
#include "router/service/inference_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "router/tokenizer/byte_tokenizer.h"

namespace headroom::router {
namespace {

struct Outcome {
  grpc::Status status;
  std::string retry_after;
};

class InferenceServiceTest : public ::testing::Test {
 protected:
  // A service whose pool lets `max_queued` calls wait, on an in-process server.
  void Start(size_t max_queued) {
    service_ = std::make_unique<InferenceService>(
        InferenceServiceOptions{.tokenizer = tokenizer_.get(),
                                .served_model_name = "m",
                                .default_timeout = absl::Seconds(10),
                                .metrics = &metrics_,
                                .handler_threads = 1,
                                .max_queued_requests = max_queued},
        &dispatcher_, &monitor_);
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::Inference::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    if (service_ != nullptr) {
      EXPECT_TRUE(service_->WaitForIdle(absl::Now() + absl::Seconds(5)));
    }
  }

  Outcome Generate(const v1::GenerateRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = stub_->Generate(&context, request);
    v1::GenerateResponse response;
    while (reader->Read(&response)) {
    }
    Outcome outcome{.status = reader->Finish(), .retry_after = ""};
    outcome.retry_after = RetryAfter(context);
    return outcome;
  }

  static std::string RetryAfter(const grpc::ClientContext& context) {
    auto it = context.GetServerTrailingMetadata().find("retry-after");
    if (it == context.GetServerTrailingMetadata().end()) return "";
    return std::string(it->second.data(), it->second.size());
  }

  static v1::GenerateRequest Text(std::string text) {
    v1::GenerateRequest request;
    request.set_text(std::move(text));
    request.mutable_sampling()->set_max_tokens(4);
    return request;
  }

  // The refusal counter for `reason`, as /metrics shows it.
  bool RefusalsAre(const std::string& reason, int count) {
    const std::string line =
        "headroom:router_refusals_total{reason=\"" + reason + "\"} " + std::to_string(count) + "\n";
    return registry_.Render().find(line) != std::string::npos;
  }

  std::unique_ptr<Tokenizer> tokenizer_ = *MakeByteTokenizer(256);
  Dispatcher dispatcher_{DispatcherOptions{}};
  GroupMonitor monitor_{{}, &dispatcher_};
  metrics::Registry registry_;
  RouterMetrics metrics_{&registry_, &dispatcher_};
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Inference::Stub> stub_;
};

// With room in the pool a text Generate is tokenized and validated (it reaches the dispatcher)
// and Tokenize answers; that they go through the pool at all is the next test's.
TEST_F(InferenceServiceTest, TextPromptsGetThroughThePool) {
  Start(16);
  const Outcome generated = Generate(Text("hello"));
  EXPECT_EQ(generated.status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << generated.status.error_message();
  EXPECT_NE(generated.status.error_message().find("no worker group"), std::string::npos)
      << generated.status.error_message();

  grpc::ClientContext context;
  v1::TokenizeRequest request;
  request.set_text("hi!");
  v1::TokenizeResponse response;
  ASSERT_TRUE(stub_->Tokenize(&context, request, &response).ok());
  EXPECT_EQ(std::vector<int32_t>(response.token_ids().begin(), response.token_ids().end()),
            (std::vector<int32_t>{'h', 'i', '!'}));
  EXPECT_TRUE(RefusalsAre("busy", 0));
}

TEST_F(InferenceServiceTest, AFullPoolRefusesTextPromptsWithRetryAfterButNotTokenIds) {
  Start(0);  // no call may wait for the pool
  const Outcome text = Generate(Text("hello"));
  EXPECT_EQ(text.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(text.status.error_message().find("0 calls wait to be tokenized"), std::string::npos)
      << text.status.error_message();
  EXPECT_EQ(text.retry_after, "1");

  grpc::ClientContext context;
  v1::TokenizeRequest request;
  request.set_text("hi");
  v1::TokenizeResponse response;
  const grpc::Status tokenized = stub_->Tokenize(&context, request, &response);
  EXPECT_EQ(tokenized.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(RetryAfter(context), "1");
  EXPECT_EQ(response.token_ids_size(), 0);

  v1::GenerateRequest ids;
  for (int32_t id : {104, 105}) ids.mutable_token_ids()->add_ids(id);
  ids.mutable_sampling()->set_max_tokens(4);
  const Outcome by_ids = Generate(ids);
  EXPECT_EQ(by_ids.status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << "token ids do not wait for the pool: " << by_ids.status.error_message();

  EXPECT_TRUE(RefusalsAre("busy", 2)) << registry_.Render();
}

}  // namespace
}  // namespace headroom::router
