// Publishing a prefix cache's contents (the chained hashes of the full KV blocks it holds) to
// routers, for prefix-affine placement (docs/router.md, "Prefix affinity"):
//
//   BlockPool (engine thread) --CacheEvent log--> PrefixCacheTracker (worker: the whole set and
//   the changes not yet sent) --PrefixCacheDelta in each LoadReport--> the router's PrefixIndex
//
// A delta is set-valued: `added` and `removed` are disjoint, and each entry states a hash's
// membership after the delta. So applying deltas in order gives the cache's contents, and
// MergeInto(a, b) has the effect of a then b (a stream that sends only the newest report merges
// the deltas it skips). A `reset` delta is the whole cache.
#pragma once

#include <cstddef>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "kvcache/block_hash.h"

namespace headroom::kvcache {

// One change of a prefix cache: `hash` became cached (true) or was evicted (false).
struct CacheEvent {
  BlockHash hash;
  bool cached = false;
};

struct PrefixCacheDelta {
  // `added` is the whole cache: forget what was known before.
  bool reset = false;
  std::vector<BlockHash> added;
  std::vector<BlockHash> removed;

  [[nodiscard]] bool empty() const { return !reset && added.empty() && removed.empty(); }
  [[nodiscard]] size_t size() const { return added.size() + removed.size(); }
};

// Makes `*earlier` the effect of `*earlier` followed by `later`.
void MergeInto(PrefixCacheDelta* earlier, const PrefixCacheDelta& later);

// The worker's side: the whole cache (to start a new stream with) and the changes since the last
// delta. Not thread-safe (the engine loop keeps one under its mutex). Memory is bounded: the set
// by the pool's block count, the pending changes by `max_pending` distinct hashes, past which
// they are dropped and the next delta is a reset (the whole cache) instead.
class PrefixCacheTracker {
 public:
  explicit PrefixCacheTracker(size_t max_pending) : max_pending_(max_pending) {}

  // Applies a BlockPool's events, in order.
  void Apply(absl::Span<const CacheEvent> events);
  // The whole cache after the event log overflowed: the next delta is a reset.
  void Resync(absl::Span<const BlockHash> cached);
  // The changes since the last TakeDelta (empty when none; a reset after an overflow).
  [[nodiscard]] PrefixCacheDelta TakeDelta();
  // The whole cache, as a reset delta.
  [[nodiscard]] PrefixCacheDelta Snapshot() const;

  [[nodiscard]] size_t size() const { return cached_.size(); }

 private:
  const size_t max_pending_;
  absl::flat_hash_set<BlockHash> cached_;
  absl::flat_hash_map<BlockHash, bool> pending_;  // membership after the pending changes
  bool reset_pending_ = false;
};

}  // namespace headroom::kvcache
