// UTF-8 for the template interpreter: Python strings index, slice and measure by code point. A
// byte that does not start a valid sequence decodes as itself, one byte long, so invalid input is
// carried through unchanged rather than refused. Validation, decoding and encoding are the
// tokenizer's (router/tokenizer/utf8.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "router/tokenizer/utf8.h"

namespace headroom::router::jinja::utf8 {

struct Decoded {
  uint32_t code_point = 0;
  size_t length = 1;
};

inline Decoded Decode(std::string_view s, size_t i) {
  if (::headroom::router::utf8::ValidSequenceLength(s, i) == 0) {
    return {static_cast<unsigned char>(s[i]), 1};
  }
  char32_t cp = 0;
  const size_t length = ::headroom::router::utf8::Decode(s, i, &cp);
  return {static_cast<uint32_t>(cp), length};
}

inline void Append(uint32_t cp, std::string* out) {
  ::headroom::router::utf8::Append(static_cast<char32_t>(cp), *out);
}

// Byte offsets of each code point's start, plus s.size() at the end.
inline std::vector<size_t> Offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); i += Decode(s, i).length) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

// Python's str.isspace() for one code point.
inline bool IsSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace headroom::router::jinja::utf8
