#include "worker/engine/lark_regex.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/engine/json_lexer.h"
#include "worker/engine/utf8_reader.h"

namespace headroom::worker {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// `c` as an EBNF escape (every character but ASCII letters and digits is written this way, so no
// character is ever read as syntax).
void AppendCodePoint(uint32_t c, std::string* out) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    out->push_back(static_cast<char>(c));
    return;
  }
  char escape[12];
  std::snprintf(escape, sizeof escape, "\\U%08X", c);
  out->append(escape);
}

bool IsAsciiLetter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

CodePointSet Complement(const CodePointSet& set) {
  CodePointSet out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : set) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

const CodePointSet kDigits = {{'0', '9'}};
const CodePointSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodePointSet kSpace = {{'\t', '\r'}, {' ', ' '}};  // \t \n \v \f \r and space

// Python's re syntax read into EBNF text (the subset in lark_regex.h).
class RegexTranslator {
 public:
  RegexTranslator(std::string_view pattern, RegexFlags flags) : p_(pattern), flags_(flags) {}

  absl::StatusOr<std::string> Translate() {
    // Flags for the whole pattern: (?i), (?s), ... at its start.
    while (p_.substr(pos_, 2) == "(?" && pos_ + 2 < p_.size() && IsFlagLetter(p_[pos_ + 2])) {
      const size_t at = pos_;
      pos_ += 2;
      RegexFlags flags = flags_;
      if (!ReadFlags(&flags)) return Fail(at, error_);
      if (pos_ >= p_.size() || p_[pos_] != ')') {
        pos_ = at;  // a scoped group (?i:...): read as an atom
        break;
      }
      ++pos_;
      flags_ = flags;
    }
    absl::StatusOr<std::string> alternatives = Alternatives();
    if (!alternatives.ok()) return alternatives;
    if (pos_ < p_.size()) return Fail(pos_, "unbalanced ')'");
    return *alternatives;
  }

  [[nodiscard]] size_t error_offset() const { return error_offset_; }

 private:
  static bool IsFlagLetter(char c) {
    return std::string_view("aiLmsux").find(c) != std::string_view::npos;
  }

  absl::Status Fail(size_t at, const std::string& reason) {
    error_offset_ = at;
    return absl::InvalidArgumentError(reason);
  }

  // Reads flag letters into `flags`; false (error_ set) for one that is not supported.
  bool ReadFlags(RegexFlags* flags) {
    while (pos_ < p_.size() && IsFlagLetter(p_[pos_])) {
      switch (p_[pos_++]) {
        case 'i':
          flags->ignore_case = true;
          break;
        case 's':
          flags->dot_all = true;
          break;
        case 'x':
          error_ = "the verbose flag (?x) is not supported";
          return false;
        default:  // a, L, m, u: ASCII classes, locale, line anchors, Unicode: nothing to change
          break;
      }
    }
    return true;
  }

  absl::StatusOr<std::string> Alternatives() {
    std::vector<std::string> alternatives;
    while (true) {
      absl::StatusOr<std::string> sequence = Sequence();
      if (!sequence.ok()) return sequence;
      alternatives.push_back(*std::move(sequence));
      if (pos_ >= p_.size() || p_[pos_] != '|') break;
      ++pos_;
    }
    std::string out = "(";
    for (size_t i = 0; i < alternatives.size(); ++i) {
      if (i > 0) out += " | ";
      out += alternatives[i];
    }
    out += ")";
    return out;
  }

  absl::StatusOr<std::string> Sequence() {
    std::string out;
    while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
      absl::StatusOr<std::string> atom = Atom();
      if (!atom.ok()) return atom;
      absl::StatusOr<std::string> quantified = Quantifier(*std::move(atom));
      if (!quantified.ok()) return quantified;
      if (!out.empty()) out += ' ';
      out += *quantified;
    }
    return out.empty() ? std::string("\"\"") : out;
  }

  // `atom` with the quantifier that follows it, if any.
  absl::StatusOr<std::string> Quantifier(std::string atom) {
    if (pos_ >= p_.size()) return atom;
    const size_t at = pos_;
    std::string suffix;
    const char c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      suffix = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      std::optional<std::string> bounds = Bounds();
      if (!bounds.has_value()) {
        if (!error_.empty()) return Fail(at, error_);
        return atom;  // `{` that is no quantifier is a literal; the next atom reads it
      }
      suffix = *std::move(bounds);
    } else {
      return atom;
    }
    if (pos_ < p_.size() && p_[pos_] == '?') ++pos_;  // lazy: the same strings match
    if (pos_ < p_.size() && p_[pos_] == '+') {
      return Fail(pos_, "possessive quantifiers are not supported");
    }
    if (pos_ < p_.size() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?' ||
                             (p_[pos_] == '{' && LooksLikeBounds()))) {
      return Fail(pos_, "multiple repeat");
    }
    return absl::StrCat("(", atom, ")", suffix);
  }

  bool LooksLikeBounds() {
    const size_t saved = pos_;
    const bool bounds = Bounds().has_value();
    pos_ = saved;
    error_.clear();
    return bounds;
  }

  // {m} {m,} {,n} {m,n} as EBNF's repetition, or nothing (pos_ unchanged) where the braces are
  // not a quantifier; error_ set for one with m > n.
  std::optional<std::string> Bounds() {
    const size_t start = pos_;
    size_t i = pos_ + 1;
    const auto number = [&](std::optional<uint64_t>* value) {
      const size_t first = i;
      uint64_t v = 0;
      while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9' && v < 1000000) {
        v = v * 10 + static_cast<uint64_t>(p_[i++] - '0');
      }
      if (i > first) *value = v;
    };
    std::optional<uint64_t> lo;
    std::optional<uint64_t> hi;
    number(&lo);
    bool comma = false;
    if (i < p_.size() && p_[i] == ',') {
      comma = true;
      ++i;
      number(&hi);
    }
    if (i >= p_.size() || p_[i] != '}' || (!lo.has_value() && !hi.has_value())) {
      pos_ = start;
      return std::nullopt;
    }
    pos_ = i + 1;
    const uint64_t min = lo.value_or(0);
    if (!comma) return absl::StrCat("{", min, "}");
    if (!hi.has_value()) return absl::StrCat("{", min, ",}");
    if (*hi < min) {
      error_ = "min repeat greater than max repeat";
      pos_ = start;
      return std::nullopt;
    }
    return absl::StrCat("{", min, ",", *hi, "}");
  }

  absl::StatusOr<std::string> Atom() {
    const size_t at = pos_;
    const char c = p_[pos_];
    switch (c) {
      case '(':
        return Group();
      case '[': {
        absl::StatusOr<CodePointSet> set = Class();
        if (!set.ok()) return set.status();
        return SetElement(*set);
      }
      case '.': {
        ++pos_;
        CodePointSet any = {{0, kMaxCodePoint}};
        if (!flags_.dot_all) any = {{0, '\n' - 1}, {'\n' + 1, kMaxCodePoint}};
        return EbnfClass(any);
      }
      case '^':
      case '$':
        return Fail(at, "anchors (^, $) are not supported: a terminal is matched whole");
      case '*':
      case '+':
      case '?':
        return Fail(at, "nothing to repeat");
      case '\\': {
        absl::StatusOr<CodePointSet> set = Escape(/*in_class=*/false);
        if (!set.ok()) return set.status();
        return SetElement(*set);
      }
      default: {
        absl::StatusOr<uint32_t> code_point = RawCharacter();
        if (!code_point.ok()) return code_point.status();
        return SetElement({{*code_point, *code_point}});
      }
    }
  }

  std::string SetElement(const CodePointSet& set) const {
    return EbnfClass(flags_.ignore_case ? WithBothCases(set) : set);
  }

  absl::StatusOr<std::string> Group() {
    const size_t open = pos_++;
    if (++depth_ > kMaxLarkNesting) {
      return Fail(open, absl::StrCat("groups nest more than ", kMaxLarkNesting, " deep"));
    }
    const RegexFlags outer = flags_;
    if (pos_ < p_.size() && p_[pos_] == '?') {
      ++pos_;
      const char kind = pos_ < p_.size() ? p_[pos_] : '\0';
      if (kind == ':') {
        ++pos_;
      } else if (kind == 'P' && p_.substr(pos_, 2) == "P<") {
        const size_t close = p_.find('>', pos_);
        if (close == std::string_view::npos) return Fail(open, "unterminated group name");
        pos_ = close + 1;
      } else if (kind == 'P' && p_.substr(pos_, 2) == "P=") {
        return Fail(open, "backreferences are not supported");
      } else if (kind == '<' && pos_ + 1 < p_.size() && p_[pos_ + 1] != '=' &&
                 p_[pos_ + 1] != '!') {
        const size_t close = p_.find('>', pos_);
        if (close == std::string_view::npos) return Fail(open, "unterminated group name");
        pos_ = close + 1;
      } else if (kind == '=' || kind == '!' || kind == '<') {
        return Fail(open, "lookaround assertions are not supported");
      } else if (IsFlagLetter(kind) || kind == '-') {
        if (!ReadFlags(&flags_)) return Fail(open, error_);
        if (pos_ < p_.size() && p_[pos_] == '-') {
          return Fail(open, "turning flags off ((?-i:...)) is not supported");
        }
        if (pos_ >= p_.size() || p_[pos_] != ':') {
          return Fail(open, "flags (?i) are only supported at the start of the pattern");
        }
        ++pos_;
      } else if (kind == '#') {
        return Fail(open, "comments (?#...) are not supported");
      } else {
        return Fail(open, "unknown extension (?" + std::string(1, kind));
      }
    }
    absl::StatusOr<std::string> inner = Alternatives();
    if (!inner.ok()) return inner;
    flags_ = outer;
    if (pos_ >= p_.size() || p_[pos_] != ')') return Fail(open, "missing ), unterminated group");
    ++pos_;
    --depth_;
    return inner;
  }

  absl::StatusOr<CodePointSet> Class() {
    const size_t open = pos_++;
    bool negated = false;
    if (pos_ < p_.size() && p_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    CodePointSet set;
    bool first = true;
    while (true) {
      if (pos_ >= p_.size()) return Fail(open, "unterminated character set");
      if (p_[pos_] == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      const size_t item = pos_;
      absl::StatusOr<CodePointSet> lo = ClassAtom();
      if (!lo.ok()) return lo;
      const bool range = pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']';
      if (!range) {
        set.insert(set.end(), lo->begin(), lo->end());
        continue;
      }
      ++pos_;
      absl::StatusOr<CodePointSet> hi = ClassAtom();
      if (!hi.ok()) return hi;
      if (lo->size() != 1 || hi->size() != 1 || (*lo)[0].first != (*lo)[0].second ||
          (*hi)[0].first != (*hi)[0].second) {
        return Fail(item, "bad character range: a class escape cannot end a range");
      }
      if ((*hi)[0].first < (*lo)[0].first) return Fail(item, "bad character range");
      set.emplace_back((*lo)[0].first, (*hi)[0].first);
    }
    set = NormalizedSet(std::move(set));
    if (flags_.ignore_case) set = WithBothCases(set);
    if (negated) set = Complement(set);
    if (set.empty()) return Fail(open, "the character set matches no character");
    return set;
  }

  absl::StatusOr<CodePointSet> ClassAtom() {
    if (p_[pos_] == '\\') return Escape(/*in_class=*/true);
    absl::StatusOr<uint32_t> code_point = RawCharacter();
    if (!code_point.ok()) return code_point.status();
    return CodePointSet{{*code_point, *code_point}};
  }

  // After a backslash: a class escape's set, or one character.
  absl::StatusOr<CodePointSet> Escape(bool in_class) {
    const size_t at = pos_++;
    if (pos_ >= p_.size()) return Fail(at, "bad escape (end of pattern)");
    const char c = p_[pos_++];
    const auto one = [](uint32_t code_point) { return CodePointSet{{code_point, code_point}}; };
    switch (c) {
      case 'd':
        return kDigits;
      case 'D':
        return Complement(kDigits);
      case 'w':
        return kWord;
      case 'W':
        return Complement(kWord);
      case 's':
        return kSpace;
      case 'S':
        return Complement(kSpace);
      case 'n':
        return one('\n');
      case 't':
        return one('\t');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case 'a':
        return one('\a');
      case 'b':
        if (in_class) return one('\b');
        return Fail(at, "word boundaries (\\b) are not supported");
      case '0': {
        uint32_t value = 0;
        for (int n = 0; n < 2 && pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '7'; ++n) {
          value = value * 8 + static_cast<uint32_t>(p_[pos_++] - '0');
        }
        return one(value);
      }
      case 'x':
      case 'u':
      case 'U': {
        uint32_t value = 0;
        if (!ReadHexEscape(p_, c, &pos_, &value)) {
          return Fail(at, absl::StrCat("bad escape \\", std::string(1, c),
                                       " (too few hex digits, or past U+10FFFF)"));
        }
        return one(value);
      }
      default:
        if (c >= '1' && c <= '9') return Fail(at, "backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
          return Fail(at, absl::StrCat("bad escape \\", std::string(1, c)));
        }
        --pos_;
        absl::StatusOr<uint32_t> code_point = RawCharacter();
        if (!code_point.ok()) return code_point.status();
        return one(*code_point);
    }
  }

  absl::StatusOr<uint32_t> RawCharacter() {
    size_t bad = 0;
    if (const std::optional<uint32_t> c = DecodeUtf8At(p_, &pos_, &bad)) return *c;
    if (bad < p_.size()) return Fail(bad, "the pattern is not valid UTF-8");
    return Fail(pos_, "the pattern ends inside a character");
  }

  std::string_view p_;
  size_t pos_ = 0;
  RegexFlags flags_;
  std::string error_;
  size_t error_offset_ = 0;
  int depth_ = 0;  // groups open around pos_
};

}  // namespace

bool ReadHexEscape(std::string_view text, char letter, size_t* pos, uint32_t* code_point) {
  const size_t digits = letter == 'x' ? 2 : letter == 'u' ? 4 : 8;
  uint32_t value = 0;
  for (size_t n = 0; n < digits; ++n) {
    const int digit =
        *pos < text.size() ? json_lexer_internal::HexValue(static_cast<uint8_t>(text[*pos])) : -1;
    if (digit < 0) return false;
    value = value * 16 + static_cast<uint32_t>(digit);
    ++*pos;
  }
  if (value > kMaxCodePoint) return false;
  *code_point = value;
  return true;
}

CodePointSet NormalizedSet(CodePointSet ranges) {
  std::sort(ranges.begin(), ranges.end());
  CodePointSet out;
  for (const auto& [lo, hi] : ranges) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

CodePointSet WithBothCases(const CodePointSet& set) {
  CodePointSet out = set;
  for (const auto& [lo, hi] : set) {
    for (uint32_t c = std::max<uint32_t>(lo, 'A'); c <= std::min<uint32_t>(hi, 'z'); ++c) {
      if (IsAsciiLetter(c)) out.emplace_back(c ^ 0x20, c ^ 0x20);
    }
  }
  return NormalizedSet(std::move(out));
}

std::string EbnfClass(const CodePointSet& set) {
  std::string out = "[";
  for (auto [lo, hi] : set) {
    // Without the surrogates: split a range that spans them.
    for (const auto& [a, b] : {std::pair<uint32_t, uint32_t>{lo, std::min<uint32_t>(hi, 0xD7FF)},
                               std::pair<uint32_t, uint32_t>{std::max<uint32_t>(lo, 0xE000), hi}}) {
      if (a > b) continue;
      AppendCodePoint(a, &out);
      if (b > a) {
        out += '-';
        AppendCodePoint(b, &out);
      }
    }
  }
  out += ']';
  return out;
}

std::string EbnfLiteral(std::string_view text, bool ignore_case) {
  if (text.empty()) return "\"\"";
  std::string out;
  std::string run;  // characters written as one literal
  const auto flush = [&] {
    if (run.empty()) return;
    if (!out.empty()) out += ' ';
    absl::StrAppend(&out, "\"", run, "\"");
    run.clear();
  };
  Utf8Reader reader;
  for (const char byte : text) {
    if (reader.Feed(static_cast<uint8_t>(byte)) != Utf8Reader::Step::kCharacter) continue;
    const uint32_t c = reader.code_point();
    if (ignore_case && IsAsciiLetter(c)) {
      flush();
      if (!out.empty()) out += ' ';
      out += EbnfClass({{std::min(c, c ^ 0x20), std::min(c, c ^ 0x20)},
                        {std::max(c, c ^ 0x20), std::max(c, c ^ 0x20)}});
      continue;
    }
    AppendCodePoint(c, &run);
  }
  flush();
  return out.find(' ') == std::string::npos ? out : absl::StrCat("(", out, ")");
}

absl::StatusOr<std::string> RegexToEbnf(std::string_view pattern, RegexFlags flags,
                                        size_t* error_offset) {
  RegexTranslator translator(pattern, flags);
  absl::StatusOr<std::string> ebnf = translator.Translate();
  if (!ebnf.ok() && error_offset != nullptr) *error_offset = translator.error_offset();
  return ebnf;
}

}  // namespace headroom::worker
