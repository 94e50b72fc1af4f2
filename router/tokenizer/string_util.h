// Small string helpers for the tokenizer and the OpenAI layer. Debian's Abseil has its own
// absl::string_view (not std::string_view), so std::string_view values are converted with Sv()
// before they reach absl::StrCat and friends; StringMap/StringSet allow lookups by
// std::string_view.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace headroom::router {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// How many bytes at the end of `text` begin `s` without being all of it: text that may still grow
// into `s` once more follows (a stop string, a tag split across tokens).
inline size_t PartialAtEnd(std::string_view text, std::string_view s) {
  for (size_t len = std::min(text.size(), s.empty() ? 0 : s.size() - 1); len > 0; --len) {
    if (text.substr(text.size() - len) == s.substr(0, len)) return len;
  }
  return 0;
}

// The value of hex digit `c`, or -1.
inline int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return absl::Hash<absl::string_view>{}(Sv(s)); }
  size_t operator()(const std::string& s) const { return (*this)(std::string_view(s)); }
};

struct StringEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

template <typename V>
using StringMap = absl::flat_hash_map<std::string, V, StringHash, StringEq>;
using StringSet = absl::flat_hash_set<std::string, StringHash, StringEq>;

}  // namespace headroom::router
