// Parity with Hugging Face transformers on the committed fixtures (scripts/gen_model_fixtures.py:
// seeded random checkpoints saved in bf16 / fp16 / fp32 and the float32 outputs of transformers
// on the saved weights).
//   - Prompt logits: every row within |ours - hf| <= 1e-4 + 1e-4 * |hf| (both sides compute in
//     fp32 from identical weights; only summation order differs).
//   - Greedy continuations of 32 tokens: equal; where they diverge, each side's token must be in
//     the other's top-5 at that step (vLLM's check_logprobs_close rule), and comparison stops.
//     Logprobs of agreeing tokens within 1e-3.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fixture_model.h"
#include "greedy_parity.h"
#include "kv_groups_input.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"
#include "worker/model/llama_model.h"

namespace headroom::worker {
namespace {

using nlohmann::json;
using testing::ExpectGreedyMatches;
using testing::RunGreedy;

struct Loaded {
  const ModelConfig& config;
  const ModelWeights& weights;
  json expected;
};

Loaded Load(const std::string& name) {
  const testdata::FixtureModel& model = testdata::LoadFixtureModel(name);
  std::ifstream in(testdata::FixtureDir(name) / "expected.json");
  return Loaded{model.config, model.weights, json::parse(in)};
}

class ModelParityTest : public ::testing::TestWithParam<std::string> {};

constexpr int32_t kLogitsBlockSize = 16;
// Blocks per KV layer group in LogitsModel: 128 tokens.
constexpr int32_t kLogitsStride = 128 / kLogitsBlockSize;

// A model that computes prompts of up to 128 tokens whole, as a server of `max_model_len`.
std::unique_ptr<LlamaModel> LogitsModel(const Loaded& m, Backend* backend,
                                        int32_t max_model_len = 128) {
  auto model = LlamaModel::Create(
      m.config, m.weights,
      {.max_num_batched_tokens = 128,
       .max_num_seqs = 128,
       .max_model_len = max_model_len,
       .num_kv_blocks = 1 + kLogitsStride * KvCacheLayerGroups(m.config).num_groups(),
       .block_size = kLogitsBlockSize},
      backend);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

// The prompt's logits within the tolerance of transformers' (its "logits" rows), computed as one
// sequence in blocks 1, 2, ... (block 0 is the null block) with logits for every row.
void ExpectPromptLogitsMatch(LlamaModel& model, const json& prompt, int64_t vocab) {
  const std::vector<int32_t> ids = prompt["ids"].get<std::vector<int32_t>>();
  const int32_t n = static_cast<int32_t>(ids.size());
  ForwardInput input;
  input.token_ids = ids;
  for (int32_t i = 0; i < n; ++i) {
    input.positions.push_back(i);
    input.slot_mapping.push_back(int64_t{1 + i / kLogitsBlockSize} * kLogitsBlockSize +
                                 i % kLogitsBlockSize);
    input.logits_rows.push_back(i);
  }
  input.query_start = {0, n};
  input.context_lens = {n};
  input.block_tables.assign(static_cast<size_t>(model.max_blocks_per_seq()), 0);
  for (int32_t b = 0; b * kLogitsBlockSize < n; ++b) {
    input.block_tables[static_cast<size_t>(b)] = 1 + b;
  }
  testing::SpreadOverKvGroups(model.kv_groups().num_groups(), kLogitsStride, kLogitsBlockSize,
                              input);
  std::vector<float> logits;
  const absl::Status status = model.Forward(input, &logits);
  ASSERT_TRUE(status.ok()) << status;
  const auto& hf = prompt["logits"];
  ASSERT_EQ(hf.size(), ids.size());
  double max_error = 0;
  for (size_t row = 0; row < hf.size(); ++row) {
    ASSERT_EQ(hf[row].size(), static_cast<size_t>(vocab));
    for (size_t v = 0; v < hf[row].size(); ++v) {
      const double want = hf[row][v].get<double>();
      const double got = logits[row * hf[row].size() + v];
      max_error = std::max(max_error, std::abs(got - want));
      ASSERT_LE(std::abs(got - want), 1e-4 + 1e-4 * std::abs(want))
          << "prompt of " << n << " tokens, row " << row << ", token " << v;
    }
  }
  ::testing::Test::RecordProperty(absl::StrCat("max_abs_error_len", n), std::to_string(max_error));
}

TEST_P(ModelParityTest, PromptLogitsMatchTransformers) {
  const Loaded m = Load(GetParam());
  CpuBackend backend(1);
  const std::unique_ptr<LlamaModel> model = LogitsModel(m, &backend);
  ASSERT_NE(model, nullptr);
  int checked_prompts = 0;
  for (const json& prompt : m.expected["prompts"]) {
    if (!prompt.contains("logits")) continue;
    ExpectPromptLogitsMatch(*model, prompt, m.config.vocab_size);
    ++checked_prompts;
  }
  EXPECT_GT(checked_prompts, 0) << "fixture has no prompt logits";
}

TEST_P(ModelParityTest, GreedyContinuationsMatchTransformers) {
  const Loaded m = Load(GetParam());
  CpuBackend backend(1);
  EngineOptions options{.max_num_seqs = 8,
                        .max_num_batched_tokens = 256,
                        .max_model_len = 128,
                        .block_size = 16,
                        .num_kv_blocks = 64};
  auto engine = Engine::Create(m.config, m.weights, options, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const json& prompts = m.expected["prompts"];
  RecordProperty("diverged_prompts", ExpectGreedyMatches(prompts, RunGreedy(**engine, prompts)));
}

// Phi-3's every layer attends 12 positions back, so the KV cache releases the blocks behind that
// window: each prompt plus its 32 tokens (up to 93) runs through a pool of 8 blocks of 4 tokens,
// in prefill chunks of 8, reusing its own released blocks; the tokens stay transformers'.
TEST(SlidingWindowParityTest, SequencesLongerThanTheWholeKvPoolMatchTransformers) {
  const Loaded m = Load("phi3-fused");
  ASSERT_EQ(KvCacheSlidingWindow(m.config), 12);
  CpuBackend backend(1);
  EngineOptions options{.max_num_seqs = 1,
                        .max_num_batched_tokens = 8,
                        .max_model_len = 128,
                        .block_size = 4,
                        .num_kv_blocks = 9};
  auto engine = Engine::Create(m.config, m.weights, options, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const json& prompts = m.expected["prompts"];
  ASSERT_GT(prompts.back()["ids"].size() + 32, 8u * 4) << "the longest must outrun the pool";
  EXPECT_EQ(ExpectGreedyMatches(prompts, RunGreedy(**engine, prompts)), 0);
  EXPECT_EQ((*engine)->Stats().scheduler.num_preemptions, 0);
}

// Gemma 2 and 3 mix windowed layers (16 positions) with global ones, so the KV cache keeps one
// block table per layer group (gemma2-softcap: one global and one windowed layer, 2 groups;
// gemma3-local-rope: 1 global and 5 windowed layers, 6 groups of one layer) and releases the
// windowed groups' blocks behind the window. Each prompt plus its 32 tokens (up to 93) runs alone
// through a pool smaller than keeping every group's every block would need, without preemption,
// and the tokens stay transformers'.
class LayerGroupParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LayerGroupParityTest, WindowedGroupsReleaseBlocksAndTheTokensMatchTransformers) {
  const Loaded m = Load(GetParam());
  const kvcache::LayerGroups groups = KvCacheLayerGroups(m.config);
  ASSERT_GT(groups.num_groups(), 1);
  const json& prompts = m.expected["prompts"];
  const int64_t longest = static_cast<int64_t>(prompts.back()["ids"].size()) + 32;
  constexpr int32_t kBlock = 4;
  constexpr int32_t kChunk = 8;
  // The global group keeps every block; each windowed one at most ceil((16 - 1 + 8) / 4) + 1.
  const int32_t windowed = groups.num_groups() - 1;
  const int32_t usable = static_cast<int32_t>((longest + kBlock - 1) / kBlock) + windowed * 7;
  const int64_t keep_every_block = (longest + kBlock - 1) / kBlock * groups.num_groups();
  ASSERT_GT(keep_every_block, usable) << "the pool must be too small to keep every block";
  CpuBackend backend(1);
  EngineOptions options{.max_num_seqs = 1,
                        .max_num_batched_tokens = kChunk,
                        .max_model_len = 128,
                        .block_size = kBlock,
                        .num_kv_blocks = usable + 1};
  auto engine = Engine::Create(m.config, m.weights, options, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ(ExpectGreedyMatches(prompts, RunGreedy(**engine, prompts)), 0);
  EXPECT_EQ((*engine)->Stats().scheduler.num_preemptions, 0);
}

INSTANTIATE_TEST_SUITE_P(Gemma, LayerGroupParityTest,
                         ::testing::Values("gemma2-softcap", "gemma3-local-rope"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param == "gemma2-softcap" ? "gemma2" : "gemma3";
                         });

// Phi-3.5's LongRoPE (phi3-longrope: pretrained at 16 positions, maximum 256). transformers picks
// the factor list per forward by the sequence's length, and its greedy steps here recompute the
// whole sequence; headroom picks one list per server by max_model_len (the long one beyond 16),
// so a sequence's cached keys never mix two rotations. Each comparison runs where the two agree:
// a server of max_model_len 16 against the prompts and tokens within 16 positions (short
// factors), one of 128 against the prompts longer than 16 (long factors throughout). Both also
// check the attention factor (sqrt 2 here). phi4-partial-rotary is the same with Phi-4-mini's
// partial rotary: the factors and the rotation cover the leading 12 of each head's 16 values.
class LongRopeParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LongRopeParityTest, TheShortAndTheLongFactorsMatchTransformersWhereItUsesThem) {
  const Loaded m = Load(GetParam());
  ASSERT_TRUE(m.config.long_rope.has_value());
  const int32_t original =
      static_cast<int32_t>(m.config.long_rope->original_max_position_embeddings);
  ASSERT_EQ(original, 16);
  const json& prompts = m.expected["prompts"];
  int logits_checked[2] = {0, 0};
  int greedy_checked[2] = {0, 0};
  for (const bool long_context : {false, true}) {
    SCOPED_TRACE(long_context ? "long factors" : "short factors");
    const int32_t max_model_len = long_context ? 128 : original;
    CpuBackend backend(1);
    const std::unique_ptr<LlamaModel> model = LogitsModel(m, &backend, max_model_len);
    ASSERT_NE(model, nullptr);
    std::vector<int32_t> max_tokens;
    for (const json& prompt : prompts) {
      const auto length = static_cast<int32_t>(prompt["ids"].size());
      const bool prompt_is_long = length > original;
      if (prompt.contains("logits") && prompt_is_long == long_context) {
        ExpectPromptLogitsMatch(*model, prompt, m.config.vocab_size);
        ++logits_checked[long_context];
      }
      // Short: the tokens up to position 15; long: all 32 of a prompt past 16.
      max_tokens.push_back(long_context ? (prompt_is_long ? 32 : 0)
                                        : std::max(0, original - length));
      greedy_checked[long_context] += max_tokens.back() > 0 ? 1 : 0;
    }
    auto engine = Engine::Create(m.config, m.weights,
                                 {.max_num_seqs = 4,
                                  .max_num_batched_tokens = 128,
                                  .max_model_len = max_model_len,
                                  .block_size = 16,
                                  .num_kv_blocks = 64},
                                 &backend);
    ASSERT_TRUE(engine.ok()) << engine.status();
    EXPECT_EQ(ExpectGreedyMatches(prompts, RunGreedy(**engine, prompts, max_tokens)), 0);
  }
  EXPECT_EQ(logits_checked[0], 1) << "the 7-token prompt";
  EXPECT_EQ(logits_checked[1], 1) << "the 23-token prompt";
  EXPECT_EQ(greedy_checked[0], 2) << "the prompts of 1 and 7 tokens";
  EXPECT_EQ(greedy_checked[1], 2) << "the prompts of 23 and 61 tokens";
}

INSTANTIATE_TEST_SUITE_P(Phi, LongRopeParityTest,
                         ::testing::Values("phi3-longrope", "phi4-partial-rotary"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param == "phi3-longrope" ? "phi35_whole_head"
                                                                      : "phi4_mini_partial";
                         });

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelParityTest,
                         ::testing::Values("llama-gqa", "qwen2-bias", "llama-tied", "qwen3-qknorm",
                                           "mixtral-moe", "qwen3-moe", "gemma2-softcap",
                                           "gemma3-local-rope", "gemma3-mm-text", "granite-mup",
                                           "granite-moe", "phi3-fused", "qwen2-yarn",
                                           "smollm3-nope", "glm4-sandwich", "glm-interleaved",
                                           "gemma-mqa", "qwen2-moe", "olmo2-postnorm", "olmoe",
                                           "olmo3-hybrid", "exaone4-hybrid", "seed-oss-bias",
                                           "glm4-moe", "dots1-moe"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace headroom::worker
