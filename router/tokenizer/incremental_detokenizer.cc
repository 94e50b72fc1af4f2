#include "router/tokenizer/incremental_detokenizer.h"

#include <utility>

#include "router/tokenizer/utf8.h"

namespace headroom::router {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, DecodeOptions options,
                                               std::span<const int32_t> context)
    : tokenizer_(tokenizer), options_(options), window_(context.begin(), context.end()) {
  prefix_count_ = window_.size();
  prefix_text_ = tokenizer_.Decode(window_, options_);
}

std::string IncrementalDetokenizer::Push(int32_t id) {
  // Ids that Decode drops (unknown ids, skipped special tokens) change nothing.
  if (!tokenizer_.IdToToken(id).has_value()) return "";
  if (options_.skip_special_tokens && tokenizer_.IsSpecialToken(id)) return "";
  window_.push_back(id);
  // A byte-fallback run is decoded as a whole (all of it valid UTF-8, or one U+FFFD per byte),
  // so nothing of it is final until a token of another kind ends the run.
  if (tokenizer_.IsByteFallbackToken(id)) return "";
  const std::string text = tokenizer_.Decode(window_, options_);
  // A trailing U+FFFD may be the start of a character that the next token completes.
  if (utf8::EndsWith(text, utf8::kReplacementChar)) return "";
  return Emit(text);
}

std::string IncrementalDetokenizer::Push(std::span<const int32_t> ids) {
  std::string out;
  for (const int32_t id : ids) out += Push(id);
  return out;
}

std::string IncrementalDetokenizer::Finish() {
  std::string out;
  if (window_.size() > prefix_count_) out = Emit(tokenizer_.Decode(window_, options_));
  window_.clear();
  prefix_count_ = 0;
  prefix_text_.clear();
  return out;
}

std::string IncrementalDetokenizer::Emit(const std::string& text) {
  size_t start = prefix_text_.size();
  if (text.compare(0, prefix_text_.size(), prefix_text_) != 0) {
    // Not an extension of the emitted text (no supported decoder does this): emit what lies past
    // the emitted length, from a character boundary, rather than repeat text.
    while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  }
  if (start >= text.size()) return "";
  std::string chunk = text.substr(start);
  // The pending tokens become the context of the next window.
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(prefix_count_));
  prefix_count_ = window_.size();
  prefix_text_ = tokenizer_.Decode(window_, options_);
  return chunk;
}

}  // namespace headroom::router
