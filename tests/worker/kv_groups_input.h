// Hand-built ForwardInputs for models whose KV cache has several layer groups (Gemma 2/3): the
// tests lay out one block table and slot mapping; every group needs its own, in blocks no other
// group uses (the groups share the pool's tensors).
#pragma once

#include <cstdint>

#include "worker/model/forward_input.h"

namespace headroom::worker::testing {

// Extends `in`, built for one group, to `groups` groups: group g's slots and non-null block ids
// are group 0's shifted by g * stride blocks. The pool needs 1 + groups * stride blocks when group
// 0 uses blocks [1, 1 + stride).
inline void SpreadOverKvGroups(int32_t groups, int32_t stride, int32_t block_size,
                               ForwardInput& in) {
  const size_t slots = in.slot_mapping.size();
  const size_t entries = in.block_tables.size();
  for (int32_t g = 1; g < groups; ++g) {
    for (size_t i = 0; i < slots; ++i) {
      in.slot_mapping.push_back(in.slot_mapping[i] + int64_t{g} * stride * block_size);
    }
    for (size_t i = 0; i < entries; ++i) {
      const int32_t block = in.block_tables[i];
      in.block_tables.push_back(block == 0 ? 0 : block + g * stride);
    }
  }
}

}  // namespace headroom::worker::testing
