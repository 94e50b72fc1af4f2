// Utf8Reader: UTF-8 read one byte at a time for the constrained-decoding matchers (a JSON
// string's text in json_lexer.h, a guided regex in regex_matcher.h). Prefix-exact: a byte is
// accepted exactly when what was read plus it can still be finished as well-formed UTF-8 (no
// overlong forms, no surrogates, nothing past U+10FFFF). Inline: the matchers call it once per
// byte of every token they try, and copy it with every token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headroom::worker {

class Utf8Reader {
 public:
  enum class Step : uint8_t {
    kRefused,    // no well-formed UTF-8 continues this way
    kPartial,    // inside a multi-byte character
    kCharacter,  // a character was completed: code_point()
  };
  // A range of code points [lo, hi].
  struct Range {
    uint32_t lo = 0;
    uint32_t hi = 0;
  };

  Step Feed(uint8_t byte);

  // Not inside a multi-byte character.
  [[nodiscard]] bool BetweenCharacters() const { return due_ == 0; }
  // The character just completed (after kCharacter).
  [[nodiscard]] uint32_t code_point() const { return code_point_; }
  // Inside a character (after kPartial): the code points it can still become, without the
  // surrogates, as at most two disjoint ranges written to `out`; returns how many.
  int PossibleCodePoints(Range out[2]) const;

  // Readers that accept the same bytes from here on: both between characters (whatever the last
  // character was), or inside the same partial character.
  friend bool operator==(const Utf8Reader& a, const Utf8Reader& b) {
    return a.Packed() == b.Packed();
  }
  // That state in one word (0 between characters), for comparing and hashing.
  [[nodiscard]] uint64_t Packed() const {
    if (due_ == 0) return 0;
    return uint64_t{length_} | uint64_t{due_} << 8 | uint64_t{next_lo_} << 16 |
           uint64_t{next_hi_} << 24 | uint64_t{code_point_} << 32;
  }

 private:
  // The sequence's length, continuation bytes still due, and the range of the next one.
  uint8_t length_ = 0;
  uint8_t due_ = 0;
  uint8_t next_lo_ = 0x80;
  uint8_t next_hi_ = 0xBF;
  // The bits read so far, or the code point just completed.
  uint32_t code_point_ = 0;
};

// The character that starts at text[*pos], *pos moved past it; or nothing, with *error_at the
// byte no well-formed UTF-8 continues with (text.size() where the text ends inside one).
inline std::optional<uint32_t> DecodeUtf8At(std::string_view text, size_t* pos, size_t* error_at) {
  Utf8Reader reader;
  for (size_t i = *pos; i < text.size(); ++i) {
    switch (reader.Feed(static_cast<uint8_t>(text[i]))) {
      case Utf8Reader::Step::kRefused:
        *error_at = i;
        return std::nullopt;
      case Utf8Reader::Step::kPartial:
        continue;
      case Utf8Reader::Step::kCharacter:
        *pos = i + 1;
        return reader.code_point();
    }
  }
  *error_at = text.size();
  return std::nullopt;
}

// Appends code point `cp` (at most U+10FFFF) as UTF-8.
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// [lo, hi] without the surrogates (which are not characters), appended to `out` at `n`.
inline void AddWithoutSurrogates(uint32_t lo, uint32_t hi, Utf8Reader::Range* out, int& n) {
  if (lo <= 0xD7FF) out[n++] = {lo, hi < 0xD7FF ? hi : 0xD7FF};
  if (hi >= 0xE000) out[n++] = {lo > 0xE000 ? lo : 0xE000, hi};
}

inline Utf8Reader::Step Utf8Reader::Feed(uint8_t byte) {
  if (due_ > 0) {
    if (byte < next_lo_ || byte > next_hi_) return Step::kRefused;
    next_lo_ = 0x80;
    next_hi_ = 0xBF;
    code_point_ = code_point_ << 6 | (byte & 0x3Fu);
    return --due_ == 0 ? Step::kCharacter : Step::kPartial;
  }
  if (byte < 0x80) {
    code_point_ = byte;
    return Step::kCharacter;
  }
  // A lead byte: how many continuation bytes, and the range of the first (no overlong forms, no
  // surrogates, nothing past U+10FFFF).
  if (byte >= 0xC2 && byte <= 0xDF) {
    due_ = 1;
  } else if (byte >= 0xE0 && byte <= 0xEF) {
    due_ = 2;
    if (byte == 0xE0) next_lo_ = 0xA0;
    if (byte == 0xED) next_hi_ = 0x9F;
  } else if (byte >= 0xF0 && byte <= 0xF4) {
    due_ = 3;
    if (byte == 0xF0) next_lo_ = 0x90;
    if (byte == 0xF4) next_hi_ = 0x8F;
  } else {
    return Step::kRefused;
  }
  length_ = static_cast<uint8_t>(due_ + 1);
  code_point_ = byte & (0x7Fu >> length_);
  return Step::kPartial;
}

inline int Utf8Reader::PossibleCodePoints(Range out[2]) const {
  const uint32_t bits = 6u * due_;
  const uint32_t least = length_ == 2 ? 0x80 : length_ == 3 ? 0x800 : 0x10000;
  const uint32_t lo = code_point_ << bits;
  const uint32_t hi = lo | ((1u << bits) - 1);
  int n = 0;
  AddWithoutSurrogates(lo < least ? least : lo, hi > 0x10FFFF ? 0x10FFFF : hi, out, n);
  return n;
}

}  // namespace headroom::worker
