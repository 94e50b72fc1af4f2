// BlockPool: owns the fixed set of KV blocks, their reference counts and the prefix-cache index.
//
// Every block except the reserved null block is in exactly one of two states:
//   used  (ref_count > 0): in one or more block tables; never evicted;
//   free  (ref_count == 0): in the FreeBlockQueue. A free block may still be *cached* (it holds a
//         hash and a prefix hit can revive it); allocation takes the front of the queue and evicts
//         its hash, so cached blocks are reclaimed LRU before anything else runs out.
// Nothing here allocates memory after construction except the hash map as entries are added
// (bounded by the block count; reserved up front).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kvcache/block_hash.h"
#include "kvcache/block_id.h"
#include "kvcache/free_block_queue.h"
#include "kvcache/prefix_cache_delta.h"

namespace headroom::kvcache {

class BlockPool {
 public:
  // A pool of `num_blocks` blocks (>= 2), block 0 being the null block, so num_blocks - 1 usable.
  // With `enable_caching` false, Cache() never registers anything.
  BlockPool(int32_t num_blocks, bool enable_caching);

  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // All blocks including the null block.
  [[nodiscard]] int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks that can ever be handed out (all but the null block).
  [[nodiscard]] int32_t num_usable_blocks() const { return num_blocks() - 1; }
  // Blocks with no reference (including cached ones that can be evicted).
  [[nodiscard]] int32_t num_free_blocks() const { return free_queue_.size(); }
  // Blocks in block tables.
  [[nodiscard]] int32_t num_used_blocks() const { return num_usable_blocks() - num_free_blocks(); }
  // Free blocks that still hold a cached hash (reclaimable: evicted before anyone waits).
  [[nodiscard]] int32_t num_evictable_blocks() const { return num_evictable_; }
  // Blocks registered in the prefix-cache index, used or free.
  [[nodiscard]] int32_t num_cached_blocks() const { return static_cast<int32_t>(cached_.size()); }
  [[nodiscard]] bool caching_enabled() const { return enable_caching_; }

  [[nodiscard]] int32_t ref_count(BlockId block) const { return Meta(block).ref_count; }
  [[nodiscard]] std::optional<BlockHash> hash(BlockId block) const;

  // Takes `n` blocks from the front of the free queue, evicting their cached hashes, each with
  // ref count 1, and appends them to `out`. Fewer than `n` free: ResourceExhausted, no change.
  [[nodiscard]] absl::Status Allocate(int32_t n, std::vector<BlockId>* out);

  // The block holding `hash` in the prefix cache, used or free.
  [[nodiscard]] std::optional<BlockId> Lookup(const BlockHash& hash) const;

  // Adds a reference to a block; a free (cached) block leaves the free queue.
  void Touch(BlockId block);

  // Drops one reference from each block, in order; those reaching zero join the back of the free
  // queue in that order (so the first of them is evicted first).
  void Free(absl::Span<const BlockId> blocks);

  // Registers used block `block`, whose slots are all filled, under `hash`. Returns false and
  // leaves it uncached when caching is off, the block is already cached, or another block holds
  // the same hash (no dedup: both stay valid, only one is findable). `report` false keeps the
  // hash out of the change log and CachedHashes() (the layer groups a router never matches).
  bool Cache(BlockId block, const BlockHash& hash, bool report = true);

  // Records the prefix cache's changes (Cache registering a hash, Allocate evicting one) from now
  // on, up to `capacity` of them between two TakeCacheEvents; past that the log is dropped and
  // marked overflowed. Reserves the log once, here.
  void RecordCacheEvents(size_t capacity);
  // Appends the recorded events to `out` in order and empties the log. False when the log
  // overflowed since the last call: events were lost, re-read CachedHashes().
  bool TakeCacheEvents(std::vector<CacheEvent>* out);
  // Every reported hash in the prefix cache (used and free blocks); O(cached blocks).
  [[nodiscard]] std::vector<BlockHash> CachedHashes() const;

  // Front-to-back free order (the eviction order); O(n), for tests and debugging.
  [[nodiscard]] std::vector<BlockId> FreeOrder() const { return free_queue_.ToVector(); }

  // Verifies every invariant in O(num_blocks); returns Internal with the first violation.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  struct BlockMeta {
    int32_t ref_count = 0;
    bool cached = false;
    bool reported = false;  // Cache(..., report): its caching and eviction are logged
    BlockHash hash;
  };

  [[nodiscard]] const BlockMeta& Meta(BlockId block) const;
  [[nodiscard]] BlockMeta& Meta(BlockId block);
  void Evict(BlockMeta& meta);
  void Record(const BlockHash& hash, bool cached);

  const bool enable_caching_;
  std::vector<BlockMeta> blocks_;
  FreeBlockQueue free_queue_;
  absl::flat_hash_map<BlockHash, BlockId> cached_;
  int32_t num_evictable_ = 0;
  // The change log (RecordCacheEvents): off while capacity 0.
  std::vector<CacheEvent> events_;
  size_t events_capacity_ = 0;
  bool events_overflowed_ = false;
};

}  // namespace headroom::kvcache
