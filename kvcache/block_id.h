// Strong id types of the KV cache: a block id is never confused with a token index or a sequence.
#pragma once

#include <cstdint>

#include "common/strong_id.h"

namespace headroom::kvcache {

struct BlockIdTag {};
// Index of a KV block in the pool: block b holds slots [b * block_size, (b + 1) * block_size).
using BlockId = StrongId<BlockIdTag, int32_t>;

struct SequenceIdTag {};
// A sequence whose KV the manager tracks (one per request; n > 1 sampling would fork several).
using SequenceId = StrongId<SequenceIdTag, int64_t>;

// Block 0 is reserved: never allocated, never freed, never cached. Kernels may point padding
// entries of a block table at it.
inline constexpr BlockId kNullBlockId{0};

}  // namespace headroom::kvcache
