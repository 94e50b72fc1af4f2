#include "router/placement/placement.h"

#include <algorithm>
#include <tuple>

#include "kvcache/sliding_window.h"

namespace headroom::router {

PlacementDecision LeastLoadedByBlocks::operator()(absl::Span<const GroupLoad> groups,
                                                  const PlacementRequest& request) const {
  PlacementDecision decision;
  bool any_up = false;
  bool any_priority_group = false;
  bool any_candidate = false;
  std::optional<size_t> best;
  double best_score = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupLoad& g = groups[i];
    if (!g.up || g.draining || g.block_size <= 0) continue;
    any_up = true;
    decision.largest_pool_tokens =
        std::max(decision.largest_pool_tokens, int64_t{g.total_blocks} * g.block_size);
    decision.largest_max_model_len = std::max(decision.largest_max_model_len, g.max_model_len);
    // The most blocks the request holds at once there: all of them, or behind a sliding window
    // the window's and a prefill chunk's, summed over the KV cache's layer groups.
    const int64_t demand =
        kvcache::PeakBlocksOverGroups(request.max_total_tokens, g.block_size, g.kv_group_windows,
                                      g.sliding_window, g.max_num_batched_tokens);
    if (request.needs_priority && !g.priority_scheduling) continue;
    any_priority_group = true;
    if (request.max_total_tokens > g.max_model_len || demand > g.total_blocks) continue;
    any_candidate = true;
    const int64_t left = g.available_blocks() - demand;
    if (left < 0) continue;
    const int64_t cached = i < request.cached_blocks.size() ? request.cached_blocks[i] : 0;
    const double score =
        static_cast<double>(left) + prefix_affinity_weight_ * static_cast<double>(cached);
    if (best) {
      const GroupLoad& b = groups[*best];
      // The higher score wins; then fewer running + waiting; then the name. std::tie compares
      // the names by reference (make_tuple copied them: two heap allocations per candidate).
      const double neg_score = -score, best_neg_score = -best_score;
      const int64_t load = int64_t{g.running} + g.waiting;
      const int64_t best_load = int64_t{b.running} + b.waiting;
      if (!(std::tie(neg_score, load, g.group) < std::tie(best_neg_score, best_load, b.group))) {
        continue;
      }
    }
    best = i;
    best_score = score;
    decision.demand_blocks = demand;
  }
  if (best) {
    decision.outcome = PlacementOutcome::kPlaced;
    decision.group = *best;
  } else if (any_candidate) {
    decision.outcome = PlacementOutcome::kWait;
  } else {
    decision.outcome = any_up ? PlacementOutcome::kNeverFits : PlacementOutcome::kNoGroup;
    decision.no_priority_group = any_up && !any_priority_group;
  }
  return decision;
}

}  // namespace headroom::router
