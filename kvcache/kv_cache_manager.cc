#include "kvcache/kv_cache_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "kvcache/sliding_window.h"

namespace headroom::kvcache {

absl::StatusOr<std::unique_ptr<KvCacheManager>> KvCacheManager::Create(
    const KvCacheConfig& config) {
  if (config.num_blocks < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_blocks must be at least 2 (the null block and one usable block), got ",
                     config.num_blocks));
  }
  if (config.block_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_size must be positive, got ", config.block_size));
  }
  if (config.watermark_blocks < 0 || config.watermark_blocks >= config.num_blocks - 1) {
    return absl::InvalidArgumentError(absl::StrCat("watermark_blocks must be in [0, ",
                                                   config.num_blocks - 1, "), got ",
                                                   config.watermark_blocks));
  }
  if (config.sliding_window < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sliding_window must be 0 (none) or positive, got ", config.sliding_window));
  }
  return std::unique_ptr<KvCacheManager>(new KvCacheManager(config));
}

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : config_(config), pool_(config.num_blocks, config.enable_prefix_caching) {}

int32_t KvCacheManager::BlocksForTokens(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
}

int32_t KvCacheManager::PeakBlocks(int64_t num_tokens, int32_t max_chunk) const {
  return static_cast<int32_t>(
      PeakBlocksPerSequence(num_tokens, config_.block_size, config_.sliding_window, max_chunk));
}

const KvCacheManager::Sequence& KvCacheManager::Get(SequenceId seq) const {
  auto it = sequences_.find(seq);
  HR_CHECK_MSG(it != sequences_.end(), "unknown sequence");
  return it->second;
}

absl::Span<const BlockId> KvCacheManager::BlockTable(SequenceId seq) const {
  return Get(seq).blocks;
}

int32_t KvCacheManager::NumTokens(SequenceId seq) const { return Get(seq).num_tokens; }

int32_t KvCacheManager::NumReleasedBlocks(SequenceId seq) const {
  return Get(seq).num_released_blocks;
}

PrefixHit KvCacheManager::FindCachedPrefix(absl::Span<const int32_t> prompt,
                                           std::string_view cache_salt, bool lookup) const {
  PrefixHit hit;
  hit.next_parent = RootBlockHash(cache_salt);
  hit.num_query_tokens = static_cast<int32_t>(prompt.size());
  if (!config_.enable_prefix_caching || prompt.empty() || !lookup) return hit;
  const size_t block_size = static_cast<size_t>(config_.block_size);
  // The last prompt token is always computed, so at most (size - 1) tokens can be served.
  const size_t max_blocks = (prompt.size() - 1) / block_size;
  if (config_.sliding_window > 0) {
    FindCachedWindow(prompt, max_blocks, hit);
    return hit;
  }
  for (size_t i = 0; i < max_blocks; ++i) {
    const BlockHash hash = HashBlock(hit.next_parent, prompt.subspan(i * block_size, block_size));
    const std::optional<BlockId> block = pool_.Lookup(hash);
    if (!block) break;
    hit.blocks.push_back(*block);
    hit.hashes.push_back(hash);
    hit.next_parent = hash;
  }
  hit.num_cached_tokens = static_cast<int32_t>(hit.blocks.size() * block_size);
  return hit;
}

void KvCacheManager::FindCachedWindow(absl::Span<const int32_t> prompt, size_t max_blocks,
                                      PrefixHit& hit) const {
  const size_t block_size = static_cast<size_t>(config_.block_size);
  std::vector<BlockHash> hashes;
  std::vector<BlockId> blocks;
  hashes.reserve(max_blocks);
  blocks.reserve(max_blocks);
  BlockHash parent = hit.next_parent;
  size_t best = 0;
  size_t run = 0;  // cached blocks ending at block i
  for (size_t i = 0; i < max_blocks; ++i) {
    parent = HashBlock(parent, prompt.subspan(i * block_size, block_size));
    const std::optional<BlockId> block = pool_.Lookup(parent);
    hashes.push_back(parent);
    blocks.push_back(block.value_or(kNullBlockId));
    run = block ? run + 1 : 0;
    // A hit of i + 1 blocks needs the blocks its first computed token still reads, and at least
    // its last one (so a window shorter than a block does not make a hit of nothing).
    const auto tokens = static_cast<int64_t>((i + 1) * block_size);
    const auto dead =
        static_cast<size_t>(DeadBlocks(tokens, config_.block_size, config_.sliding_window));
    if (run >= std::max<size_t>(1, i + 1 - dead)) best = i + 1;
  }
  if (best == 0) return;
  const auto tokens = static_cast<int64_t>(best * block_size);
  const auto dead =
      static_cast<size_t>(DeadBlocks(tokens, config_.block_size, config_.sliding_window));
  hit.blocks.assign(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(best));
  std::fill(hit.blocks.begin(), hit.blocks.begin() + static_cast<std::ptrdiff_t>(dead),
            kNullBlockId);
  hit.hashes.assign(hashes.begin(), hashes.begin() + static_cast<std::ptrdiff_t>(best));
  hit.next_parent = hit.hashes.back();
  hit.num_cached_tokens = static_cast<int32_t>(tokens);
}

int32_t KvCacheManager::BlocksToAdmit(const PrefixHit& hit, int32_t num_tokens) const {
  int32_t revived = 0;
  for (size_t i = DeadHitBlocks(hit); i < hit.blocks.size(); ++i) {
    revived += pool_.ref_count(hit.blocks[i]) == 0 ? 1 : 0;
  }
  const int32_t total = BlocksForTokens(std::max(num_tokens, hit.num_cached_tokens));
  return total - static_cast<int32_t>(hit.blocks.size()) + revived;
}

bool KvCacheManager::CanAdmit(int32_t blocks) const {
  return blocks + config_.watermark_blocks <= pool_.num_free_blocks();
}

int32_t KvCacheManager::BlocksToAppend(SequenceId seq, int32_t num_new_tokens) const {
  const Sequence& s = Get(seq);
  const int32_t new_blocks = NewBlocksFor(s, num_new_tokens);
  if (new_blocks == 0) return 0;
  return std::max(0, new_blocks - DeadBlocksOnlyHeldBy(s));
}

int32_t KvCacheManager::BlocksToReach(SequenceId seq, int64_t num_tokens, int32_t max_chunk) const {
  const Sequence& s = Get(seq);
  const int32_t append = BlocksToAppend(seq, static_cast<int32_t>(num_tokens - s.num_tokens));
  if (config_.sliding_window == 0) return append;
  const int32_t held = static_cast<int32_t>(s.blocks.size()) - s.num_released_blocks;
  return std::min(append, std::max(0, PeakBlocks(num_tokens, max_chunk) - held));
}

size_t KvCacheManager::DeadHitBlocks(const PrefixHit& hit) const {
  const int64_t dead =
      DeadBlocks(hit.num_cached_tokens, config_.block_size, config_.sliding_window);
  return static_cast<size_t>(std::min<int64_t>(dead, static_cast<int64_t>(hit.blocks.size())));
}

int32_t KvCacheManager::DeadHeldBlocks(const Sequence& s) const {
  const int64_t dead = DeadBlocks(s.num_tokens, config_.block_size, config_.sliding_window);
  return std::max(0, static_cast<int32_t>(dead) - s.num_released_blocks);
}

int32_t KvCacheManager::DeadBlocksOnlyHeldBy(const Sequence& s) const {
  const int32_t end = s.num_released_blocks + DeadHeldBlocks(s);
  int32_t n = 0;
  for (int32_t i = s.num_released_blocks; i < end; ++i) {
    n += pool_.ref_count(s.blocks[static_cast<size_t>(i)]) == 1 ? 1 : 0;
  }
  return n;
}

void KvCacheManager::ReleaseDeadBlocks(Sequence& s) {
  const int32_t dead = DeadHeldBlocks(s);
  if (dead == 0) return;
  const auto first = s.blocks.begin() + s.num_released_blocks;
  pool_.Free(absl::MakeConstSpan(&*first, static_cast<size_t>(dead)));
  std::fill(first, first + dead, kNullBlockId);
  s.num_released_blocks += dead;
  total_tokens_ -= int64_t{dead} * config_.block_size;
  total_slots_ -= int64_t{dead} * config_.block_size;
}

int32_t KvCacheManager::NewBlocksFor(const Sequence& s, int32_t num_new_tokens) const {
  const int64_t tokens = int64_t{s.num_tokens} + num_new_tokens;
  const int64_t capacity = static_cast<int64_t>(s.blocks.size()) * config_.block_size;
  if (tokens <= capacity) return 0;  // the common decode case, without a division
  return BlocksForTokens(tokens) - static_cast<int32_t>(s.blocks.size());
}

absl::Status KvCacheManager::AddSequence(SequenceId seq, const PrefixHit& hit,
                                         absl::Span<const int32_t> tokens) {
  if (tokens.size() < static_cast<size_t>(hit.num_cached_tokens)) {
    return absl::InvalidArgumentError(absl::StrCat("admitting ", tokens.size(),
                                                   " tokens with a prefix hit of ",
                                                   hit.num_cached_tokens, " tokens"));
  }
  if (sequences_.contains(seq)) {
    return absl::FailedPreconditionError(absl::StrCat("sequence ", seq.value(), " exists"));
  }
  HR_CHECK(hit.blocks.size() == hit.hashes.size());
  // Hit blocks behind the window need not be cached (they are not taken).
  for (size_t i = DeadHitBlocks(hit); i < hit.blocks.size(); ++i) {
    if (pool_.hash(hit.blocks[i]) != hit.hashes[i]) {
      return absl::FailedPreconditionError(absl::StrCat(
          "prefix hit is stale: block ", hit.blocks[i].value(), " was evicted; look up again"));
    }
  }
  const absl::Span<const int32_t> new_tokens =
      tokens.subspan(static_cast<size_t>(hit.num_cached_tokens));
  const int32_t needed = BlocksToAdmit(hit, static_cast<int32_t>(tokens.size()));
  if (!CanAdmit(needed)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("admitting ", tokens.size(), " tokens needs ", needed,
                     " free KV blocks plus the watermark of ", config_.watermark_blocks, "; ",
                     pool_.num_free_blocks(), " are free"));
  }
  // Revive the hit blocks a query still reads before allocating, so allocation cannot evict one
  // of them; the ones behind the sliding window stay where they are.
  const size_t dead = DeadHitBlocks(hit);
  for (size_t i = dead; i < hit.blocks.size(); ++i) pool_.Touch(hit.blocks[i]);
  Sequence& s = sequences_[seq];
  s.blocks = hit.blocks;
  std::fill(s.blocks.begin(), s.blocks.begin() + static_cast<std::ptrdiff_t>(dead), kNullBlockId);
  s.num_released_blocks = static_cast<int32_t>(dead);
  s.parent_hash = hit.next_parent;
  s.num_tokens = hit.num_cached_tokens;
  s.num_full_blocks = static_cast<int32_t>(hit.blocks.size());
  const int64_t held = s.num_tokens - int64_t{s.num_released_blocks} * config_.block_size;
  total_tokens_ += held;
  total_slots_ += held;
  prefix_queries_ += hit.num_query_tokens;
  prefix_hits_ += hit.num_cached_tokens;
  const int32_t new_blocks = NewBlocksFor(s, static_cast<int32_t>(new_tokens.size()));
  HR_CHECK(pool_.Allocate(new_blocks, &s.blocks).ok());
  total_slots_ += int64_t{new_blocks} * config_.block_size;
  FillSlots(s, new_tokens);
  return absl::OkStatus();
}

absl::Status KvCacheManager::Append(SequenceId seq, absl::Span<const int32_t> new_tokens) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) {
    return absl::NotFoundError(absl::StrCat("sequence ", seq.value(), " holds no KV blocks"));
  }
  Sequence& s = it->second;
  const int32_t new_blocks = NewBlocksFor(s, static_cast<int32_t>(new_tokens.size()));
  if (new_blocks > 0) {
    const int32_t freed = DeadBlocksOnlyHeldBy(s);
    if (new_blocks > pool_.num_free_blocks() + freed) {
      return absl::ResourceExhaustedError(
          absl::StrCat("appending ", new_tokens.size(), " tokens to sequence ", seq.value(),
                       " needs ", new_blocks, " KV blocks; ", pool_.num_free_blocks(), " are free",
                       freed > 0 ? absl::StrCat(" and its sliding window releases ", freed) : ""));
    }
  }
  // Every token held so far is computed: the blocks behind the window of the step that computes
  // `new_tokens` are never read again.
  if (config_.sliding_window > 0) ReleaseDeadBlocks(s);
  if (new_blocks > 0) {
    HR_CHECK(pool_.Allocate(new_blocks, &s.blocks).ok());
    total_slots_ += int64_t{new_blocks} * config_.block_size;
  }
  FillSlots(s, new_tokens);
  return absl::OkStatus();
}

void KvCacheManager::FillSlots(Sequence& s, absl::Span<const int32_t> tokens) {
  s.num_tokens += static_cast<int32_t>(tokens.size());
  total_tokens_ += static_cast<int64_t>(tokens.size());
  if (!config_.enable_prefix_caching) return;
  const size_t block_size = static_cast<size_t>(config_.block_size);
  while (!tokens.empty()) {
    const size_t take = std::min(tokens.size(), block_size - s.tail_tokens.size());
    s.tail_tokens.insert(s.tail_tokens.end(), tokens.begin(),
                         tokens.begin() + static_cast<std::ptrdiff_t>(take));
    tokens.remove_prefix(take);
    if (s.tail_tokens.size() == block_size) {
      s.parent_hash = HashBlock(s.parent_hash, s.tail_tokens);
      pool_.Cache(s.blocks[static_cast<size_t>(s.num_full_blocks)], s.parent_hash);
      s.tail_tokens.clear();
      ++s.num_full_blocks;
    }
  }
}

bool KvCacheManager::Free(SequenceId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return false;
  Sequence& s = it->second;
  std::reverse(s.blocks.begin() + s.num_released_blocks, s.blocks.end());
  pool_.Free(absl::MakeConstSpan(s.blocks).subspan(static_cast<size_t>(s.num_released_blocks)));
  const int64_t released_slots = int64_t{s.num_released_blocks} * config_.block_size;
  total_tokens_ -= s.num_tokens - released_slots;
  total_slots_ -= static_cast<int64_t>(s.blocks.size()) * config_.block_size - released_slots;
  sequences_.erase(it);
  return true;
}

KvCacheStats KvCacheManager::Stats() const {
  KvCacheStats stats;
  stats.num_usable_blocks = pool_.num_usable_blocks();
  stats.num_free_blocks = pool_.num_free_blocks();
  stats.num_evictable_blocks = pool_.num_evictable_blocks();
  stats.num_used_blocks = pool_.num_used_blocks();
  stats.usage =
      static_cast<double>(stats.num_used_blocks) / static_cast<double>(stats.num_usable_blocks);
  stats.num_sequences = static_cast<int32_t>(sequences_.size());
  stats.num_tokens = total_tokens_;
  stats.internal_waste_slots = total_slots_ - total_tokens_;
  stats.prefix_queries = prefix_queries_;
  stats.prefix_hits = prefix_hits_;
  return stats;
}

absl::Status KvCacheManager::CheckInvariants() const {
  if (absl::Status status = pool_.CheckInvariants(); !status.ok()) return status;
  std::vector<int32_t> refs(static_cast<size_t>(pool_.num_blocks()), 0);
  int64_t tokens = 0;
  int64_t slots = 0;
  for (const auto& [id, s] : sequences_) {
    if (BlocksForTokens(s.num_tokens) != static_cast<int32_t>(s.blocks.size())) {
      return absl::InternalError(absl::StrCat("sequence ", id.value(), " holds ", s.num_tokens,
                                              " tokens in ", s.blocks.size(), " blocks"));
    }
    if (config_.enable_prefix_caching &&
        static_cast<int32_t>(s.tail_tokens.size()) != s.num_tokens % config_.block_size) {
      return absl::InternalError(
          absl::StrCat("sequence ", id.value(), " tail holds ", s.tail_tokens.size(), " tokens"));
    }
    if (s.num_released_blocks < 0 ||
        s.num_released_blocks >
            DeadBlocks(s.num_tokens, config_.block_size, config_.sliding_window)) {
      return absl::InternalError(absl::StrCat("sequence ", id.value(), " released ",
                                              s.num_released_blocks, " blocks at ", s.num_tokens,
                                              " tokens"));
    }
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      const bool released = i < static_cast<size_t>(s.num_released_blocks);
      if ((s.blocks[i] == kNullBlockId) != released) {
        return absl::InternalError(
            absl::StrCat("sequence ", id.value(), " block table entry ", i,
                         released ? " was released but holds block " : " holds the null block ",
                         s.blocks[i].value()));
      }
      if (!released) ++refs[static_cast<size_t>(s.blocks[i].value())];
    }
    const int64_t released_slots = int64_t{s.num_released_blocks} * config_.block_size;
    tokens += s.num_tokens - released_slots;
    slots += static_cast<int64_t>(s.blocks.size()) * config_.block_size - released_slots;
  }
  for (int32_t b = 1; b < pool_.num_blocks(); ++b) {
    if (refs[static_cast<size_t>(b)] != pool_.ref_count(BlockId{b})) {
      return absl::InternalError(absl::StrCat("block ", b, " is in ", refs[static_cast<size_t>(b)],
                                              " tables but has ref_count ",
                                              pool_.ref_count(BlockId{b})));
    }
  }
  if (tokens != total_tokens_ || slots != total_slots_) {
    return absl::InternalError(absl::StrCat("token/slot counters ", total_tokens_, "/",
                                            total_slots_, " but tables hold ", tokens, "/", slots));
  }
  return absl::OkStatus();
}

}  // namespace headroom::kvcache
