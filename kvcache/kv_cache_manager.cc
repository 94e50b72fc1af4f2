#include "kvcache/kv_cache_manager.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

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
  if (!config.group_windows.empty() && config.sliding_window != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sliding_window must be 0 with group_windows (each group has its own), got ",
                     config.sliding_window));
  }
  for (size_t g = 0; g < config.group_windows.size(); ++g) {
    if (config.group_windows[g] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group_windows[", g, "] must be 0 (none) or positive, got ", config.group_windows[g]));
    }
  }
  return std::unique_ptr<KvCacheManager>(new KvCacheManager(config));
}

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : config_(config),
      windows_(config.group_windows.empty() ? std::vector<int32_t>{config.sliding_window}
                                            : config.group_windows),
      any_window_(std::any_of(windows_.begin(), windows_.end(), [](int32_t w) { return w > 0; })),
      pool_(config.num_blocks, config.enable_prefix_caching) {}

int32_t KvCacheManager::BlocksForTokens(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
}

int32_t KvCacheManager::PeakBlocks(int64_t num_tokens, int32_t max_chunk) const {
  return static_cast<int32_t>(
      PeakBlocksOverGroups(num_tokens, config_.block_size, windows_, 0, max_chunk));
}

const KvCacheManager::Sequence& KvCacheManager::Get(SequenceId seq) const {
  auto it = sequences_.find(seq);
  HR_CHECK_MSG(it != sequences_.end(), "unknown sequence");
  return it->second;
}

absl::Span<const BlockId> KvCacheManager::BlockTable(SequenceId seq, int32_t group) const {
  return Get(seq).groups[static_cast<size_t>(group)].blocks;
}

int32_t KvCacheManager::NumTokens(SequenceId seq) const { return Get(seq).num_tokens; }

int32_t KvCacheManager::NumReleasedBlocks(SequenceId seq, int32_t group) const {
  return Get(seq).groups[static_cast<size_t>(group)].num_released_blocks;
}

PrefixHit KvCacheManager::FindCachedPrefix(absl::Span<const int32_t> prompt,
                                           std::string_view cache_salt, bool lookup,
                                           std::string_view adapter) const {
  PrefixHit hit;
  hit.next_parent = RootBlockHash(cache_salt, adapter);
  hit.num_query_tokens = static_cast<int32_t>(prompt.size());
  hit.blocks.resize(windows_.size());
  if (!config_.enable_prefix_caching || prompt.empty() || !lookup) return hit;
  const size_t block_size = static_cast<size_t>(config_.block_size);
  // The last prompt token is always computed, so at most (size - 1) tokens can be served.
  const size_t max_blocks = (prompt.size() - 1) / block_size;
  const size_t num_groups = windows_.size();
  // Every group's lookups of blocks [0, i]; the hit is the longest prefix all groups can serve.
  std::vector<size_t> run(num_groups, 0);  // cached blocks ending at block i, per group
  BlockHash parent = hit.next_parent;
  size_t best = 0;
  for (size_t i = 0; i < max_blocks; ++i) {
    parent = HashBlock(parent, prompt.subspan(i * block_size, block_size));
    hit.hashes.push_back(parent);
    bool servable = true;
    bool full_group_missed = false;
    for (size_t g = 0; g < num_groups; ++g) {
      const std::optional<BlockId> block =
          pool_.Lookup(LayerGroupHash(parent, static_cast<int32_t>(g)));
      hit.blocks[g].push_back(block.value_or(kNullBlockId));
      run[g] = block ? run[g] + 1 : 0;
      // A hit of i + 1 blocks needs the blocks its first computed token still reads.
      servable = servable &&
                 static_cast<int64_t>(run[g]) >=
                     HitBlocksRead(static_cast<int64_t>(i + 1), config_.block_size, windows_[g]);
      full_group_missed = full_group_missed || (windows_[g] == 0 && !block);
    }
    if (servable) best = i + 1;
    // A group that reads every block cannot serve anything longer.
    if (full_group_missed) break;
  }
  hit.hashes.resize(best);
  for (size_t g = 0; g < num_groups; ++g) {
    hit.blocks[g].resize(best);
    const auto dead = static_cast<size_t>(
        DeadBlocks(static_cast<int64_t>(best * block_size), config_.block_size, windows_[g]));
    std::fill(hit.blocks[g].begin(),
              hit.blocks[g].begin() + static_cast<std::ptrdiff_t>(std::min(dead, best)),
              kNullBlockId);
  }
  if (best > 0) hit.next_parent = hit.hashes.back();
  hit.num_cached_tokens = static_cast<int32_t>(best * block_size);
  return hit;
}

absl::Span<const BlockId> KvCacheManager::HitBlocks(const PrefixHit& hit, int32_t group) {
  if (static_cast<size_t>(group) >= hit.blocks.size()) return {};
  return hit.blocks[static_cast<size_t>(group)];
}

int32_t KvCacheManager::BlocksToAdmit(const PrefixHit& hit, int32_t num_tokens) const {
  const int32_t per_group = BlocksForTokens(std::max(num_tokens, hit.num_cached_tokens));
  int32_t needed = 0;
  for (int32_t g = 0; g < num_groups(); ++g) {
    const absl::Span<const BlockId> blocks = HitBlocks(hit, g);
    int32_t revived = 0;
    for (size_t i = DeadHitBlocks(hit, g); i < blocks.size(); ++i) {
      revived += pool_.ref_count(blocks[i]) == 0 ? 1 : 0;
    }
    needed += per_group - static_cast<int32_t>(blocks.size()) + revived;
  }
  return needed;
}

bool KvCacheManager::CanAdmit(int32_t blocks) const {
  return blocks + config_.watermark_blocks <= pool_.num_free_blocks();
}

int32_t KvCacheManager::BlocksToAppend(SequenceId seq, int32_t num_new_tokens) const {
  const Sequence& s = Get(seq);
  const int32_t new_blocks = NewBlocksFor(s, num_new_tokens);
  if (new_blocks == 0) return 0;
  return std::max(0, new_blocks * num_groups() - DeadBlocksOnlyHeldBy(s));
}

int32_t KvCacheManager::BlocksToReach(SequenceId seq, int64_t num_tokens, int32_t max_chunk) const {
  const Sequence& s = Get(seq);
  const int32_t append = BlocksToAppend(seq, static_cast<int32_t>(num_tokens - s.num_tokens));
  if (!any_window_) return append;
  int32_t held = 0;
  for (const GroupTable& table : s.groups) {
    held += static_cast<int32_t>(table.blocks.size()) - table.num_released_blocks;
  }
  return std::min(append, std::max(0, PeakBlocks(num_tokens, max_chunk) - held));
}

size_t KvCacheManager::DeadHitBlocks(const PrefixHit& hit, int32_t group) const {
  const int64_t dead =
      DeadBlocks(hit.num_cached_tokens, config_.block_size, windows_[static_cast<size_t>(group)]);
  return static_cast<size_t>(
      std::min<int64_t>(dead, static_cast<int64_t>(HitBlocks(hit, group).size())));
}

int32_t KvCacheManager::DeadHeldBlocks(const Sequence& s, int32_t group) const {
  const int64_t dead =
      DeadBlocks(s.num_tokens, config_.block_size, windows_[static_cast<size_t>(group)]);
  return std::max(
      0, static_cast<int32_t>(dead) - s.groups[static_cast<size_t>(group)].num_released_blocks);
}

int32_t KvCacheManager::DeadBlocksOnlyHeldBy(const Sequence& s) const {
  if (!any_window_) return 0;
  int32_t n = 0;
  for (int32_t g = 0; g < num_groups(); ++g) {
    const GroupTable& table = s.groups[static_cast<size_t>(g)];
    const int32_t end = table.num_released_blocks + DeadHeldBlocks(s, g);
    for (int32_t i = table.num_released_blocks; i < end; ++i) {
      n += pool_.ref_count(table.blocks[static_cast<size_t>(i)]) == 1 ? 1 : 0;
    }
  }
  return n;
}

void KvCacheManager::ReleaseDeadBlocks(Sequence& s) {
  int64_t next = std::numeric_limits<int32_t>::max();
  for (int32_t g = 0; g < num_groups(); ++g) {
    const int32_t window = windows_[static_cast<size_t>(g)];
    if (window == 0) continue;
    GroupTable& table = s.groups[static_cast<size_t>(g)];
    const int32_t dead = DeadHeldBlocks(s, g);
    if (dead > 0) {
      const auto first = table.blocks.begin() + table.num_released_blocks;
      pool_.Free(absl::MakeConstSpan(&*first, static_cast<size_t>(dead)));
      std::fill(first, first + dead, kNullBlockId);
      table.num_released_blocks += dead;
      total_tokens_ -= int64_t{dead} * config_.block_size;
      total_slots_ -= int64_t{dead} * config_.block_size;
    }
    // Block r (the first still held) dies once (n - window + 1) / block_size > r.
    next = std::min(next, int64_t{table.num_released_blocks + 1} * config_.block_size + window - 1);
  }
  s.next_release_tokens =
      static_cast<int32_t>(std::min<int64_t>(next, std::numeric_limits<int32_t>::max()));
}

int32_t KvCacheManager::NewBlocksFor(const Sequence& s, int32_t num_new_tokens) const {
  const int64_t tokens = int64_t{s.num_tokens} + num_new_tokens;
  if (tokens <= int64_t{s.table_size} * config_.block_size) return 0;  // the common decode case
  return BlocksForTokens(tokens) - s.table_size;
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
  const auto hit_blocks = static_cast<size_t>(hit.num_cached_tokens / config_.block_size);
  for (int32_t g = 0; g < num_groups(); ++g) {
    const absl::Span<const BlockId> blocks = HitBlocks(hit, g);
    HR_CHECK(blocks.size() == hit_blocks && hit.hashes.size() == hit_blocks);
    // Hit blocks behind the window need not be cached (they are not taken).
    for (size_t i = DeadHitBlocks(hit, g); i < blocks.size(); ++i) {
      if (pool_.hash(blocks[i]) != LayerGroupHash(hit.hashes[i], g)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "prefix hit is stale: block ", blocks[i].value(), " was evicted; look up again"));
      }
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
  Sequence& s = sequences_[seq];
  s.groups.resize(windows_.size());
  for (int32_t g = 0; g < num_groups(); ++g) {
    // Revive the hit blocks a query still reads before allocating, so allocation cannot evict
    // one of them; the ones behind the sliding window stay where they are.
    const size_t dead = DeadHitBlocks(hit, g);
    const absl::Span<const BlockId> blocks = HitBlocks(hit, g);
    for (size_t i = dead; i < blocks.size(); ++i) pool_.Touch(blocks[i]);
    GroupTable& table = s.groups[static_cast<size_t>(g)];
    table.blocks.assign(blocks.begin(), blocks.end());
    std::fill(table.blocks.begin(), table.blocks.begin() + static_cast<std::ptrdiff_t>(dead),
              kNullBlockId);
    table.num_released_blocks = static_cast<int32_t>(dead);
    const int64_t held =
        hit.num_cached_tokens - int64_t{table.num_released_blocks} * config_.block_size;
    total_tokens_ += held;
    total_slots_ += held;
  }
  s.parent_hash = hit.next_parent;
  s.num_tokens = hit.num_cached_tokens;
  s.num_full_blocks = static_cast<int32_t>(hit_blocks);
  prefix_queries_ += hit.num_query_tokens;
  prefix_hits_ += hit.num_cached_tokens;
  s.table_size = static_cast<int32_t>(hit_blocks);
  const int32_t new_blocks = NewBlocksFor(s, static_cast<int32_t>(new_tokens.size()));
  for (GroupTable& table : s.groups) HR_CHECK(pool_.Allocate(new_blocks, &table.blocks).ok());
  s.table_size += new_blocks;
  total_slots_ += int64_t{new_blocks} * num_groups() * config_.block_size;
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
    const int32_t needed = new_blocks * num_groups();
    const int32_t freed = DeadBlocksOnlyHeldBy(s);
    if (needed > pool_.num_free_blocks() + freed) {
      return absl::ResourceExhaustedError(
          absl::StrCat("appending ", new_tokens.size(), " tokens to sequence ", seq.value(),
                       " needs ", needed, " KV blocks; ", pool_.num_free_blocks(), " are free",
                       freed > 0 ? absl::StrCat(" and its sliding window releases ", freed) : ""));
    }
  }
  // Every token held so far is computed: the blocks behind the window of the step that computes
  // `new_tokens` are never read again.
  if (s.num_tokens >= s.next_release_tokens) ReleaseDeadBlocks(s);
  if (new_blocks > 0) {
    for (GroupTable& table : s.groups) HR_CHECK(pool_.Allocate(new_blocks, &table.blocks).ok());
    s.table_size += new_blocks;
    total_slots_ += int64_t{new_blocks} * num_groups() * config_.block_size;
  }
  FillSlots(s, new_tokens);
  return absl::OkStatus();
}

void KvCacheManager::FillSlots(Sequence& s, absl::Span<const int32_t> tokens) {
  s.num_tokens += static_cast<int32_t>(tokens.size());
  total_tokens_ += static_cast<int64_t>(tokens.size()) * num_groups();
  if (!config_.enable_prefix_caching) return;
  const size_t block_size = static_cast<size_t>(config_.block_size);
  while (!tokens.empty()) {
    const size_t take = std::min(tokens.size(), block_size - s.tail_tokens.size());
    s.tail_tokens.insert(s.tail_tokens.end(), tokens.begin(),
                         tokens.begin() + static_cast<std::ptrdiff_t>(take));
    tokens.remove_prefix(take);
    if (s.tail_tokens.size() == block_size) {
      s.parent_hash = HashBlock(s.parent_hash, s.tail_tokens);
      const auto full = static_cast<size_t>(s.num_full_blocks);
      for (int32_t g = 0; g < num_groups(); ++g) {
        // Only group 0's hashes are the ones a router computes from a prompt.
        pool_.Cache(s.groups[static_cast<size_t>(g)].blocks[full], LayerGroupHash(s.parent_hash, g),
                    /*report=*/g == 0);
      }
      s.tail_tokens.clear();
      ++s.num_full_blocks;
    }
  }
}

bool KvCacheManager::Free(SequenceId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return false;
  const Sequence& s = it->second;
  free_scratch_.clear();
  for (auto i = static_cast<size_t>(s.table_size); i-- > 0;) {
    for (const GroupTable& table : s.groups) {
      if (i >= static_cast<size_t>(table.num_released_blocks)) {
        free_scratch_.push_back(table.blocks[i]);
      }
    }
  }
  pool_.Free(free_scratch_);
  for (const GroupTable& table : s.groups) {
    const int64_t released_slots = int64_t{table.num_released_blocks} * config_.block_size;
    total_tokens_ -= s.num_tokens - released_slots;
    total_slots_ -= static_cast<int64_t>(table.blocks.size()) * config_.block_size - released_slots;
  }
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
    if (s.groups.size() != windows_.size()) {
      return absl::InternalError(absl::StrCat("sequence ", id.value(), " has ", s.groups.size(),
                                              " block tables for ", windows_.size(), " groups"));
    }
    if (config_.enable_prefix_caching &&
        static_cast<int32_t>(s.tail_tokens.size()) != s.num_tokens % config_.block_size) {
      return absl::InternalError(
          absl::StrCat("sequence ", id.value(), " tail holds ", s.tail_tokens.size(), " tokens"));
    }
    for (size_t g = 0; g < s.groups.size(); ++g) {
      const GroupTable& table = s.groups[g];
      const std::string where = absl::StrCat("sequence ", id.value(), " group ", g);
      if (static_cast<size_t>(s.table_size) != table.blocks.size()) {
        return absl::InternalError(absl::StrCat(where, " has ", table.blocks.size(),
                                                " entries, the sequence says ", s.table_size));
      }
      if (BlocksForTokens(s.num_tokens) != static_cast<int32_t>(table.blocks.size())) {
        return absl::InternalError(absl::StrCat(where, " holds ", s.num_tokens, " tokens in ",
                                                table.blocks.size(), " blocks"));
      }
      if (table.num_released_blocks < 0 ||
          table.num_released_blocks > DeadBlocks(s.num_tokens, config_.block_size, windows_[g])) {
        return absl::InternalError(absl::StrCat(where, " released ", table.num_released_blocks,
                                                " blocks at ", s.num_tokens, " tokens"));
      }
      for (size_t i = 0; i < table.blocks.size(); ++i) {
        const bool released = i < static_cast<size_t>(table.num_released_blocks);
        if ((table.blocks[i] == kNullBlockId) != released) {
          return absl::InternalError(
              absl::StrCat(where, " block table entry ", i,
                           released ? " was released but holds block " : " holds the null block ",
                           table.blocks[i].value()));
        }
        if (!released) ++refs[static_cast<size_t>(table.blocks[i].value())];
      }
      const int64_t released_slots = int64_t{table.num_released_blocks} * config_.block_size;
      tokens += s.num_tokens - released_slots;
      slots += static_cast<int64_t>(table.blocks.size()) * config_.block_size - released_slots;
    }
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
