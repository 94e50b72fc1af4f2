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
  [[nodiscard]] bool InString() const {
    return mode_ == Mode::kString || mode_ == Mode::kEscape || mode_ == Mode::kUnicode ||
           mode_ == Mode::kLowSurrogateSlash || mode_ == Mode::kLowSurrogateU;
  }
  // Inside a string's text, between characters: where any string text may follow.
  [[nodiscard]] bool AtStringText() const { return mode_ == Mode::kString && utf8_due_ == 0; }

 private:
  enum class Mode : uint8_t {
    kValue,              // a value must start (top level, after ':' or ',' in an array)
    kValueOrEnd,         // after '[': a value or ']'
    kKeyOrEnd,           // after '{': a key or '}'
    kKey,                // after ',' in an object: a key
    kColon,              // after a key
    kAfterValue,         // ',' or the container's closer
    kString,             // inside a string (in_key_ says which)
    kEscape,             // after '\' in a string
    kUnicode,            // in the hex digits of \uXXXX
    kLowSurrogateSlash,  // a high surrogate was read: '\' must follow
    kLowSurrogateU,      // ...then 'u'
    kLiteral,            // inside true / false / null
    kNumber,             // inside a number (number_ says where)
    kDone,               // the top-level value is complete
  };
  enum class Number : uint8_t {
    kMinus,      // after '-': a digit must follow
    kZero,       // a leading 0: '.', 'e', or the end
    kInt,        // integer digits
    kFracStart,  // after '.': a digit must follow
    kFrac,       // fraction digits
    kExpStart,   // after 'e': a sign or a digit
    kExpSign,    // after the exponent's sign: a digit
    kExp,        // exponent digits
  };

  bool FeedValueStart(uint8_t byte);
  bool FeedString(uint8_t byte);
  bool FeedNumber(uint8_t byte);
  bool FeedUnicodeDigit(uint8_t byte);
  // A value just ended (a string, literal, number or container).
  void EndValue();
  bool Open(char container);
  bool Close(char container);
  bool Whitespace();

  Options options_;
  Mode mode_ = Mode::kValue;
  bool in_key_ = false;
  Number number_ = Number::kMinus;
  // Open containers, '{' or '[' (at most max_depth).
  std::string stack_;
  // kLiteral: the rest of the literal to read ("rue" after 't').
  std::string_view literal_rest_;
  // UTF-8 inside a string: continuation bytes still due, and the range of the next one.
  uint8_t utf8_due_ = 0;
  uint8_t utf8_lo_ = 0x80;
  uint8_t utf8_hi_ = 0xBF;
  // kUnicode: digits read, the value so far, and whether this escape must be a low surrogate.
  uint8_t hex_digits_ = 0;
  uint16_t hex_value_ = 0;
  bool want_low_surrogate_ = false;
  int32_t whitespace_run_ = 0;
};

// A vocabulary as JSON mode reads it: each token's bytes (Tokenizer::TokenBytes; empty ones are
// never allowed), indexed so that a step tries only the tokens that can fit:
//   - by first byte: a byte the matcher refuses rules out every token that starts with it;
//   - string text: a token that, from between the characters of a string, stays inside the
//     string and ends between characters again ("ing", " the", "\n") is allowed in every such
//     state without being tried (most of a vocabulary is such text).
class JsonVocabulary {
 public:
  explicit JsonVocabulary(std::vector<std::string> token_bytes);

  [[nodiscard]] const std::vector<std::string>& token_bytes() const { return bytes_; }

 private:
  friend void JsonAllowedTokens(const JsonMatcher&, const JsonVocabulary&, std::vector<int32_t>*);

  std::vector<std::string> bytes_;
  // Every token with bytes, by first byte; and the ones that are not string text, by first byte.
  std::vector<std::vector<int32_t>> by_first_byte_;
  std::vector<std::vector<int32_t>> other_by_first_byte_;
  std::vector<int32_t> string_text_;
};

// Writes to `allowed` (cleared first, in no particular order) every token id whose bytes
// `matcher` accepts whole.
void JsonAllowedTokens(const JsonMatcher& matcher, const JsonVocabulary& vocabulary,
                       std::vector<int32_t>* allowed);

}  // namespace headroom::worker
