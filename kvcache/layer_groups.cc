#include "kvcache/layer_groups.h"

#include <algorithm>
#include <map>

namespace headroom::kvcache {
namespace {

// Every layer in one group attending `window` (0 keeps every block).
LayerGroups OneGroup(size_t num_layers, int32_t window) {
  LayerGroups groups;
  groups.windows = {window};
  groups.layer_group.assign(num_layers, 0);
  groups.layer_slot.resize(num_layers);
  for (size_t l = 0; l < num_layers; ++l) groups.layer_slot[l] = static_cast<int32_t>(l);
  groups.group_size = static_cast<int32_t>(num_layers);
  return groups;
}

}  // namespace

LayerGroups PlanLayerGroups(absl::Span<const int32_t> layer_windows) {
  if (layer_windows.empty()) return {};
  // Layers by window, in layer order; std::map orders the windows with 0 (full) first.
  std::map<int32_t, std::vector<int32_t>> by_window;
  for (size_t l = 0; l < layer_windows.size(); ++l) {
    by_window[std::max(0, layer_windows[l])].push_back(static_cast<int32_t>(l));
  }
  if (by_window.size() == 1) return OneGroup(layer_windows.size(), by_window.begin()->first);
  size_t group_size = layer_windows.size();
  for (const auto& [window, layers] : by_window) group_size = std::min(group_size, layers.size());
  size_t num_groups = 0;
  for (const auto& [window, layers] : by_window) {
    num_groups += (layers.size() + group_size - 1) / group_size;
  }
  if (num_groups > static_cast<size_t>(kMaxLayerGroups)) return OneGroup(layer_windows.size(), 0);
  LayerGroups groups;
  groups.group_size = static_cast<int32_t>(group_size);
  groups.layer_group.resize(layer_windows.size());
  groups.layer_slot.resize(layer_windows.size());
  for (const auto& [window, layers] : by_window) {
    for (size_t i = 0; i < layers.size(); ++i) {
      if (i % group_size == 0) groups.windows.push_back(window);
      const auto layer = static_cast<size_t>(layers[i]);
      groups.layer_group[layer] = groups.num_groups() - 1;
      groups.layer_slot[layer] = static_cast<int32_t>(i % group_size);
    }
  }
  return groups;
}

}  // namespace headroom::kvcache
