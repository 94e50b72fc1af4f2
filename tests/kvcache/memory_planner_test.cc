// Memory planner tests. Expected values are computed here from first principles (published
// parameter counts, the documented buffer list), never by calling the planner's own helpers.
#include "kvcache/memory_planner.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace headroom::kvcache {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Published config.json shapes.
ModelDims Llama3_8B() {
  return {.num_layers = 32,
          .hidden_size = 4096,
          .intermediate_size = 14336,
          .num_attention_heads = 32,
          .num_kv_heads = 8,
          .head_dim = 128,
          .vocab_size = 128256,
          .max_position_embeddings = 8192};
}
ModelDims Llama31_8B() {
  ModelDims dims = Llama3_8B();
  dims.max_position_embeddings = 131072;
  return dims;
}
ModelDims Llama3_70B() {
  return {.num_layers = 80,
          .hidden_size = 8192,
          .intermediate_size = 28672,
          .num_attention_heads = 64,
          .num_kv_heads = 8,
          .head_dim = 128,
          .vocab_size = 128256,
          .max_position_embeddings = 8192};
}
ModelDims Llama2_7B() {
  return {.num_layers = 32,
          .hidden_size = 4096,
          .intermediate_size = 11008,
          .num_attention_heads = 32,
          .num_kv_heads = 32,
          .head_dim = 128,
          .vocab_size = 32000,
          .max_position_embeddings = 4096};
}
ModelDims Mistral7B() {
  return {.num_layers = 32,
          .hidden_size = 4096,
          .intermediate_size = 14336,
          .num_attention_heads = 32,
          .num_kv_heads = 8,
          .head_dim = 128,
          .vocab_size = 32000,
          .max_position_embeddings = 32768};
}
ModelDims Qwen2_7B() {
  return {.num_layers = 28,
          .hidden_size = 3584,
          .intermediate_size = 18944,
          .num_attention_heads = 28,
          .num_kv_heads = 4,
          .head_dim = 128,
          .vocab_size = 152064,
          .max_position_embeddings = 131072,
          .qkv_bias = true};
}

ModelDims Qwen3_8B() {
  return {.num_layers = 36,
          .hidden_size = 4096,
          .intermediate_size = 12288,
          .num_attention_heads = 32,
          .num_kv_heads = 8,
          .head_dim = 128,
          .vocab_size = 151936,
          .max_position_embeddings = 40960,
          .qk_norm = true};
}

ModelDims Mixtral8x7B() {
  return {.num_layers = 32,
          .hidden_size = 4096,
          .intermediate_size = 14336,
          .num_attention_heads = 32,
          .num_kv_heads = 8,
          .head_dim = 128,
          .vocab_size = 32000,
          .max_position_embeddings = 32768,
          .num_experts = 8,
          .num_experts_per_tok = 2};
}

ModelDims Gemma2_2B() {  // head_dim 256 != 2304 / 8; four norms per layer; tied
  return {.num_layers = 26,
          .hidden_size = 2304,
          .intermediate_size = 9216,
          .num_attention_heads = 8,
          .num_kv_heads = 4,
          .head_dim = 256,
          .vocab_size = 256000,
          .max_position_embeddings = 8192,
          .tie_word_embeddings = true,
          .sandwich_norms = true};
}

ModelDims Gemma3_1B() {  // per-head q/k norms and four norms per layer; 1 KV head; tied
  return {.num_layers = 26,
          .hidden_size = 1152,
          .intermediate_size = 6912,
          .num_attention_heads = 4,
          .num_kv_heads = 1,
          .head_dim = 256,
          .vocab_size = 262144,
          .max_position_embeddings = 32768,
          .tie_word_embeddings = true,
          .qk_norm = true,
          .sandwich_norms = true};
}

ModelDims Phi4() {  // Phi3ForCausalLM: fused qkv / gate_up in the checkpoint, same count
  return {.num_layers = 40,
          .hidden_size = 5120,
          .intermediate_size = 17920,
          .num_attention_heads = 40,
          .num_kv_heads = 10,
          .head_dim = 128,
          .vocab_size = 100352,
          .max_position_embeddings = 16384};
}

ModelDims Qwen3_30B_A3B() {  // intermediate_size: each expert's (moe_intermediate_size)
  return {.num_layers = 48,
          .hidden_size = 2048,
          .intermediate_size = 768,
          .num_attention_heads = 32,
          .num_kv_heads = 4,
          .head_dim = 128,
          .vocab_size = 151936,
          .max_position_embeddings = 40960,
          .qk_norm = true,
          .num_experts = 128,
          .num_experts_per_tok = 8};
}

ModelDims Qwen15MoeA27B() {  // 60 experts of 1408 and a shared expert of 5632; q/k/v biases
  return {.num_layers = 24,
          .hidden_size = 2048,
          .intermediate_size = 1408,
          .num_attention_heads = 16,
          .num_kv_heads = 16,
          .head_dim = 128,
          .vocab_size = 151936,
          .max_position_embeddings = 32768,
          .qkv_bias = true,
          .num_experts = 60,
          .num_experts_per_tok = 4,
          .shared_expert_intermediate_size = 5632};
}

ModelDims OlmoE_1B_7B() {  // 64 experts of 1024; q/k norms across heads
  return {.num_layers = 16,
          .hidden_size = 2048,
          .intermediate_size = 1024,
          .num_attention_heads = 16,
          .num_kv_heads = 16,
          .head_dim = 128,
          .vocab_size = 50304,
          .max_position_embeddings = 4096,
          .qk_norm = true,
          .qk_norm_across_heads = true,
          .num_experts = 64,
          .num_experts_per_tok = 8};
}

ModelDims Olmo2_7B() {  // output norms only; q/k norms across heads
  return {.num_layers = 32,
          .hidden_size = 4096,
          .intermediate_size = 11008,
          .num_attention_heads = 32,
          .num_kv_heads = 32,
          .head_dim = 128,
          .vocab_size = 100352,
          .max_position_embeddings = 4096,
          .qk_norm = true,
          .qk_norm_across_heads = true,
          .sandwich_norms = true,
          .pre_norms = false};
}

// Published parameter counts (Hugging Face safetensors metadata / model cards).
constexpr int64_t kLlama3_8BParams = 8'030'261'248;
constexpr int64_t kLlama3_70BParams = 70'553'706'496;
constexpr int64_t kLlama2_7BParams = 6'738'415'616;
constexpr int64_t kMistral7BParams = 7'241'732'096;
constexpr int64_t kQwen2_7BParams = 7'615'616'512;
constexpr int64_t kQwen3_8BParams = 8'190'735'360;  // q_norm / k_norm: 2 x 128 per layer
constexpr int64_t kMixtral8x7BParams = 46'702'792'704;
constexpr int64_t kQwen3_30B_A3BParams = 30'532'122'624;
constexpr int64_t kQwen15MoeA27BParams = 14'315'784'192;  // + shared expert and its gate
constexpr int64_t kOlmo2_7BParams = 7'298'617'344;        // 2 output norms; q/k norms 2 x 4096
constexpr int64_t kOlmoE_1B_7BParams = 6'919'161'856;     // 6.92B; q/k norms 2 x 2048
constexpr int64_t kGemma2_2BParams = 2'614'341'888;  // pre/post_feedforward_layernorm: 2 x 2304
constexpr int64_t kPhi4Params = 14'659'507'200;
constexpr int64_t kGemma3_1BParams = 999'885'952;  // + q_norm / k_norm: 2 x 256 per layer

constexpr int64_t GiBBytes(double gib) {
  return static_cast<int64_t>(gib * static_cast<double>(kGiB));
}

MemoryPlanInput Input(const ModelDims& dims, double device_gib, int64_t max_model_len) {
  MemoryPlanInput input;
  input.model = dims;
  input.device_memory_bytes = GiBBytes(device_gib);
  input.max_model_len = max_model_len;
  return input;
}

MemoryPlan MustPlan(const MemoryPlanInput& input) {
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : MemoryPlan{};
}

std::string Gib2(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
}

// ---------------------------------------------------------------------------------------------
// Exact arithmetic.

TEST(MemoryPlannerTest, Llama3_8BKvPerTokenIs128KiB) {
  const MemoryPlan plan = MustPlan(Input(Llama3_8B(), 80, 8192));
  // 2 (K and V) x 32 layers x 8 KV heads x 128 head_dim x 2 bytes.
  EXPECT_EQ(plan.kv_bytes_per_token, 131072);
  EXPECT_EQ(plan.kv_bytes_per_block, 16 * 131072);
  EXPECT_EQ(plan.kv_heads_per_rank, 8);
}

TEST(MemoryPlannerTest, Llama2_7BKvPerTokenIs512KiB) {
  const MemoryPlan plan = MustPlan(Input(Llama2_7B(), 80, 4096));
  // MHA: 2 x 32 x 32 x 128 x 2 bytes.
  EXPECT_EQ(plan.kv_bytes_per_token, 524288);
}

TEST(MemoryPlannerTest, WeightsMatchPublishedParameterCounts) {
  struct Case {
    const char* name;
    ModelDims dims;
    int64_t params;
  };
  for (const Case& c :
       {Case{"llama-3-8b", Llama3_8B(), kLlama3_8BParams},
        Case{"llama-3-70b", Llama3_70B(), kLlama3_70BParams},
        Case{"llama-2-7b", Llama2_7B(), kLlama2_7BParams},
        Case{"mistral-7b", Mistral7B(), kMistral7BParams},
        Case{"qwen2-7b", Qwen2_7B(), kQwen2_7BParams},
        Case{"qwen3-8b", Qwen3_8B(), kQwen3_8BParams},
        Case{"mixtral-8x7b", Mixtral8x7B(), kMixtral8x7BParams},
        Case{"qwen3-30b-a3b", Qwen3_30B_A3B(), kQwen3_30B_A3BParams},
        Case{"qwen1.5-moe-a2.7b", Qwen15MoeA27B(), kQwen15MoeA27BParams},
        Case{"olmo-2-7b", Olmo2_7B(), kOlmo2_7BParams},
        Case{"olmoe-1b-7b", OlmoE_1B_7B(), kOlmoE_1B_7BParams},
        Case{"gemma-2-2b", Gemma2_2B(), kGemma2_2BParams}, Case{"phi-4", Phi4(), kPhi4Params},
        Case{"gemma-3-1b", Gemma3_1B(), kGemma3_1BParams}}) {
    MemoryPlanInput input = Input(c.dims, 1024, 4096);  // Big enough for all of them.
    const MemoryPlan plan = MustPlan(input);
    EXPECT_EQ(plan.weight_params_per_rank, c.params) << c.name;
    EXPECT_EQ(plan.weights_bytes, c.params * 2) << c.name;

    input.weight_dtype_bytes = 4;
    EXPECT_EQ(MustPlan(input).weights_bytes, c.params * 4) << c.name << " fp32";
  }
}

// Expert counts are bounded like every other dimension, so no product of the plan can wrap.
TEST(MemoryPlannerTest, ExpertCountsAreBounded) {
  ModelDims dims = Mixtral8x7B();
  dims.num_experts = 4097;
  absl::StatusOr<MemoryPlan> plan = PlanMemory(Input(dims, 1024, 4096));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("num_experts"));
  dims.num_experts = 8;
  dims.num_experts_per_tok = 9;
  plan = PlanMemory(Input(dims, 1024, 4096));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("num_experts_per_tok"));
}

TEST(MemoryPlannerTest, TiedEmbeddingsAreStoredOnce) {
  ModelDims dims = Llama3_8B();
  dims.tie_word_embeddings = true;
  const MemoryPlan plan = MustPlan(Input(dims, 80, 8192));
  EXPECT_EQ(plan.weight_params_per_rank, kLlama3_8BParams - 128256 * 4096);
}

TEST(MemoryPlannerTest, BiasesAreCounted) {
  ModelDims dims = Llama3_8B();
  dims.qkv_bias = true;
  dims.o_proj_bias = true;
  dims.mlp_bias = true;
  // Per layer: q/k/v biases 4096 + 2 x 1024, o bias 4096, gate/up biases 2 x 14336, down 4096.
  const int64_t per_layer = 4096 + 2048 + 4096 + 2 * 14336 + 4096;
  EXPECT_EQ(MustPlan(Input(dims, 80, 8192)).weight_params_per_rank,
            kLlama3_8BParams + 32 * per_layer);
}

TEST(MemoryPlannerTest, TensorParallelShardsEverythingButNorms) {
  // With vocab and KV heads divisible by tp, tp shards together hold the full model plus
  // (tp - 1) extra copies of the replicated norms: 2 per layer and the final one.
  const int64_t replicated = 32 * 2 * 4096 + 4096;
  for (int64_t tp : {2, 4, 8}) {
    MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
    input.tensor_parallel_size = tp;
    const MemoryPlan plan = MustPlan(input);
    EXPECT_EQ(plan.weight_params_per_rank * tp - (tp - 1) * replicated, kLlama3_8BParams)
        << "tp " << tp;
  }
}

TEST(MemoryPlannerTest, TensorParallelTwoHalvesKvPerToken) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  input.tensor_parallel_size = 2;
  const MemoryPlan plan = MustPlan(input);
  EXPECT_EQ(plan.kv_heads_per_rank, 4);
  EXPECT_EQ(plan.kv_bytes_per_token, 65536);
}

TEST(MemoryPlannerTest, KvHeadsAreReplicatedWhenTpExceedsThem) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  input.tensor_parallel_size = 16;
  const MemoryPlan plan = MustPlan(input);
  EXPECT_EQ(plan.kv_heads_per_rank, 1);
  EXPECT_EQ(plan.kv_bytes_per_token, 2 * 32 * 1 * 128 * 2);
  // q: 2 heads x 128; k, v: one replicated head each; o: 256 x 4096; MLP: 14336 / 16 = 896.
  const int64_t per_layer = 4096 * 256 + 2 * 4096 * 128 + 256 * 4096 + 3 * 4096 * 896 + 2 * 4096;
  EXPECT_EQ(plan.weight_params_per_rank, 32 * per_layer + 2 * (128256 / 16) * 4096 + 4096);
}

TEST(MemoryPlannerTest, VocabIsPaddedToAMultipleOfTp) {
  const ModelDims dims{.num_layers = 1,
                       .hidden_size = 12,
                       .intermediate_size = 24,
                       .num_attention_heads = 6,
                       .num_kv_heads = 6,
                       .head_dim = 2,
                       .vocab_size = 100};
  MemoryPlanInput input = Input(dims, 4, 64);
  input.tensor_parallel_size = 3;
  input.max_num_seqs = 4;
  input.max_num_batched_tokens = 64;
  // 100 rows padded to 102: 34 per rank. Per layer: q 12x4, k/v 12x4 each, o 4x12, MLP 3x12x8.
  const int64_t per_layer = 12 * 4 + 2 * 12 * 4 + 4 * 12 + 3 * 12 * 8 + 2 * 12;
  EXPECT_EQ(MustPlan(input).weight_params_per_rank, per_layer + 2 * 34 * 12 + 12);
}

TEST(MemoryPlannerTest, BudgetIsFloorOfDeviceTimesUtilization) {
  EXPECT_EQ(MustPlan(Input(Llama3_8B(), 80, 8192)).budget_bytes, 72 * kGiB);
  MemoryPlanInput input = Input(Llama3_8B(), 24, 8192);
  input.gpu_memory_utilization = 0.95;
  // 24 GiB x 0.95 = 24481313587.2 bytes.
  EXPECT_EQ(MustPlan(input).budget_bytes, 24481313587);
}

TEST(MemoryPlannerTest, Llama3_8BActivationArenaFromTheBufferList) {
  const MemoryPlan plan = MustPlan(Input(Llama3_8B(), 80, 8192));
  const ActivationArena& a = plan.arena;
  const int64_t t = 8192;  // kDefaultMaxNumBatchedTokens
  const int64_t s = 256;   // kDefaultMaxNumSeqs
  const int64_t v = 128256;
  // hidden, residual, normed (3 x 4096); qkv (4096 + 2 x 1024); attn out (4096);
  // gate_up (2 x 14336); act (14336); bf16.
  EXPECT_EQ(a.token_buffers_bytes,
            t * (3 * 4096 + (4096 + 2 * 1024) + 4096 + 2 * 14336 + 14336) * 2);
  EXPECT_EQ(a.token_buffers_bytes, kGiB);  // A nice coincidence for Llama-3-8B at 8192 tokens.
  // Last hidden row per sequence (bf16), LM head output (bf16), fp32 logits.
  EXPECT_EQ(a.logits_bytes, s * 4096 * 2 + s * v * 2 + s * v * 4);
  // probs + logprobs + 2 sort key buffers + 2 int32 index buffers, all s x v x 4, + scratch.
  EXPECT_EQ(a.sampler_bytes, 6 * s * v * 4 + 16 * kMiB);
  // 16 split-KV partials per (sequence, head): 128 fp32 outputs + max and sum.
  EXPECT_EQ(a.attention_scratch_bytes, s * 32 * 16 * (128 + 2) * 4);
  // Token ids (4), positions (8), slots (8) per token; 512-entry int32 block table + 64 bytes
  // of lengths and sampling parameters per sequence.
  EXPECT_EQ(a.metadata_bytes, t * (4 + 8 + 8) + s * 512 * 4 + s * 64);
  // fp32 cos/sin for 8192 positions x 128.
  EXPECT_EQ(a.rope_cache_bytes, 8192 * 128 * 4);
  EXPECT_EQ(a.total_bytes, a.token_buffers_bytes + a.logits_bytes + a.sampler_bytes +
                               a.attention_scratch_bytes + a.metadata_bytes + a.rope_cache_bytes);
}

// A shared expert wider than a token's top_k expert rows widens gate_up and act to its width (it
// runs in the same buffers); OLMo 2 across ranks adds two fp32 sums of squares per token.
TEST(MemoryPlannerTest, ArenaHoldsAWideSharedExpertAndTheQkNormSums) {
  const int64_t t = 8192;            // kDefaultMaxNumBatchedTokens
  ModelDims dims = Qwen15MoeA27B();  // top 4 x 1408 = 5632 = the shared expert's width
  const int64_t narrow = MustPlan(Input(dims, 80, 4096)).arena.token_buffers_bytes;
  dims.shared_expert_intermediate_size = 4 * 5632;
  EXPECT_EQ(MustPlan(Input(dims, 80, 4096)).arena.token_buffers_bytes - narrow,
            t * 3 * (4 * 5632 - 5632) * 2)  // gate_up (2x) and act (1x), bf16
      << "the shared expert's rows, not the routed ones', size the buffers";

  MemoryPlanInput input = Input(Olmo2_7B(), 80, 4096);
  const int64_t one_rank = MustPlan(input).arena.token_buffers_bytes;
  input.tensor_parallel_size = 2;
  MemoryPlanInput per_head = input;
  per_head.model.qk_norm_across_heads = false;
  EXPECT_EQ(
      MustPlan(input).arena.token_buffers_bytes - MustPlan(per_head).arena.token_buffers_bytes,
      2 * t * 4);
  EXPECT_GT(one_rank, MustPlan(input).arena.token_buffers_bytes);  // the rest is split
}

TEST(MemoryPlannerTest, Llama3_8BOn80GiBAccountsForEveryByte) {
  const MemoryPlan plan = MustPlan(Input(Llama3_8B(), 80, 8192));
  EXPECT_EQ(plan.device_memory_bytes, 80 * kGiB);
  EXPECT_EQ(plan.weights_bytes, kLlama3_8BParams * 2);
  EXPECT_EQ(plan.nccl_bytes, 0);
  EXPECT_EQ(plan.workspace_bytes, kCublasWorkspaceBytes);
  const int64_t expected_kv = 72 * kGiB - kLlama3_8BParams * 2 - plan.arena.total_bytes -
                              kCublasWorkspaceBytes - kCudaContextBytes - kCudaGraphBytes -
                              kSafetyMarginBytes;
  EXPECT_EQ(plan.kv_cache_bytes, expected_kv);
  EXPECT_EQ(plan.num_blocks, expected_kv / (2 * kMiB));
  EXPECT_EQ(plan.num_usable_blocks, plan.num_blocks - 1);
  EXPECT_EQ(plan.num_tokens, plan.num_usable_blocks * 16);
  EXPECT_EQ(plan.blocks_per_max_len_seq, 512);
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(plan.num_usable_blocks) / 512);
  EXPECT_EQ(plan.typical_request_tokens, 1024);
  EXPECT_DOUBLE_EQ(plan.max_concurrency_typical, static_cast<double>(plan.num_usable_blocks) / 64);
  // Pinned: the table in docs/memory.md shows these numbers.
  EXPECT_EQ(plan.num_blocks, 27652);
  EXPECT_EQ(plan.num_tokens, 442416);
}

TEST(MemoryPlannerTest, NcclIsReservedOnlyWithTensorParallelism) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  EXPECT_EQ(MustPlan(input).nccl_bytes, 0);
  input.tensor_parallel_size = 2;
  const MemoryPlan plan = MustPlan(input);
  EXPECT_EQ(plan.nccl_bytes, kNcclBufferBytes);
  EXPECT_EQ(plan.workspace_bytes, kCublasWorkspaceBytes + kNcclBufferBytes);
}

TEST(MemoryPlannerTest, ShortMaxModelLenCapsTheTypicalLength) {
  const MemoryPlan plan = MustPlan(Input(Llama3_8B(), 80, 512));
  EXPECT_EQ(plan.typical_request_tokens, 512);
  EXPECT_DOUBLE_EQ(plan.max_concurrency_typical, plan.max_concurrency);
}

TEST(MemoryPlannerTest, MaxModelLenNotAMultipleOfBlockSizeRoundsUpInBlocks) {
  const MemoryPlan plan = MustPlan(Input(Llama3_8B(), 80, 1000));
  EXPECT_EQ(plan.blocks_per_max_len_seq, 63);  // ceil(1000 / 16)
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(plan.num_usable_blocks) / 63);
}

// ---------------------------------------------------------------------------------------------
// Monotonicity.

TEST(MemoryPlannerTest, MoreDeviceMemoryNeverGivesFewerBlocks) {
  int64_t previous = -1;
  for (double gib = 20; gib <= 200; gib += 0.25) {
    const absl::StatusOr<MemoryPlan> plan = PlanMemory(Input(Llama3_8B(), gib, 8192));
    const int64_t blocks = plan.ok() ? plan->num_blocks : 0;
    EXPECT_GE(blocks, previous) << gib << " GiB";
    previous = blocks;
  }
  EXPECT_GT(previous, 0);
}

TEST(MemoryPlannerTest, HigherUtilizationNeverGivesFewerBlocks) {
  int64_t previous = -1;
  for (int hundredths = 1; hundredths <= 100; ++hundredths) {
    MemoryPlanInput input = Input(Llama3_8B(), 40, 8192);
    input.gpu_memory_utilization = hundredths / 100.0;
    const absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
    const int64_t blocks = plan.ok() ? plan->num_blocks : 0;
    EXPECT_GE(blocks, previous) << input.gpu_memory_utilization;
    previous = blocks;
  }
}

TEST(MemoryPlannerTest, LongerContextsAndBiggerStepsNeverGiveMoreBlocks) {
  int64_t previous = INT64_MAX;
  for (int64_t len = 16; len <= 8192; len *= 2) {
    const MemoryPlan plan = MustPlan(Input(Llama3_8B(), 80, len));
    EXPECT_LE(plan.num_blocks, previous) << len;
    previous = plan.num_blocks;
  }
  previous = INT64_MAX;
  for (int64_t tokens = 256; tokens <= 65536; tokens *= 2) {
    MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
    input.max_num_batched_tokens = tokens;
    const MemoryPlan plan = MustPlan(input);
    EXPECT_LE(plan.num_blocks, previous) << tokens;
    previous = plan.num_blocks;
  }
}

TEST(MemoryPlannerTest, BlockSizeChangesTokensOnlyByRounding) {
  const MemoryPlan base = MustPlan(Input(Llama3_8B(), 80, 8192));
  for (int64_t block_size = 1; block_size <= 256; block_size *= 2) {
    MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
    input.block_size = block_size;
    const MemoryPlan plan = MustPlan(input);
    EXPECT_EQ(plan.kv_bytes_per_block, block_size * 131072);
    // Tokens = whole blocks minus the null block: within two blocks of the exact quotient.
    const int64_t exact_tokens = plan.kv_cache_bytes / plan.kv_bytes_per_token;
    EXPECT_LE(plan.num_tokens, exact_tokens - block_size) << block_size;
    EXPECT_GT(plan.num_tokens, exact_tokens - 2 * block_size) << block_size;
    // Across block sizes: rounding of both, plus the block tables' size difference.
    const int64_t arena_tokens =
        std::abs(plan.arena.total_bytes - base.arena.total_bytes) / 131072 + 1;
    EXPECT_LE(std::abs(plan.num_tokens - base.num_tokens),
              2 * std::max<int64_t>(block_size, 16) + arena_tokens)
        << block_size;
  }
}

// ---------------------------------------------------------------------------------------------
// Validation refusals (a) and tensor-parallel refusals (b).

void ExpectInvalid(const MemoryPlanInput& input, const std::string& needle) {
  const absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_FALSE(plan.ok()) << needle;
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(needle));
}

TEST(MemoryPlannerTest, UtilizationMustBeInZeroOne) {
  for (double util : {0.0, -0.1, 1.5, 1.0000001, std::nan("")}) {
    MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
    input.gpu_memory_utilization = util;
    ExpectInvalid(input, "--gpu-memory-utilization must be in (0, 1]");
  }
  MemoryPlanInput full = Input(Llama3_8B(), 80, 8192);
  full.gpu_memory_utilization = 1.0;
  EXPECT_EQ(MustPlan(full).budget_bytes, 80 * kGiB);
}

TEST(MemoryPlannerTest, BlockSizeMustBeASupportedPowerOfTwo) {
  for (int64_t block_size : {0, -16, 3, 24, 512}) {
    MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
    input.block_size = block_size;
    ExpectInvalid(
        input, absl::StrCat("--block-size must be a power of two from 1 to 256",
                            " (vLLM's CUDA sizes 8, 16, 32, 64, 128 included), got ", block_size));
  }
}

TEST(MemoryPlannerTest, LimitsMustBePositive) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 0);
  ExpectInvalid(input, "--max-model-len must be between 1 and");
  input = Input(Llama3_8B(), 80, 8192);
  input.max_num_seqs = 0;
  ExpectInvalid(input, "--max-num-seqs must be between 1 and");
  input = Input(Llama3_8B(), 80, 8192);
  input.max_num_batched_tokens = -1;
  ExpectInvalid(input, "--max-num-batched-tokens must be between 1 and");
  input = Input(Llama3_8B(), 80, 8192);
  input.tensor_parallel_size = 0;
  ExpectInvalid(input, "--tensor-parallel-size must be between 1 and");
  input = Input(Llama3_8B(), 0, 8192);
  ExpectInvalid(input, "device memory must be between");
  input = Input(Llama3_8B(), 80, 8192);
  input.kv_cache_dtype_bytes = 3;
  ExpectInvalid(input, "--kv-cache-dtype element size must be 1, 2 or 4 bytes");
}

TEST(MemoryPlannerTest, HugeInputsAreRefusedNotOverflowed) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, kMaxModelLen + 1);
  ExpectInvalid(input, "--max-model-len must be between 1 and 134217728");
  input = Input(Llama3_8B(), 80, 8192);
  input.device_memory_bytes = INT64_MAX;
  ExpectInvalid(input, "device memory must be between");
  input = Input(Llama3_8B(), 80, 8192);
  input.model.hidden_size = int64_t{1} << 40;
  ExpectInvalid(input, "model hidden_size must be between");
  input = Input(Llama3_8B(), 80, 8192);
  input.model.num_kv_heads = 0;
  ExpectInvalid(input, "model num_key_value_heads must be between");
}

TEST(MemoryPlannerTest, BatchedTokensBelowSeqsIsRefusedBelowModelLenIsNot) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  input.max_num_batched_tokens = 128;
  input.max_num_seqs = 256;
  ExpectInvalid(input, "every running sequence needs one token per decode step");
  // Chunked prefill: a step smaller than max_model_len is fine.
  input.max_num_batched_tokens = 2048;
  EXPECT_TRUE(PlanMemory(input).ok());
}

TEST(MemoryPlannerTest, TpMustShardHeads) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  input.tensor_parallel_size = 3;
  ExpectInvalid(input,
                "--tensor-parallel-size 3 cannot shard this model: the 32 attention heads "
                "are not divisible by 3");
  ExpectInvalid(input, "Valid sizes for this model: 1, 2, 4, 8, 16, 32");
  input.tensor_parallel_size = 64;
  ExpectInvalid(input, "the 32 attention heads are not divisible by 64");
}

TEST(MemoryPlannerTest, TpMustSplitOrReplicateKvHeads) {
  const ModelDims dims{.num_layers = 2,
                       .hidden_size = 1536,
                       .intermediate_size = 4608,
                       .num_attention_heads = 24,
                       .num_kv_heads = 6,
                       .head_dim = 64,
                       .vocab_size = 1000};
  MemoryPlanInput input = Input(dims, 16, 1024);
  input.tensor_parallel_size = 4;
  ExpectInvalid(input, "the 6 KV heads can neither be split 4 ways nor replicated onto 4 ranks");
  ExpectInvalid(input, "Valid sizes for this model: 1, 2, 3, 6, 12, 24");
  input.tensor_parallel_size = 12;  // Replicated: each rank keeps one of the 6 KV heads.
  EXPECT_EQ(MustPlan(input).kv_heads_per_rank, 1);
}

TEST(MemoryPlannerTest, TpMustDivideIntermediateSize) {
  ModelDims dims = Llama3_8B();
  dims.intermediate_size = 14335;
  MemoryPlanInput input = Input(dims, 80, 8192);
  input.tensor_parallel_size = 2;
  ExpectInvalid(input, "intermediate_size 14335 is not divisible by 2");
}

// A shared expert is split like the routed ones; its gate is replicated like the router.
TEST(MemoryPlannerTest, TensorParallelShardsTheSharedExpert) {
  // Replicated per layer: two norms, the router [60, 2048] and the shared gate [1, 2048].
  const int64_t replicated = 24 * (2 * 2048 + 60 * 2048 + 2048) + 2048;
  for (int64_t tp : {2, 4, 8}) {
    MemoryPlanInput input = Input(Qwen15MoeA27B(), 80, 8192);
    input.tensor_parallel_size = tp;
    const MemoryPlan plan = MustPlan(input);
    EXPECT_EQ(plan.weight_params_per_rank * tp - (tp - 1) * replicated, kQwen15MoeA27BParams)
        << "tp " << tp;
  }
  ModelDims dims = Qwen15MoeA27B();
  dims.shared_expert_intermediate_size = 5630;
  MemoryPlanInput input = Input(dims, 80, 8192);
  input.tensor_parallel_size = 4;
  ExpectInvalid(input, "shared_expert_intermediate_size 5630 is not divisible by 4");
  ExpectInvalid(input, "Valid sizes for this model: 1, 2");
  // A shared expert belongs to a mixture of experts.
  dims = Llama3_8B();
  dims.shared_expert_intermediate_size = 1024;
  ExpectInvalid(Input(dims, 80, 8192), "shared_expert_intermediate_size must be between 0 and 0");
}

// zai-org/GLM-4.5-Air's config.json: 128 sigmoid-routed experts of 1408 with a correction bias,
// one ungated shared expert, the first layer dense of 10944; 96 heads of 128, 8 KV heads.
ModelDims Glm45Air() {
  return {.num_layers = 46,
          .hidden_size = 4096,
          .intermediate_size = 1408,
          .num_attention_heads = 96,
          .num_kv_heads = 8,
          .head_dim = 128,
          .vocab_size = 151552,
          .max_position_embeddings = 131072,
          .qkv_bias = true,
          .num_experts = 128,
          .num_experts_per_tok = 8,
          .moe_correction_bias = true,
          .shared_expert_intermediate_size = 1408,
          .shared_expert_gated = false,
          .num_dense_mlp_layers = 1,
          .dense_intermediate_size = 10944};
}

// Its model card: "106 billion total parameters" (its multi-token-prediction layer, which vLLM
// loads only to speculate, left out). A dense layer holds its MLP in place of the experts.
TEST(MemoryPlannerTest, Glm45AirCountsItsDenseLayerAndExpertsAsItsModelCard) {
  const ModelDims air = Glm45Air();
  const MemoryPlan plan = MustPlan(Input(air, 1024, 4096));
  EXPECT_GE(plan.weight_params_per_rank, 106'000'000'000);
  EXPECT_LT(plan.weight_params_per_rank, 107'000'000'000);

  ModelDims all_experts = air;
  all_experts.num_dense_mlp_layers = 0;
  const int64_t h = 4096;
  const int64_t experts_mlp = 128 * (3 * h * 1408 + h)  // experts and router rows
                              + 128                     // correction bias
                              + 3 * h * 1408;           // the shared expert, no gate
  EXPECT_EQ(
      MustPlan(Input(all_experts, 1024, 4096)).weight_params_per_rank - plan.weight_params_per_rank,
      experts_mlp - 3 * h * 10944);
  ModelDims gated = air;
  gated.shared_expert_gated = true;
  EXPECT_EQ(MustPlan(Input(gated, 1024, 4096)).weight_params_per_rank - plan.weight_params_per_rank,
            45 * h)
      << "a gate [hidden] on each of the 45 expert layers' shared expert";

  // The dense layers are split like the experts, and must divide like them.
  MemoryPlanInput input = Input(air, 80, 8192);
  input.tensor_parallel_size = 4;
  const int64_t replicated = 46 * 2 * h + 45 * (128 * h + 128) + h;  // norms, routers, biases
  EXPECT_EQ(MustPlan(input).weight_params_per_rank * 4 - 3 * replicated,
            plan.weight_params_per_rank);
  input.model.dense_intermediate_size = 10946;
  ExpectInvalid(input, "the dense layers' intermediate_size 10946 is not divisible by 4");
  // The dense MLP's width sizes gate_up and act when it is the widest of the MLPs.
  const int64_t t = 8192;
  const int64_t routed = MustPlan(Input(air, 1024, 4096)).arena.token_buffers_bytes;
  ModelDims wide = air;
  wide.dense_intermediate_size = 8 * 1408 * 2;
  EXPECT_EQ(MustPlan(Input(wide, 1024, 4096)).arena.token_buffers_bytes - routed,
            t * 3 * (8 * 1408 * 2 - 8 * 1408) * 2);
  // Dense layers belong to a mixture of experts.
  ModelDims dense = Llama3_8B();
  dense.num_dense_mlp_layers = 1;
  ExpectInvalid(Input(dense, 80, 8192), "num_dense_mlp_layers must be between 0 and 0");
}

// OLMo 2's q/k norms span every head, so they are split with the heads, not replicated.
TEST(MemoryPlannerTest, TensorParallelSplitsQkNormsAcrossHeads) {
  const int64_t replicated = 32 * 2 * 4096 + 4096;  // the two output norms, the final norm
  for (int64_t tp : {2, 4}) {
    MemoryPlanInput input = Input(Olmo2_7B(), 80, 4096);
    input.tensor_parallel_size = tp;
    EXPECT_EQ(MustPlan(input).weight_params_per_rank * tp - (tp - 1) * replicated, kOlmo2_7BParams)
        << "tp " << tp;
  }
}

TEST(MemoryPlannerTest, ValidTensorParallelSizesListsEveryShardableSize) {
  EXPECT_THAT(ValidTensorParallelSizes(Llama3_8B()), ::testing::ElementsAre(1, 2, 4, 8, 16, 32));
  EXPECT_THAT(ValidTensorParallelSizes(Qwen2_7B()), ::testing::ElementsAre(1, 2, 4));
}

TEST(MemoryPlannerTest, MaxModelLenAboveMaxPositionsIsRefused) {
  ExpectInvalid(Input(Llama3_8B(), 80, 16384),
                "--max-model-len 16384 exceeds the model's max_position_embeddings (8192)");
  ModelDims unknown = Llama3_8B();
  unknown.max_position_embeddings = 0;  // Unknown: no cap.
  EXPECT_TRUE(PlanMemory(Input(unknown, 80, 16384)).ok());
}

// ---------------------------------------------------------------------------------------------
// Memory refusals (c), (d), (e): each suggested fix is re-planned here.

absl::Status Refusal(const MemoryPlanInput& input) {
  const absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  EXPECT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition) << plan.status();
  return plan.status();
}

bool Fits(MemoryPlanInput input) { return PlanMemory(input).ok(); }

// Every fix must fit on its own, and be the extreme value that does. The capped --max-model-len
// must pass the full planner; the other fixes are memory fixes, so they are checked without the
// max_position_embeddings cap (the refusal's note says the cap still applies).
void ExpectFixesWork(const MemoryPlanInput& original, const MemoryFixes& fixes) {
  MemoryPlanInput input = original;
  input.model.max_position_embeddings = 0;
  if (fixes.max_model_len > 0) {
    MemoryPlanInput trial = original;
    trial.max_model_len = fixes.max_model_len;
    EXPECT_TRUE(Fits(trial)) << "max_model_len " << fixes.max_model_len;
    trial = input;
    EXPECT_EQ(fixes.max_model_len_by_memory % input.block_size, 0);
    trial.max_model_len = fixes.max_model_len_by_memory;
    if (fixes.max_model_len == fixes.max_model_len_by_memory) {
      EXPECT_TRUE(Fits(trial));
    }
    trial.max_model_len = fixes.max_model_len_by_memory + 1;
    EXPECT_FALSE(Fits(trial)) << "max_model_len + 1";
    trial.max_model_len = fixes.max_model_len_by_memory + input.block_size;
    EXPECT_FALSE(Fits(trial)) << "max_model_len + block_size";
  }
  if (fixes.gpu_memory_utilization > 0) {
    MemoryPlanInput trial = input;
    trial.gpu_memory_utilization = fixes.gpu_memory_utilization;
    EXPECT_TRUE(Fits(trial)) << "utilization " << fixes.gpu_memory_utilization;
    trial.gpu_memory_utilization = fixes.gpu_memory_utilization - 0.01;
    if (trial.gpu_memory_utilization > 0) {
      EXPECT_FALSE(Fits(trial)) << "utilization - 0.01";
    }
    EXPECT_LE(fixes.needed_utilization, fixes.gpu_memory_utilization);
  } else {
    EXPECT_GT(fixes.needed_utilization, 1.0);
  }
  if (fixes.tensor_parallel_size > 0) {
    MemoryPlanInput trial = input;
    trial.tensor_parallel_size = fixes.tensor_parallel_size;
    EXPECT_TRUE(Fits(trial)) << "tp " << fixes.tensor_parallel_size;
    for (int64_t tp : ValidTensorParallelSizes(input.model)) {
      if (tp <= input.tensor_parallel_size || tp >= fixes.tensor_parallel_size) continue;
      trial.tensor_parallel_size = tp;
      EXPECT_FALSE(Fits(trial)) << "smaller tp " << tp;
    }
  }
  if (fixes.max_num_batched_tokens > 0) {
    MemoryPlanInput trial = input;
    trial.max_num_batched_tokens = fixes.max_num_batched_tokens;
    EXPECT_TRUE(Fits(trial));
    trial.max_num_batched_tokens = fixes.max_num_batched_tokens + 1;
    EXPECT_FALSE(Fits(trial));
  }
  if (fixes.max_num_seqs > 0) {
    MemoryPlanInput trial = input;
    trial.max_num_seqs = fixes.max_num_seqs;
    EXPECT_TRUE(Fits(trial));
    trial.max_num_seqs = fixes.max_num_seqs + 1;
    EXPECT_FALSE(Fits(trial));
  }
  if (fixes.block_size > 0) {
    MemoryPlanInput trial = input;
    trial.block_size = fixes.block_size;
    EXPECT_TRUE(Fits(trial));
  }
}

TEST(MemoryPlannerTest, FittingInputNeedsNoFixes) {
  const MemoryFixes fixes = SuggestFixes(Input(Llama3_8B(), 80, 8192));
  EXPECT_EQ(fixes.max_model_len, 0);
  EXPECT_EQ(fixes.gpu_memory_utilization, 0);
  EXPECT_EQ(fixes.tensor_parallel_size, 0);
}

TEST(MemoryPlannerTest, WeightsExceedBudget) {
  MemoryPlanInput input = Input(Llama3_70B(), 80, 8192);
  const absl::Status status = Refusal(input);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("the model's weights do not fit"),
                    HasSubstr(absl::StrCat(Gib2(kLlama3_70BParams * 2),
                                           " per GPU at --tensor-parallel-size 1")),
                    HasSubstr("72.00 GiB budget (80.00 GiB x --gpu-memory-utilization 0.90)"),
                    HasSubstr("--tensor-parallel-size 2 (the smallest that fits"),
                    HasSubstr("--gpu-memory-utilization: no value <= 1.00 fits"),
                    Not(HasSubstr("--max-num-seqs"))));
  const MemoryFixes fixes = SuggestFixes(input);
  EXPECT_EQ(fixes.tensor_parallel_size, 2);
  EXPECT_EQ(fixes.gpu_memory_utilization, 0);
  EXPECT_EQ(fixes.max_model_len, 0);
  EXPECT_EQ(fixes.max_num_batched_tokens, 0);
  ExpectFixesWork(input, fixes);
}

TEST(MemoryPlannerTest, WeightsExceedBudgetButAHigherUtilizationFits) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  input.gpu_memory_utilization = 0.15;  // 12 GiB budget < 14.96 GiB of weights.
  const absl::Status status = Refusal(input);
  const MemoryFixes fixes = SuggestFixes(input);
  ASSERT_GT(fixes.gpu_memory_utilization, 0.15);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrFormat("--gpu-memory-utilization %.2f (the smallest that fits)",
                                        fixes.gpu_memory_utilization)));
  ExpectFixesWork(input, fixes);
}

TEST(MemoryPlannerTest, OverheadsLeaveNoKvBlock) {
  MemoryPlanInput input = Input(Llama3_8B(), 19.5, 2048);
  const absl::Status status = Refusal(input);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("no memory left for the KV cache"),
                    HasSubstr("activation arena 2.00 GiB (for --max-num-batched-tokens 8192 and "
                              "--max-num-seqs 256)"),
                    HasSubstr("Lower --max-num-batched-tokens or --max-num-seqs")));
  const MemoryFixes fixes = SuggestFixes(input);
  EXPECT_GT(fixes.max_num_batched_tokens, 256);
  EXPECT_LT(fixes.max_num_batched_tokens, 8192);
  EXPECT_GT(fixes.max_num_seqs, 0);
  EXPECT_LT(fixes.max_num_seqs, 256);
  EXPECT_GT(fixes.gpu_memory_utilization, 0.9);
  EXPECT_EQ(fixes.tensor_parallel_size, 2);
  EXPECT_THAT(
      std::string(status.message()),
      AllOf(
          HasSubstr(absl::StrCat("--max-num-batched-tokens ", fixes.max_num_batched_tokens)),
          HasSubstr(absl::StrCat("--max-num-seqs ", fixes.max_num_seqs)),
          HasSubstr(absl::StrFormat("--gpu-memory-utilization %.2f", fixes.gpu_memory_utilization)),
          HasSubstr("--tensor-parallel-size 2")));
  ExpectFixesWork(input, fixes);
}

TEST(MemoryPlannerTest, OneSequenceDoesNotFit) {
  // Llama-3.1-8B at its full 128k context on a 24 GiB GPU.
  MemoryPlanInput input = Input(Llama31_8B(), 24, 131072);
  const absl::Status status = Refusal(input);
  // 131072 tokens x 128 KiB = 16 GiB.
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("cannot hold one sequence of --max-model-len 131072 tokens"),
                    HasSubstr("needed 16.00 GiB KV cache per GPU (8192 blocks of 16 tokens"),
                    HasSubstr("available "), Not(HasSubstr("max_position_embeddings"))));
  const MemoryFixes fixes = SuggestFixes(input);
  EXPECT_GT(fixes.max_model_len, 8192);
  EXPECT_EQ(fixes.max_model_len, fixes.max_model_len_by_memory);
  EXPECT_EQ(fixes.gpu_memory_utilization, 0);  // 24 GiB cannot hold weights + 16 GiB.
  EXPECT_GT(fixes.needed_utilization, 1.0);
  EXPECT_EQ(fixes.tensor_parallel_size, 2);
  EXPECT_THAT(
      std::string(status.message()),
      AllOf(HasSubstr(
                absl::StrCat("--max-model-len ", fixes.max_model_len, " (the largest that fits)")),
            HasSubstr(absl::StrFormat("no value <= 1.00 fits (it would need %.2f x 24.00 GiB)",
                                      fixes.needed_utilization)),
            HasSubstr("--tensor-parallel-size 2 (the smallest that fits")));
  ExpectFixesWork(input, fixes);
}

// Mistral-7B's layer shape, 12 layers, every layer attending the whole context.
ModelDims TwelveLayers() {
  ModelDims dims = Mistral7B();
  dims.num_layers = 12;
  return dims;
}

// The same 12 layers as Gemma 3 groups them: 2 global + 10 windowed of 1024, in 6 groups of 2.
ModelDims TwelveLayersInSixGroups() {
  ModelDims dims = TwelveLayers();
  dims.kv_group_windows = {0, 1024, 1024, 1024, 1024, 1024};
  dims.kv_group_size = 2;
  return dims;
}

// Layer groups (Gemma 3: one global layer per five windowed ones): a block holds one group's
// layers, and a sequence holds every block in each global group but only its window's in each
// windowed group. Hand-computed for 12 layers split as 2 global + 10 windowed of 1024 = groups of
// 2 (1 global group, 5 windowed): a 32768-token decode holds 2048 + 5 x (ceil(1024 / 16) + 1).
TEST(MemoryPlannerTest, LayerGroupsSumTheirBlocksAndABlockHoldsOneGroup) {
  const ModelDims all = TwelveLayers();
  const ModelDims grouped = TwelveLayersInSixGroups();
  const MemoryPlan plan = MustPlan(Input(grouped, 80, 32768));
  const MemoryPlan every_block = MustPlan(Input(all, 80, 32768));
  EXPECT_EQ(plan.kv_bytes_per_token * 6, every_block.kv_bytes_per_token) << "2 of 12 layers";
  EXPECT_EQ(plan.decode_blocks_per_seq, 2048 + 5 * 65);
  // A prefill chunk of 8192 adds its positions to the 1023 before it in each windowed group.
  EXPECT_EQ(plan.peak_blocks_per_seq, 2048 + 5 * ((1023 + 8192 + 15) / 16 + 1));
  EXPECT_DOUBLE_EQ(plan.max_concurrency,
                   static_cast<double>(plan.num_usable_blocks) / (2048 + 5 * 65));
  EXPECT_GT(plan.max_concurrency, 2 * every_block.max_concurrency);
}

// The table and the refusal explain a grouped plan: the groups, what one sequence holds in each,
// and tokens that are not counted once per group. Same 12-layer model as above (6 groups of 2
// layers, no padding), so its pool holds about the tokens of the same model without groups: a
// token takes 6 block slots of 2 layers instead of 1 slot of 12.
TEST(MemoryPlannerTest, GroupedPlanExplainsItsGroupsAndCountsTokensOnce) {
  const ModelDims grouped = TwelveLayersInSixGroups();
  const ModelDims all = TwelveLayers();
  const MemoryPlan plan = MustPlan(Input(grouped, 80, 32768));
  const MemoryPlan every_block = MustPlan(Input(all, 80, 32768));
  ASSERT_EQ(plan.kv_cache_bytes, every_block.kv_cache_bytes);
  // Rounding differs (smaller blocks, a smaller null block, the division): within 2 blocks.
  EXPECT_LE(std::abs(plan.num_tokens - every_block.num_tokens), 2 * 16);
  EXPECT_EQ(plan.kv_group_padding_slots, 0);

  const std::string table = FormatPlan(plan);
  EXPECT_THAT(table,
              AllOf(HasSubstr("layer groups"),
                    HasSubstr("1 full attention + 5 windowed (1024 tokens); a block holds one "
                              "group's 2 layers\n"),
                    HasSubstr("usable blocks / 6 groups x block size"),
                    HasSubstr("a sequence holds 2373 = 1 x 2048 + 5 x 65 blocks decoding, "),
                    // 1024 tokens fit each window: 64 blocks in every group.
                    HasSubstr("typical request: a sequence holds 384 = 6 x 64 blocks")));
  EXPECT_THAT(FormatPlan(every_block), Not(HasSubstr("layer groups")));

  // 13 layers in 7 groups of 2 leave one slot unused; the windows differ.
  ModelDims padded = grouped;
  padded.num_layers = 13;
  padded.kv_group_windows = {0, 512, 512, 512, 2048, 2048, 2048};
  const MemoryPlan padded_plan = MustPlan(Input(padded, 80, 32768));
  EXPECT_EQ(padded_plan.kv_group_padding_slots, 1);
  EXPECT_THAT(FormatPlan(padded_plan),
              AllOf(HasSubstr("1 full attention + 3 windowed (512 tokens) + 3 windowed (2048 "
                              "tokens); a block holds one group's 2 layers (1 slot unused)"),
                    HasSubstr("2048 + 3 x 33 + 3 x 129 blocks decoding")));

  // Where one sequence does not fit, the refusal sums the groups' peaks: 2048 in the full group,
  // ceil((1023 + 8192) / 16) + 1 = 577 in each windowed one.
  const absl::Status refused = Refusal(Input(grouped, 8.9, 32768));
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("(4933 blocks of 16 tokens x 128.00 KiB; layer groups 1 full attention + "
                        "5 windowed (1024 tokens): 1 x 2048 + 5 x 577 blocks, a windowed group "
                        "holding its window plus a prefill chunk of 8192)"));
}

TEST(MemoryPlannerTest, LayerGroupsMustCoverEveryLayer) {
  ModelDims grouped = Mistral7B();
  grouped.num_layers = 12;
  grouped.kv_group_windows = {0, 1024, 1024};
  grouped.kv_group_size = 3;
  ExpectInvalid(Input(grouped, 80, 32768),
                "model layer groups hold 3 x 3 = 9 layers, fewer than the model's 12");
  grouped.kv_group_size = 0;
  ExpectInvalid(Input(grouped, 80, 32768), "model kv_group_size must be between 1 and 12, got 0");
  grouped.kv_group_size = 4;
  grouped.kv_group_windows = {0, -1, 1024};
  ExpectInvalid(Input(grouped, 80, 32768),
                "model layer group windows must be 0 (none) or positive, got -1");
  ModelDims no_groups = Mistral7B();
  no_groups.kv_group_size = 4;
  ExpectInvalid(Input(no_groups, 80, 32768),
                "model kv_group_size must be 0 without layer groups, got 4");
}

// Mistral-7B-v0.1 attends 4096 positions back in every layer, so a sequence of its full 32k
// context holds only its window's blocks: a decoding query reads 4096 positions, which touch at
// most 256 + 1 blocks of 16; a prefill chunk of 8192 adds its own 8192 positions to the 4095
// before it (12287 positions: at most 768 + 1 blocks).
TEST(MemoryPlannerTest, ASlidingWindowBoundsTheBlocksOneSequenceHolds) {
  ModelDims windowed = Mistral7B();
  windowed.kv_sliding_window = 4096;
  // A device whose KV cache holds more than 769 blocks of 128 KiB x 16 but fewer than 2048.
  const double device_gib = 19.5;
  const absl::Status without = Refusal(Input(Mistral7B(), device_gib, 32768));
  EXPECT_THAT(std::string(without.message()),
              AllOf(HasSubstr("cannot hold one sequence of --max-model-len 32768"),
                    HasSubstr("(2048 blocks of 16 tokens"), Not(HasSubstr("sliding window"))));
  const MemoryPlan plan = MustPlan(Input(windowed, device_gib, 32768));
  EXPECT_EQ(plan.blocks_per_max_len_seq, 2048) << "a block table row still spans max_model_len";
  EXPECT_EQ(plan.decode_blocks_per_seq, 257);
  EXPECT_EQ(plan.peak_blocks_per_seq, 769);
  EXPECT_GE(plan.num_usable_blocks, 769);
  EXPECT_LT(plan.num_usable_blocks, 2048);
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(plan.num_usable_blocks) / 257);
  // The typical request is shorter than the window: it holds all of its blocks.
  ASSERT_LT(plan.typical_request_tokens, 4096);
  EXPECT_DOUBLE_EQ(plan.max_concurrency_typical,
                   static_cast<double>(plan.num_usable_blocks) /
                       static_cast<double>(plan.typical_request_tokens / 16));
  EXPECT_THAT(FormatPlan(plan),
              HasSubstr("sliding window 4096: a sequence holds 257 blocks decoding, 769 at most"));

  // Where even the window does not fit, the refusal says what the need is made of.
  const absl::Status refused = Refusal(Input(windowed, 18.5, 32768));
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr("(769 blocks of 16 tokens x 2.00 MiB; the sliding window of 4096 "
                              "tokens plus a prefill chunk of 8192)")));
  // A shorter prefill chunk is a fix: it lowers the peak.
  const MemoryFixes fixes = SuggestFixes(Input(windowed, 18.5, 32768));
  EXPECT_GT(fixes.max_num_batched_tokens, 0);
  ExpectFixesWork(Input(windowed, 18.5, 32768), fixes);

  windowed.kv_sliding_window = -1;
  EXPECT_THAT(std::string(PlanMemory(Input(windowed, device_gib, 32768)).status().message()),
              HasSubstr("sliding window must be 0 (none) or positive, got -1"));
}

TEST(MemoryPlannerTest, LargestMaxModelLenIsCappedByTheModel) {
  MemoryPlanInput input = Input(Llama3_8B(), 24, 131072);  // Llama-3-8B knows 8192 positions.
  const absl::Status status = Refusal(input);
  const MemoryFixes fixes = SuggestFixes(input);
  EXPECT_EQ(fixes.max_model_len, 8192);
  EXPECT_GT(fixes.max_model_len_by_memory, 8192);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("--max-model-len 8192 (the model's max_position_embeddings; "
                              "memory alone would fit"),
                    HasSubstr("also exceeds the model's max_position_embeddings (8192)")));
  ExpectFixesWork(input, fixes);
}

TEST(MemoryPlannerTest, OneSequenceDoesNotFitButHigherUtilizationDoes) {
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  input.gpu_memory_utilization = 0.23;
  const absl::Status status = Refusal(input);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("cannot hold one sequence of --max-model-len 8192"));
  const MemoryFixes fixes = SuggestFixes(input);
  EXPECT_GT(fixes.gpu_memory_utilization, 0.23);
  EXPECT_GT(fixes.max_model_len, 0);
  EXPECT_LT(fixes.max_model_len, 8192);
  ExpectFixesWork(input, fixes);
}

TEST(MemoryPlannerTest, RefusalsAcrossModelsAndDevicesAlwaysCarryWorkingFixes) {
  int refusals = 0;
  for (const ModelDims& dims : {Llama3_8B(), Llama31_8B(), Llama2_7B(), Qwen2_7B()}) {
    for (double gib : {16.0, 20.0, 24.0, 40.0}) {
      for (int64_t len : {int64_t{4096}, int64_t{32768}}) {
        MemoryPlanInput input = Input(dims, gib, len);
        input.model.max_position_embeddings = 0;
        const absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
        if (plan.ok()) continue;
        ASSERT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition) << plan.status();
        SCOPED_TRACE(absl::StrCat(gib, " GiB, len ", len));
        ExpectFixesWork(input, SuggestFixes(input));
        ++refusals;
      }
    }
  }
  EXPECT_GT(refusals, 10);
}

// ---------------------------------------------------------------------------------------------
// The table.

TEST(MemoryPlannerTest, FormatPlanShowsEveryRow) {
  const MemoryPlan plan = MustPlan(Input(Llama3_8B(), 80, 8192));
  const std::string table = FormatPlan(plan);
  for (const char* row :
       {"device memory", "budget (utilization 0.90)", "weights per rank", "activation arena",
        "workspaces", "CUDA context + graphs", "safety margin", "KV cache available",
        "KV per token", "KV per block (block size 16)", "blocks", "tokens",
        "max concurrency @ 8192 tokens", "max concurrency @ 1024 tokens"}) {
    EXPECT_THAT(table, HasSubstr(row));
  }
  EXPECT_THAT(table, AllOf(HasSubstr("80.00 GiB"), HasSubstr("72.00 GiB"), HasSubstr("14.96 GiB"),
                           HasSubstr("128.00 KiB"), HasSubstr("2.00 MiB"), HasSubstr("27,652"),
                           HasSubstr("442,416"), HasSubstr("8,030,261,248 parameters")));
  EXPECT_THAT(table, HasSubstr(absl::StrFormat("%.2fx", 27651.0 / 512)));
  EXPECT_THAT(table, HasSubstr(absl::StrFormat("%.2fx", 27651.0 / 64)));
}

// Llama-3-8B with a vLLM-typical attention adapter (q, v at rank 16) and an all-projection
// adapter at rank 8, stacked to rank 16: per layer and adapter slot, 16 x (in + out) of each
// target; q 4096 + 4096, v 4096 + 1024 (8 KV heads x 128), k 4096 + 1024, o 4096 + 4096,
// gate and up 4096 + 14336 each, down 14336 + 4096.
TEST(LoraPlanTest, AdaptersAreResidentWeightsStackedToTheLargestRank) {
  LoraDims lora{.num_adapters = 2, .max_rank = 16, .targets = {}};
  lora.targets.fill(true);
  const int64_t per_slot_and_rank =
      8192 + 5120 + 5120 + 8192 + 18432 + 18432 + 18432;  // q k v o gate up down
  EXPECT_EQ(LoraParamsPerRank(Llama3_8B(), 1, lora), 32 * 2 * 16 * per_slot_and_rank);
  // TP 2: the out side of q/k/v/gate/up and the in side of o/down halve.
  const int64_t tp2 =
      (4096 + 2048) + (4096 + 512) * 2 + (2048 + 4096) + (4096 + 7168) * 2 + (7168 + 4096);
  EXPECT_EQ(LoraParamsPerRank(Llama3_8B(), 2, lora), 32 * 2 * 16 * tp2);
  LoraDims attention = lora;
  attention.targets = {true, false, true, false, false, false, false};
  EXPECT_EQ(LoraParamsPerRank(Llama3_8B(), 1, attention), 32 * 2 * 16 * (8192 + 5120));
  EXPECT_EQ(LoraParamsPerRank(Llama3_8B(), 1, {}), 0);

  // The plan holds them like weights (bf16), and a rank x token scratch in the arena; the KV
  // cache gets what is left.
  const MemoryPlan without = MustPlan(Input(Llama3_8B(), 80, 8192));
  MemoryPlanInput input = Input(Llama3_8B(), 80, 8192);
  input.lora = lora;
  const MemoryPlan with = MustPlan(input);
  EXPECT_EQ(with.lora_params_per_rank, 32 * 2 * 16 * per_slot_and_rank);
  EXPECT_EQ(with.lora_bytes, 2 * with.lora_params_per_rank);
  EXPECT_EQ(with.weights_bytes, without.weights_bytes);
  EXPECT_GT(with.arena.total_bytes, without.arena.total_bytes);
  EXPECT_EQ(without.kv_cache_bytes - with.kv_cache_bytes,
            with.lora_bytes + with.arena.total_bytes - without.arena.total_bytes);
  EXPECT_LT(with.num_blocks, without.num_blocks);
  const std::string table = FormatPlan(with);
  EXPECT_NE(table.find("LoRA adapters per rank"), std::string::npos) << table;
  EXPECT_NE(table.find("2 adapter slots at rank 16"), std::string::npos) << table;
  EXPECT_EQ(FormatPlan(without).find("LoRA"), std::string::npos);
}

// Adapters that leave no room for the KV cache: the refusal counts them with the weights, and its
// numbers still add up. Eight all-projection adapters at rank 128 on Llama-3-8B:
// 32 layers x 8 x 128 x 81,920 x 2 bytes = 5 GiB exactly, beside 14.96 GiB of weights in a
// 21.6 GiB budget: 1.64 GiB remain.
TEST(LoraPlanTest, ARefusalCountsTheAdapters) {
  MemoryPlanInput input = Input(Llama3_8B(), 24, 8192);
  input.lora = LoraDims{.num_adapters = 8, .max_rank = 128, .targets = {}};
  input.lora.targets.fill(true);
  const absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_FALSE(plan.ok());
  const std::string message(plan.status().message());
  EXPECT_NE(message.find("after 14.96 GiB of weights and 5.00 GiB of LoRA adapters, 1.64 GiB"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("weights 14.96 GiB, LoRA adapters 5.00 GiB,"), std::string::npos)
      << message;
  // Without the adapters the same input fits.
  input.lora = {};
  EXPECT_TRUE(PlanMemory(input).ok());
}

}  // namespace
}  // namespace headroom::kvcache
