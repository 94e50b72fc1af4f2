// Internals shared by the planner's arithmetic (memory_planner.cc), its refusals and fixes
// (memory_plan_fixes.cc) and its table (memory_plan_format.cc). Not for use outside kvcache/.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "kvcache/memory_planner.h"

namespace headroom::kvcache::internal {

// Why a valid input was refused; kFits when it was not.
enum class Outcome { kFits, kWeightsExceedBudget, kNoKvBlocks, kSequenceDoesNotFit };

struct Evaluation {
  MemoryPlan plan;                   // The plan, computed even when it does not fit.
  Outcome outcome = Outcome::kFits;  // Whether it fits, and if not, the first reason.
};

// Refusals (a) and (b): an input out of range, or a tensor-parallel size that cannot shard the
// model. OK means Evaluate may be called.
[[nodiscard]] absl::Status Validate(const MemoryPlanInput& input);

// The plan for a validated input, and whether it fits memory (max_position_embeddings ignored).
[[nodiscard]] Evaluation Evaluate(const MemoryPlanInput& input);

// Validate(input) is OK and Evaluate(input) fits.
[[nodiscard]] bool Fits(const MemoryPlanInput& input);

// The FailedPrecondition refusal for an evaluation that does not fit, with verified fixes.
[[nodiscard]] absl::Status Refuse(const MemoryPlanInput& input, const Evaluation& evaluation);

// The layer groups of a plan with more than one, e.g. "1 full attention + 6 windowed (512
// tokens)"; empty for one group.
[[nodiscard]] std::string DescribeLayerGroups(const MemoryPlan& plan);

// The blocks each layer group holds for one sequence of `num_tokens` computed `max_chunk` at a
// time, equal counts merged in group order: "1 x 2048 + 6 x 33"; empty for one group.
[[nodiscard]] std::string GroupBlocksSum(const MemoryPlan& plan, int64_t num_tokens,
                                         int64_t max_chunk);

}  // namespace headroom::kvcache::internal
