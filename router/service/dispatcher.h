// Dispatcher: the router's placement loop. Owns the GroupTable and the AdmissionQueue under one
// mutex and runs placement on its own thread, so gRPC reactions only post to it (Submit, Cancel,
// Finished...) and never place, wait or call out while holding the lock.
//
// Threads: one dispatch thread, woken by every post and by a 50 ms tick. A pass: mark stale groups
// down, expire queued requests past their deadline (DEADLINE_EXCEEDED), place failover retries
// (each excluding the groups it already tried), then AdmissionQueue::Place. Decisions are
// delivered to the requests' PlacementListener after the lock is released.
//
// Groups: SetGroups changes the group set at any time (discovery); see GroupTable for the slot
// rules. A removed group is down at once, so queued requests and failover retries go elsewhere;
// requests already streaming from it are not touched (their Finished releases as usual).
//
// Lifetimes: listeners are held as weak_ptr, so a request that ended meanwhile is skipped (its
// reservation, if any was just made, is released). Stop() joins the thread; call it after the
// gRPC server has shut down.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "headroom/v1/inference.pb.h"
#include "kvcache/block_hash.h"
#include "router/admission/admission_queue.h"
#include "router/placement/placement.h"
#include "router/placement/prefix_index.h"
#include "router/service/group_table.h"

namespace headroom::router {

// Receives the placement decision of one request, on the dispatch thread.
class PlacementListener {
 public:
  virtual ~PlacementListener() = default;
  // Send the request to `group`; `demand_blocks` are reserved there until Finished().
  virtual void OnPlaced(size_t group) = 0;
  // The request will not run: DEADLINE_EXCEEDED, INVALID_ARGUMENT (never fits), UNAVAILABLE.
  virtual void OnRejected(const absl::Status& status) = 0;
  // The group it was placed on has sent no load report for `silence` (DispatcherOptions::
  // silence_timeout): the process is hung or cut off, and the request should give it up.
  virtual void OnGroupLost(size_t group, absl::Duration silence) {
    static_cast<void>(group);
    static_cast<void>(silence);
  }
};

struct DispatcherOptions {
  std::vector<std::string> groups;  // initial worker group leader addresses (SetGroups changes)
  AdmissionConfig admission;
  // Placement's weight of a cached prompt block against a free block (placement.h); 0 = off.
  double prefix_affinity_weight = 1.0;
  // A group whose last report is older than this is down.
  absl::Duration stale_after = absl::Seconds(2);
  // A group silent this long is taken as hung: each request placed there and not yet finished is
  // told OnGroupLost, once per silence. Infinite: never.
  absl::Duration silence_timeout = absl::Seconds(10);
  absl::Duration tick = absl::Milliseconds(50);
};

// The prompt of a request, for prefix-affine placement (PrefixIndex). Empty: no affinity.
struct PromptPrefix {
  std::vector<int32_t> tokens;
  std::string cache_salt;
  // The LoRA adapter that computes the request ("": the base model): only groups that serve it
  // take the request, and the prefix's block hashes on each are keyed by the cache key that group
  // reports for it (v1::LoraAdapter.cache_key, a hash of its files), as its workers key theirs.
  std::string lora_adapter;
};

// Result of Submit.
struct SubmitResult {
  absl::Status status;        // OK = queued; RESOURCE_EXHAUSTED; UNAVAILABLE (no group up)
  int32_t retry_after_s = 0;  // for RESOURCE_EXHAUSTED
};

// A group that took a run-time LoRA load or unload, and the first of its load reports made after
// (its answer's report_sequence; 0: not told).
struct LoraChange {
  size_t group = 0;
  uint64_t report_sequence = 0;
};

class Dispatcher {
 public:
  explicit Dispatcher(DispatcherOptions options);
  ~Dispatcher();  // Stop()s

  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Called (on the dispatch thread) whenever "at least one group is up" changes.
  void SetUpListener(std::function<void(bool any_up)> listener);
  void Start();
  void Stop();

  // Queues request `id` for placement, in `priority` order (AdmissionQueue::Offer).
  SubmitResult Submit(int64_t id, int64_t max_total_tokens, absl::Time deadline,
                      std::weak_ptr<PlacementListener> listener, PromptPrefix prompt = {},
                      int32_t priority = 0);
  // Failover: places `id` again on a group not in `tried` (no admission-queue limit: it was
  // admitted already). Rejected UNAVAILABLE when no other group can ever take it.
  void Resubmit(int64_t id, int64_t max_total_tokens, absl::Time deadline,
                absl::flat_hash_set<size_t> tried, std::weak_ptr<PlacementListener> listener,
                PromptPrefix prompt = {}, int32_t priority = 0);
  // The request ended before placement (client cancel): forget it.
  void Cancel(int64_t id);
  // Its worker streamed the first token (reservation goes at the next newer report).
  void FirstToken(int64_t id);
  // Its worker stream ended: release its reservation.
  void Finished(int64_t id);

  // Makes `addresses` the current groups (GroupTable::SetGroups) and returns every slot after the
  // change, so the GroupMonitor can match its watchers to the same indices.
  std::vector<GroupSlot> SetGroups(const std::vector<std::string>& addresses);

  // From the GroupMonitor. A report's prefix-cache delta goes to the PrefixIndex (the group's
  // cached blocks as the worker reports them), the rest to the GroupTable.
  void OnReport(size_t group, v1::LoadReport report);
  void OnStreamDown(size_t group);

  [[nodiscard]] int32_t largest_max_model_len() const;
  // The model the first up group reports ("" when none has reported).
  [[nodiscard]] std::string reported_model() const;
  // `read(report)` with the LoadReport of the first up group that has reported (null when
  // none), under the dispatcher's lock: `read` copies what it needs out and returns at once.
  template <typename Read>
  auto ReadFirstUpReport(Read read) const {
    std::lock_guard<std::mutex> lock(mu_);
    return read(FirstUpReport());
  }
  // The LoRA adapters up groups report, each name once (the first group's path), in report
  // order.
  [[nodiscard]] std::vector<v1::LoraAdapter> reported_lora_adapters() const;
  // Some up group reports serving the adapter `name`, or loading adapters on first use (a
  // request's model, checked per request: otherwise it names no model served here).
  [[nodiscard]] bool lora_adapter_servable(const std::string& name) const;
  // Waits until each of the `changed` groups that is up has reported serving the adapter `name`
  // (`served`) or not serving it, or has sent the report its change named (a later report may
  // show a later change: a resolving group loads an unloaded adapter again for a request), or
  // until `deadline`; false on timeout. A run-time load or unload returns after it, so the next
  // request is placed by what the groups now serve.
  bool AwaitLoraReports(const std::vector<LoraChange>& changed, const std::string& name,
                        bool served, absl::Time deadline);
  [[nodiscard]] bool any_up() const;
  // The current groups only (retired ones are left out).
  [[nodiscard]] v1::ClusterState Snapshot() const;

 private:
  // The report of the first up group that has reported; null when none. mu_ must be held.
  [[nodiscard]] const v1::LoadReport* FirstUpReport() const;

  struct Pending {
    int64_t max_total_tokens = 0;
    absl::Time deadline;
    std::weak_ptr<PlacementListener> listener;
    absl::flat_hash_set<size_t> tried;  // failover only
    PromptPrefix prompt;
    // Not 0: only groups that schedule by priority can take it.
    int32_t priority = 0;
    // kvcache::PromptBlockHashes of the prompt for blocks of `hashed_block_size` under the LoRA
    // cache key `hashed_lora_key` (computed on first use).
    int32_t hashed_block_size = 0;
    std::string hashed_lora_key;
    std::vector<kvcache::BlockHash> hashes;
  };
  struct Delivery {
    enum class Kind : uint8_t {
      kPlaced,     // OnPlaced(group)
      kRejected,   // OnRejected(status)
      kGroupLost,  // OnGroupLost(group): the group it was placed on went silent
    };
    std::weak_ptr<PlacementListener> listener;
    int64_t id = 0;
    Kind kind = Kind::kRejected;
    size_t group = 0;
    absl::Status status;
  };
  // A request sent to a worker whose stream has not ended (Finished).
  struct PlacedCall {
    size_t group = 0;
    std::weak_ptr<PlacementListener> listener;
  };

  void Run();
  // The prompt block hashes of `p` for `block_size` (memoized in `p`).
  // The prompt's block hashes as group `group` keys them (its block size, and its cache key for
  // the request's adapter); empty when the group does not serve the adapter.
  absl::Span<const kvcache::BlockHash> HashesForLocked(Pending& p, size_t group);
  // Group `group`'s last report lists the adapter `name`.
  bool ServesLoraLocked(size_t group, const std::string& name) const;
  // Places `p` on `groups` (the loads, or a view of them) with its cached prefix per group, on
  // none of the `held` ones (PlacementRequest::held).
  PlacementDecision PlaceLocked(absl::Span<const GroupLoad> groups, Pending& p,
                                absl::Span<const bool> held = {});
  // `p` was placed on `group`: its prompt's blocks are now cached there.
  void RecordPlacementLocked(size_t group, Pending& p);
  // One pass under mu_; returns what to deliver.
  std::vector<Delivery> PassLocked(absl::Time now);
  void Wake();

  const DispatcherOptions options_;
  const LeastLoadedByBlocks policy_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool dirty_ = false;                               // guarded by mu_
  bool stopping_ = false;                            // guarded by mu_
  GroupTable table_;                                 // guarded by mu_
  PrefixIndex prefixes_;                             // guarded by mu_
  AdmissionQueue queue_;                             // guarded by mu_
  absl::flat_hash_map<int64_t, Pending> queued_;     // guarded by mu_
  std::deque<int64_t> retries_;                      // guarded by mu_ (ids in failover_)
  absl::flat_hash_map<int64_t, Pending> failover_;   // guarded by mu_
  int64_t refused_ = 0;                              // guarded by mu_
  int32_t in_flight_ = 0;                            // guarded by mu_
  absl::flat_hash_map<int64_t, PlacedCall> placed_;  // guarded by mu_
  std::function<void(bool)> up_listener_;            // set before Start
  bool last_any_up_ = false;                         // dispatch thread only
  std::thread thread_;
};

}  // namespace headroom::router
