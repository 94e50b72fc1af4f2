// JsonMatcher: reads JSON text (RFC 8259) one byte at a time and refuses, at the first byte, any
// text that no JSON document starts with, for constrained decoding (OpenAI's response_format
// json_object): the engine lets the sampler take only tokens whose bytes the matcher accepts.
//
// Prefix-exact: Feed accepts a byte exactly when what was read plus it still begins some JSON
// document (checked against nlohmann::json on mutated documents in
// tests/worker/json_matcher_test.cc), so a constrained generation can never reach a dead end.
// That includes UTF-8 inside strings (no overlong forms, surrogates or bytes past U+10FFFF) and
// \u escapes (a high surrogate must be followed by a low one, a low one must follow a high one).
//
// Two limits keep a generation from running away, and make the matcher stricter than JSON:
// containers nest at most `max_depth` deep, and at most `max_whitespace` whitespace bytes follow
// one another (a model that keeps emitting newlines would otherwise fill max_tokens with them).
//
// Complete() turns true when the top-level value is closed; nothing may follow it. A top-level
// number never completes (another digit could follow): with `object_only` (json_object) the
// top-level value must be an object.
//
// A matcher is a small value (a few words and the open containers): the engine copies it to try
// a token's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "worker/engine/json_lexer.h"

namespace headroom::worker {

class JsonMatcher {
 public:
  struct Options {
    bool object_only = true;
    int32_t max_depth = 32;
    int32_t max_whitespace = 16;
  };

  JsonMatcher() : JsonMatcher(Options{}) {}
  explicit JsonMatcher(Options options) : options_(options) {}

  // Reads `byte`; false when no JSON document continues this way (the matcher is then unusable:
  // callers try bytes on a copy).
  [[nodiscard]] bool Feed(uint8_t byte);
  // Reads every byte of `bytes`; false at the first refused one.
  [[nodiscard]] bool Feed(std::string_view bytes);

  // The top-level value has been read whole; no byte is accepted after it.
  [[nodiscard]] bool Complete() const { return mode_ == Mode::kDone; }
  // Inside a string (its text, an escape, a \u escape).
  [[nodiscard]] bool InString() const { return mode_ == Mode::kString; }
  // Inside a string's text, between characters: where any string text may follow.
  [[nodiscard]] bool AtStringText() const {
    return mode_ == Mode::kString && string_.BetweenCharacters();
  }

  // Appends what decides the bytes accepted from here on: matchers with the same key accept the
  // same bytes (and so the same tokens: TokenMaskCache). The open containers, the mode and the
  // lexer it reads with; not what was read inside strings and numbers before.
  void AppendStateKey(std::string* key) const;

 private:
  enum class Mode : uint8_t {
    kValue,       // a value must start (top level, after ':' or ',' in an array)
    kValueOrEnd,  // after '[': a value or ']'
    kKeyOrEnd,    // after '{': a key or '}'
    kKey,         // after ',' in an object: a key
    kColon,       // after a key
    kAfterValue,  // ',' or the container's closer
    kString,      // inside a string (in_key_ says which; string_ where)
    kLiteral,     // inside true / false / null
    kNumber,      // inside a number (number_ says where)
    kDone,        // the top-level value is complete
  };

  bool FeedValueStart(uint8_t byte);
  bool FeedNumber(uint8_t byte);
  // A value just ended (a string, literal, number or container).
  void EndValue();
  bool Open(char container);
  bool Close(char container);
  bool Whitespace();

  Options options_;
  Mode mode_ = Mode::kValue;
  bool in_key_ = false;
  JsonStringLexer string_;
  JsonNumberLexer number_;
  // Open containers, '{' or '[' (at most max_depth).
  std::string stack_;
  // kLiteral: the rest of the literal to read ("rue" after 't').
  std::string_view literal_rest_;
  int32_t whitespace_run_ = 0;
};

// A vocabulary as JSON mode reads it: each token's bytes (Tokenizer::TokenBytes; empty ones are
// never allowed), indexed so that a step tries only the tokens that can fit:
//   - by first byte: a byte the matcher refuses rules out every token that starts with it;
//   - string text: a token that, from between the characters of a string, stays inside the
//     string and ends between characters again ("ing", " the", "\n") is allowed in every state
//     where the matcher says any string text fits (AtStringText) without being tried (most of a
//     vocabulary is such text).
class JsonVocabulary {
 public:
  explicit JsonVocabulary(std::vector<std::string> token_bytes);

  [[nodiscard]] const std::vector<std::string>& token_bytes() const { return bytes_; }
  // Token ids with bytes that start with `byte`: all of them, or those that are not string text.
  [[nodiscard]] const std::vector<int32_t>& StartingWith(uint8_t byte, bool all) const {
    return all ? by_first_byte_[byte] : other_by_first_byte_[byte];
  }
  [[nodiscard]] const std::vector<int32_t>& string_text() const { return string_text_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<std::vector<int32_t>> by_first_byte_;
  std::vector<std::vector<int32_t>> other_by_first_byte_;
  std::vector<int32_t> string_text_;
};

// Writes to `allowed` (cleared first, in no particular order) every token id whose bytes
// `matcher` accepts whole. A Matcher (JsonMatcher, JsonSchemaMatcher, StructuralTagMatcher) is a
// copyable value with Feed(uint8_t), Feed(std::string_view) and AtStringText().
template <typename Matcher>
void JsonAllowedTokens(const Matcher& matcher, const JsonVocabulary& vocabulary,
                       std::vector<int32_t>* allowed) {
  allowed->clear();
  // Between a string's characters, string text fits whatever else the matcher holds (the
  // string's text is not part of its state); only the other tokens need trying.
  const bool at_text = matcher.AtStringText();
  if (at_text) allowed->assign(vocabulary.string_text().begin(), vocabulary.string_text().end());
  for (int byte = 0; byte < 256; ++byte) {
    const std::vector<int32_t>& group =
        vocabulary.StartingWith(static_cast<uint8_t>(byte), /*all=*/!at_text);
    if (group.empty()) continue;
    Matcher after_first = matcher;
    if (!after_first.Feed(static_cast<uint8_t>(byte))) continue;
    for (const int32_t id : group) {
      Matcher next = after_first;
      const std::string_view bytes = vocabulary.token_bytes()[static_cast<size_t>(id)];
      if (next.Feed(bytes.substr(1))) allowed->push_back(id);
    }
  }
}

// Instantiated next to each matcher (json_matcher.cc, json_schema.cc), where its Feed inlines
// into the loop over tokens.
class JsonSchemaMatcher;
extern template void JsonAllowedTokens<JsonMatcher>(const JsonMatcher&, const JsonVocabulary&,
                                                    std::vector<int32_t>*);
extern template void JsonAllowedTokens<JsonSchemaMatcher>(const JsonSchemaMatcher&,
                                                          const JsonVocabulary&,
                                                          std::vector<int32_t>*);

}  // namespace headroom::worker
