#include "kvcache/memory_planner.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "kvcache/memory_planner_constants.h"
#include "kvcache/memory_planner_internal.h"
#include "kvcache/sliding_window.h"
#include "kvcache/tensor_parallel.h"

namespace headroom::kvcache {
namespace internal {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t Align(int64_t bytes) { return CeilDiv(bytes, kArenaAlignmentBytes) * kArenaAlignmentBytes; }

bool IsPowerOfTwo(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

std::string GiB(int64_t bytes) { return absl::StrCat(FormatGiB(bytes), " GiB"); }

absl::Status CheckRange(const char* what, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be between ", low, " and ", high, ", got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateModel(const ModelDims& m) {
  HR_RETURN_IF_ERROR(CheckRange("model num_layers", m.num_layers, 1, kMaxNumLayers));
  HR_RETURN_IF_ERROR(CheckRange("model hidden_size", m.hidden_size, 1, kMaxHiddenSize));
  HR_RETURN_IF_ERROR(
      CheckRange("model intermediate_size", m.intermediate_size, 1, kMaxIntermediateSize));
  HR_RETURN_IF_ERROR(
      CheckRange("model num_attention_heads", m.num_attention_heads, 1, kMaxNumHeads));
  HR_RETURN_IF_ERROR(
      CheckRange("model num_key_value_heads", m.num_kv_heads, 1, m.num_attention_heads));
  HR_RETURN_IF_ERROR(CheckRange("model head_dim", m.head_dim, 1, kMaxHeadDim));
  HR_RETURN_IF_ERROR(CheckRange("model vocab_size", m.vocab_size, 1, kMaxVocabSize));
  HR_RETURN_IF_ERROR(
      CheckRange("model max_position_embeddings", m.max_position_embeddings, 0, kMaxModelLen));
  HR_RETURN_IF_ERROR(CheckRange("model num_experts", m.num_experts, 0, kMaxNumExperts));
  if (m.num_experts > 0) {
    HR_RETURN_IF_ERROR(
        CheckRange("model num_experts_per_tok", m.num_experts_per_tok, 1, m.num_experts));
  }
  HR_RETURN_IF_ERROR(CheckRange("model shared_expert_intermediate_size",
                                m.shared_expert_intermediate_size, 0,
                                m.num_experts > 0 ? kMaxIntermediateSize : 0));
  HR_RETURN_IF_ERROR(CheckRange("model num_dense_mlp_layers", m.num_dense_mlp_layers, 0,
                                m.num_experts > 0 ? m.num_layers : 0));
  if (m.num_dense_mlp_layers > 0) {
    HR_RETURN_IF_ERROR(CheckRange("model dense_intermediate_size", m.dense_intermediate_size, 1,
                                  kMaxIntermediateSize));
  }
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("model num_key_value_heads (", m.num_kv_heads,
                                                   ") must divide num_attention_heads (",
                                                   m.num_attention_heads, ")"));
  }
  // Layer groups: every layer has a slot, and every group a block of kv_group_size layers.
  const int64_t groups = static_cast<int64_t>(m.kv_group_windows.size());
  if (groups == 0 && m.kv_group_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model kv_group_size must be 0 without layer groups, got ", m.kv_group_size));
  }
  if (groups > 0) {
    HR_RETURN_IF_ERROR(CheckRange("model kv_group_size", m.kv_group_size, 1, m.num_layers));
    if (groups * m.kv_group_size < m.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("model layer groups hold ", groups, " x ", m.kv_group_size, " = ",
                       groups * m.kv_group_size, " layers, fewer than the model's ", m.num_layers));
    }
    for (const int32_t window : m.kv_group_windows) {
      if (window < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("model layer group windows must be 0 (none) or positive, got ", window));
      }
    }
  }
  return absl::OkStatus();
}

ActivationArena ArenaOf(const MemoryPlanInput& in, const TensorParallelShard& shard,
                        int64_t blocks_per_seq) {
  const ModelDims& m = in.model;
  const int64_t a = in.weight_dtype_bytes;  // Activations are computed in the weight dtype.
  const int64_t t = in.max_num_batched_tokens;
  const int64_t s = in.max_num_seqs;
  const int64_t padded_vocab = shard.vocab_rows * in.tensor_parallel_size;

  ActivationArena arena;
  // A mixture of experts runs each token through num_experts_per_tok experts: that many rows of
  // gate_up and silu(g)*u per token, and the router's logits and routes. A shared expert runs
  // after them in the same buffers, one row per token of its own width, as do the dense layers'
  // MLPs (GLM-4.5's first layers).
  const int64_t mlp_rows = m.num_experts > 0 ? t * m.num_experts_per_tok : t;
  const int64_t mlp_values =
      std::max({mlp_rows * shard.intermediate, t * shard.shared_intermediate,
                m.num_dense_mlp_layers > 0 ? t * shard.dense_intermediate : 0});
  arena.token_buffers_bytes = 3 * Align(t * m.hidden_size * a)  // hidden, residual, normed
                              + Align(t * (shard.q_dim + 2 * shard.kv_dim) * a)  // qkv
                              + Align(t * shard.q_dim * a)                       // attn out
                              + Align(mlp_values * 2 * a)                        // gate_up
                              + Align(mlp_values * a)                            // silu(g)*u
                              + (m.num_experts > 0 ? Align(t * m.num_experts * kFp32Bytes) +
                                                         Align(mlp_rows * m.hidden_size * a)
                                                   : 0)  // router logits; expert outputs
                              + (m.qk_norm_across_heads && in.tensor_parallel_size > 1
                                     ? Align(2 * t * kFp32Bytes)
                                     : 0);  // q/k sums of squares, all-reduced
  const int64_t split_rows = s * shard.heads * kMaxKvSplits;
  arena.attention_scratch_bytes =
      Align(split_rows * m.head_dim * kFp32Bytes)                // partial outputs
      + Align(split_rows * kAttentionStatsPerRow * kFp32Bytes);  // running max, sum
  arena.logits_bytes = Align(s * m.hidden_size * a)              // last hidden per seq
                       + Align(s * shard.vocab_rows * a)         // LM-head shard output
                       + Align(s * padded_vocab * kFp32Bytes);   // gathered fp32 logits
  const int64_t vocab_row_f32 = Align(s * padded_vocab * kFp32Bytes);
  arena.sampler_bytes = 2 * vocab_row_f32               // probs, logprobs
                        + kSortBuffers * vocab_row_f32  // sort keys
                        + kSortBuffers * Align(s * padded_vocab * kSortIndexBytes)  // indices
                        + kSamplerScratchBytes;
  arena.metadata_bytes = Align(t * kTokenIdBytes) + Align(t * kPositionBytes) +
                         Align(t * kSlotMappingBytes) +
                         Align(s * blocks_per_seq * kBlockIdBytes)  // block tables
                         + Align(s * kPerSequenceMetadataBytes);
  arena.rope_cache_bytes = Align(blocks_per_seq * in.block_size * m.head_dim * kFp32Bytes);
  if (in.lora.num_adapters > 0) {
    // Each token's rows shrunk through A, and the step's adapter segments (starts, slots).
    arena.token_buffers_bytes += Align(t * in.lora.max_rank * a);
    arena.metadata_bytes += Align((2 * s + 1) * kBlockIdBytes);
  }
  arena.total_bytes = arena.token_buffers_bytes + arena.attention_scratch_bytes +
                      arena.logits_bytes + arena.sampler_bytes + arena.metadata_bytes +
                      arena.rope_cache_bytes;
  return arena;
}

}  // namespace

// Refusal (a) and (b): inputs out of range, or a tensor-parallel size that cannot shard the model.
absl::Status Validate(const MemoryPlanInput& in) {
  HR_RETURN_IF_ERROR(ValidateModel(in.model));
  if (!(in.gpu_memory_utilization > 0 && in.gpu_memory_utilization <= 1)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--gpu-memory-utilization must be in (0, 1], got %g: it is the share of each GPU's "
        "memory headroom may use (default %.2f)",
        in.gpu_memory_utilization, kDefaultGpuMemoryUtilization));
  }
  if (in.device_memory_bytes <= 0 || in.device_memory_bytes > kMaxDeviceMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat("device memory must be between 1 byte and ",
                                                   GiB(kMaxDeviceMemoryBytes), ", got ",
                                                   in.device_memory_bytes, " bytes"));
  }
  if (in.block_size < kMinBlockSize || in.block_size > kMaxBlockSize ||
      !IsPowerOfTwo(in.block_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--block-size must be a power of two from ", kMinBlockSize, " to ", kMaxBlockSize,
        " (vLLM's CUDA sizes 8, 16, 32, 64, 128 included), got ", in.block_size));
  }
  HR_RETURN_IF_ERROR(CheckRange("--max-model-len", in.max_model_len, 1, kMaxModelLen));
  if (in.model.kv_sliding_window < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model's sliding window must be 0 (none) or positive, got ",
                     in.model.kv_sliding_window));
  }
  HR_RETURN_IF_ERROR(CheckRange("--max-num-seqs", in.max_num_seqs, 1, kMaxNumSeqs));
  HR_RETURN_IF_ERROR(
      CheckRange("--max-num-batched-tokens", in.max_num_batched_tokens, 1, kMaxNumBatchedTokens));
  if (in.max_num_batched_tokens < in.max_num_seqs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-num-batched-tokens (", in.max_num_batched_tokens,
        ") must be at least --max-num-seqs (", in.max_num_seqs,
        "): every running sequence needs one token per decode step. Raise "
        "--max-num-batched-tokens or lower --max-num-seqs (a --max-num-batched-tokens below "
        "--max-model-len is fine: long prompts are prefilled in chunks)"));
  }
  for (const auto& [flag, bytes] :
       {std::pair<const char*, int64_t>{"--dtype", in.weight_dtype_bytes},
        {"--kv-cache-dtype", in.kv_cache_dtype_bytes}}) {
    if (bytes != 1 && bytes != 2 && bytes != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " element size must be 1, 2 or 4 bytes, got ", bytes));
    }
  }
  HR_RETURN_IF_ERROR(
      CheckRange("--tensor-parallel-size", in.tensor_parallel_size, 1, kMaxNumHeads));
  const std::vector<std::string> problems = ShardingProblems(in.model, in.tensor_parallel_size);
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tensor-parallel-size ", in.tensor_parallel_size,
        " cannot shard this model: ", absl::StrJoin(problems, "; "),
        ". Valid sizes for this model: ", absl::StrJoin(ValidTensorParallelSizes(in.model), ", ")));
  }
  return absl::OkStatus();
}

// The plan for a validated input, and whether it fits.
Evaluation Evaluate(const MemoryPlanInput& in) {
  const ModelDims& m = in.model;
  const TensorParallelShard shard = ShardOf(m, in.tensor_parallel_size);
  Evaluation e;
  MemoryPlan& p = e.plan;
  p.tensor_parallel_size = in.tensor_parallel_size;
  p.block_size = in.block_size;
  p.max_model_len = in.max_model_len;
  p.max_num_seqs = in.max_num_seqs;
  p.max_num_batched_tokens = in.max_num_batched_tokens;
  p.gpu_memory_utilization = in.gpu_memory_utilization;

  p.device_memory_bytes = in.device_memory_bytes;
  p.budget_bytes = static_cast<int64_t>(
      std::floor(static_cast<double>(in.device_memory_bytes) * in.gpu_memory_utilization));
  p.weight_params_per_rank = WeightParamsPerRank(m, in.tensor_parallel_size);
  p.weights_bytes = p.weight_params_per_rank * in.weight_dtype_bytes;
  p.lora_adapters = in.lora.num_adapters;
  p.lora_rank = in.lora.max_rank;
  p.lora_params_per_rank = LoraParamsPerRank(m, in.tensor_parallel_size, in.lora);
  p.lora_bytes = p.lora_params_per_rank * in.weight_dtype_bytes;
  p.blocks_per_max_len_seq = CeilDiv(in.max_model_len, in.block_size);
  p.kv_sliding_window = m.kv_sliding_window;
  p.kv_group_windows = m.kv_group_windows;
  if (!m.kv_group_windows.empty()) {
    p.kv_group_size = m.kv_group_size;
    p.kv_group_padding_slots =
        static_cast<int64_t>(m.kv_group_windows.size()) * m.kv_group_size - m.num_layers;
  }
  p.peak_blocks_per_seq = PeakBlocksOverGroups(in.max_model_len, in.block_size, m.kv_group_windows,
                                               m.kv_sliding_window, in.max_num_batched_tokens);
  p.decode_blocks_per_seq = PeakBlocksOverGroups(in.max_model_len, in.block_size,
                                                 m.kv_group_windows, m.kv_sliding_window, 1);
  p.arena = ArenaOf(in, shard, p.blocks_per_max_len_seq);
  p.cublas_workspace_bytes = kCublasWorkspaceBytes;
  p.nccl_bytes = in.tensor_parallel_size > 1 ? kNcclBufferBytes : 0;
  p.workspace_bytes = p.cublas_workspace_bytes + p.nccl_bytes;
  p.cuda_context_bytes = kCudaContextBytes;
  p.cuda_graph_bytes = kCudaGraphBytes;
  p.safety_margin_bytes = kSafetyMarginBytes;
  p.kv_cache_bytes = p.budget_bytes - p.weights_bytes - p.lora_bytes - p.arena.total_bytes -
                     p.workspace_bytes - p.cuda_context_bytes - p.cuda_graph_bytes -
                     p.safety_margin_bytes;

  p.kv_heads_per_rank = shard.kv_heads;
  const int64_t block_layers = m.kv_group_size > 0 ? m.kv_group_size : m.num_layers;
  p.kv_bytes_per_token = 2 * block_layers * shard.kv_heads * m.head_dim * in.kv_cache_dtype_bytes;
  p.kv_bytes_per_block = p.kv_bytes_per_token * in.block_size;
  p.num_blocks = p.kv_cache_bytes > 0 ? p.kv_cache_bytes / p.kv_bytes_per_block : 0;
  p.num_usable_blocks = std::max<int64_t>(0, p.num_blocks - kNumReservedBlocks);
  p.num_tokens = p.num_usable_blocks /
                 std::max<int64_t>(1, static_cast<int64_t>(m.kv_group_windows.size())) *
                 in.block_size;
  p.max_concurrency =
      static_cast<double>(p.num_usable_blocks) / static_cast<double>(p.decode_blocks_per_seq);
  p.typical_request_tokens = std::min(kTypicalRequestTokens, in.max_model_len);
  p.max_concurrency_typical =
      static_cast<double>(p.num_usable_blocks) /
      static_cast<double>(PeakBlocksOverGroups(p.typical_request_tokens, in.block_size,
                                               m.kv_group_windows, m.kv_sliding_window, 1));

  if (p.weights_bytes > p.budget_bytes) {
    e.outcome = Outcome::kWeightsExceedBudget;
  } else if (p.num_usable_blocks < 1) {
    e.outcome = Outcome::kNoKvBlocks;
  } else if (p.num_usable_blocks < p.peak_blocks_per_seq) {
    e.outcome = Outcome::kSequenceDoesNotFit;
  }
  return e;
}

bool Fits(const MemoryPlanInput& in) {
  return Validate(in).ok() && Evaluate(in).outcome == Outcome::kFits;
}

}  // namespace internal

using internal::Evaluate;
using internal::Evaluation;
using internal::Outcome;
using internal::Refuse;
using internal::Validate;

int64_t WeightParamsPerRank(const ModelDims& m, int64_t tensor_parallel_size) {
  const TensorParallelShard shard = ShardOf(m, tensor_parallel_size);
  const int64_t h = m.hidden_size;
  const int64_t attention = h * shard.q_dim         // q_proj (column-parallel)
                            + 2 * h * shard.kv_dim  // k_proj, v_proj (column-parallel)
                            + shard.q_dim * h       // o_proj (row-parallel)
                            + (m.qkv_bias ? shard.q_dim + 2 * shard.kv_dim : 0) +
                            (m.o_proj_bias ? h : 0);      // row-parallel bias: replicated
  const int64_t dense = 2 * h * shard.dense_intermediate  // gate_proj, up_proj (column-parallel)
                        + shard.dense_intermediate * h    // down_proj (row-parallel)
                        + (m.mlp_bias ? 2 * shard.dense_intermediate + h : 0);
  // Mixture of experts: each expert's slice, and the router and its correction bias
  // (replicated); a shared expert's slice and its gate (replicated).
  const int64_t shared = m.shared_expert_intermediate_size > 0
                             ? 3 * h * shard.shared_intermediate + (m.shared_expert_gated ? h : 0)
                             : 0;
  const int64_t experts = m.num_experts * (3 * h * shard.intermediate + h) +
                          (m.moe_correction_bias ? m.num_experts : 0) + shared;
  const int64_t dense_layers = m.num_experts > 0 ? m.num_dense_mlp_layers : m.num_layers;
  const int64_t mlps = dense_layers * dense + (m.num_layers - dense_layers) * experts;
  // input_layernorm, post_attention_layernorm (+ pre/post_feedforward_layernorm; OLMo 2 only the
  // output norms), replicated, and q_norm / k_norm: per head replicated, across heads split.
  const int64_t qk_norms = !m.qk_norm               ? 0
                           : m.qk_norm_across_heads ? shard.q_dim + shard.kv_dim
                                                    : 2 * m.head_dim;
  const int64_t norms = ((m.pre_norms ? 2 : 0) + (m.sandwich_norms ? 2 : 0)) * h + qk_norms;
  const int64_t embeddings = shard.vocab_rows * h * (m.tie_word_embeddings ? 1 : 2);
  return m.num_layers * (attention + norms) + mlps + embeddings + h /* final norm */;
}

std::array<std::pair<int64_t, int64_t>, 7> LoraProjectionShapes(const ModelDims& m,
                                                                int64_t tensor_parallel_size) {
  const TensorParallelShard shard = ShardOf(m, tensor_parallel_size);
  const int64_t h = m.hidden_size;
  return {{{h, shard.q_dim},
           {h, shard.kv_dim},
           {h, shard.kv_dim},
           {shard.q_dim, h},
           {h, shard.intermediate},
           {h, shard.intermediate},
           {shard.intermediate, h}}};
}

int64_t LoraParamsPerRank(const ModelDims& m, int64_t tensor_parallel_size, const LoraDims& lora) {
  if (lora.num_adapters == 0) return 0;
  const auto shapes = LoraProjectionShapes(m, tensor_parallel_size);
  int64_t per_layer = 0;
  for (size_t t = 0; t < shapes.size(); ++t) {
    if (lora.targets[t]) {
      per_layer += lora.num_adapters * lora.max_rank * (shapes[t].first + shapes[t].second);
    }
  }
  return m.num_layers * per_layer;
}

std::vector<int64_t> ValidTensorParallelSizes(const ModelDims& model) {
  std::vector<int64_t> sizes;
  for (int64_t tp = 1; tp <= model.num_attention_heads; ++tp) {
    if (ShardingProblems(model, tp).empty()) sizes.push_back(tp);
  }
  return sizes;
}

std::string ContextLimitName(const ModelDims& model) {
  if (model.max_position_source.empty()) {
    return absl::StrCat("max_position_embeddings (", model.max_position_embeddings, ")");
  }
  return absl::StrCat("context length (", model.max_position_embeddings, ": ",
                      model.max_position_source, ")");
}

absl::StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInput& input) {
  HR_RETURN_IF_ERROR(Validate(input));
  const Evaluation evaluation = Evaluate(input);
  if (evaluation.outcome != Outcome::kFits) return Refuse(input, evaluation);
  const int64_t max_positions = input.model.max_position_embeddings;
  if (max_positions > 0 && input.max_model_len > max_positions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-model-len ", input.max_model_len, " exceeds the model's ",
        ContextLimitName(input.model), ": the model was not trained for positions past ",
        max_positions, ". Use --max-model-len ", max_positions,
        " or less (long-context variants such as Llama-3.1 declare a larger "
        "max_position_embeddings in their config.json; Qwen2.5 and Qwen3 take a yarn "
        "rope_scaling block)"));
  }
  return evaluation.plan;
}

}  // namespace headroom::kvcache
