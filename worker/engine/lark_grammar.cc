#include "worker/engine/lark_grammar.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/lark_regex.h"
#include "worker/engine/utf8_reader.h"

namespace headroom::worker {
namespace {

// Lark's common.lark, the terminals `%import common.NAME` brings in, written for this reader.
// Two of Lark's end with a lazy `*?`, which its lexer stops at the first place the rest matches:
// ESCAPED_STRING's text (Lark: `.*?(?<!\\)(\\\\)*?` before the closing quote) ends at the first
// quote after an even run of backslashes, so each backslash here takes the character after it
// and a bare quote ends the string; C_COMMENT ends at the first `*/`.
constexpr std::string_view kCommonLark = R"(
DIGIT: "0".."9"
HEXDIGIT: "a".."f" | "A".."F" | DIGIT
INT: DIGIT+
SIGNED_INT: ["+" | "-"] INT
DECIMAL: INT "." INT? | "." INT
_EXP: ("e" | "E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+" | "-"] FLOAT
NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+" | "-"] NUMBER
_STRING_INNER: /.*?/
_STRING_ESC_INNER: (/[^"\\\n]/ | "\\" /./)*
ESCAPED_STRING: "\"" _STRING_ESC_INNER "\""
LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"
LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+
CNAME: ("_" | LETTER) ("_" | LETTER | DIGIT)*
WS_INLINE: (" " | /\t/)+
WS: /[ \t\f\r\n]/+
CR: /\r/
LF: /\n/
NEWLINE: (CR? LF)+
SH_COMMENT: /#[^\n]*/
CPP_COMMENT: /\/\/[^\n]*/
C_COMMENT: /\/\*([^*]|\*+[^*\/])*\*+\//
SQL_COMMENT: /--[^\n]*/
)";

// The EBNF rule of the optional ignored items, and the names Lark's `root` and the common
// terminals take (`-` and `.` are in no Lark name, so none of these can collide).
constexpr char kIgnored[] = "lark-ignored";
constexpr char kRootRule[] = "lark-root";
constexpr char kCommonPrefix[] = "common.";

struct Node {
  enum class Kind : uint8_t { kAlternatives, kSequence, kRepeat, kName, kToken };
  Kind kind = Kind::kSequence;
  std::vector<Node> children = {};
  std::string text = {};    // kName: the name; kToken: its EBNF
  std::string repeat = {};  // kRepeat: "*", "+", "?", "{m,n}"
  size_t offset = 0;        // where it is written
};

struct Definition {
  std::string name = {};
  Node body = {};
  size_t offset = 0;
};

struct Import {
  std::string name = {};   // in common.lark
  std::string local = {};  // as the grammar calls it
  size_t offset = 0;
};

// Terminals are the names whose first letter (after leading underscores) is a capital.
bool IsTerminalName(std::string_view name) {
  const size_t first = name.find_first_not_of('_');
  return first != std::string_view::npos && name[first] >= 'A' && name[first] <= 'Z';
}

bool IsNameStart(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

class LarkParser {
 public:
  explicit LarkParser(std::string_view text) : t_(text) {}

  absl::Status Parse() {
    while (true) {
      SkipSpace();
      if (pos_ >= t_.size()) return absl::OkStatus();
      if (t_[pos_] == '\n') {
        ++pos_;
        continue;
      }
      HR_RETURN_IF_ERROR(t_[pos_] == '%' ? Directive() : Define());
      SkipSpace();
      if (pos_ < t_.size() && t_[pos_] != '\n') {
        return Error(pos_, absl::StrCat("unexpected '", std::string(1, t_[pos_]), "'"));
      }
    }
  }

  // "Lark grammar error at line L, column C: reason" for `offset`.
  absl::Status Error(size_t offset, const std::string& reason) const {
    offset = std::min(offset, t_.size());
    const size_t line_start = t_.rfind('\n', offset == 0 ? 0 : offset - 1);
    const size_t column =
        line_start == std::string_view::npos || offset == 0 ? offset + 1 : offset - line_start;
    const auto line =
        1 + std::count(t_.begin(), t_.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
    return absl::InvalidArgumentError(
        absl::StrCat("Lark grammar error at line ", line, ", column ", column, ": ", reason));
  }

  std::vector<Definition> definitions;
  std::vector<Import> imports;
  std::vector<Node> ignored;

 private:
  // Spaces, tabs, carriage returns and comments (`//`, `#`), not line breaks.
  void SkipSpace() {
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#' || t_.substr(pos_, 2) == "//") {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  // At a line break: whether the next line that is not blank starts with `|` (the expansions go
  // on there; pos_ is left at it).
  bool ContinuesOnNextLine() {
    const size_t saved = pos_;
    while (pos_ < t_.size() && t_[pos_] == '\n') {
      ++pos_;
      SkipSpace();
    }
    if (pos_ < t_.size() && t_[pos_] == '|') return true;
    pos_ = saved;
    return false;
  }

  bool ReadName(std::string* name) {
    if (pos_ >= t_.size() || !IsNameStart(t_[pos_])) return false;
    const size_t start = pos_;
    while (pos_ < t_.size() && IsNameChar(t_[pos_])) ++pos_;
    *name = std::string(t_.substr(start, pos_ - start));
    return true;
  }

  bool ReadNumber(uint64_t* value) {
    if (pos_ >= t_.size() || t_[pos_] < '0' || t_[pos_] > '9') return false;
    *value = 0;
    while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') {
      *value = std::min<uint64_t>(*value * 10 + static_cast<uint64_t>(t_[pos_++] - '0'), 1 << 20);
    }
    return true;
  }

  absl::Status Define() {
    const size_t start = pos_;
    if (t_[pos_] == '?' || t_[pos_] == '!') ++pos_;
    Definition definition;
    definition.offset = start;
    if (!ReadName(&definition.name)) return Error(pos_, "expected a rule or terminal name");
    if (pos_ < t_.size() && t_[pos_] == '.') {  // a priority: ignored
      ++pos_;
      if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
      uint64_t priority = 0;
      if (!ReadNumber(&priority)) return Error(pos_, "expected a priority number after '.'");
    }
    if (pos_ < t_.size() && t_[pos_] == '{') {
      return Error(pos_, "templates (name{params}) are not supported");
    }
    SkipSpace();
    if (pos_ >= t_.size() || t_[pos_] != ':') {
      return Error(pos_, absl::StrCat("expected ':' after '", definition.name, "'"));
    }
    ++pos_;
    absl::StatusOr<Node> body = Expansions();
    if (!body.ok()) return body.status();
    definition.body = *std::move(body);
    definitions.push_back(std::move(definition));
    return absl::OkStatus();
  }

  absl::Status Directive() {
    const size_t start = pos_++;
    std::string word;
    if (!ReadName(&word)) return Error(start, "expected a directive after '%'");
    if (word == "ignore") {
      absl::StatusOr<Node> item = Expansions();
      if (!item.ok()) return item.status();
      ignored.push_back(*std::move(item));
      return absl::OkStatus();
    }
    if (word != "import") {
      return Error(start, absl::StrCat("%", word,
                                       " is not supported (only %import common and "
                                       "%ignore are)"));
    }
    SkipSpace();
    std::string module;
    const size_t module_at = pos_;
    if (!ReadName(&module) || module != "common") {
      return Error(module_at,
                   "only Lark's built-in terminals (%import common.NAME) can be "
                   "imported: there are no grammar files to read");
    }
    if (pos_ < t_.size() && t_[pos_] == '.') {
      ++pos_;
      Import one{.offset = pos_};
      if (!ReadName(&one.name)) return Error(pos_, "expected a name after 'common.'");
      one.local = one.name;
      SkipSpace();
      if (t_.substr(pos_, 2) == "->") {
        pos_ += 2;
        SkipSpace();
        if (!ReadName(&one.local)) return Error(pos_, "expected a name after '->'");
      }
      imports.push_back(std::move(one));
      return absl::OkStatus();
    }
    SkipSpace();
    if (pos_ >= t_.size() || t_[pos_] != '(') {
      return Error(pos_, "expected '.NAME' or '(NAME, ...)' after '%import common'");
    }
    ++pos_;
    while (true) {
      SkipSpace();
      Import one{.offset = pos_};
      if (!ReadName(&one.name)) return Error(pos_, "expected a name to import");
      one.local = one.name;
      imports.push_back(std::move(one));
      SkipSpace();
      if (pos_ < t_.size() && t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < t_.size() && t_[pos_] == ')') {
        ++pos_;
        return absl::OkStatus();
      }
      return Error(pos_, "expected ',' or ')' in the import list");
    }
  }

  absl::StatusOr<Node> Expansions() {
    Node alternatives{.kind = Node::Kind::kAlternatives, .offset = pos_};
    while (true) {
      absl::StatusOr<Node> alias = Alias();
      if (!alias.ok()) return alias;
      alternatives.children.push_back(*std::move(alias));
      SkipSpace();
      if (pos_ < t_.size() && t_[pos_] == '\n' && !ContinuesOnNextLine()) break;
      if (pos_ >= t_.size() || t_[pos_] != '|') break;
      ++pos_;
    }
    if (alternatives.children.size() == 1) return std::move(alternatives.children[0]);
    return alternatives;
  }

  // A sequence, and the `-> alias` after it (a tree node's name: nothing to match).
  absl::StatusOr<Node> Alias() {
    Node sequence{.kind = Node::Kind::kSequence, .offset = pos_};
    while (true) {
      SkipSpace();
      if (pos_ >= t_.size()) break;
      const char c = t_[pos_];
      const bool starts_item = c == '"' || c == '\'' || c == '(' || c == '[' || IsNameStart(c) ||
                               (c == '/' && t_.substr(pos_, 2) != "//");
      if (!starts_item) break;
      absl::StatusOr<Node> item = Item();
      if (!item.ok()) return item;
      sequence.children.push_back(*std::move(item));
    }
    if (t_.substr(pos_, 2) == "->") {
      pos_ += 2;
      SkipSpace();
      std::string alias;
      if (!ReadName(&alias)) return Error(pos_, "expected a name after '->'");
    }
    return sequence;
  }

  // An atom and its operator.
  absl::StatusOr<Node> Item() {
    const size_t start = pos_;
    absl::StatusOr<Node> atom = Atom();
    if (!atom.ok()) return atom;
    SkipSpace();
    if (pos_ >= t_.size()) return atom;
    std::string repeat;
    const char c = t_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      repeat = std::string(1, c);
      ++pos_;
    } else if (c == '~' || (c == '{' && BracesFollow())) {
      absl::StatusOr<std::string> bounds = c == '~' ? Tilde() : Braces();
      if (!bounds.ok()) return bounds.status();
      repeat = *std::move(bounds);
    } else {
      return atom;
    }
    Node node{.kind = Node::Kind::kRepeat, .repeat = std::move(repeat), .offset = start};
    node.children.push_back(*std::move(atom));
    return node;
  }

  // At `{`: repetition bounds ({n,m}, not a template's arguments) follow.
  bool BracesFollow() const {
    return pos_ + 1 < t_.size() &&
           ((t_[pos_ + 1] >= '0' && t_[pos_ + 1] <= '9') || t_[pos_ + 1] == ',');
  }

  // ~n or ~n..m.
  absl::StatusOr<std::string> Tilde() {
    const size_t at = pos_++;
    SkipSpace();
    uint64_t lo = 0;
    if (!ReadNumber(&lo)) return Error(pos_, "expected a number after '~'");
    if (t_.substr(pos_, 2) != "..") return absl::StrCat("{", lo, "}");
    pos_ += 2;
    uint64_t hi = 0;
    if (!ReadNumber(&hi)) return Error(pos_, "expected a number after '..'");
    if (hi < lo) return Error(at, absl::StrCat("the range ~", lo, "..", hi, " is empty"));
    return absl::StrCat("{", lo, ",", hi, "}");
  }

  // {n}, {n,}, {,m} or {n,m} (llguidance's spelling of ~).
  absl::StatusOr<std::string> Braces() {
    const size_t at = pos_++;
    uint64_t lo = 0;
    uint64_t hi = 0;
    const bool has_lo = ReadNumber(&lo);
    if (pos_ < t_.size() && t_[pos_] == '}') {
      ++pos_;
      return absl::StrCat("{", lo, "}");
    }
    if (pos_ >= t_.size() || t_[pos_] != ',') return Error(pos_, "expected ',' or '}'");
    ++pos_;
    const bool has_hi = ReadNumber(&hi);
    if (pos_ >= t_.size() || t_[pos_] != '}') return Error(pos_, "expected '}'");
    ++pos_;
    if (!has_hi) return absl::StrCat("{", lo, ",}");
    if (hi < lo) return Error(at, absl::StrCat("the range {", lo, ",", hi, "} is empty"));
    return absl::StrCat("{", has_lo ? lo : 0, ",", hi, "}");
  }

  absl::StatusOr<Node> Atom() {
    const size_t start = pos_;
    const char c = t_[pos_];
    if (c == '(' || c == '[') {
      ++pos_;
      if (++depth_ > kMaxLarkNesting) {
        return Error(start, absl::StrCat("groups nest more than ", kMaxLarkNesting, " deep"));
      }
      absl::StatusOr<Node> inner = Expansions();
      if (!inner.ok()) return inner;
      SkipSpace();
      const char close = c == '(' ? ')' : ']';
      if (pos_ >= t_.size() || t_[pos_] != close) {
        return Error(start, absl::StrCat("'", std::string(1, c), "' is not closed"));
      }
      ++pos_;
      --depth_;
      if (c == '(') return inner;
      Node optional{.kind = Node::Kind::kRepeat, .repeat = "?", .offset = start};
      optional.children.push_back(*std::move(inner));
      return optional;
    }
    if (c == '"' || c == '\'') return Literal();
    if (c == '/') return Regex();
    Node name{.kind = Node::Kind::kName, .offset = start};
    ReadName(&name.text);
    if (pos_ < t_.size() && t_[pos_] == '{' && !BracesFollow()) {
      return Error(pos_, "templates (name{args}) are not supported");
    }
    return name;
  }

  // A string, or a range "a".."z".
  absl::StatusOr<Node> Literal() {
    const size_t start = pos_;
    bool ignore_case = false;
    absl::StatusOr<std::string> text = String(&ignore_case);
    if (!text.ok()) return text.status();
    if (t_.substr(pos_, 2) != "..") {
      return Node{
          .kind = Node::Kind::kToken, .text = EbnfLiteral(*text, ignore_case), .offset = start};
    }
    pos_ += 2;
    const size_t hi_at = pos_;
    if (pos_ >= t_.size() || (t_[pos_] != '"' && t_[pos_] != '\'')) {
      return Error(pos_, "expected a string after '..'");
    }
    bool hi_ignore_case = false;
    absl::StatusOr<std::string> hi = String(&hi_ignore_case);
    if (!hi.ok()) return hi.status();
    // The one character `s` holds.
    const auto single = [](const std::string& s, uint32_t* c) {
      size_t pos = 0;
      size_t bad = 0;
      const std::optional<uint32_t> decoded = DecodeUtf8At(s, &pos, &bad);
      if (decoded.has_value()) *c = *decoded;
      return decoded.has_value() && pos == s.size();
    };
    uint32_t lo_c = 0;
    uint32_t hi_c = 0;
    if (!single(*text, &lo_c) || !single(*hi, &hi_c)) {
      return Error(start, "a range \"a\"..\"z\" needs one character on each side");
    }
    if (hi_c < lo_c) return Error(hi_at, "the range is empty (its end is below its start)");
    CodePointSet set = {{lo_c, hi_c}};
    if (ignore_case || hi_ignore_case) set = WithBothCases(set);
    return Node{.kind = Node::Kind::kToken, .text = EbnfClass(set), .offset = start};
  }

  // A quoted string with Python's escapes, as UTF-8; `i` after it sets `*ignore_case`.
  absl::StatusOr<std::string> String(bool* ignore_case) {
    const size_t start = pos_;
    const char quote = t_[pos_++];
    std::string out;
    Utf8Reader reader;
    while (true) {
      if (pos_ >= t_.size() || t_[pos_] == '\n') return Error(start, "the string is not closed");
      const char c = t_[pos_];
      if (c == quote) {
        ++pos_;
        break;
      }
      if (c != '\\') {
        if (reader.Feed(static_cast<uint8_t>(c)) == Utf8Reader::Step::kRefused) {
          return Error(pos_, "the grammar is not valid UTF-8 here");
        }
        out.push_back(c);
        ++pos_;
        continue;
      }
      const size_t escape_at = pos_++;
      if (pos_ >= t_.size()) return Error(start, "the string is not closed");
      const char e = t_[pos_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case '\\':
          out += '\\';
          break;
        case '"':
          out += '"';
          break;
        case '\'':
          out += '\'';
          break;
        case 'x':
        case 'u':
        case 'U': {
          uint32_t value = 0;
          if (!ReadHexEscape(t_, e, &pos_, &value) || (value >= 0xD800 && value <= 0xDFFF)) {
            return Error(escape_at, absl::StrCat("\\", std::string(1, e),
                                                 " needs its hex digits and a character (no "
                                                 "surrogate, nothing past U+10FFFF)"));
          }
          AppendUtf8(value, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // octal, up to three digits
            uint32_t value = static_cast<uint32_t>(e - '0');
            for (int n = 0; n < 2 && pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '7'; ++n) {
              value = value * 8 + static_cast<uint32_t>(t_[pos_++] - '0');
            }
            AppendUtf8(value, &out);
          } else {  // Python keeps an unknown escape as written
            out += '\\';
            --pos_;
          }
      }
    }
    if (!reader.BetweenCharacters()) return Error(start, "the string ends inside a character");
    if (pos_ < t_.size() && t_[pos_] == 'i' &&
        (pos_ + 1 >= t_.size() || !IsNameChar(t_[pos_ + 1]))) {
      *ignore_case = true;
      ++pos_;
    }
    return out;
  }

  absl::StatusOr<Node> Regex() {
    const size_t start = pos_++;
    std::string pattern;
    while (true) {
      if (pos_ >= t_.size() || t_[pos_] == '\n') return Error(start, "the regex is not closed");
      const char c = t_[pos_];
      if (c == '/') break;
      if (c == '\\' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '/') {  // an escaped slash
        pattern += '/';
        pos_ += 2;
        continue;
      }
      if (c == '\\' && pos_ + 1 < t_.size() && t_[pos_ + 1] != '\n') {
        pattern += t_.substr(pos_, 2);
        pos_ += 2;
        continue;
      }
      pattern += c;
      ++pos_;
    }
    ++pos_;
    RegexFlags flags;
    while (pos_ < t_.size() && IsNameChar(t_[pos_])) {
      const char f = t_[pos_];
      if (f == 'i') {
        flags.ignore_case = true;
      } else if (f == 's') {
        flags.dot_all = true;
      } else if (f != 'm' && f != 'u' && f != 'l') {
        return Error(pos_, absl::StrCat("the regex flag '", std::string(1, f),
                                        "' is not supported (i, s, m, u and l are)"));
      }
      ++pos_;
    }
    size_t error_offset = 0;
    absl::StatusOr<std::string> ebnf = RegexToEbnf(pattern, flags, &error_offset);
    if (!ebnf.ok()) {
      // The offset is in the pattern as read (an escaped slash is one character shorter).
      const std::string shown =
          pattern.size() <= 40 ? pattern : absl::StrCat(pattern.substr(0, 37), "...");
      return Error(start + 1 + error_offset,
                   absl::StrCat("in /", shown, "/: ", ebnf.status().message()));
    }
    return Node{.kind = Node::Kind::kToken, .text = *std::move(ebnf), .offset = start};
  }

  std::string_view t_;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open around pos_
};

// Writes definitions as EBNF rules: names mapped by `rename`, and with `ignored` each token of a
// rule (not of a terminal) preceded by the optional ignored items.
class Emitter {
 public:
  Emitter(bool ignored, std::string prefix) : ignored_(ignored), prefix_(std::move(prefix)) {}

  std::string Name(std::string_view name) const {
    if (!prefix_.empty()) return absl::StrCat(prefix_, std::string(name));
    return name == "root" ? std::string(kRootRule) : std::string(name);
  }

  std::string Emit(const Node& node, bool in_rule) const {
    switch (node.kind) {
      case Node::Kind::kToken:
        return Token(node.text, in_rule);
      case Node::Kind::kName:
        return IsTerminalName(node.text) ? Token(Name(node.text), in_rule) : Name(node.text);
      case Node::Kind::kRepeat:
        return absl::StrCat("(", Emit(node.children[0], in_rule), ")", node.repeat);
      case Node::Kind::kSequence: {
        if (node.children.empty()) return "\"\"";
        std::string out;
        for (const Node& child : node.children) {
          if (!out.empty()) out += ' ';
          out += Emit(child, in_rule);
        }
        return out;
      }
      case Node::Kind::kAlternatives: {
        std::string out = "(";
        for (size_t i = 0; i < node.children.size(); ++i) {
          if (i > 0) out += " | ";
          out += Emit(node.children[i], in_rule);
        }
        return out + ")";
      }
    }
    return "";
  }

 private:
  std::string Token(const std::string& ebnf, bool in_rule) const {
    if (!ignored_ || !in_rule) return ebnf;
    return absl::StrCat("(", kIgnored, " ", ebnf, ")");
  }

  bool ignored_;
  std::string prefix_;
};

// Every name `node` refers to, with where.
void CollectNames(const Node& node, std::vector<const Node*>* names) {
  if (node.kind == Node::Kind::kName) names->push_back(&node);
  for (const Node& child : node.children) CollectNames(child, names);
}

// The common terminals, parsed once.
const std::vector<Definition>& CommonDefinitions() {
  static const auto* definitions = [] {
    LarkParser parser(kCommonLark);
    const absl::Status parsed = parser.Parse();
    if (!parsed.ok()) std::abort();  // the text above is fixed: a test parses it
    return new std::vector<Definition>(std::move(parser.definitions));
  }();
  return *definitions;
}

}  // namespace

bool LooksLikeLark(std::string_view grammar) {
  size_t start = 0;
  while (start <= grammar.size()) {
    size_t end = grammar.find('\n', start);
    if (end == std::string_view::npos) end = grammar.size();
    std::string_view line = grammar.substr(start, end - start);
    line = line.substr(0, std::min(line.find('#'), line.find("//")));
    if (line.find("::=") != std::string_view::npos) return false;
    start = end + 1;
  }
  return true;
}

absl::StatusOr<std::string> LarkToEbnf(std::string_view lark) {
  LarkParser parser(lark);
  if (absl::Status parsed = parser.Parse(); !parsed.ok()) return parsed;
  if (parser.definitions.empty()) return parser.Error(0, "the grammar defines no rule");

  // What each name is: defined here, or imported.
  absl::flat_hash_map<std::string, size_t> defined;  // name -> offset
  for (const Definition& d : parser.definitions) {
    if (!defined.emplace(d.name, d.offset).second) {
      return parser.Error(d.offset, absl::StrCat("'", d.name, "' is defined twice"));
    }
  }
  const std::vector<Definition>& common = CommonDefinitions();
  const auto common_definition = [&](std::string_view name) -> const Definition* {
    for (const Definition& d : common) {
      if (d.name == name) return &d;
    }
    return nullptr;
  };
  for (const Import& i : parser.imports) {
    if (common_definition(i.name) == nullptr) {
      return parser.Error(i.offset, absl::StrCat("common.lark has no terminal '", i.name, "'"));
    }
    if (!defined.emplace(i.local, i.offset).second) {
      return parser.Error(i.offset, absl::StrCat("'", i.local, "' is defined twice"));
    }
  }
  const auto check_names = [&](const Node& body, bool terminal) -> absl::Status {
    std::vector<const Node*> names;
    CollectNames(body, &names);
    for (const Node* name : names) {
      if (!defined.contains(name->text)) {
        return parser.Error(name->offset, absl::StrCat("'", name->text, "' is not defined"));
      }
      if (terminal && !IsTerminalName(name->text)) {
        return parser.Error(name->offset,
                            absl::StrCat("a terminal cannot use the rule '", name->text, "'"));
      }
    }
    return absl::OkStatus();
  };
  for (const Definition& d : parser.definitions) {
    if (absl::Status s = check_names(d.body, IsTerminalName(d.name)); !s.ok()) return s;
  }
  for (const Node& item : parser.ignored) {
    if (absl::Status s = check_names(item, /*terminal=*/true); !s.ok()) return s;
  }

  const bool ignores = !parser.ignored.empty();
  const Emitter emitter(ignores, "");
  const Definition* entry = &parser.definitions[0];
  for (const Definition& d : parser.definitions) {
    if (d.name == "start") entry = &d;
  }
  std::string ebnf = absl::StrCat("root ::= ", emitter.Name(entry->name),
                                  ignores ? absl::StrCat(" ", kIgnored) : "", "\n");
  for (const Definition& d : parser.definitions) {
    absl::StrAppend(&ebnf, emitter.Name(d.name),
                    " ::= ", emitter.Emit(d.body, !IsTerminalName(d.name)), "\n");
  }
  if (ignores) {
    Node any{.kind = Node::Kind::kAlternatives};
    any.children = parser.ignored;
    absl::StrAppend(&ebnf, kIgnored, " ::= (", emitter.Emit(any, /*in_rule=*/false), ")*\n");
  }
  // The imported terminals, and what they use, under common.NAME.
  const Emitter common_emitter(false, std::string(kCommonPrefix));
  std::vector<std::string> pending;
  absl::flat_hash_set<std::string> emitted;
  for (const Import& i : parser.imports) {
    absl::StrAppend(&ebnf, emitter.Name(i.local), " ::= ", common_emitter.Name(i.name), "\n");
    pending.push_back(i.name);
  }
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    if (!emitted.insert(name).second) continue;
    const Definition* d = common_definition(name);
    absl::StrAppend(&ebnf, common_emitter.Name(name),
                    " ::= ", common_emitter.Emit(d->body, /*in_rule=*/false), "\n");
    std::vector<const Node*> names;
    CollectNames(d->body, &names);
    for (const Node* used : names) pending.push_back(used->text);
  }
  return ebnf;
}

absl::StatusOr<std::shared_ptr<const EbnfGrammar>> CompileGuidedGrammar(std::string_view text) {
  if (!LooksLikeLark(text)) return EbnfGrammar::Compile(text);
  absl::StatusOr<std::string> ebnf = LarkToEbnf(text);
  if (!ebnf.ok()) return ebnf.status();
  absl::StatusOr<std::shared_ptr<const EbnfGrammar>> grammar = EbnfGrammar::Compile(*ebnf);
  if (!grammar.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Lark grammar error: ", grammar.status().message(),
                     " (in the EBNF it "
                     "translates to)"));
  }
  return grammar;
}

}  // namespace headroom::worker
