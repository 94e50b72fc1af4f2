// Streams text for generated tokens, one token at a time, such that
//   - every returned chunk is valid UTF-8 (an incomplete character is held back until the token
//     that completes it arrives; byte-fallback pieces such as <0xE2> are held until their run of
//     byte tokens ends, because `tokenizers` decodes a run only as a whole);
//   - the concatenation of all chunks (Push... then Finish) equals
//     tokenizer.Decode(context + ids) minus tokenizer.Decode(context) — with no context, exactly
//     tokenizer.Decode(ids), leading-space rules (Metaspace, Strip) included.
//
// Method: decode a short window of recent tokens and emit what it adds to the window's already
// emitted prefix (the technique of `tokenizers`' DecodeStream and vLLM's detokenizer); the window
// restarts after every emission, so a step costs O(window), not O(sequence).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "router/tokenizer/tokenizer.h"

namespace headroom::router {

class IncrementalDetokenizer {
 public:
  // `context` are token ids already shown to the user (e.g. the last few prompt tokens); their
  // text is not emitted, but it decides leading spaces of what follows. `tokenizer` must outlive
  // this object.
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, DecodeOptions options = {},
                                  std::span<const int32_t> context = {});

  // Adds one token; returns the text that is now final (possibly empty).
  std::string Push(int32_t id);
  // Adds several tokens; returns the text that is now final.
  std::string Push(std::span<const int32_t> ids);
  // Ends the stream: returns everything still held back (an unfinished character becomes U+FFFD,
  // as in a full decode). The detokenizer can be reused afterwards with no context.
  std::string Finish();

  // Number of tokens held back so far (for tests and metrics).
  [[nodiscard]] size_t pending_tokens() const { return window_.size() - prefix_count_; }

 private:
  // Text of the whole window minus the emitted prefix; advances the window when non-empty.
  std::string Emit(const std::string& text);

  const Tokenizer& tokenizer_;
  DecodeOptions options_;
  std::vector<int32_t> window_;  // context tokens followed by pending tokens
  size_t prefix_count_ = 0;      // leading tokens of window_ whose text was already emitted
  std::string prefix_text_;      // Decode(window_[0, prefix_count_))
};

}  // namespace headroom::router
