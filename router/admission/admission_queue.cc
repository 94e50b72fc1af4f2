#include "router/admission/admission_queue.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace headroom::router {
namespace {
// Weight of a new drain-rate sample in the moving average.
constexpr double kDrainRateAlpha = 0.2;
// Bounds of the Retry-After hint, in seconds.
constexpr int32_t kMinRetryAfterS = 1;
constexpr int32_t kMaxRetryAfterS = 60;
}  // namespace

AdmissionQueue::AdmissionQueue(const AdmissionConfig& config) : config_(config) {
  HR_CHECK_MSG(config.low_watermark >= 0 && config.low_watermark < config.high_watermark,
               "admission watermarks must satisfy 0 <= low < high");
}

void AdmissionQueue::UpdateAccepting() {
  if (accepting_ && size() >= config_.high_watermark) accepting_ = false;
  if (!accepting_ && size() <= config_.low_watermark) accepting_ = true;
}

OfferResult AdmissionQueue::Offer(int64_t id, int64_t max_total_tokens, absl::Time deadline,
                                  int32_t priority) {
  UpdateAccepting();
  if (!accepting_) {
    // Time for the queue to drain to the low watermark at the recent placement rate.
    const double excess = static_cast<double>(size() - config_.low_watermark);
    const double seconds = drain_rate_ > 0 ? excess / drain_rate_ : kMaxRetryAfterS;
    return {.accepted = false,
            .retry_after_s = std::clamp(static_cast<int32_t>(std::ceil(seconds)), kMinRetryAfterS,
                                        kMaxRetryAfterS)};
  }
  // Behind its equals: the common case (all 0) appends without a search.
  const Entry entry{id, max_total_tokens, deadline, priority};
  if (entries_.empty() || entries_.back().priority <= priority) {
    entries_.push_back(entry);
  } else {
    entries_.insert(
        std::upper_bound(entries_.begin(), entries_.end(), entry,
                         [](const Entry& a, const Entry& b) { return a.priority < b.priority; }),
        entry);
  }
  UpdateAccepting();
  return {.accepted = true, .retry_after_s = 0};
}

void AdmissionQueue::RecordDrained(int32_t count, absl::Time now) {
  if (last_drain_ != absl::InfinitePast()) {
    const double dt = std::max(absl::ToDoubleSeconds(now - last_drain_), 1e-3);
    const double sample = count / dt;
    drain_rate_ =
        drain_rate_ == 0 ? sample : (1 - kDrainRateAlpha) * drain_rate_ + kDrainRateAlpha * sample;
  }
  last_drain_ = now;
}

std::vector<PlacedRequest> AdmissionQueue::Place(absl::Span<GroupLoad> groups,
                                                 const LeastLoadedByBlocks& policy,
                                                 absl::Time now) {
  return Place(
      groups,
      [&policy](absl::Span<const GroupLoad> view, int64_t /*id*/, int64_t max_total_tokens,
                absl::Span<const bool> held) {
        return policy(view, {.max_total_tokens = max_total_tokens,
                             .cached_blocks = {},
                             .needs_priority = false,
                             .held = held});
      },
      now);
}

std::vector<PlacedRequest> AdmissionQueue::Place(absl::Span<GroupLoad> groups, Placer place,
                                                 absl::Time now) {
  std::vector<PlacedRequest> placed;
  held_.assign(groups.size(), false);  // Kept between passes: no allocation per pass.
  size_t num_held = 0;
  for (auto it = entries_.begin(); it != entries_.end() && num_held < groups.size();) {
    const PlacementDecision d = place(groups, it->id, it->max_total_tokens, held_);
    if (d.outcome == PlacementOutcome::kNoGroup) break;
    if (d.outcome == PlacementOutcome::kWait) {
      for (const size_t g : d.wait_groups) {
        if (!held_[g]) {
          held_[g] = true;
          ++num_held;
        }
      }
      ++it;
      continue;
    }
    PlacedRequest& p = placed.emplace_back();
    p.id = it->id;
    p.outcome = d.outcome;
    if (d.outcome == PlacementOutcome::kPlaced) {
      p.group = d.group;
      p.demand_blocks = d.demand_blocks;
      groups[d.group].reserved_blocks += d.demand_blocks;
    }
    it = entries_.erase(it);
  }
  if (!placed.empty()) RecordDrained(static_cast<int32_t>(placed.size()), now);
  UpdateAccepting();
  return placed;
}

std::vector<int64_t> AdmissionQueue::Expire(absl::Time now) {
  std::vector<int64_t> expired;
  std::erase_if(entries_, [&](const Entry& e) {
    if (e.deadline > now) return false;
    expired.push_back(e.id);
    return true;
  });
  UpdateAccepting();
  return expired;
}

bool AdmissionQueue::Remove(int64_t id) {
  const size_t removed = std::erase_if(entries_, [&](const Entry& e) { return e.id == id; });
  UpdateAccepting();
  return removed > 0;
}

}  // namespace headroom::router
