// StepPlan: everything one forward step does, decided by the scheduler on the leader.
//
// It is a plain value so tensor-parallel followers can receive it (serialized) and apply it to
// their own block tables: every block id a sequence gains in this step is listed, and sequences
// whose blocks were released are named, so a follower never runs a KV-cache manager of its own.
#pragma once

#include <cstdint>
#include <vector>

#include "kvcache/block_id.h"
#include "worker/engine/request.h"

namespace headroom::worker {

struct ScheduledSequence {
  RequestId id;
  // Tokens whose KV is already in the cache before this step (the position of token_ids[0]).
  int32_t num_computed_tokens = 0;
  // Tokens computed in this step: a prefill chunk, or the one token sampled last step.
  std::vector<int32_t> token_ids;
  // Blocks appended to this sequence's block tables in this step, layer group by layer group:
  // num_groups runs of equal length (for a newly admitted sequence: its whole tables, cached
  // prefix blocks first).
  std::vector<kvcache::BlockId> new_block_ids;
  // Per layer group: leading entries of its block table released behind its sliding window so far
  // (they are kvcache::kNullBlockId from now on; never decreases while the sequence runs).
  std::vector<int32_t> num_released_blocks = {};
  // This step reaches the end of the sequence's known tokens: compute logits of the last token
  // and sample the next one.
  bool sample = false;
  // Prompt logprobs: the tokens of this step at positions below this also need the logits that
  // predict the next prompt token (the prompt length - 1 for such a request; 0 = none).
  int32_t prompt_logprobs_end = 0;
  // The LoRA adapter slot that computes the sequence; -1 for the base model.
  int32_t lora_slot = -1;
};

struct StepPlan {
  // Increases by one every step.
  int64_t step = 0;
  // Sequences computed in this step: decodes first, then prefill chunks.
  std::vector<ScheduledSequence> sequences;
  // Sequences whose blocks were released since the previous plan (finished, aborted or preempted);
  // followers drop their block tables.
  std::vector<RequestId> released;
  // Of those, the ones preempted in this step (they will be recomputed later).
  std::vector<RequestId> preempted;
  // Sum of token_ids over sequences (<= max_num_batched_tokens).
  int32_t num_tokens = 0;

  [[nodiscard]] bool empty() const { return sequences.empty(); }
};

// A sequence's block tables, one per layer group (a follower's copy of the leader's).
using BlockTables = std::vector<std::vector<kvcache::BlockId>>;

// Applies what `seq` says of its block tables to a follower's copy (`tables` has one per layer
// group): appends each group's new blocks and nulls the entries released behind its sliding
// window. False when `seq` does not have one run of new blocks and one release count per group or
// releases more entries than a table has (the tables may then be partly updated).
[[nodiscard]] bool ApplyToBlockTable(const ScheduledSequence& seq, BlockTables& tables);

}  // namespace headroom::worker
