// A tensor-parallel group in one process: the leader Engine (rank 0) and Followers (ranks > 0)
// as threads over Gloo, against the single-rank Engine on the same requests; the group message
// codec; and the group's failure path (a follower that dies fails the leader's requests with
// UNAVAILABLE and reports the failure, never a hang).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "fixture_model.h"
#include "worker/backend/cpu_backend.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"
#include "worker/engine/engine.h"
#include "worker/engine/engine_loop.h"
#include "worker/engine/follower.h"
#include "worker/engine/group_message.h"
#include "worker/model/shard_weights.h"

namespace headroom::worker {
namespace {

// A pool small enough that 6 requests of up to 38 + 24 tokens (and 2 embeddings) preempt, and a
// token budget that chunks the longer prompts: the followers must track preemptions and chunked
// prefills exactly. `num_kv_blocks` 16 (60 slots) is smaller than the longest request: only a model
// with a sliding window runs it, releasing and reusing blocks.
EngineOptions Options(int32_t num_kv_blocks = 40) {
  return {.max_num_seqs = 4,
          .max_num_batched_tokens = 32,
          .max_model_len = 128,
          .block_size = 4,
          .num_kv_blocks = num_kv_blocks};
}

std::vector<Request> Requests() {
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    Request r;
    r.id = RequestId{i};
    for (int t = 0; t < 8 + 6 * i; ++t) r.prompt.push_back((t * 31 + i * 7 + 1) % 256);
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;  // greedy and seeded samples
    r.sampling.seed = 1234 + static_cast<uint64_t>(i);
    r.sampling.max_tokens = 24;
    r.sampling.ignore_eos = true;
    if (i % 3 == 0) r.sampling.prompt_logprobs = 2;  // the followers run the same LM-head slices
    requests.push_back(r);
  }
  // Two embeddings among them: the leader reads the last hidden state, whole on every rank after
  // the last all-reduce.
  for (int i = 6; i < 8; ++i) {
    Request r;
    r.id = RequestId{i};
    for (int t = 0; t < 5 + 9 * (i - 6); ++t) r.prompt.push_back((t * 17 + i) % 256);
    r.embedding = EmbeddingParams{.dimensions = 0, .normalize = i == 6};
    requests.push_back(r);
  }
  return requests;
}

using Tokens = std::map<int64_t, std::vector<int32_t>>;
using PromptLogprobs = std::map<int64_t, std::vector<PromptTokenLogprob>>;
using Embeddings = std::map<int64_t, std::vector<float>>;

// Runs the requests to completion on `engine`; tokens (and prompt logprobs, embeddings) by
// request id.
Tokens RunAll(Engine& engine, int64_t* preemptions = nullptr, PromptLogprobs* prompt = nullptr,
              Embeddings* embeddings = nullptr) {
  for (const Request& r : Requests()) EXPECT_TRUE(engine.AddRequest(r).ok());
  Tokens out;
  while (engine.HasWork()) {
    absl::StatusOr<std::vector<StepToken>> step = engine.Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (const StepToken& t : *step) {
      if (!t.embedding.empty()) {
        if (embeddings != nullptr) (*embeddings)[t.id.value()] = t.embedding;
        continue;
      }
      out[t.id.value()].push_back(t.token);
      if (prompt != nullptr && !t.prompt_logprobs.empty())
        (*prompt)[t.id.value()] = t.prompt_logprobs;
    }
  }
  if (preemptions != nullptr) *preemptions = engine.Stats().scheduler.num_preemptions;
  return out;
}

// llama-gqa attends everything; phi3-fused attends 12 positions back in every layer, so it runs
// in a pool smaller than its longest request: the leader's KV cache releases blocks behind the
// window and reuses them, and the followers' tables follow (StepPlan::num_released_blocks).
// gemma3-local-rope has 6 layer groups (one global layer, five windowed ones): the followers keep
// six tables per sequence from the plans' per-group runs and release counts.
class EngineGroupTokensTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineGroupTokensTest, AGroupOfTwoAndOfFourGivesTheTokensOfOneRank) {
  const std::string fixture = GetParam();
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(fixture);
  // gemma3-local-rope's blocks hold one layer each (six per position): its longest request peaks
  // at 16 + 5 * 13 = 81 of them, so 100 still preempts.
  const int32_t groups = KvCacheLayerGroups(m.config).num_groups();
  const EngineOptions options =
      Options(KvCacheSlidingWindow(m.config) > 0 ? 16 : (groups > 1 ? 100 : 40));
  CpuBackend backend(1);
  auto single = Engine::Create(m.config, m.weights, options, &backend);
  ASSERT_TRUE(single.ok()) << single.status();
  int64_t preemptions = 0;
  PromptLogprobs expected_prompt;
  Embeddings expected_embeddings;
  const Tokens expected = RunAll(**single, &preemptions, &expected_prompt, &expected_embeddings);
  ASSERT_EQ(expected.size(), 6u);
  ASSERT_EQ(expected_prompt.size(), 2u);
  ASSERT_EQ(expected_embeddings.size(), 2u);
  if (KvCacheSlidingWindow(m.config) == 0) {
    EXPECT_GT(preemptions, 0) << "the pool should be small enough to preempt";
  } else {
    // Every request ran although the longest needs more slots than the pool has.
    EXPECT_EQ(expected.rbegin()->second.size(), 24u);
    EXPECT_GT(Requests()[5].prompt.size() + 24, size_t{(16 - 1) * 4});  // the longest
  }

  for (const int tp : {2, 4}) {
    SCOPED_TRACE(tp);
    InMemoryRendezvousStore store;
    std::vector<std::thread> followers;
    std::vector<int64_t> follower_steps(static_cast<size_t>(tp), 0);
    for (int rank = 1; rank < tp; ++rank) {
      followers.emplace_back([&, rank] {
        auto comm = GlooCommunicator::Create(
            {.rank = rank, .world_size = tp, .store = &store, .timeout = absl::Seconds(30)});
        ASSERT_TRUE(comm.ok()) << comm.status();
        const ModelWeights shard = testdata::LoadFixtureShard(fixture, tp, rank);
        CpuBackend rank_backend(1);
        auto follower = Follower::Create(m.config, shard, options, &rank_backend, comm->get());
        ASSERT_TRUE(follower.ok()) << follower.status();
        const absl::Status run = (*follower)->Run();
        EXPECT_TRUE(run.ok()) << run;
        EXPECT_EQ((*follower)->num_sequences(), 0u) << "every finished sequence was released";
        follower_steps[static_cast<size_t>(rank)] = (*follower)->steps();
      });
    }
    auto comm = GlooCommunicator::Create(
        {.rank = 0, .world_size = tp, .store = &store, .timeout = absl::Seconds(30)});
    ASSERT_TRUE(comm.ok()) << comm.status();
    const ModelWeights shard = testdata::LoadFixtureShard(fixture, tp, 0);
    CpuBackend leader_backend(1);
    auto leader = Engine::Create(m.config, shard, options, &leader_backend, comm->get());
    ASSERT_TRUE(leader.ok()) << leader.status();
    EXPECT_TRUE((*leader)->leads_group());
    PromptLogprobs prompt;
    Embeddings embeddings;
    EXPECT_EQ(RunAll(**leader, nullptr, &prompt, &embeddings), expected);
    ASSERT_EQ(embeddings.size(), expected_embeddings.size());
    for (const auto& [id, want] : expected_embeddings) {
      const std::vector<float>& got = embeddings[id];
      ASSERT_EQ(got.size(), want.size()) << id;
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << id << " " << i;
    }
    ASSERT_EQ(prompt.size(), expected_prompt.size());
    for (const auto& [id, want] : expected_prompt) {
      const std::vector<PromptTokenLogprob>& got = prompt[id];
      ASSERT_EQ(got.size(), want.size()) << id;
      for (size_t p = 0; p < want.size(); ++p) {
        EXPECT_EQ(got[p].token, want[p].token);
        EXPECT_NEAR(got[p].logprob, want[p].logprob, 1e-4);
        ASSERT_EQ(got[p].top_logprobs.size(), 2u);
        EXPECT_EQ(got[p].top_logprobs[0].token, want[p].top_logprobs[0].token);
      }
    }
    ASSERT_TRUE((*leader)->KeepFollowersAlive().ok());
    ASSERT_TRUE((*leader)->StopFollowers().ok());
    for (std::thread& t : followers) t.join();
    for (int rank = 1; rank < tp; ++rank) {
      EXPECT_EQ(follower_steps[static_cast<size_t>(rank)], (*leader)->Stats().steps);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineGroupTokensTest,
                         ::testing::Values("llama-gqa", "phi3-fused", "gemma3-local-rope",
                                           "phi4-partial-rotary"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(EngineGroupTest, AFollowerThatDiesFailsTheLeadersRequestsAndReportsIt) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  InMemoryRendezvousStore store;
  std::promise<void> leader_running;
  std::thread follower([&] {
    auto comm = GlooCommunicator::Create(
        {.rank = 1, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
    ASSERT_TRUE(comm.ok()) << comm.status();
    leader_running.get_future().wait();
    // Dies without a word: its sockets close, as when the process is killed.
  });
  auto comm = GlooCommunicator::Create(
      {.rank = 0, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
  ASSERT_TRUE(comm.ok()) << comm.status();
  const ModelWeights shard = testdata::LoadFixtureShard("llama-gqa", 2, 0);
  CpuBackend backend(1);
  auto engine = Engine::Create(m.config, shard, Options(), &backend, comm->get());
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::promise<absl::Status> reported;
  EngineLoop loop(*std::move(engine),
                  [&](const absl::Status& status) { reported.set_value(status); });
  leader_running.set_value();
  follower.join();
  std::promise<absl::Status> ended;
  loop.Submit(Requests()[0], [&](const absl::StatusOr<StepToken>& token) {
    if (!token.ok()) ended.set_value(token.status());
  });
  auto failure = reported.get_future();
  ASSERT_EQ(failure.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the leader never noticed its follower died";
  EXPECT_EQ(failure.get().code(), absl::StatusCode::kUnavailable);
  const absl::Status request = ended.get_future().get();
  EXPECT_EQ(request.code(), absl::StatusCode::kUnavailable) << request;
  EXPECT_NE(request.message().find("worker group failed"), std::string::npos) << request;
  // Later submissions are refused the same way, at once.
  std::promise<absl::Status> refused;
  loop.Submit(Requests()[1], [&](const absl::StatusOr<StepToken>& token) {
    if (!token.ok()) refused.set_value(token.status());
  });
  EXPECT_EQ(refused.get_future().get().code(), absl::StatusCode::kUnavailable);
}

TEST(GroupMessageTest, PlansRoundTripAndMalformedBytesAreDataLoss) {
  GroupMessage message;
  message.plan.step = 41;
  message.plan.num_tokens = 3;
  message.plan.sequences.push_back({.id = RequestId{7},
                                    .num_computed_tokens = 16,
                                    .token_ids = {5, 6},
                                    .new_block_ids = {kvcache::BlockId{9}},
                                    .num_released_blocks = {3, 0},
                                    .sample = true,
                                    .prompt_logprobs_end = 12,
                                    .lora_slot = 2});
  message.plan.sequences.push_back({.id = RequestId{-2},
                                    .num_computed_tokens = 0,
                                    .token_ids = {1},
                                    .new_block_ids = {},
                                    .sample = false});
  message.plan.released = {RequestId{3}, RequestId{4}};
  message.plan.preempted = {RequestId{4}};
  const std::string bytes = EncodeGroupMessage(message);
  absl::StatusOr<GroupMessage> decoded = DecodeGroupMessage(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->kind, GroupMessageKind::kPlan);
  EXPECT_EQ(decoded->plan.step, 41);
  EXPECT_EQ(decoded->plan.num_tokens, 3);
  ASSERT_EQ(decoded->plan.sequences.size(), 2u);
  EXPECT_EQ(decoded->plan.sequences[0].id, RequestId{7});
  EXPECT_EQ(decoded->plan.sequences[0].num_computed_tokens, 16);
  EXPECT_EQ(decoded->plan.sequences[0].token_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(decoded->plan.sequences[0].new_block_ids,
            (std::vector<kvcache::BlockId>{kvcache::BlockId{9}}));
  EXPECT_EQ(decoded->plan.sequences[0].num_released_blocks, (std::vector<int32_t>{3, 0}));
  EXPECT_TRUE(decoded->plan.sequences[0].sample);
  EXPECT_EQ(decoded->plan.sequences[0].prompt_logprobs_end, 12);
  EXPECT_EQ(decoded->plan.sequences[0].lora_slot, 2);
  EXPECT_EQ(decoded->plan.sequences[1].lora_slot, -1);
  EXPECT_EQ(decoded->plan.sequences[1].id, RequestId{-2});
  EXPECT_FALSE(decoded->plan.sequences[1].sample);
  EXPECT_EQ(decoded->plan.released, (std::vector<RequestId>{RequestId{3}, RequestId{4}}));
  EXPECT_EQ(decoded->plan.preempted, (std::vector<RequestId>{RequestId{4}}));

  const absl::StatusOr<GroupMessage> stop =
      DecodeGroupMessage(EncodeGroupMessage({.kind = GroupMessageKind::kStop, .plan = {}}));
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(stop->kind, GroupMessageKind::kStop);

  // Every truncation, trailing bytes, a wrong magic and an absurd count are refused.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_EQ(DecodeGroupMessage(bytes.substr(0, cut)).status().code(), absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
  EXPECT_EQ(DecodeGroupMessage(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
  std::string bad_magic = bytes;
  bad_magic[0] ^= 1;
  EXPECT_EQ(DecodeGroupMessage(bad_magic).status().code(), absl::StatusCode::kDataLoss);
  std::string huge = bytes;
  huge[20] = '\xff';  // the sequence count's high byte: billions of sequences in a few bytes
  EXPECT_EQ(DecodeGroupMessage(huge).status().code(), absl::StatusCode::kDataLoss);
}

TEST(GroupMessageTest, ALoraLoadRoundTripsAndTruncationsAreRefused) {
  const std::string bytes =
      EncodeGroupMessage({.kind = GroupMessageKind::kLoadLora,
                          .plan = {},
                          .lora_load = {.slot = 3, .name = "sql", .path = "/adapters/sql v2"}});
  const absl::StatusOr<GroupMessage> decoded = DecodeGroupMessage(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->kind, GroupMessageKind::kLoadLora);
  EXPECT_EQ(decoded->lora_load.slot, 3);
  EXPECT_EQ(decoded->lora_load.name, "sql");
  EXPECT_EQ(decoded->lora_load.path, "/adapters/sql v2");
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_EQ(DecodeGroupMessage(bytes.substr(0, cut)).status().code(), absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
  EXPECT_EQ(DecodeGroupMessage(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace headroom::worker
