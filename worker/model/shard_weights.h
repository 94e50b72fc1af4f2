// Tensor-parallel sharding of weights (docs/tensor_parallel.md): which part of each checkpoint
// tensor a rank holds, with the sizes kvcache/tensor_parallel.h gives, so the memory plan and the
// loaded shard always agree. LoadWeights and DummyWeights (checkpoint.h) take a ShardSpec and
// read only the rank's part: a rank never holds the whole model in host memory.
//
//   q/k/v_proj (+ bias)     rows of the rank's query / KV heads          (column-parallel)
//                           (Phi-3's fused qkv_proj / gate_up_proj: each part sliced alike)
//   o_proj                  columns of the rank's query heads             (row-parallel)
//   gate/up_proj (+ bias)   rows of the rank's MLP slice                  (column-parallel)
//   down_proj               columns of the rank's MLP slice               (row-parallel)
//   experts' gate/up/down   as gate/up/down_proj, each expert sliced alike (mixture of experts)
//   MoE router              whole on every rank (every rank routes alike)
//   o/down biases           rank 0 only: added once before the all-reduce sums the ranks
//   embed_tokens, lm_head   rows of the rank's vocabulary slice, zero rows past the vocabulary
//   norms                   whole on every rank
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kvcache/memory_planner.h"
#include "worker/model/model_config.h"

namespace headroom::worker {

// One rank of a tensor-parallel group; the default is the whole model.
struct ShardSpec {
  int64_t tensor_parallel_size = 1;
  int64_t rank = 0;
};

// How tensor parallelism splits a weight (the table above).
enum class Split {
  kReplicated,        // whole on every rank
  kQueryRows,         // rows of the rank's query heads
  kKvRows,            // rows of the rank's KV heads (split, or one replicated head)
  kQueryColumns,      // columns of the rank's query heads
  kMlpRows,           // rows of the rank's slice of each expert's MLP (or the dense MLP)
  kMlpColumns,        // columns of the rank's slice of each expert's MLP (or the dense MLP)
  kDenseMlpRows,      // rows of the rank's slice of a dense layer's MLP
  kDenseMlpColumns,   // columns of the rank's slice of a dense layer's MLP
  kSharedMlpRows,     // rows of the rank's slice of a shared expert's MLP
  kSharedMlpColumns,  // columns of the rank's slice of a shared expert's MLP
  kQueryNorm,   // q_norm: whole per head (Qwen3), the rank's heads' rows across heads (OLMo 2)
  kKvNorm,      // k_norm: likewise for the rank's KV heads
  kVocabRows,   // rows of the rank's vocabulary slice, zero rows past the vocabulary
  kLeaderOnly,  // whole on rank 0, absent elsewhere
};

// The part of a [R] or [R, C] tensor a rank holds.
struct TensorSlice {
  enum class Kind { kWhole, kRows, kColumns, kAbsent };
  Kind kind = Kind::kWhole;
  int64_t start = 0;  // first row / column (kRows, kColumns)
  int64_t count = 0;  // rows / columns held; rows past R are zero (kRows)
};

// The planner's view of a model's shape.
[[nodiscard]] kvcache::ModelDims ModelDimsOf(const ModelConfig& config);

// Checks that `shard.tensor_parallel_size` can shard `config` (InvalidArgument naming every
// reason and the sizes that would work) and that `shard.rank` is one of its ranks.
[[nodiscard]] absl::Status CheckShardable(const ModelConfig& config, ShardSpec shard);

// The slice of a `split` weight that `shard` holds (kWhole for every weight of a group of one).
// `shard` must have passed CheckShardable.
[[nodiscard]] TensorSlice SliceOf(const ModelConfig& config, ShardSpec shard, Split split);

}  // namespace headroom::worker
