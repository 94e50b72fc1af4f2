// The gRPC edge's conversions: proto defaults become vLLM's defaults, every field reaches the
// engine's structs, and statuses keep their code and message.
#include <gtest/gtest.h>

#include "worker/service/conversions.h"

namespace headroom::worker {
namespace {

TEST(RequestFromProto, UnsetFieldsTakeVllmDefaults) {
  v1::SubmitRequest proto;
  proto.add_prompt_token_ids(3);
  absl::StatusOr<Request> request = RequestFromProto(proto, RequestId{7});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->id, RequestId{7});
  EXPECT_EQ(request->prompt, std::vector<int32_t>{3});
  EXPECT_FLOAT_EQ(request->sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(request->sampling.top_p, 1.0f);
  EXPECT_EQ(request->sampling.top_k, 0);
  EXPECT_EQ(request->sampling.max_tokens, 16);
  EXPECT_FALSE(request->sampling.seed.has_value());
  EXPECT_FALSE(request->sampling.ignore_eos);
  EXPECT_EQ(request->sampling.logprobs, 0);
  EXPECT_FLOAT_EQ(request->sampling.repetition_penalty, 1.0f);
  EXPECT_FLOAT_EQ(request->sampling.min_p, 0.0f);
}

TEST(RequestFromProto, EveryFieldIsCarried) {
  v1::SubmitRequest proto;
  proto.set_request_id(99);
  for (int32_t t : {5, 6, 7}) proto.add_prompt_token_ids(t);
  proto.set_cache_salt("tenant-a");
  v1::TokenSamplingParams* s = proto.mutable_sampling();
  s->set_temperature(0.0f);
  s->set_top_k(40);
  s->set_top_p(0.9f);
  s->set_seed(1234);
  s->set_max_tokens(33);
  s->add_stop_token_ids(2);
  s->add_stop_token_ids(9);
  s->set_ignore_eos(true);
  s->set_logprobs(5);
  s->set_repetition_penalty(1.3f);
  s->set_frequency_penalty(0.25f);
  s->set_presence_penalty(-1.0f);
  s->set_min_p(0.05f);
  s->set_min_tokens(3);
  (*s->mutable_logit_bias())[9] = -1.5f;
  (*s->mutable_logit_bias())[2] = 4.0f;
  s->add_allowed_token_ids(7);
  s->add_allowed_token_ids(3);
  absl::StatusOr<Request> request = RequestFromProto(proto, RequestId{99});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->prompt, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(request->cache_salt, "tenant-a");
  EXPECT_FLOAT_EQ(request->sampling.temperature, 0.0f);
  EXPECT_EQ(request->sampling.top_k, 40);
  EXPECT_FLOAT_EQ(request->sampling.top_p, 0.9f);
  EXPECT_EQ(request->sampling.seed, uint64_t{1234});
  EXPECT_EQ(request->sampling.max_tokens, 33);
  EXPECT_EQ(request->sampling.stop_token_ids, (std::vector<int32_t>{2, 9}));
  EXPECT_TRUE(request->sampling.ignore_eos);
  EXPECT_EQ(request->sampling.logprobs, 5);
  EXPECT_FLOAT_EQ(request->sampling.repetition_penalty, 1.3f);
  EXPECT_FLOAT_EQ(request->sampling.frequency_penalty, 0.25f);
  EXPECT_FLOAT_EQ(request->sampling.presence_penalty, -1.0f);
  EXPECT_FLOAT_EQ(request->sampling.min_p, 0.05f);
  EXPECT_EQ(request->sampling.min_tokens, 3);
  EXPECT_EQ(request->sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{2, 4.0f}, {9, -1.5f}}));
  EXPECT_EQ(request->sampling.allowed_token_ids, (std::vector<int32_t>{7, 3}));
}

TEST(RequestFromProto, NegativeCountsAreRefusedByName) {
  v1::SubmitRequest proto;
  proto.add_prompt_token_ids(1);
  proto.mutable_sampling()->set_top_k(-1);
  absl::StatusOr<Request> request = RequestFromProto(proto, RequestId{1});
  ASSERT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(request.status().message().find("top_k"), std::string::npos);

  proto.mutable_sampling()->set_top_k(0);
  proto.mutable_sampling()->set_logprobs(-2);
  request = RequestFromProto(proto, RequestId{1});
  ASSERT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(request.status().message().find("logprobs"), std::string::npos);
}

TEST(AppendToken, CarriesLogprobsAndFinishOnlyOnTheLast) {
  v1::SubmitResponse response;
  AppendToken({.id = RequestId{1},
               .token = 10,
               .logprob = -0.5f,
               .top_logprobs = {{10, -0.5f}, {11, -1.5f}}},
              response);
  EXPECT_EQ(response.finish_reason(), v1::FINISH_REASON_UNSPECIFIED);
  AppendToken({.id = RequestId{1},
               .token = 12,
               .logprob = -0.25f,
               .top_logprobs = {},
               .finish = FinishReason::kLength},
              response);
  ASSERT_EQ(response.tokens_size(), 2);
  EXPECT_EQ(response.tokens(0).token_id(), 10);
  EXPECT_FLOAT_EQ(response.tokens(0).logprob(), -0.5f);
  ASSERT_EQ(response.tokens(0).top_logprobs_size(), 2);
  EXPECT_EQ(response.tokens(0).top_logprobs(1).token_id(), 11);
  EXPECT_FLOAT_EQ(response.tokens(0).top_logprobs(1).logprob(), -1.5f);
  EXPECT_EQ(response.tokens(1).token_id(), 12);
  EXPECT_EQ(response.finish_reason(), v1::FINISH_REASON_LENGTH);
}

// An embedding request carries its pooling parameters; a plain one has none. Its answer is the
// vector alone: no token (the one the engine sampled means nothing).
// A lora_name passes to the engine, which resolves it (LoraEngineTest).
TEST(RequestFromProto, ALoraNamePassesToTheEngine) {
  v1::SubmitRequest proto;
  proto.add_prompt_token_ids(1);
  absl::StatusOr<Request> base = RequestFromProto(proto, RequestId{1});
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_EQ(base->lora_slot, -1);
  EXPECT_EQ(base->lora_name, "");
  proto.set_lora_name("chat");
  absl::StatusOr<Request> chat = RequestFromProto(proto, RequestId{1});
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->lora_name, "chat");
}

TEST(RequestFromProto, PoolingMakesAnEmbedding) {
  v1::SubmitRequest proto;
  proto.add_prompt_token_ids(3);
  absl::StatusOr<Request> plain = RequestFromProto(proto, RequestId{1});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->embedding.has_value());
  proto.mutable_pooling()->set_dimensions(32);
  proto.mutable_pooling()->set_normalize(true);
  absl::StatusOr<Request> embedding = RequestFromProto(proto, RequestId{2});
  ASSERT_TRUE(embedding.ok()) << embedding.status();
  ASSERT_TRUE(embedding->embedding.has_value());
  EXPECT_EQ(embedding->embedding->dimensions, 32);
  EXPECT_EQ(embedding->embedding->normalize, std::optional<bool>(true));
  proto.mutable_pooling()->set_normalize(false);
  EXPECT_EQ(RequestFromProto(proto, RequestId{3})->embedding->normalize,
            std::optional<bool>(false));
  proto.mutable_pooling()->clear_normalize();
  EXPECT_EQ(RequestFromProto(proto, RequestId{4})->embedding->normalize, std::nullopt)
      << "unset: the model's default";
}

TEST(AppendToken, AnEmbeddingCarriesItsVectorAndNoToken) {
  v1::SubmitResponse response;
  AppendToken({.id = RequestId{1},
               .token = 10,
               .logprob = -0.5f,
               .top_logprobs = {},
               .finish = FinishReason::kStop,
               .stop_token = true,
               .embedding = {0.6f, -0.8f}},
              response);
  EXPECT_EQ(response.tokens_size(), 0);
  ASSERT_EQ(response.embedding_size(), 2);
  EXPECT_FLOAT_EQ(response.embedding(0), 0.6f);
  EXPECT_FLOAT_EQ(response.embedding(1), -0.8f);
  EXPECT_EQ(response.finish_reason(), v1::FINISH_REASON_STOP);
  EXPECT_FALSE(response.stop_token());
}

TEST(FinishReasonToProto, MapsEveryReason) {
  EXPECT_EQ(FinishReasonToProto(FinishReason::kNone), v1::FINISH_REASON_UNSPECIFIED);
  EXPECT_EQ(FinishReasonToProto(FinishReason::kStop), v1::FINISH_REASON_STOP);
  EXPECT_EQ(FinishReasonToProto(FinishReason::kLength), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(FinishReasonToProto(FinishReason::kAbort), v1::FINISH_REASON_ABORT);
}

TEST(FillLoadReport, CopiesTheEngineCounters) {
  EngineStats stats;
  stats.kv.num_usable_blocks = 63;
  stats.kv.num_free_blocks = 50;
  stats.kv.num_evictable_blocks = 4;
  stats.scheduler.num_running = 2;
  stats.scheduler.num_waiting = 3;
  stats.scheduler.waiting_demand_blocks = 17;
  stats.lora_slots_open = 2;
  v1::LoadReport report;
  FillLoadReport(stats, report);
  EXPECT_EQ(report.total_blocks(), 63);
  EXPECT_EQ(report.free_blocks(), 50);
  EXPECT_EQ(report.evictable_blocks(), 4);
  EXPECT_EQ(report.running(), 2);
  EXPECT_EQ(report.waiting(), 3);
  EXPECT_EQ(report.waiting_demand_blocks(), 17);
  EXPECT_EQ(report.lora_slots_open(), 2);
}

TEST(ToGrpcStatus, KeepsCodeAndMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  const grpc::Status status = ToGrpcStatus(absl::ResourceExhaustedError("no blocks: 3 > 2"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(status.error_message(), "no blocks: 3 > 2");
  EXPECT_EQ(ToGrpcStatus(absl::FailedPreconditionError("draining")).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace headroom::worker
