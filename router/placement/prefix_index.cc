#include "router/placement/prefix_index.h"

#include <algorithm>

#include "kvcache/sliding_window.h"

namespace headroom::router {

int64_t PrefixIndex::Match(size_t group, absl::Span<const kvcache::BlockHash> hashes,
                           int32_t block_size, int32_t window) const {
  if (group >= groups_.size()) return 0;
  const Group& g = groups_[group];
  if (block_size <= 0) window = 0;
  // n blocks serve when the run of recorded blocks ending at block n - 1 covers the blocks the
  // token after them still reads, whatever precedes them; without a window that is all n, so the
  // first miss ends the match.
  int64_t run = 0;
  int64_t best = 0;
  for (int64_t n = 1; n <= static_cast<int64_t>(hashes.size()); ++n) {
    run = g.where.contains(hashes[static_cast<size_t>(n - 1)]) ? run + 1 : 0;
    if (run >= kvcache::HitBlocksRead(n, block_size, window)) {
      best = n;
    } else if (window <= 0) {
      break;
    }
  }
  return best;
}

void PrefixIndex::Record(size_t group, absl::Span<const kvcache::BlockHash> hashes,
                         int64_t capacity) {
  if (group >= groups_.size()) groups_.resize(group + 1);
  Group& g = groups_[group];
  // Tail first, so that the head of the prompt ends up most recently used.
  for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) {
    if (auto found = g.where.find(*it); found != g.where.end()) {
      g.lru.splice(g.lru.begin(), g.lru, found->second);
    } else {
      g.lru.push_front(*it);
      g.where.emplace(*it, g.lru.begin());
    }
  }
  while (static_cast<int64_t>(g.lru.size()) > std::max<int64_t>(capacity, 0)) {
    g.where.erase(g.lru.back());
    g.lru.pop_back();
  }
}

void PrefixIndex::Forget(size_t group, absl::Span<const kvcache::BlockHash> hashes) {
  if (group >= groups_.size()) return;
  Group& g = groups_[group];
  for (const kvcache::BlockHash& hash : hashes) {
    if (auto found = g.where.find(hash); found != g.where.end()) {
      g.lru.erase(found->second);
      g.where.erase(found);
    }
  }
}

void PrefixIndex::Clear(size_t group) {
  if (group < groups_.size()) groups_[group] = Group{};
}

int64_t PrefixIndex::size(size_t group) const {
  return group < groups_.size() ? static_cast<int64_t>(groups_[group].lru.size()) : 0;
}

}  // namespace headroom::router
