// MemoryPlanner: a pure function from model dims, dtypes, tensor-parallel size, block size,
// scheduler limits and device memory to the per-GPU memory plan, or a refusal that names the
// numbers and the settings that would fit. `headroom plan` and the worker at startup compute the
// same plan; docs/memory.md explains every term and constant.
//
// The plan is per rank and identical on every rank of a tensor-parallel group (all ranks hold the
// same number of KV blocks because they share one block table). Where ranks differ (only rank 0
// samples) every rank reserves rank 0's larger share.
//
// Error codes:
//   InvalidArgumentError   an input is out of range, or the tensor-parallel size cannot shard
//                          the model, or --max-model-len exceeds max_position_embeddings.
//   FailedPreconditionError the inputs are valid but do not fit the device: weights exceed the
//                          budget, fixed overheads leave no KV block, or one sequence of
//                          --max-model-len tokens does not fit. The message lists fixes, each
//                          verified by re-running the planner (SuggestFixes).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/units.h"
#include "kvcache/memory_planner_constants.h"

namespace headroom::kvcache {

// Model shape the planner needs; kvcache-local so kvcache does not depend on worker/.
struct ModelDims {
  int64_t num_layers = 0;               // Decoder layers.
  int64_t hidden_size = 0;              // Residual stream width.
  int64_t intermediate_size = 0;        // MLP width.
  int64_t num_attention_heads = 0;      // Query heads.
  int64_t num_kv_heads = 0;             // KV heads (GQA).
  int64_t head_dim = 0;                 // Per-head width.
  int64_t vocab_size = 0;               // Embedding / LM head rows.
  int64_t max_position_embeddings = 0;  // Longest context the model supports; 0 = unknown.
  bool tie_word_embeddings = false;     // LM head shares the embedding (stored once).
  bool qkv_bias = false;                // q/k/v projections carry biases.
  bool o_proj_bias = false;             // Output projection carries a bias.
  bool mlp_bias = false;                // gate/up/down carry biases.
  bool qk_norm = false;                 // per-head q and k RMSNorm weights (Qwen3), replicated.
  // With qk_norm: q and k norms over the whole projections ([q], [kv]: OLMo 2), split by heads.
  bool qk_norm_across_heads = false;
  bool sandwich_norms = false;  // two more [hidden] norms per layer (Gemma 2), replicated.
  // The two [hidden] norms of each block's input; false: only the sandwich's output norms (OLMo 2).
  bool pre_norms = true;
  // Mixture of experts: every layer's MLP is num_experts experts of intermediate_size (split
  // across ranks like a dense MLP) and a replicated router (with a replicated [num_experts]
  // correction bias: GLM-4.5); 0 = dense.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  bool moe_correction_bias = false;
  // A shared expert beside the routed ones (Qwen2-MoE, GLM-4.5): one SwiGLU MLP of this width
  // every token runs, split across ranks like a dense MLP, with a replicated [hidden] gate when
  // shared_expert_gated (Qwen2-MoE); 0 = none.
  int64_t shared_expert_intermediate_size = 0;
  bool shared_expert_gated = true;
  // With experts: this many layers have a dense SwiGLU MLP of dense_intermediate_size in their
  // place (GLM-4.5's first_k_dense_replace), split across ranks.
  int64_t num_dense_mlp_layers = 0;
  int64_t dense_intermediate_size = 0;
  // Every layer attends at most this many positions back (Mistral-7B-v0.1): a sequence holds
  // only its window's blocks (sliding_window.h); 0 = some layer reads the whole context.
  int64_t kv_sliding_window = 0;
  // Layer groups of the KV cache (layer_groups.h) when the layers attend different windows
  // (Gemma 2/3): each group's window, and the layers a pool block holds (the group size).
  // Empty / 0: one group of every layer attending kv_sliding_window.
  std::vector<int32_t> kv_group_windows = {};
  int64_t kv_group_size = 0;
  // Where max_position_embeddings comes from when it is not config.json's key of that name (YaRN:
  // "rope_scaling yarn: original_max_position_embeddings 32768 x factor 4"), for messages; empty:
  // the key.
  std::string max_position_source = {};
};

// The model's context limit as messages name it: "max_position_embeddings (8192)", or "context
// length (131072: <max_position_source>)".
[[nodiscard]] std::string ContextLimitName(const ModelDims& model);

// LoRA adapters resident on the device (every --lora-modules adapter): each projection some
// adapter changes holds every adapter's factors, padded to the largest rank (kernels/lora_view.h):
// A [adapters, rank, in] and B [adapters, out, rank], in every layer.
struct LoraDims {
  int64_t num_adapters = 0;
  int64_t max_rank = 0;
  // The projections some adapter changes: q, k, v, o, gate, up, down.
  std::array<bool, 7> targets{};
};

struct MemoryPlanInput {
  ModelDims model;                         // Shape of the model.
  LoraDims lora;                           // LoRA adapters (--lora-modules); none by default.
  int64_t weight_dtype_bytes = 2;          // Bytes per weight and activation element (--dtype).
  int64_t kv_cache_dtype_bytes = 2;        // Bytes per KV cache element (--kv-cache-dtype).
  int64_t tensor_parallel_size = 1;        // GPUs in the group (--tensor-parallel-size).
  int64_t block_size = kDefaultBlockSize;  // Tokens per KV block (--block-size).
  int64_t max_model_len = 0;               // Longest sequence, prompt + output (--max-model-len).
  int64_t max_num_seqs = kDefaultMaxNumSeqs;  // Running sequences per step (--max-num-seqs).
  int64_t max_num_batched_tokens = kDefaultMaxNumBatchedTokens;  // Tokens per forward step.
  double gpu_memory_utilization = kDefaultGpuMemoryUtilization;  // Share of the device to use.
  int64_t device_memory_bytes = 0;                               // Total memory of one GPU.
};

// The activation arena: every buffer one forward step + sampling touches, sized for the step caps.
struct ActivationArena {
  int64_t token_buffers_bytes = 0;      // hidden, residual, normed, qkv, attn out, gate_up, act.
  int64_t attention_scratch_bytes = 0;  // Split-KV decode partial outputs and softmax stats.
  int64_t logits_bytes = 0;             // Gathered hidden rows, LM-head shard, fp32 full logits.
  int64_t sampler_bytes = 0;            // probs, logprobs, sort keys+indices (double buffered).
  int64_t metadata_bytes = 0;           // Token ids, positions, slot mapping, block tables, params.
  int64_t rope_cache_bytes = 0;         // fp32 cos/sin table for max_model_len positions.
  int64_t total_bytes = 0;              // Sum of the above (each buffer 256-byte aligned).
};

struct MemoryPlan {
  // Echo of the inputs the table prints.
  int64_t tensor_parallel_size = 0;    // GPUs in the group.
  int64_t block_size = 0;              // Tokens per KV block.
  int64_t max_model_len = 0;           // Longest sequence.
  int64_t max_num_seqs = 0;            // Running sequences per step.
  int64_t max_num_batched_tokens = 0;  // Tokens per forward step.
  double gpu_memory_utilization = 0;   // Share of the device this process may use.

  int64_t device_memory_bytes = 0;     // Total memory of one GPU.
  int64_t budget_bytes = 0;            // floor(device_memory_bytes * gpu_memory_utilization).
  int64_t weight_params_per_rank = 0;  // Parameters in this rank's shard.
  int64_t weights_bytes = 0;           // Exact bytes of this rank's weight shard.
  int64_t lora_params_per_rank = 0;    // LoRA factors this rank holds (LoraParamsPerRank).
  int64_t lora_bytes = 0;              // lora_params_per_rank in the weight dtype.
  int64_t lora_adapters = 0;           // Echo of LoraDims.
  int64_t lora_rank = 0;
  ActivationArena arena;               // Activation arena, itemized.
  int64_t cublas_workspace_bytes = 0;  // cuBLASLt workspace.
  int64_t nccl_bytes = 0;              // NCCL buffers; 0 when tensor_parallel_size == 1.
  int64_t workspace_bytes = 0;         // cublas_workspace_bytes + nccl_bytes.
  int64_t cuda_context_bytes = 0;      // CUDA context, module images, library handles.
  int64_t cuda_graph_bytes = 0;        // CUDA graph executables for the decode batch sizes.
  int64_t safety_margin_bytes = 0;     // Held back for allocator rounding and lazy driver memory.
  int64_t kv_cache_bytes = 0;     // Budget left for the KV pool (may exceed the pool by < 1 block).
  int64_t kv_heads_per_rank = 0;  // KV heads this rank stores (split or replicated).
  // 2 * layers * kv_heads_per_rank * head_dim * kv dtype bytes; with layer groups, the layers of
  // one group (a block holds one group's KV, a token one block slot per group).
  int64_t kv_bytes_per_token = 0;
  int64_t kv_bytes_per_block = 0;  // kv_bytes_per_token * block_size.
  int64_t num_blocks = 0;          // floor(kv_cache_bytes / kv_bytes_per_block), reserved included.
  int64_t num_usable_blocks = 0;   // num_blocks - kNumReservedBlocks: what requests can get.
  // Tokens whose KV the pool holds when no block is released: num_usable_blocks * block_size,
  // divided by the layer groups (a token takes one block slot in every group).
  int64_t num_tokens = 0;
  int64_t blocks_per_max_len_seq = 0;     // ceil(max_model_len / block_size): a block table row.
  int64_t kv_sliding_window = 0;          // Echo of ModelDims::kv_sliding_window.
  std::vector<int32_t> kv_group_windows;  // Echo of ModelDims::kv_group_windows.
  int64_t kv_group_size = 0;              // Echo of ModelDims::kv_group_size.
  int64_t kv_group_padding_slots = 0;     // Group slots no layer uses: groups x size - layers.
  // Most blocks one sequence of max_model_len holds at once (a prefill chunk of
  // max_num_batched_tokens included), summed over layer groups; blocks_per_max_len_seq without a
  // sliding window.
  int64_t peak_blocks_per_seq = 0;
  // Blocks a decoding sequence of max_model_len holds; blocks_per_max_len_seq without a window.
  int64_t decode_blocks_per_seq = 0;
  double max_concurrency = 0;          // Decoding sequences of max_model_len that fit at once.
  int64_t typical_request_tokens = 0;  // min(kTypicalRequestTokens, max_model_len).
  double max_concurrency_typical = 0;  // Sequences of typical_request_tokens that fit at once.
};

// Settings that make a refused input fit, each found by re-running the planner with only that
// setting changed (0 = no such value).
struct MemoryFixes {
  int64_t max_model_len = 0;            // Largest --max-model-len that fits (capped by the model).
  int64_t max_model_len_by_memory = 0;  // Same, before the max_position_embeddings cap.
  double gpu_memory_utilization = 0;   // Smallest utilization (a multiple of 0.01, <= 1) that fits.
  double needed_utilization = 0;       // Budget share needed; may exceed 1 (then no value fits).
  int64_t tensor_parallel_size = 0;    // Smallest larger valid TP size <= 8 that fits.
  int64_t max_num_batched_tokens = 0;  // Largest --max-num-batched-tokens that fits.
  int64_t max_num_seqs = 0;            // Largest --max-num-seqs that fits.
  int64_t block_size = 0;              // Largest other supported --block-size that fits.
};

// The plan, or a refusal (see the error codes above).
[[nodiscard]] absl::StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInput& input);

// The fixes for an input that PlanMemory refuses for memory; all zero when it fits.
[[nodiscard]] MemoryFixes SuggestFixes(const MemoryPlanInput& input);

// Parameters in one rank's shard: column-parallel q/k/v and gate/up, row-parallel o/down,
// vocab-parallel embedding and LM head (vocab padded to a multiple of tp), replicated norms and
// row-parallel biases. Requires a valid (model, tp) pair; see ValidTensorParallelSizes.
[[nodiscard]] int64_t WeightParamsPerRank(const ModelDims& model, int64_t tensor_parallel_size);

// [in, out] features on one rank of each projection a LoRA adapter can change, in LoraDims'
// target order: q, k, v, o, gate, up, down (column-parallel outs and row-parallel ins are the
// rank's share).
[[nodiscard]] std::array<std::pair<int64_t, int64_t>, 7> LoraProjectionShapes(
    const ModelDims& model, int64_t tensor_parallel_size);

// LoRA factors in one rank's shard, stacked as the model holds them (LoraDims): a column-parallel
// projection's B split by rows, a row-parallel one's A by columns. An upper bound when adapters
// leave some layers out.
[[nodiscard]] int64_t LoraParamsPerRank(const ModelDims& model, int64_t tensor_parallel_size,
                                        const LoraDims& lora);

// Tensor-parallel sizes in [1, num_attention_heads] that can shard the model: tp divides the
// attention heads and the intermediate size, and either tp divides the KV heads (split) or the
// KV heads divide tp (replicated).
[[nodiscard]] std::vector<int64_t> ValidTensorParallelSizes(const ModelDims& model);

// The plan as an aligned table, one row per term (docs/memory.md shows an example).
[[nodiscard]] std::string FormatPlan(const MemoryPlan& plan);

}  // namespace headroom::kvcache
