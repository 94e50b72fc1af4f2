#include "kvcache/prefix_cache_delta.h"

#include <utility>

namespace headroom::kvcache {

void MergeInto(PrefixCacheDelta* earlier, const PrefixCacheDelta& later) {
  if (later.reset) {
    *earlier = later;
    return;
  }
  if (earlier->reset) {
    absl::flat_hash_set<BlockHash> cached(earlier->added.begin(), earlier->added.end());
    for (const BlockHash& h : later.removed) cached.erase(h);
    cached.insert(later.added.begin(), later.added.end());
    earlier->added.assign(cached.begin(), cached.end());
    return;
  }
  absl::flat_hash_map<BlockHash, bool> state;
  for (const BlockHash& h : earlier->added) state[h] = true;
  for (const BlockHash& h : earlier->removed) state[h] = false;
  for (const BlockHash& h : later.added) state[h] = true;
  for (const BlockHash& h : later.removed) state[h] = false;
  earlier->added.clear();
  earlier->removed.clear();
  for (const auto& [h, cached] : state) (cached ? earlier->added : earlier->removed).push_back(h);
}

void PrefixCacheTracker::Apply(absl::Span<const CacheEvent> events) {
  for (const CacheEvent& e : events) {
    if (e.cached) {
      cached_.insert(e.hash);
    } else {
      cached_.erase(e.hash);
    }
    if (!reset_pending_) pending_[e.hash] = e.cached;
  }
  if (pending_.size() > max_pending_) {
    pending_.clear();
    reset_pending_ = true;
  }
}

void PrefixCacheTracker::Resync(absl::Span<const BlockHash> cached) {
  cached_.clear();
  cached_.insert(cached.begin(), cached.end());
  pending_.clear();
  reset_pending_ = true;
}

PrefixCacheDelta PrefixCacheTracker::TakeDelta() {
  PrefixCacheDelta delta;
  if (reset_pending_) {
    delta = Snapshot();
  } else {
    for (const auto& [h, cached] : pending_) (cached ? delta.added : delta.removed).push_back(h);
  }
  pending_.clear();
  reset_pending_ = false;
  return delta;
}

PrefixCacheDelta PrefixCacheTracker::Snapshot() const {
  PrefixCacheDelta delta;
  delta.reset = true;
  delta.added.assign(cached_.begin(), cached_.end());
  return delta;
}

}  // namespace headroom::kvcache
