#include "router/jinja/text.h"

#include <algorithm>
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "router/jinja/cat.h"
#include "router/jinja/utf8.h"
#include "utf8proc.h"

namespace headroom::router::jinja::text {
namespace {

enum class Case { kUpper, kLower, kTitle };

bool IsCasedUpper(uint32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT;
}
bool IsCasedLower(uint32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LL;
}
bool IsCased(uint32_t cp) { return IsCasedUpper(cp) || IsCasedLower(cp); }

// One code point mapped (ß upper-cases to "SS" as in Python's full case mapping).
void AppendMapped(uint32_t cp, Case c, std::string* out) {
  if (cp == 0xDF && c != Case::kLower) {
    *out += c == Case::kUpper ? "SS" : "Ss";
    return;
  }
  const auto in = static_cast<utf8proc_int32_t>(cp);
  const utf8proc_int32_t mapped = c == Case::kUpper   ? utf8proc_toupper(in)
                                  : c == Case::kLower ? utf8proc_tolower(in)
                                                      : utf8proc_totitle(in);
  utf8::Append(static_cast<uint32_t>(mapped), out);
}

// Maps every code point; `pick` chooses the case per code point (given whether the previous one
// was cased), for title / capitalize / swapcase.
template <typename Pick>
std::string MapCase(std::string_view s, Pick pick) {
  std::string out;
  out.reserve(s.size());
  bool previous_cased = false;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    const utf8::Decoded d = utf8::Decode(s, i);
    AppendMapped(d.code_point, pick(d.code_point, previous_cased, first), &out);
    previous_cased = IsCased(d.code_point);
    first = false;
    i += d.length;
  }
  return out;
}

// Does the code point at s[i] belong to `chars` (or whitespace when chars is null)? Its length.
size_t StripMatch(std::string_view s, size_t i, const std::string* chars) {
  const utf8::Decoded d = utf8::Decode(s, i);
  if (chars == nullptr) return utf8::IsSpace(d.code_point) ? d.length : 0;
  for (size_t k = 0; k < chars->size();) {
    const utf8::Decoded c = utf8::Decode(*chars, k);
    if (c.code_point == d.code_point) return d.length;
    k += c.length;
  }
  return 0;
}

bool IsLineBreak(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

}  // namespace

std::string Lower(std::string_view s) {
  return MapCase(s, [](uint32_t, bool, bool) { return Case::kLower; });
}

std::string Upper(std::string_view s) {
  return MapCase(s, [](uint32_t, bool, bool) { return Case::kUpper; });
}

std::string Capitalize(std::string_view s) {
  return MapCase(s, [](uint32_t, bool, bool first) { return first ? Case::kTitle : Case::kLower; });
}

std::string SwapCase(std::string_view s) {
  return MapCase(s, [](uint32_t cp, bool, bool) {
    return IsCasedUpper(cp) ? Case::kLower : IsCasedLower(cp) ? Case::kUpper : Case::kLower;
  });
}

std::string PyTitle(std::string_view s) {
  return MapCase(s, [](uint32_t, bool previous_cased, bool) {
    return previous_cased ? Case::kLower : Case::kTitle;
  });
}

std::string JinjaTitle(std::string_view s) {
  // item[0].upper() + item[1:].lower() for the items between runs of - ( { [ < and whitespace.
  bool word_start = true;
  return MapCase(s, [&](uint32_t cp, bool, bool) {
    const bool boundary =
        cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || utf8::IsSpace(cp);
    const Case c = boundary ? Case::kLower : word_start ? Case::kUpper : Case::kLower;
    word_start = boundary;
    return c;
  });
}

std::string Center(const std::string& s, int64_t width) {
  const auto len = static_cast<int64_t>(utf8::Offsets(s).size() - 1);
  if (width <= len) return s;
  const int64_t pad = width - len;
  // Python: the extra space goes left when the total padding and the width are both odd.
  const int64_t left = pad / 2 + (pad & width & 1);
  return std::string(static_cast<size_t>(left), ' ') + s +
         std::string(static_cast<size_t>(pad - left), ' ');
}

std::string Reverse(std::string_view s) {
  std::vector<size_t> offsets = utf8::Offsets(s);
  std::string out;
  out.reserve(s.size());
  for (size_t k = offsets.size() - 1; k > 0; --k) {
    out.append(s.substr(offsets[k - 1], offsets[k] - offsets[k - 1]));
  }
  return out;
}

std::string_view LStrip(std::string_view s, const std::string* chars) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = StripMatch(s, i, chars);
    if (n == 0) break;
    i += n;
  }
  return s.substr(i);
}

std::string_view RStrip(std::string_view s, const std::string* chars) {
  std::vector<size_t> offsets = utf8::Offsets(s);
  size_t k = offsets.size() - 1;
  while (k > 0 && StripMatch(s, offsets[k - 1], chars) != 0) --k;
  return s.substr(0, offsets[k]);
}

std::string_view Strip(std::string_view s, const std::string* chars) {
  return RStrip(LStrip(s, chars), chars);
}

std::vector<std::string> Split(std::string_view s, const std::string* sep, int64_t maxsplit,
                               bool from_right) {
  std::vector<std::string> parts;
  if (sep != nullptr) {
    if (!from_right) {
      size_t start = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        const size_t at = s.find(*sep, start);
        if (at == std::string_view::npos) break;
        parts.emplace_back(s.substr(start, at - start));
        start = at + sep->size();
      }
      parts.emplace_back(s.substr(start));
      return parts;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.emplace_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  // Whitespace runs; with maxsplit the remainder keeps its inner whitespace.
  std::vector<std::pair<size_t, size_t>> words;  // byte ranges
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = StripMatch(s, i, nullptr);
    if (n != 0) {
      i += n;
      continue;
    }
    const size_t start = i;
    while (i < s.size() && StripMatch(s, i, nullptr) == 0) i += utf8::Decode(s, i).length;
    words.emplace_back(start, i);
  }
  if (maxsplit < 0 || static_cast<int64_t>(words.size()) <= maxsplit + 1) {
    for (const auto& [b, e] : words) parts.emplace_back(s.substr(b, e - b));
    return parts;
  }
  const auto keep = static_cast<size_t>(maxsplit);
  if (!from_right) {
    for (size_t k = 0; k < keep; ++k)
      parts.emplace_back(s.substr(words[k].first, words[k].second - words[k].first));
    parts.emplace_back(RStrip(s.substr(words[keep].first), nullptr));
    return parts;
  }
  const size_t rest = words.size() - keep;
  parts.emplace_back(LStrip(s.substr(0, words[rest - 1].second), nullptr));
  for (size_t k = rest; k < words.size(); ++k) {
    parts.emplace_back(s.substr(words[k].first, words[k].second - words[k].first));
  }
  return parts;
}

std::vector<std::string> SplitLines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0;
  size_t i = 0;
  while (i < s.size()) {
    const utf8::Decoded d = utf8::Decode(s, i);
    if (IsLineBreak(d.code_point)) {
      lines.emplace_back(s.substr(start, i - start));
      i += d.length;
      if (d.code_point == '\r' && i < s.size() && s[i] == '\n') ++i;
      start = i;
    } else {
      i += d.length;
    }
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string Replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (from.empty()) {
    const std::vector<size_t> offsets = utf8::Offsets(s);
    for (size_t k = 0; k + 1 < offsets.size(); ++k) {
      if (count < 0 || done < count) {
        out.append(to);
        ++done;
      }
      out.append(s.substr(offsets[k], offsets[k + 1] - offsets[k]));
    }
    if (count < 0 || done < count) out.append(to);
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    CatTo(&out, s.substr(start, at - start), to);
    start = at + from.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

int64_t Count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8::Offsets(s).size());
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) {
    ++n;
  }
  return n;
}

int64_t CodePointIndex(std::string_view s, size_t byte) {
  int64_t index = 0;
  for (size_t i = 0; i < byte && i < s.size(); i += utf8::Decode(s, i).length) ++index;
  return index;
}

int64_t WordCount(std::string_view s) {
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    const utf8::Decoded d = utf8::Decode(s, i);
    const bool word = d.code_point == '_' ||
                      (d.code_point < 0x80 && std::isalnum(static_cast<int>(d.code_point))) ||
                      (d.code_point >= 0x80 && !utf8::IsSpace(d.code_point));
    if (word && !in_word) ++n;
    in_word = word;
    i += d.length;
  }
  return n;
}

bool AllOf(std::string_view s, CharClass c) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    const utf8::Decoded d = utf8::Decode(s, i);
    const uint32_t cp = d.code_point;
    const bool digit = cp >= '0' && cp <= '9';
    const bool alpha =
        (cp < 0x80 && std::isalpha(static_cast<int>(cp))) || (cp >= 0x80 && !utf8::IsSpace(cp));
    bool ok = false;
    switch (c) {
      case CharClass::kDigit:
        ok = digit;
        break;
      case CharClass::kAlpha:
        ok = alpha;
        break;
      case CharClass::kAlnum:
        ok = digit || alpha;
        break;
      case CharClass::kSpace:
        ok = utf8::IsSpace(cp);
        break;
    }
    if (!ok) return false;
    i += d.length;
  }
  return true;
}

namespace {

// Python's islower() / isupper(): some cased character, and none of the other case.
bool CasedOnly(std::string_view s, bool upper) {
  bool cased = false;
  for (size_t i = 0; i < s.size(); i += utf8::Decode(s, i).length) {
    const uint32_t cp = utf8::Decode(s, i).code_point;
    if (upper ? IsCasedLower(cp) : IsCasedUpper(cp)) return false;
    cased = cased || (upper ? IsCasedUpper(cp) : IsCasedLower(cp));
  }
  return cased;
}

}  // namespace

bool IsLower(std::string_view s) { return CasedOnly(s, false); }
bool IsUpper(std::string_view s) { return CasedOnly(s, true); }

absl::StatusOr<std::string> PyFormat(std::string_view format, const CallArgs& args) {
  std::string out;
  size_t next_auto = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError("format: single '{' encountered in format string");
    }
    const std::string_view field = format.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          Cat("format: format specs and conversions ({", field, "}) are not supported"));
    }
    const Value* value = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), [](char d) {
          return std::isdigit(static_cast<unsigned char>(d));
        })) {
      size_t index = next_auto;
      if (field.empty()) {
        ++next_auto;
      } else if (!absl::SimpleAtoi(absl::string_view(field.data(), field.size()), &index)) {
        index = SIZE_MAX;  // more digits than size_t holds: no such argument
      }
      if (index < args.positional.size()) value = &args.positional[index];
    } else {
      for (const auto& [key, v] : args.keyword) {
        if (key == field) value = &v;
      }
    }
    if (value == nullptr) {
      return absl::InvalidArgumentError(Cat("format: no argument for {", field, "}"));
    }
    out += ToStr(*value);
    if (out.size() > kMaxValueBytes) {
      return absl::ResourceExhaustedError(
          Cat("format: the result would exceed ", kMaxValueBytes, " bytes"));
    }
    i = close;
  }
  return out;
}

}  // namespace headroom::router::jinja::text
