#include "worker/engine/step_plan.h"

namespace headroom::worker {

bool ApplyToBlockTable(const ScheduledSequence& seq, BlockTables& tables) {
  const size_t groups = tables.size();
  if (groups == 0 || seq.num_released_blocks.size() != groups ||
      seq.new_block_ids.size() % groups != 0) {
    return false;
  }
  const size_t run = seq.new_block_ids.size() / groups;
  for (size_t g = 0; g < groups; ++g) {
    std::vector<kvcache::BlockId>& table = tables[g];
    const auto first = seq.new_block_ids.begin() + static_cast<std::ptrdiff_t>(g * run);
    table.insert(table.end(), first, first + static_cast<std::ptrdiff_t>(run));
    const int32_t released = seq.num_released_blocks[g];
    if (released < 0 || static_cast<size_t>(released) > table.size()) return false;
    // Released entries form a prefix that only grows: clear back to the previous release.
    for (auto b = static_cast<size_t>(released); b > 0 && table[b - 1] != kvcache::kNullBlockId;
         --b) {
      table[b - 1] = kvcache::kNullBlockId;
    }
  }
  return true;
}

}  // namespace headroom::worker
