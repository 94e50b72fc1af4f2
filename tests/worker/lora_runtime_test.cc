// LoRA adapters loaded and unloaded while the engine serves (Engine::LoadLora, UnloadLora: vLLM's
// /v1/load_lora_adapter and /v1/unload_lora_adapter), against PEFT on the committed fixtures
// (scripts/gen_lora_fixtures.py):
//   - an adapter loaded into a reserved slot gives PEFT's greedy tokens, and the load allocates
//     no device memory;
//   - an adapter loaded under an unloaded one's name gives its own PEFT tokens although the old
//     one's blocks of the same prompts are cached (blocks are keyed by the adapter's files);
//   - an unloaded adapter's requests in flight finish with it, and its slot waits for them;
//   - in a tensor-parallel group every rank loads its shard, and a rank that cannot fails the
//     load on all of them, naming it;
//   - every refusal says why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fixture_model.h"
#include "greedy_parity.h"
#include "kvcache/memory_planner.h"
#include "lora_runtime_helpers.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"
#include "worker/model/llama_model.h"
#include "worker/model/lora_adapter.h"

namespace headroom::worker {
namespace {

using nlohmann::json;
using testing::AdapterPrompts;
using testing::ExpectPrompt3Of;
using testing::ExpectRefused;
using testing::Greedy;
using testing::kBase;
using testing::LongPromptRequest;
using testing::Prompts;
using testing::ReservedEngine;
using testing::ReservedOptions;
using testing::RunSteps;
using testing::Served;
using testing::Spec;

TEST(LoraRuntimeTest, ALoadedAdapterGivesPeftsTokensWithoutAllocating) {
  CpuBackend backend(1);
  auto engine = ReservedEngine(ReservedOptions(2, 8), &backend);
  ASSERT_NE(engine, nullptr);
  // The base model first, so its blocks of the same prompts are cached.
  EXPECT_EQ(testing::ExpectGreedyMatches(Prompts(testdata::FixtureDir(kBase)), Greedy(*engine, "")),
            0);
  const int64_t allocations = engine->Stats().device_allocations;
  ASSERT_TRUE(engine->LoadLora(Spec("sql", "llama-gqa-all")).ok());
  ASSERT_TRUE(engine->LoadLora(Spec("rs", "llama-gqa-rslora")).ok());
  EXPECT_EQ(engine->Stats().device_allocations, allocations);
  const std::vector<ServedLoraAdapter> served = *engine->Stats().lora_adapters;
  ASSERT_EQ(served.size(), 2u);
  EXPECT_EQ(served[0].name, "sql");
  EXPECT_EQ(served[0].path, Spec("sql", "llama-gqa-all").path);
  EXPECT_EQ(served[1].slot, 1);
  EXPECT_EQ(served[0].cache_key.rfind("lora:", 0), 0u) << served[0].cache_key;
  EXPECT_NE(served[0].cache_key, served[1].cache_key);
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-all"), Greedy(*engine, "sql"));
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), Greedy(*engine, "rs"));
}

// The rank-4 adapter loaded into the slot and under the name the rank-8 one had: its padding
// and the targets it leaves alone are zeros again, and it never reads the old one's blocks.
TEST(LoraRuntimeTest, AnAdapterLoadedUnderAnUnloadedOnesNameNeverReadsItsBlocks) {
  CpuBackend backend(1);
  auto engine = ReservedEngine(ReservedOptions(1, 8), &backend);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->LoadLora(Spec("tuned", "llama-gqa-all")).ok());
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-all"), Greedy(*engine, "tuned"));
  EXPECT_GT(engine->Stats().kv.num_evictable_blocks, 0);
  ASSERT_TRUE(engine->UnloadLora("tuned").ok());
  ASSERT_TRUE(engine->LoadLora(Spec("tuned", "llama-gqa-rslora")).ok());
  const int64_t hits = engine->Stats().kv.prefix_hits;
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), Greedy(*engine, "tuned"));
  EXPECT_EQ(engine->Stats().kv.prefix_hits, hits) << "the new adapter reused the old one's blocks";
  // The same files under another name are the same adapter: its blocks are shared.
  ASSERT_TRUE(engine->UnloadLora("tuned").ok());
  ASSERT_TRUE(engine->LoadLora(Spec("alias", "llama-gqa-rslora")).ok());
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), Greedy(*engine, "alias"));
  EXPECT_GT(engine->Stats().kv.prefix_hits, hits);
}

TEST(LoraRuntimeTest, AnUnloadedAdaptersRequestsFinishWithItAndItsSlotWaitsForThem) {
  CpuBackend backend(1);
  auto engine = ReservedEngine(ReservedOptions(1, 8), &backend);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->LoadLora(Spec("sql", "llama-gqa-all")).ok());
  const Request r = LongPromptRequest(3, "sql");
  ASSERT_TRUE(engine->AddRequest(r).ok());
  std::vector<StepToken> out;
  RunSteps(*engine, /*whole=*/false, out);
  ASSERT_TRUE(engine->UnloadLora("sql").ok());
  EXPECT_TRUE(Served(*engine).empty());
  ExpectRefused(engine->AddRequest(LongPromptRequest(4, "sql")), absl::StatusCode::kNotFound,
                "LoRA adapter \"sql\" is not served here (LoRA adapters: none)");
  ExpectRefused(engine->LoadLora(Spec("rs", "llama-gqa-rslora")),
                absl::StatusCode::kResourceExhausted,
                "all 1 LoRA slots (--max-loras) are taken: serving none; unloaded, finishing "
                "their requests: sql (1 requests)");
  RunSteps(*engine, /*whole=*/true, out);
  ExpectPrompt3Of("llama-gqa-all", out);  // still the adapter's tokens, to the end
  ASSERT_TRUE(engine->LoadLora(Spec("rs", "llama-gqa-rslora")).ok());
  EXPECT_EQ(Served(*engine), std::vector<std::string>{"rs"});
}

// vLLM's load_inplace: the adapter under a name is replaced while its requests in flight finish
// with the old weights in the old slot; with no other slot free its own is overwritten, once no
// request of it is in flight.
TEST(LoraRuntimeTest, LoadInplaceReplacesAnAdapterAndItsRequestsFinishWithTheOld) {
  CpuBackend backend(1);
  auto engine = ReservedEngine(ReservedOptions(2, 8), &backend);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->LoadLora(Spec("tuned", "llama-gqa-all")).ok());
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(3, "tuned")).ok());
  std::vector<StepToken> in_flight;
  RunSteps(*engine, /*whole=*/false, in_flight);
  ExpectRefused(engine->LoadLora(Spec("tuned", "llama-gqa-rslora")),
                absl::StatusCode::kAlreadyExists, "or load it with load_inplace to replace it");
  ASSERT_TRUE(engine->LoadLora(Spec("tuned", "llama-gqa-rslora"), /*replace=*/true).ok());
  ASSERT_EQ(engine->Stats().lora_adapters->size(), 1u);
  EXPECT_EQ(engine->Stats().lora_adapters->at(0).path, Spec("tuned", "llama-gqa-rslora").path);
  RunSteps(*engine, /*whole=*/true, in_flight);
  ExpectPrompt3Of("llama-gqa-all", in_flight);
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), Greedy(*engine, "tuned"));

  // Both slots taken; a request of "tuned" in flight keeps its slot from being overwritten.
  ASSERT_TRUE(engine->LoadLora(Spec("other", "llama-gqa-all")).ok());
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(4, "tuned")).ok());
  ExpectRefused(engine->LoadLora(Spec("tuned", "llama-gqa-all"), /*replace=*/true),
                absl::StatusCode::kResourceExhausted,
                "(replacing \"tuned\" needs another slot while its 1 requests finish)");
  ASSERT_TRUE(engine->Abort(RequestId{4}));
  ASSERT_TRUE(engine->LoadLora(Spec("tuned", "llama-gqa-all"), /*replace=*/true).ok());
  EXPECT_EQ(Served(*engine), (std::vector<std::string>{"other", "tuned"}));
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-all"), Greedy(*engine, "tuned"));
}

TEST(LoraRuntimeTest, RefusalsSayWhy) {
  CpuBackend backend(1);
  auto engine = ReservedEngine(ReservedOptions(1, 4), &backend);
  ASSERT_NE(engine, nullptr);
  ExpectRefused(engine->LoadLora(Spec("sql", "llama-gqa-all")), absl::StatusCode::kInvalidArgument,
                "--max-lora-rank");
  ExpectRefused(engine->LoadLora(Spec("gone", "no-such-adapter")), absl::StatusCode::kNotFound,
                "not a directory");
  EXPECT_TRUE(Served(*engine).empty());  // failed loads leave nothing behind
  ASSERT_TRUE(engine->LoadLora(Spec("rs", "llama-gqa-rslora")).ok());
  ExpectRefused(engine->LoadLora(Spec("rs", "llama-gqa-rslora")), absl::StatusCode::kAlreadyExists,
                "LoRA adapter \"rs\" is already loaded");
  ExpectRefused(engine->LoadLora(Spec("rs2", "llama-gqa-rslora")),
                absl::StatusCode::kResourceExhausted,
                "all 1 LoRA slots (--max-loras) are taken: serving rs. Unload an adapter");
  ExpectRefused(engine->UnloadLora("sql"), absl::StatusCode::kNotFound,
                "LoRA adapter \"sql\" is not loaded (LoRA adapters: rs)");
  // An engine without reserved slots serves its --lora-modules and loads nothing more.
  CpuBackend static_backend(1);
  auto fixed = ReservedEngine(ReservedOptions(0, 0), &static_backend);
  ASSERT_NE(fixed, nullptr);
  ExpectRefused(fixed->LoadLora(Spec("rs", "llama-gqa-rslora")),
                absl::StatusCode::kFailedPrecondition, "--allow-runtime-lora-updating");
  ExpectRefused(fixed->UnloadLora("rs"), absl::StatusCode::kFailedPrecondition,
                "loads and unloads no LoRA adapters at run time");
}

// Reserved slots take what the planner counts for them (ReservedLoraDims: every target at the
// reserved rank), whatever the adapters given at start change; plus the arena's scratch and
// segment rows (lora_test's LoraMemoryTest has the static case).
TEST(LoraRuntimeTest, ReservedSlotsTakeWhatThePlannerCounts) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(kBase);
  absl::StatusOr<LoraAdapter> rs =
      LoadLoraAdapter(m.config, Spec("rs", "llama-gqa-rslora"), kDefaultMaxLoraRank);
  ASSERT_TRUE(rs.ok()) << rs.status();
  ModelLimits limits{.max_num_batched_tokens = 96,
                     .max_num_seqs = 5,
                     .max_model_len = 64,
                     .num_kv_blocks = 9,
                     .block_size = 4};
  CpuBackend plain_backend(1);
  ASSERT_TRUE(LlamaModel::Create(m.config, m.weights, limits, &plain_backend).ok());
  limits.lora_slots = 3;
  limits.lora_rank = 8;
  CpuBackend lora_backend(1);
  ASSERT_TRUE(
      LlamaModel::Create(m.config, m.weights, limits, &lora_backend, nullptr, {&*rs, 1}).ok());
  const int64_t params =
      kvcache::LoraParamsPerRank(ModelDimsOf(m.config), 1, ReservedLoraDims(3, 8));
  EXPECT_GT(params, kvcache::LoraParamsPerRank(ModelDimsOf(m.config), 1, LoraDimsOf({&*rs, 1})));
  const auto round_up = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  EXPECT_EQ(lora_backend.allocated_bytes() - plain_backend.allocated_bytes(),
            4 * (params + 96 * 8) + round_up(4 * (5 + 1)) + round_up(4 * 5));
}

// A group of two (leader and follower threads over Gloo): a load reaches the follower, which
// loads its shard from the same files; one it cannot load fails on every rank, naming it.
TEST(LoraRuntimeTest, AGroupLoadsOnEveryRankOrNone) {
  const EngineOptions options = ReservedOptions(1, 8);
  // Reserved as the leader's, but this rank refuses ranks above 4: a rank that cannot load.
  EngineOptions rank_options = options;
  rank_options.max_lora_rank = 4;
  testing::GroupOfTwo group(options, rank_options);
  ASSERT_NE(group.leader, nullptr);
  ExpectRefused(group.leader->LoadLora(Spec("sql", "llama-gqa-all")),
                absl::StatusCode::kFailedPrecondition, "did not load on rank 1 of the group");
  EXPECT_TRUE(Served(*group.leader).empty());
  ASSERT_TRUE(group.leader->LoadLora(Spec("rs", "llama-gqa-rslora")).ok());
  const auto out = Greedy(*group.leader, "rs");
  group.Stop();
  testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), out);
}

}  // namespace
}  // namespace headroom::worker
