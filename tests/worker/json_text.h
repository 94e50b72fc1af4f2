// Helpers for tests that check JSON text with nlohmann::json as the reference.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace headroom::worker::testdata {

// `text` with every exponent of 3+ digits cut to one digit: JSON's grammar allows 1e999, which
// nlohmann refuses as out of double's range (error 406, before it looks further), so the
// reference reads exponents that fit. Only digits change: what is JSON stays JSON.
inline std::string SmallExponents(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    out.push_back(text[i]);
    if (text[i] != 'e' && text[i] != 'E') {
      ++i;
      continue;
    }
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) out.push_back(text[i++]);
    size_t digits = i;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits - i >= 3) {
      out.push_back('1');
    } else {
      out.append(text, i, digits - i);
    }
    i = digits;
  }
  return out;
}

// nlohmann reads `text` as one JSON document.
inline bool Parses(const std::string& text) { return nlohmann::json::accept(SmallExponents(text)); }

}  // namespace headroom::worker::testdata
