#include "worker/engine/step_plan.h"

namespace headroom::worker {

bool ApplyToBlockTable(const ScheduledSequence& seq, std::vector<kvcache::BlockId>& table) {
  table.insert(table.end(), seq.new_block_ids.begin(), seq.new_block_ids.end());
  if (seq.num_released_blocks < 0 || static_cast<size_t>(seq.num_released_blocks) > table.size()) {
    return false;
  }
  // Released entries form a prefix that only grows: clear back to the previous release.
  for (auto b = static_cast<size_t>(seq.num_released_blocks);
       b > 0 && table[b - 1] != kvcache::kNullBlockId; --b) {
    table[b - 1] = kvcache::kNullBlockId;
  }
  return true;
}

}  // namespace headroom::worker
