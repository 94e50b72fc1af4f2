// GroupTable: the router's soft state about its worker groups — one GroupLoad per group (the
// latest LoadReport plus this router's reservations) and the reservations themselves.
//
// Pure state, no I/O and no locking: the Dispatcher owns one and guards it with its mutex.
//
// Up/down: a group is up while its WatchLoad stream is alive and its last report is at most
// `stale_after` old (ExpireStale); it goes down when the stream ends (MarkDown) or goes quiet.
//
// Reservation release rule: a placed request's demand is added to its group's reserved_blocks
// (AdmissionQueue::Place does the adding; Track records it). It is released
//   (a) when the request's Submit stream ends (Release), or
//   (b) once the worker has streamed the request's first token (MarkFirstToken, which notes the
//       group's current report sequence) AND a later report (sequence strictly newer) arrives:
//       that report was polled after the request held its blocks, so its free_blocks count them.
// Rule (b) is not "any newer report after submission": a report computed before the Submit
// reached the worker would release a reservation it does not reflect. Until its first token a
// waiting request is counted both in the worker's waiting_demand_blocks and in our reservation,
// which only makes placement conservative.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "headroom/v1/worker.pb.h"
#include "router/placement/group_load.h"

namespace headroom::router {

class GroupTable {
 public:
  GroupTable(std::vector<std::string> addresses, absl::Duration stale_after);

  [[nodiscard]] size_t size() const { return loads_.size(); }
  // For the placement policy / AdmissionQueue::Place (which adds to reserved_blocks).
  [[nodiscard]] absl::Span<GroupLoad> loads() { return absl::MakeSpan(loads_); }
  [[nodiscard]] absl::Span<const GroupLoad> loads() const { return loads_; }
  [[nodiscard]] const GroupLoad& load(size_t group) const { return loads_[group]; }
  // The latest report of `group` (nullopt before the first one).
  [[nodiscard]] const std::optional<v1::LoadReport>& report(size_t group) const {
    return reports_[group];
  }

  // A report arrived on `group`'s WatchLoad stream: copies its fields, marks the group up and
  // releases reservations armed by MarkFirstToken that it covers.
  void ApplyReport(size_t group, const v1::LoadReport& report, absl::Time now);
  // The group's stream ended.
  void MarkDown(size_t group);
  // Marks down the up groups whose last report is older than stale_after; returns how many.
  int ExpireStale(absl::Time now);

  // Records a reservation of `blocks` on `group` already added to its reserved_blocks.
  void Track(int64_t request, size_t group, int64_t blocks);
  // The request's first token arrived: its reservation goes at the next newer report.
  void MarkFirstToken(int64_t request);
  // Drops the request's reservation if it still holds one (its stream ended).
  void Release(int64_t request);

  [[nodiscard]] bool any_up() const;
  // The largest max_model_len among up groups (0 when none is up).
  [[nodiscard]] int32_t largest_max_model_len() const;
  // Reservations currently held (for tests and GetClusterState).
  [[nodiscard]] size_t reservations() const { return reservations_.size(); }

 private:
  struct Reservation {
    size_t group;
    int64_t blocks;
    // Release at the first report with a sequence above this (set by MarkFirstToken).
    std::optional<uint64_t> release_after;
  };

  const absl::Duration stale_after_;
  std::vector<GroupLoad> loads_;
  std::vector<std::optional<v1::LoadReport>> reports_;
  std::vector<absl::Time> last_report_;
  absl::flat_hash_map<int64_t, Reservation> reservations_;
};

}  // namespace headroom::router
