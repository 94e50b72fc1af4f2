#include "router/placement/placement.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "kvcache/sliding_window.h"

namespace headroom::router {

PlacementDecision LeastLoadedByBlocks::operator()(absl::Span<const GroupLoad> groups,
                                                  const PlacementRequest& request) const {
  PlacementDecision decision;
  bool any_up = false;
  bool any_priority_group = false;
  bool any_adapter_group = false;
  bool any_candidate = false;
  std::optional<size_t> best;
  double best_score = 0;
  const auto serves_adapter = [&request](const GroupLoad& g) {
    return std::find(g.lora_adapters.begin(), g.lora_adapters.end(), request.lora_adapter) !=
           g.lora_adapters.end();
  };
  // An adapter goes where it is served; where no group up serves it, to a group that loads it.
  const bool adapter_served = !request.lora_adapter.empty() &&
                              std::any_of(groups.begin(), groups.end(), [&](const GroupLoad& g) {
                                return g.up && !g.draining && g.block_size > 0 && serves_adapter(g);
                              });
  // Such a group with a LoRA slot open loads the adapter at once; elsewhere the request would wait
  // for a slot.
  const auto waits_for_slot = [&](const GroupLoad& g) {
    return !request.lora_adapter.empty() && !adapter_served && g.lora_slots_open <= 0;
  };
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupLoad& g = groups[i];
    if (!g.up || g.draining || g.block_size <= 0) continue;
    any_up = true;
    decision.largest_max_model_len = std::max(decision.largest_max_model_len, g.max_model_len);
    // The most blocks the request holds at once there: all of them, or behind a sliding window
    // the window's and a prefill chunk's, summed over the KV cache's layer groups.
    const int64_t demand =
        kvcache::PeakBlocksOverGroups(request.max_total_tokens, g.block_size, g.kv_group_windows,
                                      g.sliding_window, g.max_num_batched_tokens);
    if (!request.lora_adapter.empty() && !(adapter_served ? serves_adapter(g) : g.lora_resolver)) {
      continue;
    }
    any_adapter_group = true;
    if (request.needs_priority && !g.priority_scheduling) continue;
    any_priority_group = true;
    if (request.max_total_tokens > g.max_model_len) continue;
    if (demand > g.total_blocks) {
      if (decision.closest_pool_blocks < 0 ||
          demand - g.total_blocks < decision.closest_demand_blocks - decision.closest_pool_blocks) {
        decision.closest_demand_blocks = demand;
        decision.closest_pool_blocks = g.total_blocks;
        decision.closest_block_size = g.block_size;
        decision.closest_kv_groups =
            std::max<int32_t>(1, static_cast<int32_t>(g.kv_group_windows.size()));
      }
      continue;
    }
    any_candidate = true;
    const int64_t left = g.available_blocks() - demand;
    if (left < 0 || (i < request.held.size() && request.held[i])) {
      decision.wait_groups.push_back(i);
      continue;
    }
    const int64_t cached = i < request.cached_blocks.size() ? request.cached_blocks[i] : 0;
    const double score =
        static_cast<double>(left) + prefix_affinity_weight_ * static_cast<double>(cached);
    if (best) {
      const GroupLoad& b = groups[*best];
      // A LoRA slot open first; then the higher score; then fewer running + waiting; then the
      // name. std::tie compares the names by reference (make_tuple copied them: two heap
      // allocations per candidate).
      const bool waits = waits_for_slot(g), best_waits = waits_for_slot(b);
      const double neg_score = -score, best_neg_score = -best_score;
      const int64_t load = int64_t{g.running} + g.waiting;
      const int64_t best_load = int64_t{b.running} + b.waiting;
      if (!(std::tie(waits, neg_score, load, g.group) <
            std::tie(best_waits, best_neg_score, best_load, b.group))) {
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
    decision.wait_groups.clear();
  } else if (any_candidate) {
    decision.outcome = PlacementOutcome::kWait;
  } else {
    decision.outcome = any_up ? PlacementOutcome::kNeverFits : PlacementOutcome::kNoGroup;
    decision.no_adapter_group = any_up && !any_adapter_group;
    decision.no_priority_group = any_up && any_adapter_group && !any_priority_group;
  }
  return decision;
}

std::string NeverFitsMessage(int64_t max_total_tokens, const PlacementDecision& d) {
  if (d.closest_pool_blocks < 0) {
    return absl::StrCat("prompt + max_tokens = ", max_total_tokens,
                        " tokens exceed every worker group's max_model_len (largest ",
                        d.largest_max_model_len, ")");
  }
  return absl::StrCat("prompt + max_tokens = ", max_total_tokens,
                      " tokens can never fit a worker group: they need ", d.closest_demand_blocks,
                      " KV blocks of ", d.closest_block_size, " tokens at most",
                      d.closest_kv_groups > 1
                          ? absl::StrCat(" (summed over ", d.closest_kv_groups, " layer groups)")
                          : "",
                      ", the closest group's pool has ", d.closest_pool_blocks,
                      " usable blocks (largest max_model_len ", d.largest_max_model_len, ")");
}

}  // namespace headroom::router
