// BuildForwardInput: turns a StepPlan and the block tables into the step's ForwardInput.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/types/span.h"
#include "kvcache/block_id.h"
#include "worker/engine/step_plan.h"
#include "worker/model/forward_input.h"

namespace headroom::worker {

// The block table of a sequence in a layer group (the leader's KV-cache manager, or a follower's
// own copy).
using BlockTableLookup =
    std::function<absl::Span<const kvcache::BlockId>(RequestId, int32_t group)>;

// Fills `input` (reusing its capacity) for `plan`, with `num_groups` layer groups' block tables
// and slot mappings. Block tables longer than max_blocks_per_seq are a broken invariant (the
// scheduler never admits past max_model_len).
void BuildForwardInput(const StepPlan& plan, const BlockTableLookup& tables, int32_t num_groups,
                       int32_t block_size, int32_t max_blocks_per_seq, ForwardInput* input);

}  // namespace headroom::worker
