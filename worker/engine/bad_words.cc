#include "worker/engine/bad_words.h"

#include <algorithm>

namespace headroom::worker {

void AppendBadWordBans(const std::vector<std::vector<int32_t>>& bad_words,
                       std::span<const int32_t> output, std::vector<int32_t>* banned) {
  for (const std::vector<int32_t>& word : bad_words) {
    const size_t prefix = word.size() - 1;
    if (prefix > output.size()) continue;
    if (std::equal(word.begin(), word.end() - 1,
                   output.end() - static_cast<std::ptrdiff_t>(prefix))) {
      banned->push_back(word.back());
    }
  }
}

}  // namespace headroom::worker
