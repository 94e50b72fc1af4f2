#include "worker/engine/ebnf_grammar.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/json_lexer.h"
#include "worker/engine/utf8_reader.h"

namespace headroom::worker {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
// Largest repetition bound: `{m,n}` expands to about n copies.
constexpr int64_t kMaxRepetition = 4096;

struct CodePointRange {
  uint32_t lo;
  uint32_t hi;
};

struct Alternatives;

// One element with its repetition: a literal's bytes, a class's code points, a rule's name or a
// group.
struct Item {
  enum class Kind { kLiteral, kClass, kRule, kGroup };
  Kind kind = Kind::kLiteral;
  std::string text;  // the literal's bytes, or the rule's name
  std::vector<CodePointRange> ranges;
  std::shared_ptr<Alternatives> group;
  size_t at = 0;  // where it starts in the text (for an undefined rule's error)
  int64_t min = 1;
  int64_t max = 1;  // -1: unbounded
};

struct Alternatives {
  std::vector<std::vector<Item>> sequences;
};

struct RuleDefinition {
  std::string name;
  size_t at = 0;
  Alternatives body;
};

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '.';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// U+0041.
std::string CodePointName(uint32_t cp) {
  std::string hex;
  for (; cp != 0 || hex.size() < 4; cp >>= 4) hex.insert(hex.begin(), "0123456789ABCDEF"[cp & 15]);
  return "U+" + hex;
}

// Recursive descent over the EBNF text.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<RuleDefinition>> ParseGrammar() {
    std::vector<RuleDefinition> rules;
    for (SkipSpace(); pos_ < text_.size(); SkipSpace()) {
      RuleDefinition rule;
      rule.at = pos_;
      if (!IsNameStart(text_[pos_])) {
        return Error(pos_, absl::StrCat("expected a rule name, got ", Describe(pos_)));
      }
      if (!AtLineStart()) return Error(pos_, "a rule name must begin its line (one rule per line)");
      rule.name = ParseName();
      SkipSpace();
      if (Peek() == '[') {
        return Error(pos_,
                     absl::StrCat("rule options (", rule.name, "[...] ::=) are not supported"));
      }
      if (text_.substr(pos_, 3) != "::=") {
        return Error(pos_, absl::StrCat("expected ::= after the rule name \"", rule.name,
                                        "\", got ", Describe(pos_)));
      }
      pos_ += 3;
      HR_ASSIGN_OR_RETURN(rule.body, ParseAlternatives(/*nested=*/false));
      rules.push_back(std::move(rule));
    }
    return rules;
  }

  // "EBNF parser error at line L, column C: <message>" (xgrammar's form; the column counts
  // bytes from 1).
  [[nodiscard]] absl::Status Error(size_t at, std::string_view message) const {
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("EBNF parser error at line ", line, ", column ",
                                                   at - line_start + 1, ": ",
                                                   std::string(message)));
  }

 private:
  [[nodiscard]] char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  [[nodiscard]] std::string Describe(size_t at) const {
    if (at >= text_.size()) return "the end of the grammar";
    if (text_[at] == '\n') return "the end of the line";
    return absl::StrCat("'", std::string(text_.substr(at, 1)), "'");
  }

  // Only spaces are before pos_ on its line.
  [[nodiscard]] bool AtLineStart() const {
    for (size_t i = pos_; i > 0 && text_[i - 1] != '\n'; --i) {
      if (text_[i - 1] != ' ' && text_[i - 1] != '\t' && text_[i - 1] != '\r') return false;
    }
    return true;
  }

  void SkipInlineSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  // Spaces, line breaks and # comments.
  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string ParseName() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // At `name ::=` (or `name[...] ::=`): the next rule begins, the current one has ended.
  [[nodiscard]] bool AtRuleStart() const {
    size_t p = pos_;
    if (p >= text_.size() || !IsNameStart(text_[p])) return false;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    if (p < text_.size() && text_[p] == '[') {
      const size_t close = text_.find(']', p);
      if (close == std::string_view::npos) return false;
      p = close + 1;
      while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    }
    return text_.substr(p, 3) == "::=";
  }

  absl::StatusOr<Alternatives> ParseAlternatives(bool nested) {
    Alternatives out;
    while (true) {
      SkipSpace();
      const size_t at = pos_;
      HR_ASSIGN_OR_RETURN(std::vector<Item> sequence, ParseSequence());
      out.sequences.push_back(std::move(sequence));
      SkipSpace();
      // Only `()` may be empty, as xgrammar reads it; an empty alternative is written "".
      if (out.sequences.back().empty() && (!nested || Peek() == '|' || out.sequences.size() > 1)) {
        return Error(at, "an alternative is empty (write \"\" for the empty text)");
      }
      if (Peek() != '|') break;
      ++pos_;
    }
    if (!nested && pos_ < text_.size() && !AtRuleStart()) {
      return Error(pos_, absl::StrCat("unexpected ", Describe(pos_)));
    }
    return out;
  }

  absl::StatusOr<std::vector<Item>> ParseSequence() {
    std::vector<Item> items;
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || Peek() == '|' || Peek() == ')' || AtRuleStart()) break;
      HR_ASSIGN_OR_RETURN(Item item, ParseItem());
      HR_RETURN_IF_ERROR(ParseRepetition(&item));
      items.push_back(std::move(item));
    }
    return items;
  }

  absl::StatusOr<Item> ParseItem() {
    Item item;
    item.at = pos_;
    const char c = Peek();
    if (c == '"') {
      item.kind = Item::Kind::kLiteral;
      HR_ASSIGN_OR_RETURN(item.text, ParseLiteral());
    } else if (c == '[') {
      item.kind = Item::Kind::kClass;
      HR_ASSIGN_OR_RETURN(item.ranges, ParseClass());
    } else if (c == '(') {
      ++pos_;
      SkipSpace();
      if (Peek() == '=') {
        return Error(pos_ - 1, "lookahead assertions ((= ...)) are not supported");
      }
      item.kind = Item::Kind::kGroup;
      if (++group_depth_ > EbnfGrammar::kMaxGroupDepth) {
        return Error(item.at,
                     absl::StrCat("groups nest more than ", EbnfGrammar::kMaxGroupDepth, " deep"));
      }
      HR_ASSIGN_OR_RETURN(Alternatives group, ParseAlternatives(/*nested=*/true));
      --group_depth_;
      if (Peek() != ')') {
        return Error(pos_, absl::StrCat("expected ')' to close the group opened at column ",
                                        item.at + 1, ", got ", Describe(pos_)));
      }
      ++pos_;
      item.group = std::make_shared<Alternatives>(std::move(group));
    } else if (IsNameStart(c)) {
      item.kind = Item::Kind::kRule;
      item.text = ParseName();
      if (Peek() == '(') {
        return Error(item.at, absl::StrCat("macros (", item.text,
                                           "(...)) are not supported; write the rule out"));
      }
    } else {
      return Error(pos_, absl::StrCat("expected an element (a \"literal\", a [class], a rule "
                                      "name or a group), got ",
                                      Describe(pos_)));
    }
    return item;
  }

  absl::Status ParseRepetition(Item* item) {
    const char c = Peek();
    if (c == '*') {
      item->min = 0;
      item->max = -1;
      ++pos_;
    } else if (c == '+') {
      item->min = 1;
      item->max = -1;
      ++pos_;
    } else if (c == '?') {
      item->min = 0;
      item->max = 1;
      ++pos_;
    } else if (c == '{') {
      const size_t open = pos_++;
      SkipInlineSpace();
      HR_ASSIGN_OR_RETURN(item->min, ParseCount("the lower bound of a repetition"));
      SkipInlineSpace();
      item->max = item->min;
      if (Peek() == ',') {
        ++pos_;
        SkipInlineSpace();
        item->max = -1;
        if (Peek() != '}') {
          HR_ASSIGN_OR_RETURN(item->max, ParseCount("the upper bound of a repetition"));
          SkipInlineSpace();
        }
      }
      if (Peek() != '}') return Error(pos_, absl::StrCat("expected '}', got ", Describe(pos_)));
      ++pos_;
      if (item->max >= 0 && item->max < item->min) {
        return Error(open, absl::StrCat("the repetition {", item->min, ",", item->max,
                                        "} has its upper bound below its lower bound"));
      }
    } else {
      return absl::OkStatus();
    }
    if (const char next = Peek(); next == '*' || next == '+' || next == '?' || next == '{') {
      return Error(pos_, "two repetition operators in a row; wrap the element in ( ) first");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> ParseCount(std::string_view what) {
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      value = value * 10 + (text_[pos_] - '0');
      if (value > kMaxRepetition) {
        return Error(start, absl::StrCat(std::string(what), " is over ", kMaxRepetition));
      }
      ++pos_;
    }
    if (pos_ == start)
      return Error(pos_, absl::StrCat("expected ", std::string(what), ", a number"));
    return value;
  }

  absl::StatusOr<std::string> ParseLiteral() {
    const size_t open = pos_++;
    std::string bytes;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n' || text_[pos_] == '\r') {
        return Error(open,
                     "the string literal is not closed on its line (write a line break as "
                     "\\n)");
      }
      const char c = text_[pos_];
      if (c == '"') break;
      HR_ASSIGN_OR_RETURN(const uint32_t cp,
                          c == '\\' ? ParseEscape(/*in_class=*/false) : ParseRawCharacter());
      AppendUtf8(cp, &bytes);
    }
    ++pos_;
    return bytes;
  }

  // At a backslash: the code point it writes.
  absl::StatusOr<uint32_t> ParseEscape(bool in_class) {
    const size_t at = pos_++;
    if (pos_ >= text_.size()) return Error(at, "a backslash ends the grammar");
    const char c = text_[pos_++];
    switch (c) {
      case 'n':
        return uint32_t{'\n'};
      case 'r':
        return uint32_t{'\r'};
      case 't':
        return uint32_t{'\t'};
      case 'b':
        return uint32_t{'\b'};
      case 'f':
        return uint32_t{'\f'};
      case 'a':
        return uint32_t{'\a'};
      case 'v':
        return uint32_t{'\v'};
      case '0':
        return uint32_t{0};
      case 'e':
        return uint32_t{0x1B};
      case '"':
      case '\\':
      case '/':
      case '\'':
      case '?':
        return static_cast<uint32_t>(c);
      case 'x':
      case 'u':
      case 'U': {
        const size_t digits = c == 'u' ? 4 : c == 'U' ? 8 : 0;  // 0: as many as there are
        uint64_t value = 0;
        size_t n = 0;
        while (pos_ < text_.size() && (digits == 0 || n < digits)) {
          const int digit = json_lexer_internal::HexValue(static_cast<uint8_t>(text_[pos_]));
          if (digit < 0) break;
          value = value * 16 + static_cast<uint64_t>(digit);
          if (value > kMaxCodePoint) {
            return Error(at, absl::StrCat("the escape \\", std::string(1, c),
                                          " writes a code point above U+10FFFF"));
          }
          ++pos_;
          ++n;
        }
        if (n == 0 || (digits != 0 && n != digits)) {
          return Error(
              at, absl::StrCat("the escape \\", std::string(1, c), " needs ",
                               digits == 0 ? "hex digits" : absl::StrCat(digits, " hex digits")));
        }
        if (value >= 0xD800 && value <= 0xDFFF) {
          return Error(at, "the escape writes a surrogate code point, which is no character");
        }
        return static_cast<uint32_t>(value);
      }
      default:
        if (in_class && std::string_view("^$.*+()[]{}|-").find(c) != std::string_view::npos) {
          return static_cast<uint32_t>(c);
        }
        return Error(at, absl::StrCat("unknown escape \\", std::string(1, c)));
    }
  }

  // One character written as itself, read with the matchers' UTF-8 reader: text that is not
  // well-formed UTF-8 is refused here rather than turned into bytes no character has.
  absl::StatusOr<uint32_t> ParseRawCharacter() {
    size_t bad = 0;
    if (const std::optional<uint32_t> c = DecodeUtf8At(text_, &pos_, &bad)) return *c;
    if (bad < text_.size()) return Error(bad, "the grammar is not valid UTF-8 here");
    return Error(pos_, "the grammar ends inside a character");
  }

  // One character of a class (written as itself or an escape).
  absl::StatusOr<uint32_t> ParseClassCharacter() {
    if (text_[pos_] == '\\') return ParseEscape(/*in_class=*/true);
    return ParseRawCharacter();
  }

  absl::StatusOr<std::vector<CodePointRange>> ParseClass() {
    const size_t open = pos_++;
    const bool negated = Peek() == '^';
    if (negated) ++pos_;
    std::vector<CodePointRange> ranges;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n' || text_[pos_] == '\r') {
        return Error(open,
                     "the character class is not closed on its line (write a line break "
                     "as \\n)");
      }
      if (text_[pos_] == ']') break;
      const size_t at = pos_;
      HR_ASSIGN_OR_RETURN(const uint32_t lo, ParseClassCharacter());
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        HR_ASSIGN_OR_RETURN(hi, ParseClassCharacter());
        if (hi < lo) {
          return Error(at, absl::StrCat("the range ends (", CodePointName(hi),
                                        ") below where it starts (", CodePointName(lo), ")"));
        }
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    std::sort(ranges.begin(), ranges.end(),
              [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
    std::vector<CodePointRange> merged;
    for (const CodePointRange& r : ranges) {
      if (!merged.empty() && r.lo <= merged.back().hi + 1) {
        merged.back().hi = std::max(merged.back().hi, r.hi);
      } else {
        merged.push_back(r);
      }
    }
    if (negated) {
      std::vector<CodePointRange> complement;
      uint32_t next = 0;
      for (const CodePointRange& r : merged) {
        if (r.lo > next) complement.push_back({next, r.lo - 1});
        next = r.hi + 1;
      }
      if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
      merged = std::move(complement);
    }
    // Surrogates are no characters: UTF-8 has no encoding for them.
    std::vector<CodePointRange> out;
    for (const CodePointRange& r : merged) {
      if (r.hi < 0xD800 || r.lo > 0xDFFF) {
        out.push_back(r);
        continue;
      }
      if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
      if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
    }
    return out;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int group_depth_ = 0;  // ( groups open around pos_
};

// A byte range at each position of a UTF-8 encoding.
using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;

// The UTF-8 encodings of the code points lo..hi (no surrogates among them) as sequences of byte
// ranges, each sequence covering every combination of its ranges exactly.
void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteRanges>* out) {
  if (lo > hi) return;
  for (const uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && hi > boundary) {
      Utf8Sequences(lo, boundary, out);
      Utf8Sequences(boundary + 1, hi, out);
      return;
    }
  }
  const int length = hi <= 0x7F ? 1 : hi <= 0x7FF ? 2 : hi <= 0xFFFF ? 3 : 4;
  for (int i = 1; i < length; ++i) {
    const uint32_t mask = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        Utf8Sequences(lo, lo | mask, out);
        Utf8Sequences((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        Utf8Sequences(lo, (hi & ~mask) - 1, out);
        Utf8Sequences(hi & ~mask, hi, out);
        return;
      }
    }
  }
  std::string a;
  std::string b;
  AppendUtf8(lo, &a);
  AppendUtf8(hi, &b);
  ByteRanges ranges;
  for (size_t i = 0; i < a.size(); ++i) {
    ranges.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
  }
  out->push_back(std::move(ranges));
}

// Turns the parsed rules into EbnfGrammar's alternatives.
class EbnfLowering {
 public:
  EbnfLowering(const Parser& parser, const std::vector<RuleDefinition>& rules)
      : parser_(parser), rules_(rules) {}

  absl::StatusOr<EbnfGrammar::Tables> Lower() {
    for (const RuleDefinition& rule : rules_) {
      if (!ids_.emplace(rule.name, static_cast<int32_t>(ids_.size())).second) {
        return parser_.Error(rule.at,
                             absl::StrCat("rule \"", rule.name, "\" is defined more than once"));
      }
    }
    const auto root = ids_.find("root");
    if (root == ids_.end()) {
      return absl::InvalidArgumentError("the grammar has no rule named root (where a text starts)");
    }
    productions_.resize(ids_.size());
    for (const RuleDefinition& rule : rules_) {
      HR_RETURN_IF_ERROR(LowerAlternatives(rule.body, ids_.at(rule.name)));
    }
    return Finish(root->second);
  }

 private:
  using Symbols = std::vector<int32_t>;

  int32_t NewRule() {
    productions_.emplace_back();
    return static_cast<int32_t>(productions_.size() - 1);
  }

  absl::Status AddProduction(int32_t rule, Symbols symbols) {
    positions_ += static_cast<int64_t>(symbols.size()) + 1;
    if (positions_ > EbnfGrammar::kMaxPositions) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the grammar is too large: over ", EbnfGrammar::kMaxPositions,
          " positions once repetition is expanded (bounded repetitions count once per copy)"));
    }
    productions_[static_cast<size_t>(rule)].push_back(std::move(symbols));
    return absl::OkStatus();
  }

  int32_t Terminal(const std::bitset<256>& bytes) {
    std::string key(32, '\0');
    for (size_t i = 0; i < 256; ++i) {
      if (bytes[i]) key[i / 8] = static_cast<char>(key[i / 8] | (1 << (i % 8)));
    }
    const auto [it, added] = terminal_ids_.emplace(key, static_cast<int32_t>(terminals_.size()));
    if (added) terminals_.push_back(bytes);
    return EbnfGrammar::kTerminal - it->second;
  }
  int32_t ByteRange(uint8_t lo, uint8_t hi) {
    std::bitset<256> bytes;
    for (int b = lo; b <= hi; ++b) bytes.set(static_cast<size_t>(b));
    return Terminal(bytes);
  }

  absl::Status LowerAlternatives(const Alternatives& alternatives, int32_t rule) {
    for (const std::vector<Item>& sequence : alternatives.sequences) {
      Symbols symbols;
      for (const Item& item : sequence) HR_RETURN_IF_ERROR(LowerItem(item, &symbols));
      HR_RETURN_IF_ERROR(AddProduction(rule, std::move(symbols)));
    }
    return absl::OkStatus();
  }

  // One occurrence of `item` without its repetition.
  absl::Status LowerAtom(const Item& item, Symbols* out) {
    switch (item.kind) {
      case Item::Kind::kLiteral:
        for (const char c : item.text) {
          const auto byte = static_cast<uint8_t>(c);
          out->push_back(ByteRange(byte, byte));
        }
        return absl::OkStatus();
      case Item::Kind::kRule: {
        const auto it = ids_.find(item.text);
        if (it == ids_.end()) {
          return parser_.Error(item.at, absl::StrCat("rule \"", item.text, "\" is not defined"));
        }
        out->push_back(it->second);
        return absl::OkStatus();
      }
      case Item::Kind::kGroup:
        if (item.group->sequences.size() == 1) {
          for (const Item& inner : item.group->sequences[0]) {
            HR_RETURN_IF_ERROR(LowerItem(inner, out));
          }
          return absl::OkStatus();
        } else {
          const int32_t rule = NewRule();
          HR_RETURN_IF_ERROR(LowerAlternatives(*item.group, rule));
          out->push_back(rule);
          return absl::OkStatus();
        }
      case Item::Kind::kClass:
        return LowerClass(item.ranges, out);
    }
    return absl::OkStatus();
  }

  // A class: its ASCII part one byte set, each longer encoding a sequence of byte sets; a rule
  // with those alternatives unless the class is ASCII alone.
  absl::Status LowerClass(const std::vector<CodePointRange>& ranges, Symbols* out) {
    std::bitset<256> ascii;
    std::vector<ByteRanges> sequences;
    for (const CodePointRange& r : ranges) {
      for (uint32_t cp = r.lo; cp <= std::min<uint32_t>(r.hi, 0x7F); ++cp) ascii.set(cp);
      if (r.hi >= 0x80) Utf8Sequences(std::max<uint32_t>(r.lo, 0x80), r.hi, &sequences);
    }
    if (sequences.empty() && ascii.any()) {
      out->push_back(Terminal(ascii));
      return absl::OkStatus();
    }
    const int32_t rule = NewRule();
    if (ascii.any()) HR_RETURN_IF_ERROR(AddProduction(rule, {Terminal(ascii)}));
    for (const ByteRanges& sequence : sequences) {
      Symbols symbols;
      for (const auto& [lo, hi] : sequence) symbols.push_back(ByteRange(lo, hi));
      HR_RETURN_IF_ERROR(AddProduction(rule, std::move(symbols)));
    }
    // An empty class (`[^\x00-\U0010FFFF]`) is a rule without alternatives: it derives nothing.
    out->push_back(rule);
    return absl::OkStatus();
  }

  absl::Status LowerItem(const Item& item, Symbols* out) {
    if (item.min == 1 && item.max == 1) return LowerAtom(item, out);
    Symbols atom;
    HR_RETURN_IF_ERROR(LowerAtom(item, &atom));
    int32_t unit = 0;
    if (atom.size() == 1) {
      unit = atom[0];
    } else {
      unit = NewRule();
      HR_RETURN_IF_ERROR(AddProduction(unit, std::move(atom)));
    }
    for (int64_t i = 0; i < item.min; ++i) out->push_back(unit);
    positions_ += item.min;
    if (item.max < 0) {
      // list ::= "" | list unit: left recursion keeps the chart's sets small however long.
      const int32_t list = NewRule();
      HR_RETURN_IF_ERROR(AddProduction(list, {}));
      HR_RETURN_IF_ERROR(AddProduction(list, {list, unit}));
      out->push_back(list);
    } else if (item.max > item.min) {
      // up_to_1 ::= "" | unit; up_to_k ::= "" | unit up_to_(k-1).
      int32_t rest = -1;
      for (int64_t k = item.min; k < item.max; ++k) {
        const int32_t up_to = NewRule();
        HR_RETURN_IF_ERROR(AddProduction(up_to, {}));
        HR_RETURN_IF_ERROR(AddProduction(up_to, rest < 0 ? Symbols{unit} : Symbols{unit, rest}));
        rest = up_to;
      }
      out->push_back(rest);
    }
    return absl::OkStatus();
  }

  [[nodiscard]] bool SymbolIn(int32_t symbol, const std::vector<uint8_t>& set) const {
    if (EbnfGrammar::IsTerminal(symbol)) {
      return terminals_[static_cast<size_t>(EbnfGrammar::kTerminal - symbol)].any();
    }
    return set[static_cast<size_t>(symbol)] != 0;
  }

  absl::StatusOr<EbnfGrammar::Tables> Finish(int32_t root) {
    const size_t num_rules = productions_.size();
    // Productive rules: those that derive some text. Alternatives needing another rule are
    // dropped, so every item the matcher holds can still be finished.
    std::vector<uint8_t> productive(num_rules, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < num_rules; ++r) {
        if (productive[r]) continue;
        for (const Symbols& symbols : productions_[r]) {
          if (std::all_of(symbols.begin(), symbols.end(),
                          [&](int32_t s) { return SymbolIn(s, productive); })) {
            productive[r] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    if (!productive[static_cast<size_t>(root)]) {
      return absl::InvalidArgumentError(
          "the grammar matches no text: rule root cannot be finished (every alternative needs "
          "a rule that never ends)");
    }
    for (std::vector<Symbols>& alternatives : productions_) {
      std::erase_if(alternatives, [&](const Symbols& symbols) {
        return !std::all_of(symbols.begin(), symbols.end(),
                            [&](int32_t s) { return SymbolIn(s, productive); });
      });
    }
    EbnfGrammar::Tables grammar;
    grammar.nullable.assign(num_rules, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < num_rules; ++r) {
        if (grammar.nullable[r]) continue;
        for (const Symbols& symbols : productions_[r]) {
          if (std::all_of(symbols.begin(), symbols.end(), [&](int32_t s) {
                return !EbnfGrammar::IsTerminal(s) && grammar.nullable[static_cast<size_t>(s)];
              })) {
            grammar.nullable[r] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    grammar.alternatives.resize(num_rules);
    for (size_t r = 0; r < num_rules; ++r) {
      for (const Symbols& symbols : productions_[r]) {
        grammar.alternatives[r].push_back(static_cast<int32_t>(grammar.symbols.size()));
        for (const int32_t s : symbols) {
          grammar.symbols.push_back(s);
          grammar.lhs.push_back(static_cast<int32_t>(r));
        }
        grammar.symbols.push_back(EbnfGrammar::kEnd);
        grammar.lhs.push_back(static_cast<int32_t>(r));
      }
    }
    grammar.terminals = std::move(terminals_);
    grammar.root = root;
    return grammar;
  }

  const Parser& parser_;
  const std::vector<RuleDefinition>& rules_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  std::vector<std::vector<Symbols>> productions_;
  std::vector<std::bitset<256>> terminals_;
  absl::flat_hash_map<std::string, int32_t> terminal_ids_;
  int64_t positions_ = 0;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const EbnfGrammar>> EbnfGrammar::Compile(std::string_view ebnf) {
  Parser parser(ebnf);
  HR_ASSIGN_OR_RETURN(const std::vector<RuleDefinition> rules, parser.ParseGrammar());
  HR_ASSIGN_OR_RETURN(Tables tables, EbnfLowering(parser, rules).Lower());
  return std::make_shared<const EbnfGrammar>(std::move(tables));
}

}  // namespace headroom::worker
