#include "worker/engine/guided_choice.h"

#include <algorithm>

namespace headroom::worker {
namespace {

bool StartsWith(const std::vector<int32_t>& choice, std::span<const int32_t> output) {
  return choice.size() >= output.size() && std::equal(output.begin(), output.end(), choice.begin());
}

}  // namespace

void GuidedChoiceAllowed(const GuidedChoices& choices, std::span<const int32_t> output,
                         int32_t end_token, std::vector<int32_t>* allowed) {
  allowed->clear();
  bool complete = false;
  for (const std::vector<int32_t>& choice : choices) {
    if (!StartsWith(choice, output)) continue;
    if (choice.size() == output.size()) {
      complete = true;
    } else {
      allowed->push_back(choice[output.size()]);
    }
  }
  if (complete && end_token >= 0) allowed->push_back(end_token);
  std::sort(allowed->begin(), allowed->end());
  allowed->erase(std::unique(allowed->begin(), allowed->end()), allowed->end());
}

bool GuidedChoiceComplete(const GuidedChoices& choices, std::span<const int32_t> output) {
  bool equal = false;
  for (const std::vector<int32_t>& choice : choices) {
    if (!StartsWith(choice, output)) continue;
    if (choice.size() > output.size()) return false;  // a longer choice may still follow
    equal = true;
  }
  return equal;
}

}  // namespace headroom::worker
