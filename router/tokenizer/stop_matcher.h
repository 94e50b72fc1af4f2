// Stop strings for streamed text (OpenAI `stop`, vLLM semantics): text is released as soon as it
// can no longer be the start of a stop string, so a stop string split across tokens is still
// caught and never shown. The first stop string to complete wins (earliest end; at the same end,
// the longer one); output ends right before it, or right after it with
// include_stop_str_in_output. The result does not depend on how the text was chunked.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::router {

struct StopMatcherOptions {
  std::vector<std::string> stop;  // empty strings are ignored
  bool include_stop_str_in_output = false;
};

struct StopResult {
  std::string text;                  // safe to emit now
  bool stopped = false;              // a stop string completed; ignore further input
  std::optional<size_t> stop_index;  // which entry of `stop` matched
};

class StopMatcher {
 public:
  explicit StopMatcher(StopMatcherOptions options);

  // Adds decoded text (valid UTF-8); returns what may be emitted now. With `may_stop` false
  // (vLLM's min_tokens not reached yet) no stop string completes in this text; a suffix that could
  // start one is still held back, so one that completes in later text is found.
  StopResult Push(std::string_view text, bool may_stop = true);
  // The stream ended without a stop string: returns the held-back text.
  std::string Finish();

  [[nodiscard]] bool stopped() const { return stopped_; }
  [[nodiscard]] size_t held_bytes() const { return held_.size(); }

 private:
  StopMatcherOptions options_;
  std::string held_;  // a suffix of the text that is a proper prefix of some stop string
  bool stopped_ = false;
};

}  // namespace headroom::router
