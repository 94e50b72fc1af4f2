// The two JSON tokens that take more than a fixed spelling to read, one byte at a time, for the
// constrained-decoding matchers (json_matcher.h, json_schema.h): a string's text after its opening
// quote, and a number. Both are prefix-exact: they accept a byte exactly when what was read plus
// it can still be finished. Defined here, inline: they run once per byte of every token tried.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "worker/engine/token_mask_cache.h"
#include "worker/engine/utf8_reader.h"

namespace headroom::worker {

// A JSON string after its opening quote (RFC 8259): UTF-8 without overlong forms, surrogates or
// bytes past U+10FFFF; escapes, where a \u high surrogate must be followed by a \u low one and a
// low one must follow a high one; no raw control characters.
class JsonStringLexer {
 public:
  enum class Step : uint8_t {
    kRefused,    // no string continues this way
    kPartial,    // inside a character (a UTF-8 sequence, an escape, a surrogate pair)
    kCharacter,  // a character (one code point) was completed
    kClosed,     // the closing quote
  };

  Step Feed(uint8_t byte);

  // Between two characters: any character or the closing quote may follow.
  [[nodiscard]] bool BetweenCharacters() const {
    return state_ == State::kText && utf8_.BetweenCharacters();
  }

  // The character just completed (after kCharacter), as a code point.
  [[nodiscard]] uint32_t code_point() const { return code_point_; }
  // Inside a character (after kPartial): the code points it can still become, as at most three
  // disjoint ranges [lo, hi] written to `out`; returns how many.
  using Range = Utf8Reader::Range;
  int PossibleCodePoints(Range out[3]) const;

  // Appends what decides the bytes accepted from here on (not the character just completed), so
  // that lexers with the same key accept the same bytes (TokenMaskCache).
  void AppendStateKey(std::string* key) const {
    AppendKeyBytes(key, state_);
    switch (state_) {
      case State::kText:
        AppendKeyBytes(key, utf8_.Packed());
        break;
      case State::kEscape:
        break;
      case State::kUnicode:
        AppendKeyBytes(key, hex_digits_);
        AppendKeyBytes(key, hex_value_);
        AppendKeyBytes(key, want_low_surrogate_);
        if (want_low_surrogate_) AppendKeyBytes(key, high_surrogate_);
        break;
      case State::kLowSurrogateSlash:
      case State::kLowSurrogateU:
        AppendKeyBytes(key, high_surrogate_);
        break;
    }
  }

 private:
  enum class State : uint8_t {
    kText,               // between characters, or inside a UTF-8 sequence (utf8_)
    kEscape,             // after '\'
    kUnicode,            // in the hex digits of \uXXXX
    kLowSurrogateSlash,  // a high surrogate was read: '\' must follow
    kLowSurrogateU,      // ...then 'u'
  };

  Step FeedText(uint8_t byte);
  Step FeedUnicodeDigit(uint8_t byte);

  State state_ = State::kText;
  Utf8Reader utf8_;
  // kUnicode: digits read, the value so far, and whether this escape must be a low surrogate.
  uint8_t hex_digits_ = 0;
  uint16_t hex_value_ = 0;
  bool want_low_surrogate_ = false;
  // The pending high surrogate of a \u pair.
  uint16_t high_surrogate_ = 0;
  // The character just completed.
  uint32_t code_point_ = 0;
};

// A JSON number (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?), or only its integer
// form, in at most `max_bytes` bytes (1..255; 0: no limit; a byte is refused when the number could
// not then be finished within them). Four bytes: the matchers copy it with every token they try.
class JsonNumberLexer {
 public:
  enum class Step : uint8_t {
    kAccepted,  // the byte continues the number
    kEnded,     // the number ended before this byte, which belongs to what follows
    kRefused,   // the number cannot end here, and does not continue this way
  };

  JsonNumberLexer() = default;
  JsonNumberLexer(bool integer, uint8_t max_bytes) : integer_(integer), max_bytes_(max_bytes) {}

  // The first byte ('-' or a digit) too.
  Step Feed(uint8_t byte);

  // Appends what decides the bytes accepted from here on (TokenMaskCache).
  void AppendStateKey(std::string* key) const {
    AppendKeyBytes(key, state_);
    AppendKeyBytes(key, integer_);
    AppendKeyBytes(key, max_bytes_);
    AppendKeyBytes(key, length_);
  }

  // What was read is a whole number.
  [[nodiscard]] bool CanEnd() const {
    return state_ == State::kZero || state_ == State::kInt || state_ == State::kFrac ||
           state_ == State::kExp;
  }

 private:
  enum class State : uint8_t {
    kStart,      // nothing read
    kMinus,      // after '-': a digit must follow
    kZero,       // a leading 0: '.', 'e', or the end
    kInt,        // integer digits
    kFracStart,  // after '.': a digit must follow
    kFrac,       // fraction digits
    kExpStart,   // after 'e': a sign or a digit
    kExpSign,    // after the exponent's sign: a digit
    kExp,        // exponent digits
  };

  // The state after `byte`, or nullopt-like kStart when it does not continue the number.
  [[nodiscard]] State Next(uint8_t byte) const;

  State state_ = State::kStart;
  bool integer_ = false;
  uint8_t max_bytes_ = 0;
  uint8_t length_ = 0;  // counted only with a limit
};

// --- Definitions (inline: the matchers call these once per byte of every token they try) ---

namespace json_lexer_internal {

inline bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }

inline int HexValue(uint8_t b) {
  if (b >= '0' && b <= '9') return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}

}  // namespace json_lexer_internal

inline JsonStringLexer::Step JsonStringLexer::Feed(uint8_t byte) {
  switch (state_) {
    case State::kText:
      return FeedText(byte);
    case State::kEscape:
      if (byte == 'u') {
        state_ = State::kUnicode;
        hex_digits_ = 0;
        hex_value_ = 0;
        return Step::kPartial;
      }
      switch (byte) {
        case '"':
        case '\\':
        case '/':
          code_point_ = byte;
          break;
        case 'b':
          code_point_ = 0x08;
          break;
        case 'f':
          code_point_ = 0x0C;
          break;
        case 'n':
          code_point_ = 0x0A;
          break;
        case 'r':
          code_point_ = 0x0D;
          break;
        case 't':
          code_point_ = 0x09;
          break;
        default:
          return Step::kRefused;
      }
      state_ = State::kText;
      return Step::kCharacter;
    case State::kUnicode:
      return FeedUnicodeDigit(byte);
    case State::kLowSurrogateSlash:
      if (byte != '\\') return Step::kRefused;
      state_ = State::kLowSurrogateU;
      return Step::kPartial;
    case State::kLowSurrogateU:
      if (byte != 'u') return Step::kRefused;
      state_ = State::kUnicode;
      hex_digits_ = 0;
      hex_value_ = 0;
      return Step::kPartial;
  }
  return Step::kRefused;
}

inline JsonStringLexer::Step JsonStringLexer::FeedText(uint8_t byte) {
  if (utf8_.BetweenCharacters()) {
    if (byte == '"') return Step::kClosed;
    if (byte == '\\') {
      state_ = State::kEscape;
      return Step::kPartial;
    }
    if (byte < 0x20) return Step::kRefused;  // control characters must be escaped
  }
  switch (utf8_.Feed(byte)) {
    case Utf8Reader::Step::kRefused:
      return Step::kRefused;
    case Utf8Reader::Step::kPartial:
      return Step::kPartial;
    case Utf8Reader::Step::kCharacter:
      break;
  }
  code_point_ = utf8_.code_point();
  return Step::kCharacter;
}

inline JsonStringLexer::Step JsonStringLexer::FeedUnicodeDigit(uint8_t byte) {
  const int digit = json_lexer_internal::HexValue(byte);
  if (digit < 0) return Step::kRefused;
  // Decided digit by digit, so no escape is accepted that cannot be finished: a low surrogate
  // (DC00-DFFF) only right after a high one (D800-DBFF), which needs one.
  const bool low_range = hex_digits_ == 1 && hex_value_ == 0xD && digit >= 0xC;
  if (want_low_surrogate_) {
    if (hex_digits_ == 0 && digit != 0xD) return Step::kRefused;
    if (hex_digits_ == 1 && !low_range) return Step::kRefused;
  } else if (low_range) {
    return Step::kRefused;
  }
  hex_value_ = static_cast<uint16_t>(hex_value_ * 16 + digit);
  if (++hex_digits_ < 4) return Step::kPartial;
  if (want_low_surrogate_) {
    want_low_surrogate_ = false;
    code_point_ = 0x10000u + ((high_surrogate_ - 0xD800u) << 10) + (hex_value_ - 0xDC00u);
  } else if (hex_value_ >= 0xD800 && hex_value_ <= 0xDBFF) {
    want_low_surrogate_ = true;
    high_surrogate_ = hex_value_;
    state_ = State::kLowSurrogateSlash;
    return Step::kPartial;
  } else {
    code_point_ = hex_value_;
  }
  state_ = State::kText;
  return Step::kCharacter;
}

inline int JsonStringLexer::PossibleCodePoints(Range out[3]) const {
  int n = 0;
  const auto add = [&](uint32_t lo, uint32_t hi) { AddWithoutSurrogates(lo, hi, out, n); };
  // The characters a \u pair starting with a high surrogate in [lo, hi] can write.
  const auto astral = [&](uint32_t lo, uint32_t hi) {
    if (hi < 0xD800 || lo > 0xDBFF) return;
    lo = lo < 0xD800 ? 0xD800 : lo;
    hi = hi > 0xDBFF ? 0xDBFF : hi;
    out[n++] = {0x10000u + ((lo - 0xD800u) << 10), 0x10000u + ((hi - 0xD800u) << 10) + 0x3FFu};
  };
  // The 16-bit values the escape's hex digits can still make.
  const uint32_t span = 1u << (4 * (4 - hex_digits_));
  const uint32_t unit_lo = static_cast<uint32_t>(hex_value_) * span;
  switch (state_) {
    case State::kText:  // inside a UTF-8 sequence
      return utf8_.PossibleCodePoints(out);
    case State::kEscape:
      add(0, 0x10FFFF);
      break;
    case State::kUnicode:
      if (want_low_surrogate_) {
        const uint32_t base = 0x10000u + ((high_surrogate_ - 0xD800u) << 10);
        const uint32_t lo = unit_lo < 0xDC00 ? 0xDC00 : unit_lo;
        const uint32_t hi = unit_lo + span - 1 > 0xDFFF ? 0xDFFF : unit_lo + span - 1;
        out[n++] = {base + lo - 0xDC00u, base + hi - 0xDC00u};
      } else {
        add(unit_lo, unit_lo + span - 1);
        astral(unit_lo, unit_lo + span - 1);
      }
      break;
    case State::kLowSurrogateSlash:
    case State::kLowSurrogateU: {
      const uint32_t base = 0x10000u + ((high_surrogate_ - 0xD800u) << 10);
      out[n++] = {base, base + 0x3FF};
      break;
    }
  }
  return n;
}

inline JsonNumberLexer::State JsonNumberLexer::Next(uint8_t byte) const {
  const bool digit = json_lexer_internal::IsDigit(byte);
  const bool exponent = !integer_ && (byte == 'e' || byte == 'E');
  switch (state_) {
    case State::kStart:
      if (byte == '-') return State::kMinus;
      [[fallthrough]];
    case State::kMinus:
      if (!digit) return State::kStart;
      return byte == '0' ? State::kZero : State::kInt;
    case State::kZero:
    case State::kInt:
      if (digit && state_ == State::kInt) return State::kInt;
      if (byte == '.' && !integer_) return State::kFracStart;
      if (exponent) return State::kExpStart;
      return State::kStart;
    case State::kFracStart:
    case State::kFrac:
      if (digit) return State::kFrac;
      if (exponent && state_ == State::kFrac) return State::kExpStart;
      return State::kStart;
    case State::kExpStart:
      if (byte == '+' || byte == '-') return State::kExpSign;
      [[fallthrough]];
    case State::kExpSign:
    case State::kExp:
      return digit ? State::kExp : State::kStart;
  }
  return State::kStart;
}

inline JsonNumberLexer::Step JsonNumberLexer::Feed(uint8_t byte) {
  const State next = Next(byte);
  if (next == State::kStart) return CanEnd() ? Step::kEnded : Step::kRefused;
  // After '-', '.', 'e' or the exponent's sign one more digit is due.
  const int32_t due = next == State::kMinus || next == State::kFracStart ||
                              next == State::kExpStart || next == State::kExpSign
                          ? 1
                          : 0;
  if (max_bytes_ != 0) {
    if (length_ + 1 + due > max_bytes_) return CanEnd() ? Step::kEnded : Step::kRefused;
    ++length_;
  }
  state_ = next;
  return Step::kAccepted;
}

}  // namespace headroom::worker
