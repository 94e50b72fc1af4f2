// Tensor-parallel sharding of host weights (docs/tensor_parallel.md): one rank's slice of a
// loaded checkpoint, with the shapes kvcache/tensor_parallel.h gives, so the memory plan and the
// loaded shard always agree.
//
//   q/k/v_proj (+ bias)     rows of the rank's query / KV heads          (column-parallel)
//   o_proj                  columns of the rank's query heads             (row-parallel)
//   gate/up_proj (+ bias)   rows of the rank's MLP slice                  (column-parallel)
//   down_proj               columns of the rank's MLP slice               (row-parallel)
//   o/down biases           rank 0 only: added once before the all-reduce sums the ranks
//   embed_tokens, lm_head   rows of the rank's vocabulary slice, zero rows past the vocabulary
//   norms                   whole on every rank
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "kvcache/memory_planner.h"
#include "worker/model/checkpoint.h"
#include "worker/model/model_config.h"

namespace headroom::worker {

// The planner's view of a model's shape.
[[nodiscard]] kvcache::ModelDims ModelDimsOf(const ModelConfig& config);

// Checks that `tensor_parallel_size` can shard `config` (InvalidArgument naming every reason and
// the sizes that would work) and that `rank` is one of its ranks.
[[nodiscard]] absl::Status CheckShardable(const ModelConfig& config, int64_t tensor_parallel_size,
                                          int64_t rank);

// Rank `rank`'s slice of `full` (weights of the whole model, as LoadWeights returns them).
// tensor_parallel_size 1 returns a copy of `full`.
[[nodiscard]] absl::StatusOr<ModelWeights> ShardWeights(const ModelConfig& config,
                                                        const ModelWeights& full,
                                                        int64_t tensor_parallel_size, int64_t rank);

}  // namespace headroom::worker
