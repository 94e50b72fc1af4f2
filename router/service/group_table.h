// GroupTable: the router's soft state about its worker groups — one GroupLoad per group (the
// latest LoadReport plus this router's reservations) and the reservations themselves.
//
// Pure state, no I/O and no locking: the Dispatcher owns one and guards it with its mutex.
//
// Groups come and go (SetGroups, fed by discovery). Each address has a slot — its index, used by
// the placement policy, the reservations and failover's "tried" sets — and slots are stable: a
// group that leaves is *retired* (marked down, its reports ignored, never placed on) but keeps its
// slot, so requests still streaming from it release their reservations normally. If the same
// address is listed again it *revives* its old slot (same index, reservations of its still-running
// requests kept); a slot never goes to another address. Slots grow with the distinct addresses
// ever seen, which is small (a pod IP that comes back is the same pod more often than not).
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

// One slot of the table.
struct GroupSlot {
  std::string address;
  // Listed by the last SetGroups; false = retired.
  bool current = false;
};

// What SetGroups changed, as slot indices.
struct GroupChange {
  std::vector<size_t> added;    // new slots and revived ones
  std::vector<size_t> removed;  // retired now
};

class GroupTable {
 public:
  // `addresses` become slots 0..n-1 in order (duplicates dropped), as with SetGroups.
  GroupTable(std::vector<std::string> addresses, absl::Duration stale_after);

  // Makes `addresses` (duplicates dropped) the current groups: a new address gets the next slot,
  // a retired one is revived (down until its next report), a current one not listed is retired
  // (down at once; reservations of its running requests stay until they are Released).
  GroupChange SetGroups(const std::vector<std::string>& addresses);

  // Slots ever created (current and retired); valid group indices are [0, size()).
  [[nodiscard]] size_t size() const { return loads_.size(); }
  [[nodiscard]] bool current(size_t group) const { return current_[group] != 0; }
  // Every slot, indexed by group.
  [[nodiscard]] std::vector<GroupSlot> slots() const;
  // For the placement policy / AdmissionQueue::Place (which adds to reserved_blocks).
  [[nodiscard]] absl::Span<GroupLoad> loads() { return absl::MakeSpan(loads_); }
  [[nodiscard]] absl::Span<const GroupLoad> loads() const { return loads_; }
  [[nodiscard]] const GroupLoad& load(size_t group) const { return loads_[group]; }
  // The latest report of `group` (nullopt before the first one).
  [[nodiscard]] const std::optional<v1::LoadReport>& report(size_t group) const {
    return reports_[group];
  }

  // A report arrived on `group`'s WatchLoad stream: copies its fields, marks the group up and
  // releases reservations armed by MarkFirstToken that it covers. Ignored for a retired group (a
  // report read while its watcher was being stopped).
  void ApplyReport(size_t group, const v1::LoadReport& report, absl::Time now);
  // The group's stream ended.
  void MarkDown(size_t group);
  // Marks down the up groups whose last report is older than stale_after; returns how many.
  int ExpireStale(absl::Time now);
  // The current groups whose last report is older than `silence`, each returned once per silence
  // (a report ends it). A silence starts at a report: a group not heard from since SetGroups
  // listed it, and a retired one (its watcher stopped), are never returned.
  std::vector<size_t> NewlySilent(absl::Time now, absl::Duration silence);

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
  std::vector<char> silence_noticed_;  // NewlySilent returned the group since its last report
  std::vector<char> current_;  // 1 = listed by the last SetGroups (not vector<bool>: plain bytes)
  absl::flat_hash_map<std::string, size_t> slot_of_;
  absl::flat_hash_map<int64_t, Reservation> reservations_;
};

}  // namespace headroom::router
