#include "worker/engine/allowed_tokens.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace headroom::worker {

AllowedTokens::AllowedTokens(std::vector<int32_t> ids) {
  if (ids.empty()) return;
  const int32_t largest = *std::max_element(ids.begin(), ids.end());
  const size_t words = static_cast<size_t>(largest) / 32 + 1;
  if (words >= ids.size()) {
    ids_ = std::move(ids);
    return;
  }
  bitmask_.assign(words, 0);
  for (const int32_t id : ids) {
    bitmask_[static_cast<size_t>(id) / 32] |= uint32_t{1} << (static_cast<uint32_t>(id) % 32);
  }
}

bool AllowedTokens::Contains(int32_t id) const {
  if (id < 0) return false;
  if (!is_bitmask()) return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
  const size_t word = static_cast<size_t>(id) / 32;
  return word < bitmask_.size() && (bitmask_[word] >> (static_cast<uint32_t>(id) % 32) & 1) != 0;
}

std::vector<int32_t> AllowedTokens::SortedIds() const {
  std::vector<int32_t> sorted;
  if (!is_bitmask()) {
    sorted = ids_;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    return sorted;
  }
  for (size_t word = 0; word < bitmask_.size(); ++word) {
    for (uint32_t bits = bitmask_[word]; bits != 0; bits &= bits - 1) {
      sorted.push_back(
          static_cast<int32_t>(word * 32 + static_cast<size_t>(std::countr_zero(bits))));
    }
  }
  return sorted;
}

}  // namespace headroom::worker
