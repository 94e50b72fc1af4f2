// ReferenceKvCache: a deliberately naive model of the KV-cache manager for randomized tests.
//
// Written from the specification, not from the implementation: plain vectors and maps, O(n)
// everywhere, every block hash recomputed from a sequence's full token list. Randomized tests run
// the same operations on both and require identical block ids, hits, free order and statistics.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvcache/block_hash.h"

namespace headroom::kvcache::testing {

class ReferenceKvCache {
 public:
  struct Hit {
    std::vector<std::vector<int32_t>> blocks;  // per layer group
    int32_t num_cached_tokens = 0;
  };

  // One block table per entry of `windows` (layer groups), each caching block i under
  // LayerGroupHash(chained hash i, group). A window w > 0: the group's queries attend their last
  // w positions; its block-table entries whose positions all lie before (computed tokens - w + 1)
  // are released (set to 0, the null block, oldest first) before each admission or append assigns
  // new slots. New blocks are taken and released group by group; Free returns the last position's
  // blocks first, every group's at that position in group order.
  ReferenceKvCache(int32_t num_blocks, int32_t block_size, int32_t watermark, bool caching,
                   std::vector<int32_t> windows);

  Hit FindCachedPrefix(const std::vector<int32_t>& prompt, const std::string& salt) const;
  // Returns false (and changes nothing) when the admission does not fit above the watermark or a
  // hit block no longer holds the hash it had at lookup.
  bool AddSequence(int64_t seq, const std::vector<int32_t>& prompt_prefix, const Hit& hit,
                   const std::vector<int32_t>& new_tokens, const std::string& salt);
  bool Append(int64_t seq, const std::vector<int32_t>& tokens);
  void Free(int64_t seq);

  bool Contains(int64_t seq) const { return seqs_.count(seq) != 0; }
  const std::vector<int32_t>& BlockTable(int64_t seq, size_t group) const {
    return seqs_.at(seq).tables.at(group);
  }
  const std::vector<int32_t>& FreeOrder() const { return free_; }
  int32_t NumFree() const { return static_cast<int32_t>(free_.size()); }
  int32_t NumEvictable() const;
  int64_t WasteSlots() const;
  // Tokens in the blocks the sequences hold (released blocks not counted).
  int64_t HeldTokens() const;
  int64_t PrefixQueries() const { return queries_; }
  int64_t PrefixHits() const { return hits_; }

 private:
  struct Seq {
    std::vector<int32_t> tokens;
    std::vector<std::vector<int32_t>> tables;  // per group
    std::string salt;
    size_t num_blocks_offered_to_cache = 0;
  };

  // Table entries [0, DeadEnd(n, w)) of a sequence whose first n tokens are computed hold only
  // positions no later query of a group with window w reads.
  size_t DeadEnd(size_t num_tokens, int32_t window) const;
  // Drops the references of the dead entries of every table of `seq` and nulls them.
  void Release(Seq& seq);
  // How many blocks Release(seq) would free (dead entries no other sequence holds).
  int32_t FreeingRelease(const Seq& seq) const;
  bool Indexed(const BlockHash& chained, size_t group, int32_t block) const;

  // The chained hashes of the prompt's blocks a lookup may serve (all but the last token's).
  std::vector<BlockHash> LookupHashes(const std::vector<int32_t>& prompt,
                                      const std::string& salt) const;
  std::vector<int32_t> Take(int32_t n);
  void Touch(int32_t block);
  void CacheFullBlocks(Seq& seq);
  int32_t BlocksFor(size_t tokens) const;

  int32_t block_size_;
  int32_t watermark_;
  bool caching_;
  std::vector<int32_t> windows_;
  std::vector<int32_t> ref_;                    // per block; block 0 is the null block
  std::vector<std::optional<BlockHash>> hash_;  // per block
  std::vector<int32_t> free_;                   // front = evicted first
  std::map<std::pair<uint64_t, uint64_t>, int32_t> index_;
  std::map<int64_t, Seq> seqs_;
  int64_t queries_ = 0;
  int64_t hits_ = 0;
};

}  // namespace headroom::kvcache::testing
