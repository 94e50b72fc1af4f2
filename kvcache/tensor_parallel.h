// What one rank of a tensor-parallel group holds of each sharded dimension, and the rules that
// decide whether a tensor-parallel size can shard a model at all. Shared by the memory planner
// (which counts the bytes) and the model loader (which slices the weights), so the plan always
// describes the shard the worker really loads (docs/tensor_parallel.md).
//
//   query heads   split: rank r holds heads [r * heads, (r + 1) * heads)
//   KV heads      split when tp divides them; otherwise (the KV heads divide tp) each rank keeps
//                 a copy of the one KV head its query heads attend to
//   MLP           gate/up rows and down columns split by intermediate_size / tp (each expert's,
//                 a shared expert's by shared_expert_intermediate_size / tp, and the dense
//                 layers' of a mixture-of-experts model by dense_intermediate_size / tp)
//   vocabulary    embedding and LM-head rows split by ceil(vocab / tp), the last rank padded
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvcache/memory_planner.h"

namespace headroom::kvcache {

struct TensorParallelShard {
  int64_t heads = 0;                // Query heads on this rank.
  int64_t kv_heads = 0;             // KV heads on this rank (split, or 1 replicated head).
  int64_t q_dim = 0;                // heads * head_dim.
  int64_t kv_dim = 0;               // kv_heads * head_dim.
  int64_t intermediate = 0;         // MLP columns on this rank.
  int64_t vocab_rows = 0;           // Embedding / LM-head rows on this rank (vocab padded to tp).
  int64_t shared_intermediate = 0;  // The shared expert's MLP columns on this rank (0: none).
  // A dense layer's MLP columns on this rank: `intermediate` without experts, the dense layers'
  // of a mixture-of-experts model (GLM-4.5's first ones) with them.
  int64_t dense_intermediate = 0;
};

// The shard of any rank (all ranks hold the same sizes). Requires ShardingProblems(...) empty.
[[nodiscard]] TensorParallelShard ShardOf(const ModelDims& model, int64_t tensor_parallel_size);

// Why `tensor_parallel_size` cannot shard `model`, one sentence each; empty when it can.
[[nodiscard]] std::vector<std::string> ShardingProblems(const ModelDims& model,
                                                        int64_t tensor_parallel_size);

// The first global query head, KV head, MLP column and vocabulary row rank `rank` holds.
struct ShardOffsets {
  int64_t head = 0;
  int64_t kv_head = 0;
  int64_t intermediate = 0;
  int64_t vocab_row = 0;
  int64_t shared_intermediate = 0;
  int64_t dense_intermediate = 0;
};
[[nodiscard]] ShardOffsets ShardOffsetsOf(const ModelDims& model, int64_t tensor_parallel_size,
                                          int64_t rank);

}  // namespace headroom::kvcache
