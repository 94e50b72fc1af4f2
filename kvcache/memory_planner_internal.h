// Internals shared by the planner's arithmetic (memory_planner.cc) and its refusals and fixes
// (memory_plan_fixes.cc). Not for use outside kvcache/.
#pragma once

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

}  // namespace headroom::kvcache::internal
