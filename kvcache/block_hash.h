// Content hashes of full KV blocks, chained so that a block's hash identifies its whole prefix.
//
//   hash(block i) = XXH3-128(hash(block i-1) || token ids of block i)
//   hash(block -1) = the root: XXH3-128 of the cache salt, or a fixed constant without a salt;
//                    with a LoRA adapter, a seeded XXH3-128 of the adapter's cache key (a hash
//                    of its files, LoraAdapter::cache_key) and the salt.
//
// 128 bits make an accidental collision (which would serve one prompt another prompt's KV)
// negligible: ~2^-64 even after 2^32 cached blocks. A salt isolates tenants: the same tokens under
// different salts never share blocks. An adapter's KV differs from the base model's for the same
// tokens, so each adapter has its own roots (vLLM folds the adapter into its block hashes too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/types/span.h"

namespace headroom::kvcache {

struct BlockHash {
  uint64_t low = 0;
  uint64_t high = 0;

  friend bool operator==(const BlockHash&, const BlockHash&) = default;

  template <typename H>
  friend H AbslHashValue(H h, const BlockHash& hash) {
    // Already uniformly distributed: the low word alone is a good hash table key.
    return H::combine(std::move(h), hash.low);
  }
};

static_assert(sizeof(BlockHash) == 16 && std::is_trivially_copyable_v<BlockHash>);

// The parent hash of a sequence's first block, derived from its cache salt ("" = no salt) and the
// cache key of the LoRA adapter that computes it ("" = the base model). Roots with an adapter are
// hashed in a domain of their own (a seed and the key's length first), so no salt can forge one.
[[nodiscard]] BlockHash RootBlockHash(std::string_view salt, std::string_view adapter = {});

// The hash of a full block with the given parent hash and token ids.
[[nodiscard]] BlockHash HashBlock(const BlockHash& parent, absl::Span<const int32_t> token_ids);

// The hash a block of layer group `group` is cached under when its chained hash is `hash`: the
// same tokens in different layer groups are different blocks (kv_cache_manager.h). Group 0's is
// `hash` itself, so its hashes are the ones a router matches (PromptBlockHashes).
[[nodiscard]] BlockHash LayerGroupHash(const BlockHash& hash, int32_t group);

// The chained hashes of the full blocks of `tokens` under `salt` and `adapter`: what a worker's
// prefix cache registers them as (a partial last block has none), and what a router matches
// against it. Empty when block_size <= 0.
[[nodiscard]] std::vector<BlockHash> PromptBlockHashes(absl::Span<const int32_t> tokens,
                                                       int32_t block_size, std::string_view salt,
                                                       std::string_view adapter = {});

// Hashes on the wire (LoadReport.prefix_cache): 16 bytes each, the low then the high word, each
// little-endian. Unpack: nullopt when the size is not a multiple of 16.
[[nodiscard]] std::string PackBlockHashes(absl::Span<const BlockHash> hashes);
[[nodiscard]] std::optional<std::vector<BlockHash>> UnpackBlockHashes(std::string_view bytes);

}  // namespace headroom::kvcache
