// Layer groups: how a model whose layers attend different windows shares one pool of KV blocks.
//
// With every layer attending the same window (or none), one block table per sequence serves every
// layer: block b holds the keys and values of its block_size positions for all layers. When some
// layers attend a sliding window and others the whole context (Gemma 2: alternating; Gemma 3: five
// windowed layers to one global), the windowed layers need only the blocks inside their window
// while the global ones need every block, so they cannot share one table without keeping every
// block. The layers are split into groups of equal size (layers of one window per group, the last
// group of a window padded), each group gets its own block table per sequence, and all groups
// allocate from one pool whose block holds `group_size` layers' keys and values: the layer at slot
// t of any group keeps its KV in the pool's t-th tensor, at the block ids of its group's table.
// A sequence of n tokens then holds ceil(n / block_size) blocks per full-attention group and at
// most PeakBlocksPerSequence(n, ...) per windowed group (docs/kvcache.md, "Layer groups").
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace headroom::kvcache {

// At most this many groups: beyond it (one full layer among dozens of windowed ones) the layers
// share one group that keeps every block, so block tables stay few per sequence.
inline constexpr int32_t kMaxLayerGroups = 16;

struct LayerGroups {
  // Per group: the window its layers attend (0 = the whole context). Full-attention groups first,
  // then windows in increasing order; layers keep their order inside a window.
  std::vector<int32_t> windows;
  // Per layer: its group and its slot in the group (the pool tensor its KV lives in).
  std::vector<int32_t> layer_group;
  std::vector<int32_t> layer_slot;
  // Layers per group and pool tensors: the pool's bytes per block are group_size layers' KV.
  int32_t group_size = 0;

  [[nodiscard]] int32_t num_groups() const { return static_cast<int32_t>(windows.size()); }
  // Pool tensors no layer uses in some groups: group_size * num_groups - layers.
  [[nodiscard]] int32_t padding_slots() const {
    return group_size * num_groups() - static_cast<int32_t>(layer_group.size());
  }
};

// Groups the layers of a model by their windows (`layer_windows[l]`: 0 = full attention, else the
// positions layer l attends, its own included). One group of every layer when all windows are
// equal; otherwise groups of as many layers as the least common window has, unless that makes more
// than kMaxLayerGroups groups (then one group keeping every block). Empty input: no groups.
[[nodiscard]] LayerGroups PlanLayerGroups(absl::Span<const int32_t> layer_windows);

}  // namespace headroom::kvcache
