#include "reference_kv_cache.h"

#include <algorithm>

namespace headroom::kvcache::testing {
namespace {
std::pair<uint64_t, uint64_t> Key(const BlockHash& h) { return {h.low, h.high}; }
}  // namespace

ReferenceKvCache::ReferenceKvCache(int32_t num_blocks, int32_t block_size, int32_t watermark,
                                   bool caching, std::vector<int32_t> windows)
    : block_size_(block_size),
      watermark_(watermark),
      caching_(caching),
      windows_(std::move(windows)),
      ref_(static_cast<size_t>(num_blocks), 0),
      hash_(static_cast<size_t>(num_blocks)) {
  for (int32_t b = 1; b < num_blocks; ++b) free_.push_back(b);
}

int32_t ReferenceKvCache::BlocksFor(size_t tokens) const {
  return static_cast<int32_t>((tokens + static_cast<size_t>(block_size_) - 1) /
                              static_cast<size_t>(block_size_));
}

bool ReferenceKvCache::Indexed(const BlockHash& chained, size_t group, int32_t block) const {
  auto it = index_.find(Key(LayerGroupHash(chained, static_cast<int32_t>(group))));
  return it != index_.end() && (block < 0 || it->second == block);
}

std::vector<BlockHash> ReferenceKvCache::LookupHashes(const std::vector<int32_t>& prompt,
                                                      const std::string& salt) const {
  std::vector<BlockHash> hashes;
  if (prompt.empty()) return hashes;
  BlockHash parent = RootBlockHash(salt);
  const size_t bs = static_cast<size_t>(block_size_);
  for (size_t start = 0; start + bs <= prompt.size() - 1; start += bs) {
    parent =
        HashBlock(parent, std::vector<int32_t>(prompt.begin() + static_cast<long>(start),
                                               prompt.begin() + static_cast<long>(start + bs)));
    hashes.push_back(parent);
  }
  return hashes;
}

ReferenceKvCache::Hit ReferenceKvCache::FindCachedPrefix(const std::vector<int32_t>& prompt,
                                                         const std::string& salt) const {
  Hit hit;
  hit.blocks.resize(windows_.size());
  if (!caching_) return hit;
  const std::vector<BlockHash> hashes = LookupHashes(prompt, salt);
  // The longest prefix of n blocks whose blocks from DeadEnd(n blocks' tokens) on, and at least
  // the last, are all indexed in every group (all of them without a window); the dead ones are 0.
  for (size_t n = hashes.size(); n > 0; --n) {
    bool cached = true;
    for (size_t g = 0; g < windows_.size(); ++g) {
      const size_t dead = std::min(DeadEnd(n * static_cast<size_t>(block_size_), windows_[g]), n);
      for (size_t i = std::min(dead, n - 1); i < n; ++i)
        cached = cached && Indexed(hashes[i], g, -1);
    }
    if (!cached) continue;
    for (size_t g = 0; g < windows_.size(); ++g) {
      const size_t dead = std::min(DeadEnd(n * static_cast<size_t>(block_size_), windows_[g]), n);
      for (size_t i = 0; i < n; ++i) {
        hit.blocks[g].push_back(
            i < dead ? 0 : index_.at(Key(LayerGroupHash(hashes[i], static_cast<int32_t>(g)))));
      }
    }
    hit.num_cached_tokens = static_cast<int32_t>(n) * block_size_;
    break;
  }
  return hit;
}

size_t ReferenceKvCache::DeadEnd(size_t num_tokens, int32_t window) const {
  if (window == 0) return 0;
  // The earliest position a later query reads: the window of the query at num_tokens.
  const long first_read = static_cast<long>(num_tokens) - window + 1;
  size_t dead = 0;
  // Block i holds positions [i * bs, (i + 1) * bs); it is dead when its last one is unread.
  while (static_cast<long>((dead + 1) * static_cast<size_t>(block_size_)) - 1 < first_read) ++dead;
  return dead;
}

int32_t ReferenceKvCache::FreeingRelease(const Seq& seq) const {
  int32_t freed = 0;
  for (size_t g = 0; g < windows_.size(); ++g) {
    const std::vector<int32_t>& table = seq.tables[g];
    const size_t end = std::min(DeadEnd(seq.tokens.size(), windows_[g]), table.size());
    for (size_t i = 0; i < end; ++i) {
      freed += table[i] != 0 && ref_[static_cast<size_t>(table[i])] == 1 ? 1 : 0;
    }
  }
  return freed;
}

void ReferenceKvCache::Release(Seq& seq) {
  for (size_t g = 0; g < windows_.size(); ++g) {
    std::vector<int32_t>& table = seq.tables[g];
    const size_t end = std::min(DeadEnd(seq.tokens.size(), windows_[g]), table.size());
    for (size_t i = 0; i < end; ++i) {
      int32_t& b = table[i];
      if (b == 0) continue;
      if (--ref_[static_cast<size_t>(b)] == 0) free_.push_back(b);
      b = 0;
    }
  }
}

std::vector<int32_t> ReferenceKvCache::Take(int32_t n) {
  std::vector<int32_t> taken(free_.begin(), free_.begin() + n);
  free_.erase(free_.begin(), free_.begin() + n);
  for (int32_t b : taken) {
    if (hash_[static_cast<size_t>(b)]) index_.erase(Key(*hash_[static_cast<size_t>(b)]));
    hash_[static_cast<size_t>(b)].reset();
    ref_[static_cast<size_t>(b)] = 1;
  }
  return taken;
}

void ReferenceKvCache::Touch(int32_t block) {
  if (ref_[static_cast<size_t>(block)] == 0) {
    free_.erase(std::find(free_.begin(), free_.end(), block));
  }
  ++ref_[static_cast<size_t>(block)];
}

void ReferenceKvCache::CacheFullBlocks(Seq& seq) {
  if (!caching_) return;
  const size_t bs = static_cast<size_t>(block_size_);
  const size_t full = seq.tokens.size() / bs;
  BlockHash parent = RootBlockHash(seq.salt);
  for (size_t i = 0; i < full; ++i) {
    parent = HashBlock(parent,
                       std::vector<int32_t>(seq.tokens.begin() + static_cast<long>(i * bs),
                                            seq.tokens.begin() + static_cast<long>((i + 1) * bs)));
    if (i < seq.num_blocks_offered_to_cache) continue;
    for (size_t g = 0; g < windows_.size(); ++g) {
      const int32_t block = seq.tables[g][i];
      const BlockHash hash = LayerGroupHash(parent, static_cast<int32_t>(g));
      if (!hash_[static_cast<size_t>(block)] && index_.count(Key(hash)) == 0) {
        hash_[static_cast<size_t>(block)] = hash;
        index_[Key(hash)] = block;
      }
    }
  }
  seq.num_blocks_offered_to_cache = std::max(seq.num_blocks_offered_to_cache, full);
}

bool ReferenceKvCache::AddSequence(int64_t seq, const std::vector<int32_t>& prompt_prefix,
                                   const Hit& hit, const std::vector<int32_t>& new_tokens,
                                   const std::string& salt) {
  const auto n = static_cast<size_t>(hit.num_cached_tokens / block_size_);
  // Hit blocks behind a group's window of the query at num_cached_tokens are not taken.
  std::vector<size_t> dead(windows_.size());
  for (size_t g = 0; g < windows_.size(); ++g) {
    dead[g] = std::min(DeadEnd(static_cast<size_t>(hit.num_cached_tokens), windows_[g]), n);
  }
  // Re-validate the hit: every block taken must still be indexed under the prefix it was found
  // for.
  const std::vector<BlockHash> hashes = LookupHashes(prompt_prefix, salt);
  int32_t revived = 0;
  for (size_t g = 0; g < windows_.size(); ++g) {
    for (size_t i = dead[g]; i < n; ++i) {
      if (!Indexed(hashes[i], g, hit.blocks[g][i])) return false;
      revived += ref_[static_cast<size_t>(hit.blocks[g][i])] == 0 ? 1 : 0;
    }
  }
  const size_t total = static_cast<size_t>(hit.num_cached_tokens) + new_tokens.size();
  const int32_t fresh = BlocksFor(total) - static_cast<int32_t>(n);
  const auto groups = static_cast<int32_t>(windows_.size());
  if (fresh * groups + revived + watermark_ > NumFree()) return false;
  Seq s;
  s.salt = salt;
  for (size_t g = 0; g < windows_.size(); ++g) {
    for (size_t i = dead[g]; i < n; ++i) Touch(hit.blocks[g][i]);
    std::vector<int32_t> table(hit.blocks[g].begin(), hit.blocks[g].begin() + static_cast<long>(n));
    for (size_t i = 0; i < dead[g]; ++i) table[i] = 0;
    s.tables.push_back(std::move(table));
  }
  s.tokens.assign(prompt_prefix.begin(), prompt_prefix.begin() + hit.num_cached_tokens);
  s.tokens.insert(s.tokens.end(), new_tokens.begin(), new_tokens.end());
  s.num_blocks_offered_to_cache = n;
  for (std::vector<int32_t>& table : s.tables) {
    const std::vector<int32_t> taken = Take(fresh);
    table.insert(table.end(), taken.begin(), taken.end());
  }
  CacheFullBlocks(s);
  seqs_[seq] = std::move(s);
  queries_ += static_cast<int64_t>(prompt_prefix.size());
  hits_ += hit.num_cached_tokens;
  return true;
}

bool ReferenceKvCache::Append(int64_t seq, const std::vector<int32_t>& tokens) {
  Seq& s = seqs_.at(seq);
  const int32_t fresh =
      BlocksFor(s.tokens.size() + tokens.size()) - static_cast<int32_t>(s.tables.front().size());
  const auto groups = static_cast<int32_t>(windows_.size());
  if (fresh > 0 && fresh * groups > NumFree() + FreeingRelease(s)) return false;
  Release(s);
  for (std::vector<int32_t>& table : s.tables) {
    const std::vector<int32_t> taken = Take(fresh);
    table.insert(table.end(), taken.begin(), taken.end());
  }
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
  CacheFullBlocks(s);
  return true;
}

void ReferenceKvCache::Free(int64_t seq) {
  const Seq& s = seqs_.at(seq);
  for (size_t i = s.tables.front().size(); i-- > 0;) {
    for (const std::vector<int32_t>& table : s.tables) {
      const int32_t b = table[i];
      if (b != 0 && --ref_[static_cast<size_t>(b)] == 0) free_.push_back(b);
    }
  }
  seqs_.erase(seq);
}

int32_t ReferenceKvCache::NumEvictable() const {
  int32_t n = 0;
  for (int32_t b : free_) n += hash_[static_cast<size_t>(b)] ? 1 : 0;
  return n;
}

int64_t ReferenceKvCache::WasteSlots() const {
  int64_t waste = 0;
  for (const auto& [id, s] : seqs_) {
    // Released blocks were full: they count neither slots nor tokens.
    for (const std::vector<int32_t>& table : s.tables) {
      waste +=
          static_cast<int64_t>(table.size()) * block_size_ - static_cast<int64_t>(s.tokens.size());
    }
  }
  return waste;
}

int64_t ReferenceKvCache::HeldTokens() const {
  int64_t tokens = 0;
  for (const auto& [id, s] : seqs_) {
    for (const std::vector<int32_t>& table : s.tables) {
      tokens += static_cast<int64_t>(s.tokens.size());
      for (int32_t b : table) tokens -= b == 0 ? block_size_ : 0;
    }
  }
  return tokens;
}

}  // namespace headroom::kvcache::testing
