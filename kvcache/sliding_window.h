// Block arithmetic of a KV cache whose every layer attends a sliding window.
//
// A query at position p reads the keys (p - window, p]. Once a sequence's first n tokens are
// computed, every later query sits at p >= n, so the keys below n - window + 1 are never read
// again and the blocks holding only such keys can be released (docs/kvcache.md). The memory
// planner and the KV-cache manager share these two functions so the plan and admission agree.
// window 0 means no window: nothing is released and a sequence holds all of its blocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace headroom::kvcache {

// Leading blocks no later query of a sequence with `num_computed` computed tokens reads: the
// blocks whose last position is below num_computed - window + 1.
[[nodiscard]] constexpr int64_t DeadBlocks(int64_t num_computed, int64_t block_size,
                                           int64_t window) {
  if (window <= 0) return 0;
  return std::max<int64_t>(0, num_computed - window + 1) / block_size;
}

// The blocks of an n-block (n >= 1) cached prefix that the token after it still reads, which a
// prefix cache must hold to serve that prefix: all n without a window, else the last ones inside
// the window (at least the last block, so a window shorter than a block does not serve nothing).
// The worker's lookup (KvCacheManager::FindCachedPrefix) and the router's (PrefixIndex::Match)
// both decide a hit by it.
[[nodiscard]] constexpr int64_t HitBlocksRead(int64_t hit_blocks, int64_t block_size,
                                              int64_t window) {
  return std::max<int64_t>(1, hit_blocks - DeadBlocks(hit_blocks * block_size, block_size, window));
}

// The most blocks one sequence of `num_tokens` tokens holds at once when each step adds at most
// `max_chunk` of them and dead blocks are released before a step's slots are assigned. A step
// starting at n holds the positions [n - window + 1, n + chunk): window - 1 + chunk positions,
// which touch at most ceil((window - 1 + chunk) / block_size) + 1 blocks.
[[nodiscard]] constexpr int64_t PeakBlocksPerSequence(int64_t num_tokens, int64_t block_size,
                                                      int64_t window, int64_t max_chunk) {
  const int64_t all = (num_tokens + block_size - 1) / block_size;
  if (window <= 0) return all;
  const int64_t span = window - 1 + std::max<int64_t>(1, max_chunk);
  return std::min(all, (span + block_size - 1) / block_size + 1);
}

// PeakBlocksPerSequence summed over a sequence's block tables, one per layer group attending
// `group_windows[g]` (kv_cache_manager.h, layer_groups.h); an empty list is one group of
// `window`.
[[nodiscard]] inline int64_t PeakBlocksOverGroups(int64_t num_tokens, int64_t block_size,
                                                  const std::vector<int32_t>& group_windows,
                                                  int64_t window, int64_t max_chunk) {
  if (group_windows.empty())
    return PeakBlocksPerSequence(num_tokens, block_size, window, max_chunk);
  int64_t peak = 0;
  for (const int32_t w : group_windows) {
    peak += PeakBlocksPerSequence(num_tokens, block_size, w, max_chunk);
  }
  return peak;
}

}  // namespace headroom::kvcache
