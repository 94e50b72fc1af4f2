#include "kvcache/block_pool.h"

#include "absl/strings/str_cat.h"
#include "common/check.h"

namespace headroom::kvcache {

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching)
    : enable_caching_(enable_caching),
      blocks_(static_cast<size_t>(num_blocks)),
      free_queue_(num_blocks) {
  HR_CHECK_MSG(num_blocks >= 2, "a pool needs the null block and at least one usable block");
  if (enable_caching_) cached_.reserve(static_cast<size_t>(num_blocks));
  // The null block holds a permanent reference so it is never free, never allocated.
  blocks_[0].ref_count = 1;
  for (int32_t b = 1; b < num_blocks; ++b) free_queue_.PushBack(BlockId{b});
}

const BlockPool::BlockMeta& BlockPool::Meta(BlockId block) const {
  HR_DCHECK(block.value() >= 0 && block.value() < num_blocks());
  return blocks_[static_cast<size_t>(block.value())];
}

BlockPool::BlockMeta& BlockPool::Meta(BlockId block) {
  HR_DCHECK(block.value() >= 0 && block.value() < num_blocks());
  return blocks_[static_cast<size_t>(block.value())];
}

std::optional<BlockHash> BlockPool::hash(BlockId block) const {
  const BlockMeta& meta = Meta(block);
  if (!meta.cached) return std::nullopt;
  return meta.hash;
}

void BlockPool::Record(const BlockHash& hash, bool cached) {
  if (events_capacity_ == 0 || events_overflowed_) return;
  if (events_.size() == events_capacity_) {
    events_.clear();
    events_overflowed_ = true;
    return;
  }
  events_.push_back({.hash = hash, .cached = cached});
}

void BlockPool::RecordCacheEvents(size_t capacity) {
  events_capacity_ = capacity;
  events_.clear();
  events_.reserve(capacity);
  events_overflowed_ = false;
}

bool BlockPool::TakeCacheEvents(std::vector<CacheEvent>* out) {
  out->insert(out->end(), events_.begin(), events_.end());
  events_.clear();
  const bool complete = !events_overflowed_;
  events_overflowed_ = false;
  return complete;
}

std::vector<BlockHash> BlockPool::CachedHashes() const {
  std::vector<BlockHash> hashes;
  hashes.reserve(cached_.size());
  for (const auto& [hash, block] : cached_) {
    if (Meta(block).reported) hashes.push_back(hash);
  }
  return hashes;
}

void BlockPool::Evict(BlockMeta& meta) {
  if (meta.reported) Record(meta.hash, false);
  cached_.erase(meta.hash);
  meta.cached = false;
  meta.reported = false;
  meta.hash = BlockHash{};
}

absl::Status BlockPool::Allocate(int32_t n, std::vector<BlockId>* out) {
  HR_CHECK(n >= 0);
  if (n > free_queue_.size()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("need ", n, " KV blocks, ", free_queue_.size(), " free"));
  }
  for (int32_t i = 0; i < n; ++i) {
    const BlockId block = free_queue_.PopFront();
    BlockMeta& meta = Meta(block);
    HR_DCHECK(meta.ref_count == 0);
    if (meta.cached) {
      --num_evictable_;
      Evict(meta);
    }
    meta.ref_count = 1;
    out->push_back(block);
  }
  return absl::OkStatus();
}

std::optional<BlockId> BlockPool::Lookup(const BlockHash& hash) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::Touch(BlockId block) {
  HR_CHECK_MSG(block != kNullBlockId, "the null block is never referenced");
  BlockMeta& meta = Meta(block);
  if (meta.ref_count == 0) {
    free_queue_.Remove(block);
    if (meta.cached) --num_evictable_;
  }
  ++meta.ref_count;
}

void BlockPool::Free(absl::Span<const BlockId> blocks) {
  for (const BlockId block : blocks) {
    HR_CHECK_MSG(block != kNullBlockId, "the null block is never freed");
    BlockMeta& meta = Meta(block);
    HR_CHECK_MSG(meta.ref_count > 0, "double free of a KV block");
    if (--meta.ref_count == 0) {
      free_queue_.PushBack(block);
      if (meta.cached) ++num_evictable_;
    }
  }
}

bool BlockPool::Cache(BlockId block, const BlockHash& hash, bool report) {
  if (!enable_caching_) return false;
  BlockMeta& meta = Meta(block);
  HR_CHECK_MSG(meta.ref_count > 0 && block != kNullBlockId, "only used blocks are cached");
  if (meta.cached) return false;
  if (!cached_.try_emplace(hash, block).second) return false;
  meta.cached = true;
  meta.hash = hash;
  meta.reported = report;
  if (report) Record(hash, true);
  return true;
}

absl::Status BlockPool::CheckInvariants() const {
  const BlockMeta& null_meta = blocks_[0];
  if (null_meta.ref_count != 1 || null_meta.cached || free_queue_.Contains(kNullBlockId)) {
    return absl::InternalError("null block was freed, cached or handed out");
  }
  int32_t free_count = 0;
  int32_t evictable = 0;
  int32_t cached_count = 0;
  for (int32_t b = 1; b < num_blocks(); ++b) {
    const BlockId block{b};
    const BlockMeta& meta = Meta(block);
    if (meta.ref_count < 0) return absl::InternalError(absl::StrCat("block ", b, " ref < 0"));
    const bool is_free = meta.ref_count == 0;
    if (is_free != free_queue_.Contains(block)) {
      return absl::InternalError(absl::StrCat("block ", b, " ref_count ", meta.ref_count,
                                              " but in free queue = ", !is_free));
    }
    free_count += is_free ? 1 : 0;
    if (meta.cached) {
      ++cached_count;
      evictable += is_free ? 1 : 0;
      auto it = cached_.find(meta.hash);
      if (it == cached_.end() || it->second != block) {
        return absl::InternalError(absl::StrCat("cached block ", b, " missing from the index"));
      }
    }
  }
  if (!enable_caching_ && cached_count > 0) {
    return absl::InternalError("blocks cached with caching disabled");
  }
  if (cached_count != num_cached_blocks()) {
    return absl::InternalError(absl::StrCat("index holds ", cached_.size(), " hashes, ",
                                            cached_count, " blocks are cached"));
  }
  if (free_count != free_queue_.size() || evictable != num_evictable_) {
    return absl::InternalError(absl::StrCat("free ", free_count, " vs queue ", free_queue_.size(),
                                            ", evictable ", evictable, " vs counter ",
                                            num_evictable_));
  }
  if (static_cast<int32_t>(free_queue_.ToVector().size()) != free_queue_.size()) {
    return absl::InternalError("free queue links disagree with its size");
  }
  return absl::OkStatus();
}

}  // namespace headroom::kvcache
