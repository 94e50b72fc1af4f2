// Placement: picks the worker group for one request, by KV blocks.
//
// A group is a candidate when it is up, not draining, its max_model_len covers the request, its
// whole pool could hold the request, and it schedules by priority if the request has one. Among
// candidates whose available blocks (free minus its waiting queue's demand minus this router's
// unreported reservations) cover the request's demand, the highest score wins:
//
//   score = blocks left afterwards + prefix_affinity_weight x prompt blocks the group has cached
//
// so a group that holds the request's prefix (PrefixIndex) takes it unless it is busier by more
// blocks than the prefix saves (x the weight): affinity bounds the imbalance it causes, and a
// shared prefix spreads once its group fills up. Affinity never overrides the fit. Ties go to the
// least loaded (running + waiting), then to the group name, so the choice is deterministic.
// A request for a LoRA adapter no group serves goes to a group that loads it on first use, one
// with a LoRA slot open (LoadReport.lora_slots_open) before the others, whatever their scores:
// elsewhere it would wait for a slot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "router/placement/group_load.h"

namespace headroom::router {

struct PlacementRequest {
  // Prompt + max_tokens: the tokens the request may hold at its end.
  int64_t max_total_tokens = 0;
  // Per group, indexed like the groups span (empty: none anywhere): how many leading blocks of
  // the prompt the group holds in its prefix cache.
  absl::Span<const int64_t> cached_blocks;
  // The request has a priority other than 0: only groups that schedule by priority can take it.
  bool needs_priority = false;
  // The LoRA adapter the request runs with ("": the base model): only groups serving it can take
  // it; with none up that serves it, groups that load adapters on first use (lora_resolver).
  std::string_view lora_adapter = {};
  // Per group (empty: none): an earlier queued request waits for its blocks. Such a group still
  // counts as a candidate (the request waits rather than being refused) but is not chosen, so a
  // request does not take blocks ahead of one queued before it (AdmissionQueue).
  absl::Span<const bool> held = {};
};

enum class PlacementOutcome {
  kPlaced,     // `group` takes it now
  kWait,       // some candidate could take it once blocks free up: queue it
  kNoGroup,    // no group is up (or all drain): UNAVAILABLE, retry later
  kNeverFits,  // no up group's pool or max_model_len can ever hold it: INVALID_ARGUMENT
};

struct PlacementDecision {
  PlacementOutcome outcome = PlacementOutcome::kNoGroup;
  // Index into the groups span, for kPlaced.
  size_t group = 0;
  // Blocks the request needs on the chosen group (its block size), for kPlaced.
  int64_t demand_blocks = 0;
  // For kNeverFits messages: the largest max_model_len among up groups, and the up group that
  // comes closest to holding the request (least short of blocks among those whose max_model_len
  // admits it): the blocks the request would hold there at most, the usable blocks of its pool,
  // its block size and KV-cache layer groups. closest_pool_blocks is -1 when no such group.
  int32_t largest_max_model_len = 0;
  int64_t closest_demand_blocks = 0;
  int64_t closest_pool_blocks = -1;
  int32_t closest_block_size = 0;
  int32_t closest_kv_groups = 1;
  // kNeverFits because no up group schedules by priority (the request needs it).
  bool no_priority_group = false;
  // kNeverFits because no up group serves the request's LoRA adapter.
  bool no_adapter_group = false;
  // For kWait: the candidate groups it waits for (held, or without the blocks now). Inline for
  // up to 8 groups: a decision allocates nothing in the common case.
  absl::InlinedVector<size_t, 8> wait_groups;
};

// The INVALID_ARGUMENT text for a kNeverFits decision not caused by priority: which limit the
// request of `max_total_tokens` (prompt + max_tokens) exceeds, with the numbers.
[[nodiscard]] std::string NeverFitsMessage(int64_t max_total_tokens,
                                           const PlacementDecision& decision);

class LeastLoadedByBlocks {
 public:
  LeastLoadedByBlocks() = default;
  // 0 turns prefix affinity off.
  explicit LeastLoadedByBlocks(double prefix_affinity_weight)
      : prefix_affinity_weight_(prefix_affinity_weight) {}

  [[nodiscard]] PlacementDecision operator()(absl::Span<const GroupLoad> groups,
                                             const PlacementRequest& request) const;

 private:
  double prefix_affinity_weight_ = 1.0;
};

}  // namespace headroom::router
