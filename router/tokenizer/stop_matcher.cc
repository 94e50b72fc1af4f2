#include "router/tokenizer/stop_matcher.h"

#include <algorithm>
#include <utility>

#include "router/tokenizer/string_util.h"

namespace headroom::router {

StopMatcher::StopMatcher(StopMatcherOptions options) : options_(std::move(options)) {}

StopResult StopMatcher::Push(std::string_view text, bool may_stop) {
  StopResult result;
  if (stopped_) {
    result.stopped = true;
    return result;
  }
  std::string buffer = std::move(held_);
  held_.clear();
  buffer.append(text);

  // The stop string that completes first. Any match ends in the new text, unless the text before
  // was pushed with may_stop false (then one may end in `held_`, as vLLM's check of the last
  // stop-string length of old text also finds it).
  size_t best_end = std::string::npos;
  size_t best_begin = 0;
  std::optional<size_t> best_index;
  for (size_t i = 0; i < options_.stop.size() && may_stop; ++i) {
    const std::string& s = options_.stop[i];
    if (s.empty()) continue;
    const size_t at = buffer.find(s);
    if (at == std::string::npos) continue;
    const size_t end = at + s.size();
    if (end < best_end || (end == best_end && at < best_begin)) {
      best_end = end;
      best_begin = at;
      best_index = i;
    }
  }
  if (best_index.has_value()) {
    stopped_ = true;
    result.stopped = true;
    result.stop_index = best_index;
    result.text = buffer.substr(0, options_.include_stop_str_in_output ? best_end : best_begin);
    return result;
  }

  // Hold back the longest suffix that could still grow into a stop string.
  size_t hold = 0;
  for (const std::string& s : options_.stop) hold = std::max(hold, PartialAtEnd(buffer, s));
  held_ = buffer.substr(buffer.size() - hold);
  buffer.resize(buffer.size() - hold);
  result.text = std::move(buffer);
  return result;
}

std::string StopMatcher::Finish() {
  if (stopped_) return "";
  return std::exchange(held_, std::string());
}

}  // namespace headroom::router
