// PrefixCacheDelta and PrefixCacheTracker against a plain set: random event streams, taken as
// deltas at random points (and merged as a conflating stream would), rebuild exactly the cache's
// contents; an overflow turns into a reset carrying the whole cache.
#include "kvcache/prefix_cache_delta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace headroom::kvcache {
namespace {

BlockHash H(uint64_t i) { return {.low = i, .high = ~i}; }

using Set = std::set<std::pair<uint64_t, uint64_t>>;

Set ToSet(const std::vector<BlockHash>& hashes) {
  Set s;
  for (const BlockHash& h : hashes) s.insert({h.low, h.high});
  return s;
}

// What a router does with a delta.
void ApplyTo(const PrefixCacheDelta& delta, Set& known) {
  if (delta.reset) known.clear();
  for (const BlockHash& h : delta.removed) known.erase({h.low, h.high});
  for (const BlockHash& h : delta.added) known.insert({h.low, h.high});
}

TEST(PrefixCacheDeltaTest, DeltasAndMergedDeltasRebuildTheCache) {
  std::mt19937 rng(5);
  PrefixCacheTracker tracker(/*max_pending=*/1000);
  Set truth;
  Set direct;       // applies every delta
  Set conflated;    // applies deltas merged in random runs
  Set late_joiner;  // starts from a snapshot taken midway
  bool joined = false;
  PrefixCacheDelta merged;
  for (int round = 0; round < 300; ++round) {
    std::vector<CacheEvent> events;
    const int n = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int i = 0; i < n; ++i) {
      const uint64_t id = std::uniform_int_distribution<uint64_t>(0, 40)(rng);
      const bool cached = truth.count({id, ~id}) == 0;  // a pool only adds absent, evicts present
      events.push_back({.hash = H(id), .cached = cached});
      if (cached) {
        truth.insert({id, ~id});
      } else {
        truth.erase({id, ~id});
      }
    }
    tracker.Apply(events);
    if (round == 150) {
      ApplyTo(tracker.Snapshot(), late_joiner);  // pending changes are in it and come again
      joined = true;
    }
    if (rng() % 3 == 0) continue;  // the publisher does not take every step
    const PrefixCacheDelta delta = tracker.TakeDelta();
    EXPECT_FALSE(delta.reset);
    Set added = ToSet(delta.added);
    for (const BlockHash& h : delta.removed) EXPECT_EQ(added.count({h.low, h.high}), 0u);
    ApplyTo(delta, direct);
    if (joined) ApplyTo(delta, late_joiner);
    MergeInto(&merged, delta);
    if (rng() % 4 == 0) {
      ApplyTo(merged, conflated);
      merged = PrefixCacheDelta{};
    }
    EXPECT_EQ(direct, truth) << "round " << round;
    EXPECT_EQ(ToSet(tracker.Snapshot().added), truth);
  }
  ApplyTo(merged, conflated);
  EXPECT_EQ(conflated, truth);
  EXPECT_EQ(late_joiner, truth);
}

TEST(PrefixCacheDeltaTest, MergingIntoAResetKeepsItAReset) {
  PrefixCacheDelta first{.reset = true, .added = {H(1), H(2)}, .removed = {}};
  MergeInto(&first, {.reset = false, .added = {H(3)}, .removed = {H(1)}});
  EXPECT_TRUE(first.reset);
  EXPECT_EQ(ToSet(first.added), ToSet({H(2), H(3)}));
  EXPECT_TRUE(first.removed.empty());
  PrefixCacheDelta delta{.reset = false, .added = {H(4)}, .removed = {}};
  MergeInto(&delta, first);
  EXPECT_TRUE(delta.reset) << "a later reset replaces what came before";
  EXPECT_EQ(ToSet(delta.added), ToSet({H(2), H(3)}));
}

TEST(PrefixCacheDeltaTest, TooManyPendingChangesBecomeAResetWithTheWholeCache) {
  PrefixCacheTracker tracker(/*max_pending=*/4);
  std::vector<CacheEvent> events;
  for (uint64_t i = 0; i < 6; ++i) events.push_back({.hash = H(i), .cached = true});
  events.push_back({.hash = H(0), .cached = false});
  tracker.Apply(events);
  const PrefixCacheDelta delta = tracker.TakeDelta();
  EXPECT_TRUE(delta.reset);
  EXPECT_EQ(ToSet(delta.added), ToSet({H(1), H(2), H(3), H(4), H(5)}));
  EXPECT_TRUE(tracker.TakeDelta().empty()) << "then deltas again";

  tracker.Resync({H(9)});  // the pool's log overflowed: its whole contents
  const PrefixCacheDelta resynced = tracker.TakeDelta();
  EXPECT_TRUE(resynced.reset);
  EXPECT_EQ(ToSet(resynced.added), ToSet({H(9)}));
}

}  // namespace
}  // namespace headroom::kvcache
