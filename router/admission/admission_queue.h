// AdmissionQueue: the router's bounded queue of requests no group can take yet.
//
// Requests wait in priority order (lower values first, vLLM's convention), FCFS among equal
// priorities (all 0 unless clients set them), with their deadlines. Place() hands the requests to
// the placement policy in that order and charges each placed one's blocks to the group's
// reservations. A request that must wait holds the groups it waits for: no request behind it is
// placed on them, so a large request is not starved by small ones behind it. Requests behind it
// still go to groups it cannot use (a request needing a priority-scheduling group, or a longer
// max_model_len, does not stop the others from using the rest of the cluster). Backpressure with
// hysteresis: once the queue holds high_watermark requests, Offer() refuses (RESOURCE_EXHAUSTED /
// HTTP 429 with Retry-After) until it has drained to low_watermark, so a full router does not flap
// between accepting and refusing on every request.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "router/placement/group_load.h"
#include "router/placement/placement.h"

namespace headroom::router {

struct AdmissionConfig {
  // Refuse new requests once this many wait.
  int32_t high_watermark = 1024;
  // Accept again once the queue is down to this many (< high_watermark).
  int32_t low_watermark = 768;
};

struct OfferResult {
  bool accepted = false;
  // For a refusal: seconds after which a retry is likely to be accepted (>= 1).
  int32_t retry_after_s = 0;
};

// A queued request that Place() decided.
struct PlacedRequest {
  int64_t id = 0;
  PlacementOutcome outcome = PlacementOutcome::kPlaced;  // kPlaced, or kNeverFits (reject it)
  size_t group = 0;                                      // for kPlaced
  int64_t demand_blocks = 0;                             // reserved on `group`, for kPlaced
};

class AdmissionQueue {
 public:
  explicit AdmissionQueue(const AdmissionConfig& config);

  // Queues request `id` behind every queued request of its priority or a lower value, unless the
  // queue is refusing (see the hysteresis above).
  OfferResult Offer(int64_t id, int64_t max_total_tokens, absl::Time deadline,
                    int32_t priority = 0);
  // Decides one queued request: (groups, id, max_total_tokens, held) -> decision, where `held`
  // is PlacementRequest::held (the groups earlier waiting requests wait for).
  using Placer =
      absl::FunctionRef<PlacementDecision(absl::Span<const GroupLoad>, int64_t id,
                                          int64_t max_total_tokens, absl::Span<const bool> held)>;
  // Places the queued requests in order, each waiting one holding its wait_groups for the rest of
  // the pass; adds each placed request's demand to groups[group].reserved_blocks. Requests that
  // can no longer fit any group are returned with kNeverFits (the groups changed since they were
  // queued). The pass stops when every group is held or none is up.
  std::vector<PlacedRequest> Place(absl::Span<GroupLoad> groups, Placer place, absl::Time now);
  // The same with `policy` and no prefix information.
  std::vector<PlacedRequest> Place(absl::Span<GroupLoad> groups, const LeastLoadedByBlocks& policy,
                                   absl::Time now);
  // Removes and returns the requests whose deadline is at or before `now`.
  std::vector<int64_t> Expire(absl::Time now);
  // Removes a request (client cancel). False if it is not queued.
  bool Remove(int64_t id);

  [[nodiscard]] int32_t size() const { return static_cast<int32_t>(entries_.size()); }
  [[nodiscard]] bool accepting() const { return accepting_; }

 private:
  struct Entry {
    int64_t id;
    int64_t max_total_tokens;
    absl::Time deadline;
    int32_t priority;
  };

  void UpdateAccepting();
  void RecordDrained(int32_t count, absl::Time now);

  const AdmissionConfig config_;
  std::deque<Entry> entries_;
  // Place()'s held groups, per group (absl::InlinedVector<bool> is contiguous, so it makes the
  // Span the policy reads; std::vector<bool> is not).
  absl::InlinedVector<bool, 16> held_;
  bool accepting_ = true;
  // Requests leaving the queue by placement, per second (exponential moving average).
  double drain_rate_ = 0;
  absl::Time last_drain_ = absl::InfinitePast();
};

}  // namespace headroom::router
