// KvCacheManager: per-sequence block tables over one BlockPool, with prefix caching.
//
// The engine thread owns it (no locking). A scheduler uses it in three moves:
//   1. admission: FindCachedPrefix(prompt) -> PrefixHit; BlocksToAdmit(hit, chunk) tells what the
//      first chunk costs, CanAdmit() whether that leaves the watermark; AddSequence() commits;
//   2. every step of a running sequence: BlocksToAppend(seq, n) then Append(seq, tokens);
//   3. finish, abort or preemption: Free(seq).
// With a sliding window (every layer attends only the last `sliding_window` positions) each
// admission and append first releases the blocks no later query of that sequence reads: their
// block-table entries become the null block (sliding_window.h, docs/kvcache.md).
// With layer groups (layers attending different windows: layer_groups.h) every sequence has one
// block table per group, all of the same length, all drawn from the one pool; a group's window
// releases only its own table's blocks, and the counts this class returns are totals over groups.
// A failed AddSequence/Append changes nothing. Token ids are passed with every allocation so full
// blocks are hashed and registered in the prefix cache as soon as their slots are assigned (their
// KV is written by the same step that uses them, layer by layer before attention reads it).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kvcache/block_hash.h"
#include "kvcache/block_id.h"
#include "kvcache/block_pool.h"

namespace headroom::kvcache {

struct KvCacheConfig {
  // Blocks in the pool, including the reserved null block.
  int32_t num_blocks = 0;
  // Token slots per block.
  int32_t block_size = 16;
  // Register full blocks by content hash and serve prefix hits from them.
  bool enable_prefix_caching = true;
  // Free blocks an admission must leave untouched, so running sequences can keep growing.
  int32_t watermark_blocks = 0;
  // Every layer attends at most this many positions back, its own included; 0 = no window. The
  // blocks before a sequence's window are released as it grows. 0 when group_windows is set.
  int32_t sliding_window = 0;
  // Layer groups (LayerGroups::windows): one block table per group, each releasing the blocks
  // behind its own window (0 = none). Empty: one group attending `sliding_window`.
  std::vector<int32_t> group_windows = {};
};

// The cached prefix of a prompt: block aligned, never the whole prompt.
struct PrefixHit {
  // Per layer group: the cached blocks holding the first num_cached_tokens tokens, in order (the
  // ones behind the group's window kNullBlockId).
  std::vector<std::vector<BlockId>> blocks;
  // Chained hash of each block (a group caches block i under LayerGroupHash(hashes[i], group);
  // re-checked at admission in case one was evicted since).
  std::vector<BlockHash> hashes;
  // Parent hash for the block after the hit: the last hit block's hash, or the salt's root.
  BlockHash next_parent;
  // Tokens covered by `blocks` (blocks.size() * block_size).
  int32_t num_cached_tokens = 0;
  // Prompt tokens looked up (counted as prefix-cache queries when the sequence is admitted).
  int32_t num_query_tokens = 0;
};

struct KvCacheStats {
  // Blocks that can hold KV (the pool without the null block).
  int32_t num_usable_blocks = 0;
  // Blocks in no block table, including cached ones that can be evicted.
  int32_t num_free_blocks = 0;
  // Free blocks that still hold a cached prefix (reclaimed LRU before anyone is preempted).
  int32_t num_evictable_blocks = 0;
  // Blocks in at least one block table.
  int32_t num_used_blocks = 0;
  // num_used_blocks / num_usable_blocks, in [0, 1] (vllm:kv_cache_usage_perc).
  double usage = 0.0;
  // Sequences holding blocks.
  int32_t num_sequences = 0;
  // Tokens whose KV slots the sequences hold (shared prefix blocks counted once per sequence,
  // every layer group's slots counted; tokens in blocks released behind a sliding window not).
  int64_t num_tokens = 0;
  // Assigned but unused slots in the sequences' last blocks (internal fragmentation).
  int64_t internal_waste_slots = 0;
  // Prompt tokens looked up in the prefix cache at admission (vllm:prefix_cache_queries).
  int64_t prefix_queries = 0;
  // Of those, tokens served from cached blocks (vllm:prefix_cache_hits).
  int64_t prefix_hits = 0;
};

class KvCacheManager {
 public:
  // Validates `config`: InvalidArgument naming the bad field.
  static absl::StatusOr<std::unique_ptr<KvCacheManager>> Create(const KvCacheConfig& config);

  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  [[nodiscard]] int32_t block_size() const { return config_.block_size; }
  [[nodiscard]] int32_t watermark_blocks() const { return config_.watermark_blocks; }
  // Block tables per sequence (layer groups); at least 1.
  [[nodiscard]] int32_t num_groups() const { return static_cast<int32_t>(windows_.size()); }
  [[nodiscard]] int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  [[nodiscard]] const BlockPool& pool() const { return pool_; }
  // The pool's prefix-cache change log (BlockPool::RecordCacheEvents / TakeCacheEvents).
  void RecordCacheEvents(size_t capacity) { pool_.RecordCacheEvents(capacity); }
  bool TakeCacheEvents(std::vector<CacheEvent>* out) { return pool_.TakeCacheEvents(out); }

  // Block-table entries (per group) needed to hold `num_tokens` tokens.
  [[nodiscard]] int32_t BlocksForTokens(int64_t num_tokens) const;
  // The most blocks one sequence of `num_tokens` tokens holds at once, summed over its groups, when
  // each step adds at most `max_chunk` of them: num_groups * BlocksForTokens(num_tokens) without a
  // sliding window.
  [[nodiscard]] int32_t PeakBlocks(int64_t num_tokens, int32_t max_chunk) const;

  // The longest cached prefix of `prompt` under `cache_salt` computed by LoRA `adapter` ("" = the
  // base model; block_hash.h): whole blocks only, and at most
  // prompt.size() - 1 tokens so the last prompt token is always computed (its logits are needed).
  // With a sliding window only the blocks the prefix's next token still reads must be cached;
  // the hit's blocks behind that window are kNullBlockId.
  // `lookup` false: no cached block (the hit a sequence that must compute its whole prompt is
  // admitted with; its blocks are still hashed under the salt and cached).
  [[nodiscard]] PrefixHit FindCachedPrefix(absl::Span<const int32_t> prompt,
                                           std::string_view cache_salt = {}, bool lookup = true,
                                           std::string_view adapter = {}) const;

  // Free blocks admitting a sequence of `num_tokens` tokens (cached prefix included) with `hit`
  // would consume: new blocks plus cached hit blocks taken out of the free queue (with a sliding
  // window only the hit blocks a query of the sequence still reads are taken).
  [[nodiscard]] int32_t BlocksToAdmit(const PrefixHit& hit, int32_t num_tokens) const;
  // Whether an admission consuming `blocks` free blocks leaves the watermark free.
  [[nodiscard]] bool CanAdmit(int32_t blocks) const;
  // Free blocks Append(seq, n tokens) would consume: the new blocks, less the blocks it releases
  // that no other sequence holds (0 while the last block has room).
  [[nodiscard]] int32_t BlocksToAppend(SequenceId seq, int32_t num_new_tokens) const;
  // Free blocks `seq` still needs at its peak to grow to `num_tokens` tokens in steps of at most
  // `max_chunk`: BlocksToAppend(seq, num_tokens - NumTokens(seq)) without a sliding window.
  [[nodiscard]] int32_t BlocksToReach(SequenceId seq, int64_t num_tokens, int32_t max_chunk) const;

  // Admits `seq` holding the first tokens of its prompt: `tokens` is the prompt up to the end of
  // the first chunk, cached prefix included (the first hit.num_cached_tokens of them are served by
  // `hit`, the rest get new slots). ResourceExhausted (with the numbers) when that would leave
  // fewer than the watermark free; InvalidArgument when `tokens` is shorter than the hit;
  // FailedPrecondition when `seq` exists or a hit block was evicted since the lookup.
  [[nodiscard]] absl::Status AddSequence(SequenceId seq, const PrefixHit& hit,
                                         absl::Span<const int32_t> tokens);

  // Assigns slots to `new_tokens` after the tokens `seq` holds; may use every free block (the
  // watermark exists for this). ResourceExhausted when blocks are short; NotFound for an unknown
  // sequence.
  [[nodiscard]] absl::Status Append(SequenceId seq, absl::Span<const int32_t> new_tokens);

  // Releases every block of `seq`, last position first (every group's block of a position
  // together) so a prefix's tail is evicted before its head. Returns false for an unknown sequence.
  bool Free(SequenceId seq);

  [[nodiscard]] bool Contains(SequenceId seq) const { return sequences_.contains(seq); }
  // The block table of `seq` (must exist) in layer group `group`: block i holds its tokens
  // [i*bs, (i+1)*bs).
  [[nodiscard]] absl::Span<const BlockId> BlockTable(SequenceId seq, int32_t group = 0) const;
  // Tokens `seq` (must exist) has been assigned slots for, released ones included.
  [[nodiscard]] int32_t NumTokens(SequenceId seq) const;
  // Leading entries of the block table of `seq` (must exist) in `group` released behind the
  // group's sliding window: they are kNullBlockId.
  [[nodiscard]] int32_t NumReleasedBlocks(SequenceId seq, int32_t group = 0) const;

  [[nodiscard]] KvCacheStats Stats() const;

  // Verifies the pool's invariants and that reference counts equal block-table membership, in
  // O(blocks + table entries); Internal with the first violation.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  // One layer group's block table of a sequence.
  struct GroupTable {
    // Block i holds tokens [i * block_size, (i + 1) * block_size); the first num_released_blocks
    // entries are kNullBlockId.
    std::vector<BlockId> blocks;
    // Leading blocks released behind the group's sliding window.
    int32_t num_released_blocks = 0;
  };
  struct Sequence {
    // One table per layer group, all of the same length.
    std::vector<GroupTable> groups;
    // That length (kept here so the decode path does not reach into `groups`).
    int32_t table_size = 0;
    // Held tokens at which some group's window next leaves a block behind: ReleaseDeadBlocks has
    // nothing to do below it. 0 until the first Append computes it; INT32_MAX without a window.
    int32_t next_release_tokens = 0;
    // Token ids of the last block while it is not full (only kept with prefix caching).
    std::vector<int32_t> tail_tokens;
    // Hash of the last full block, the parent of the next one.
    BlockHash parent_hash;
    // Tokens assigned slots, released ones included.
    int32_t num_tokens = 0;
    // Leading blocks that are full (and were offered to the prefix cache).
    int32_t num_full_blocks = 0;
  };

  explicit KvCacheManager(const KvCacheConfig& config);

  // Assigns slots to `tokens` at the end of `seq`, which has room for them; caches blocks that
  // become full.
  void FillSlots(Sequence& seq, absl::Span<const int32_t> tokens);
  // Table entries `s` lacks (per group) to hold `num_new_tokens` more tokens.
  [[nodiscard]] int32_t NewBlocksFor(const Sequence& s, int32_t num_new_tokens) const;
  // Group `group`'s blocks of `hit` (empty when the hit has none for it).
  [[nodiscard]] static absl::Span<const BlockId> HitBlocks(const PrefixHit& hit, int32_t group);
  // Leading blocks of `hit` in `group` behind the window of a sequence admitted with it.
  [[nodiscard]] size_t DeadHitBlocks(const PrefixHit& hit, int32_t group) const;
  // Blocks of `s` in `group` behind its window that are still held: entries
  // [num_released_blocks, end).
  [[nodiscard]] int32_t DeadHeldBlocks(const Sequence& s, int32_t group) const;
  // Of those, summed over groups, the ones no other sequence holds (releasing them frees them).
  [[nodiscard]] int32_t DeadBlocksOnlyHeldBy(const Sequence& s) const;
  // Releases the blocks of `s` behind each group's window, group by group, oldest first, and
  // sets s.next_release_tokens.
  void ReleaseDeadBlocks(Sequence& s);
  [[nodiscard]] const Sequence& Get(SequenceId seq) const;

  const KvCacheConfig config_;
  // Per layer group: its window (0 = none).
  const std::vector<int32_t> windows_;
  // Some group has a window (blocks are released).
  const bool any_window_;
  BlockPool pool_;
  // The blocks Free() returns, in order (kept to avoid an allocation per call).
  std::vector<BlockId> free_scratch_;
  absl::flat_hash_map<SequenceId, Sequence> sequences_;
  int64_t total_tokens_ = 0;
  int64_t total_slots_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
};

}  // namespace headroom::kvcache
