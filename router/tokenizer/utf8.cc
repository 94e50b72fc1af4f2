#include "router/tokenizer/utf8.h"

namespace headroom::router::utf8 {
namespace {

inline unsigned char At(std::string_view text, size_t i) {
  return static_cast<unsigned char>(text[i]);
}

// Number of bytes in the longest prefix at `pos` that could still start a valid sequence: the
// "maximal subpart" of an ill-formed sequence (Unicode 15, section 3.9, table 3-7). At least 1.
size_t MaximalSubpart(std::string_view text, size_t pos) {
  const unsigned char lead = At(text, pos);
  size_t need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t len = 1;
  for (size_t k = 0; k < need; ++k) {
    const size_t i = pos + 1 + k;
    if (i >= text.size()) return len;
    const unsigned char b = At(text, i);
    const unsigned char min = k == 0 ? lo : static_cast<unsigned char>(0x80);
    const unsigned char max = k == 0 ? hi : static_cast<unsigned char>(0xBF);
    if (b < min || b > max) return len;
    ++len;
  }
  return len;  // complete and valid: callers only use this for invalid input
}

}  // namespace

size_t CharLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 1;
}

size_t ValidSequenceLength(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  const unsigned char lead = At(text, pos);
  if (lead < 0x80) return 1;
  const size_t len = CharLength(lead);
  if (len == 1) return 0;
  const size_t sub = MaximalSubpart(text, pos);
  return sub == len ? len : 0;
}

bool IsValid(std::string_view text, size_t* error_offset) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (At(text, pos) < 0x80) {
      ++pos;
      continue;
    }
    const size_t len = ValidSequenceLength(text, pos);
    if (len == 0) {
      if (error_offset != nullptr) *error_offset = pos;
      return false;
    }
    pos += len;
  }
  return true;
}

size_t Decode(std::string_view text, size_t pos, char32_t* code_point) {
  const unsigned char lead = At(text, pos);
  size_t len = CharLength(lead);
  if (pos + len > text.size()) len = 1;
  char32_t cp = 0;
  switch (len) {
    case 1:
      cp = lead;
      break;
    case 2:
      cp = static_cast<char32_t>(lead & 0x1F);
      break;
    case 3:
      cp = static_cast<char32_t>(lead & 0x0F);
      break;
    default:
      cp = static_cast<char32_t>(lead & 0x07);
      break;
  }
  for (size_t k = 1; k < len; ++k) {
    cp = (cp << 6) | static_cast<char32_t>(At(text, pos + k) & 0x3F);
  }
  *code_point = cp;
  return len;
}

void Append(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (At(bytes, pos) < 0x80) {
      out.push_back(bytes[pos]);
      ++pos;
      continue;
    }
    const size_t len = ValidSequenceLength(bytes, pos);
    if (len != 0) {
      out.append(bytes.substr(pos, len));
      pos += len;
    } else {
      out.append(kReplacementChar);
      pos += MaximalSubpart(bytes, pos);
    }
  }
  return out;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace headroom::router::utf8
