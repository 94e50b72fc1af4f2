#include "router/openai/pythonic_calls.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "nlohmann/json.hpp"
#include "router/openai/tool_call_tags.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 35> kKeywords = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

bool IsKeyword(std::string_view name) {
  for (const std::string_view k : kKeywords) {
    if (name == k) return true;
  }
  return false;
}

bool IsNameStart(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Appends code point `cp` as UTF-8; false for a surrogate or past U+10FFFF (not text).
bool AppendUtf8(uint32_t cp, std::string* out) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
  utf8::Append(static_cast<char32_t>(cp), *out);
  return true;
}

// A recursive-descent reader of the Python the format uses, over `text` (the list, stripped).
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  std::optional<std::vector<ToolCall>> Calls() {
    if (!Eat('[')) return std::nullopt;
    ++brackets_;  // the list stays open: every line break inside is whitespace
    std::vector<ToolCall> calls;
    while (true) {
      SkipSpace();
      if (Eat(']')) break;
      std::optional<ToolCall> call = Call();
      if (!call.has_value()) return std::nullopt;
      calls.push_back(*std::move(call));
      SkipSpace();
      if (Eat(']')) break;
      if (!Eat(',')) return std::nullopt;
    }
    SkipSpace();
    if (pos_ != text_.size() || calls.empty()) return std::nullopt;
    return calls;
  }

  // A keyword argument's value inside a call's parentheses (where line breaks are whitespace),
  // with the whitespace and comments around it: what the whole text must be.
  std::optional<Json> ArgumentValue() {
    const Open open(brackets_);
    std::optional<Json> value = Value(0);
    SkipSpace();
    if (!value.has_value() || pos_ != text_.size()) return std::nullopt;
    return value;
  }

  // ast.literal_eval(text): one expression (a tuple when its items are separated by commas),
  // after the spaces and tabs literal_eval strips, and blank or comment lines.
  std::optional<Json> Literal() {
    while (Peek() == ' ' || Peek() == '\t') ++pos_;
    // Lines before the expression may be blank; the one it starts on may not be indented.
    while (true) {
      SkipSpace();
      if (Peek() != '\n') break;
      ++pos_;
    }
    if (pos_ > 0 && (text_[pos_ - 1] == ' ' || text_[pos_ - 1] == '\t') &&
        text_.find('\n') < pos_) {
      return std::nullopt;  // IndentationError
    }
    std::optional<Json> value = Value(0);
    if (!value.has_value()) return std::nullopt;
    SkipSpace();
    if (Eat(',')) {  // a tuple: 1, 2 (a trailing comma allowed)
      Json items = Json::array();
      items.push_back(*std::move(value));
      while (true) {
        SkipSpace();
        if (AtLineEnd()) break;
        std::optional<Json> item = Value(1);
        if (!item.has_value()) return std::nullopt;
        items.push_back(*std::move(item));
        SkipSpace();
        if (!Eat(',')) break;
      }
      value = std::move(items);
    }
    // Then only line ends, blank lines and comments.
    while (true) {
      SkipSpace();
      if (Peek() != '\n') break;
      ++pos_;
    }
    if (pos_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  // Whitespace between tokens, comments, and a backslash at a line's end; line breaks only
  // inside brackets (Python joins those lines; outside them a line break ends the expression).
  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\f' || (c == '\n' && brackets_ > 0)) {
        ++pos_;
      } else if (c == '\\' && Peek(1) == '\n') {
        pos_ += 2;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  [[nodiscard]] bool AtLineEnd() const { return pos_ == text_.size() || text_[pos_] == '\n'; }
  // Counts the brackets open while reading what they hold.
  class Open {
   public:
    explicit Open(int& brackets) : brackets_(++brackets) {}
    ~Open() { --brackets_; }
    Open(const Open&) = delete;
    Open& operator=(const Open&) = delete;

   private:
    int& brackets_;
  };
  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  [[nodiscard]] char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  std::string_view Name() {
    const size_t start = pos_;
    if (!IsNameStart(Peek())) return {};
    while (IsNameChar(Peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // name(kw=value, ...)
  std::optional<ToolCall> Call() {
    const std::string_view name = Name();
    if (name.empty() || IsKeyword(name)) return std::nullopt;
    SkipSpace();
    if (!Eat('(')) return std::nullopt;
    Json arguments = Json::object();
    while (true) {
      SkipSpace();
      if (Eat(')')) break;
      const std::string_view keyword = Name();
      if (keyword.empty() || IsKeyword(keyword)) return std::nullopt;  // positional, **, ...
      SkipSpace();
      if (!Eat('=') || Peek() == '=') return std::nullopt;  // not a comparison
      SkipSpace();
      std::optional<Json> value = Value(0);
      if (!value.has_value()) return std::nullopt;
      arguments[std::string(keyword)] = *std::move(value);  // a repeated one: its last value
      SkipSpace();
      if (Eat(')')) break;
      if (!Eat(',')) return std::nullopt;
    }
    std::optional<std::string> text = PyJsonDumps(arguments);
    if (!text.has_value()) return std::nullopt;
    return ToolCall{std::string(name), *std::move(text)};
  }

  // A literal, as ast.literal_eval takes it.
  std::optional<Json> Value(int depth) {
    if (depth > kMaxJsonNesting) return std::nullopt;
    SkipSpace();
    const char c = Peek();
    if (c == '[') return Sequence(depth, ']');
    if (c == '{') return Dict(depth);
    if (c == '(') return Parenthesized(depth);
    if (c == '-' || c == '+') {  // one sign, on a number literal (in parentheses or not)
      ++pos_;
      SkipSpace();
      int parens = 0;
      while (Eat('(')) {
        ++parens;
        ++brackets_;  // inside them line breaks are whitespace
        SkipSpace();
      }
      std::optional<Json> number = Number(c == '-');
      for (; number.has_value() && parens > 0; --parens) {
        SkipSpace();
        if (!Eat(')')) return std::nullopt;
        --brackets_;
      }
      return number;
    }
    if ((c >= '0' && c <= '9') || (c == '.' && Peek(1) >= '0' && Peek(1) <= '9')) {
      return Number(false);
    }
    if (IsStringStart()) return Strings();
    const std::string_view name = Name();
    if (name == "True") return Json(true);
    if (name == "False") return Json(false);
    if (name == "None") return Json(nullptr);
    return std::nullopt;
  }

  // [a, b] or (a, b): a JSON array.
  std::optional<Json> Sequence(int depth, char close) {
    ++pos_;
    const Open open(brackets_);
    Json out = Json::array();
    while (true) {
      SkipSpace();
      if (Eat(close)) return out;
      std::optional<Json> item = Value(depth + 1);
      if (!item.has_value()) return std::nullopt;
      out.push_back(*std::move(item));
      SkipSpace();
      if (Eat(close)) return out;
      if (!Eat(',')) return std::nullopt;
    }
  }

  // () a tuple, (x) just x, (x,) and (x, y) tuples. Each item is read once (reading the first
  // again as a tuple's would take time exponential in the nesting).
  std::optional<Json> Parenthesized(int depth) {
    ++pos_;
    const Open open(brackets_);
    SkipSpace();
    if (Eat(')')) return Json::array();
    std::optional<Json> first = Value(depth + 1);
    if (!first.has_value()) return std::nullopt;
    SkipSpace();
    if (Eat(')')) return first;
    if (!Eat(',')) return std::nullopt;
    Json out = Json::array();
    out.push_back(*std::move(first));
    while (true) {
      SkipSpace();
      if (Eat(')')) return out;
      std::optional<Json> item = Value(depth + 1);
      if (!item.has_value()) return std::nullopt;
      out.push_back(*std::move(item));
      SkipSpace();
      if (Eat(')')) return out;
      if (!Eat(',')) return std::nullopt;
    }
  }

  // {"k": v, ...} with string keys.
  std::optional<Json> Dict(int depth) {
    ++pos_;
    const Open open(brackets_);
    Json out = Json::object();
    while (true) {
      SkipSpace();
      if (Eat('}')) return out;
      if (!IsStringStart()) return std::nullopt;  // a key that is not a string
      std::optional<Json> key = Strings();
      if (!key.has_value()) return std::nullopt;
      SkipSpace();
      if (!Eat(':')) return std::nullopt;
      std::optional<Json> value = Value(depth + 1);
      if (!value.has_value()) return std::nullopt;
      out[key->get<std::string>()] = *std::move(value);
      SkipSpace();
      if (Eat('}')) return out;
      if (!Eat(',')) return std::nullopt;
    }
  }

  // An int (decimal, 0x, 0o, 0b; underscores between digits) or a float.
  std::optional<Json> Number(bool negative) {
    std::string digits;  // without underscores
    const auto read_digits = [&](auto is_digit) {
      // One or more digits, single underscores between them.
      if (!is_digit(Peek())) return false;
      while (true) {
        while (is_digit(Peek())) digits.push_back(text_[pos_++]);
        if (Peek() == '_' && is_digit(Peek(1))) {
          ++pos_;
          continue;
        }
        return true;
      }
    };
    const auto decimal = [](char c) { return c >= '0' && c <= '9'; };
    if (Peek() == '0' && std::string_view("xXoObB").find(Peek(1)) != std::string_view::npos &&
        Peek(1) != '\0') {
      const char base_letter =
          static_cast<char>(absl::ascii_tolower(static_cast<unsigned char>(Peek(1))));
      const int base = base_letter == 'x' ? 16 : base_letter == 'o' ? 8 : 2;
      pos_ += 2;
      if (Peek() == '_') ++pos_;  // 0x_1F
      const auto in_base = [base](char c) {
        if (base == 16) return HexDigitValue(c) >= 0;
        return c >= '0' && c < static_cast<char>('0' + base);
      };
      if (!read_digits(in_base) || IsNameChar(Peek())) return std::nullopt;
      return Integer(digits, base, negative);
    }
    bool is_float = false;
    if (Peek() != '.') {
      if (!read_digits(decimal)) return std::nullopt;
    }
    if (Peek() == '.') {
      is_float = true;
      digits.push_back(text_[pos_++]);
      if (decimal(Peek()) && !read_digits(decimal)) return std::nullopt;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      is_float = true;
      digits.push_back(text_[pos_++]);
      if (Peek() == '+' || Peek() == '-') digits.push_back(text_[pos_++]);
      if (!read_digits(decimal)) return std::nullopt;
    }
    if (IsNameChar(Peek()) || Peek() == '.') return std::nullopt;  // 1j, 1x, 1.2.3
    if (digits == ".") return std::nullopt;
    if (!is_float) {
      // Leading zeros only for zero itself ("00" is 0, "01" a syntax error).
      if (digits.size() > 1 && digits[0] == '0' &&
          digits.find_first_not_of('0') != std::string::npos) {
        return std::nullopt;
      }
      return Integer(digits, 10, negative);
    }
    const double value = std::strtod(digits.c_str(), nullptr);
    if (!std::isfinite(value)) return std::nullopt;
    return Json(negative ? -value : value);
  }

  static std::optional<Json> Integer(const std::string& digits, int base, bool negative) {
    // Within int64, as the router's JSON holds it (Python's ints are unbounded).
    constexpr uint64_t kLimit = uint64_t{1} << 63;
    uint64_t magnitude = 0;
    for (const char c : digits) {
      const int d = HexDigitValue(c);
      if (magnitude > (kLimit - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
        return std::nullopt;
      }
      magnitude = magnitude * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    }
    if (negative) {
      if (magnitude == kLimit) return Json(std::numeric_limits<int64_t>::min());
      return Json(-static_cast<int64_t>(magnitude));
    }
    if (magnitude == kLimit) return std::nullopt;
    return Json(static_cast<int64_t>(magnitude));
  }

  // A string literal starts here: a quote, or the prefixes r and u (any case) before one.
  [[nodiscard]] bool IsStringStart() const {
    size_t at = pos_;
    if (at < text_.size() &&
        (text_[at] == 'r' || text_[at] == 'R' || text_[at] == 'u' || text_[at] == 'U')) {
      ++at;
    }
    return at < text_.size() && (text_[at] == '"' || text_[at] == '\'');
  }

  // One or more adjacent string literals, joined (Python's "a" "b").
  std::optional<Json> Strings() {
    std::string out;
    do {
      if (!String(&out)) return std::nullopt;
      SkipSpace();
    } while (IsStringStart());
    return Json(std::move(out));
  }

  bool String(std::string* out) {
    bool raw = false;
    if (Peek() == 'r' || Peek() == 'R') {
      raw = true;
      ++pos_;
    } else if (Peek() == 'u' || Peek() == 'U') {
      ++pos_;
    }
    const char quote = Peek();
    const bool triple = Peek(1) == quote && Peek(2) == quote;
    pos_ += triple ? 3 : 1;
    while (true) {
      if (pos_ >= text_.size()) return false;  // unterminated
      const char c = text_[pos_];
      if (c == quote && (!triple || (Peek(1) == quote && Peek(2) == quote))) {
        pos_ += triple ? 3 : 1;
        return true;
      }
      if (c == '\n' && !triple) return false;
      if (c != '\\') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= text_.size()) return false;
      const char e = text_[pos_ + 1];
      if (raw) {
        // A backslash stays, and keeps the next character (even a quote) in the string.
        out->push_back('\\');
        out->push_back(e);
        pos_ += 2;
        continue;
      }
      pos_ += 2;
      if (!Escape(e, out)) return false;
    }
  }

  // The escape `\e` (pos_ past it) of a non-raw string.
  bool Escape(char e, std::string* out) {
    switch (e) {
      case '\n':
        return true;  // a line continuation
      case '\\':
      case '\'':
      case '"':
        out->push_back(e);
        return true;
      case 'a':
        out->push_back('\a');
        return true;
      case 'b':
        out->push_back('\b');
        return true;
      case 'f':
        out->push_back('\f');
        return true;
      case 'n':
        out->push_back('\n');
        return true;
      case 'r':
        out->push_back('\r');
        return true;
      case 't':
        out->push_back('\t');
        return true;
      case 'v':
        out->push_back('\v');
        return true;
      case 'x':
        return Hex(2, out);
      case 'u':
        return Hex(4, out);
      case 'U':
        return Hex(8, out);
      case 'N':
        return false;  // \N{NAME}: names are not known here
      default:
        break;
    }
    if (e >= '0' && e <= '7') {  // up to three octal digits
      uint32_t value = static_cast<uint32_t>(e - '0');
      for (int n = 1; n < 3 && Peek() >= '0' && Peek() <= '7'; ++n) {
        value = value * 8 + static_cast<uint32_t>(text_[pos_++] - '0');
      }
      return AppendUtf8(value, out);
    }
    // Not an escape: Python keeps the backslash and the character.
    out->push_back('\\');
    out->push_back(e);
    return true;
  }

  bool Hex(int count, std::string* out) {
    uint32_t value = 0;
    for (int n = 0; n < count; ++n) {
      const int digit = HexDigitValue(Peek());
      if (digit < 0) return false;
      value = value * 16 + static_cast<uint32_t>(digit);
      ++pos_;
    }
    return AppendUtf8(value, out);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int brackets_ = 0;  // brackets open at pos_
};

// `text` as Python compiles source: line ends made "\n" (a "\r" in a string literal then reads as
// Python reads it); nullopt for what it refuses to compile (a NUL byte) and for text that is not
// UTF-8 (JSON needs it too).
std::optional<std::string> PythonSource(std::string_view text) {
  if (!utf8::IsValid(text) || text.find('\0') != std::string_view::npos) return std::nullopt;
  std::string source;
  source.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      source.push_back(text[i]);
    } else if (i + 1 == text.size() || text[i + 1] != '\n') {
      source.push_back('\n');
    }
  }
  return source;
}

// Python's str.strip() of the ASCII whitespace.
std::string_view Strip(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

}  // namespace

std::optional<std::vector<ToolCall>> ParsePythonicCalls(std::string_view text) {
  const std::optional<std::string> source = PythonSource(text);
  if (!source.has_value()) return std::nullopt;
  std::string_view body = Strip(*source);
  if (body.substr(0, kPythonStart.size()) == kPythonStart) {
    body.remove_prefix(kPythonStart.size());
    if (body.size() >= kPythonEnd.size() &&
        body.substr(body.size() - kPythonEnd.size()) == kPythonEnd) {
      body.remove_suffix(kPythonEnd.size());
    }
    body = Strip(body);
  }
  if (body.empty() || body.front() != '[') return std::nullopt;
  return Reader(body).Calls();
}

void PythonicCallStream::Read(std::string_view text) {
  if (mode_ == Mode::kStopped) return;
  // Only what is new is turned into source; a '\r' at the end waits for what follows it.
  for (; consumed_ < text.size(); ++consumed_) {
    const char c = text[consumed_];
    if (c == '\0') {
      mode_ = Mode::kStopped;  // Python refuses to compile it
      return;
    }
    if (c != '\r') {
      source_.push_back(c);
    } else if (consumed_ + 1 == text.size()) {
      break;
    } else if (text[consumed_ + 1] != '\n') {
      source_.push_back('\n');
    }
  }
  const std::string_view source = source_;
  while (true) {
    switch (mode_) {
      case Mode::kStart: {
        while (pos_ < source.size() &&
               absl::ascii_isspace(static_cast<unsigned char>(source[pos_])))
          ++pos_;
        const std::string_view rest = source.substr(pos_);
        if (rest.empty()) return;
        if (rest.front() == '[') {
          ++pos_;
          mode_ = Mode::kCall;
          break;
        }
        if (!tagged_ && rest.substr(0, kPythonStart.size()) == kPythonStart) {
          pos_ += kPythonStart.size();
          tagged_ = true;
          break;
        }
        if (!tagged_ && kPythonStart.substr(0, rest.size()) == rest) return;
        mode_ = Mode::kStopped;
        return;
      }
      case Mode::kCall: {
        if (!SkipSpace()) return;
        if (source[pos_] == ']') {
          mode_ = Mode::kStopped;  // the list's end
          return;
        }
        const std::optional<std::string_view> name = NameAt();
        if (!name.has_value()) return;
        if (name->empty()) {
          mode_ = Mode::kStopped;
          return;
        }
        name_ = std::string(*name);
        mode_ = Mode::kOpen;
        break;
      }
      case Mode::kOpen:
        if (!SkipSpace()) return;
        if (source[pos_] != '(') {
          mode_ = Mode::kStopped;
          return;
        }
        ++pos_;
        arguments_ = 0;
        mode_ = Mode::kKeyword;
        break;
      case Mode::kKeyword: {
        if (!SkipSpace()) return;
        if (source[pos_] == ')') {
          CloseCall();
          break;
        }
        const std::optional<std::string_view> keyword = NameAt();
        if (!keyword.has_value()) return;
        if (keyword->empty()) {
          mode_ = Mode::kStopped;  // positional, **, ...
          return;
        }
        keyword_ = std::string(*keyword);
        mode_ = Mode::kEquals;
        break;
      }
      case Mode::kEquals:
        if (!SkipSpace()) return;
        if (pos_ + 1 >= source.size()) return;  // '=' or not, and "==" or not
        if (source[pos_] != '=' || source[pos_ + 1] == '=') {
          mode_ = Mode::kStopped;
          return;
        }
        value_start_ = scan_ = ++pos_;
        depth_ = 0;
        quote_ = 0;
        escaped_ = false;
        mode_ = Mode::kValue;
        break;
      case Mode::kValue:
        if (!ScanValue()) return;
        if (mode_ == Mode::kStopped) return;
        if (!AppendArgument()) {
          mode_ = Mode::kStopped;
          return;
        }
        pos_ = scan_;
        if (source[pos_] == ')') {
          CloseCall();
        } else {
          ++pos_;  // the ','
          mode_ = Mode::kKeyword;
        }
        break;
      case Mode::kAfterCall:
        if (!SkipSpace()) return;
        if (source[pos_] == ',') {
          ++pos_;
          mode_ = Mode::kCall;
          break;
        }
        mode_ = Mode::kStopped;  // ']' ends the list; anything else is not a list of calls
        return;
      case Mode::kStopped:
        return;
    }
  }
}

bool PythonicCallStream::SkipSpace() {
  while (pos_ < source_.size()) {
    const char c = source_[pos_];
    if (c == ' ' || c == '\t' || c == '\f' || c == '\n') {
      ++pos_;
    } else if (c == '\\') {
      if (pos_ + 1 == source_.size()) return false;
      if (source_[pos_ + 1] != '\n') return true;  // not a continuation: what follows refuses it
      pos_ += 2;
    } else if (c == '#') {
      const size_t end = source_.find('\n', pos_);
      if (end == std::string::npos) return false;
      pos_ = end;
    } else {
      return true;
    }
  }
  return false;
}

std::optional<std::string_view> PythonicCallStream::NameAt() {
  const std::string_view source = source_;
  if (!IsNameStart(source[pos_])) return std::string_view();
  size_t end = pos_;
  while (end < source.size() && IsNameChar(source[end])) ++end;
  if (end == source.size()) return std::nullopt;
  const std::string_view name = source.substr(pos_, end - pos_);
  if (IsKeyword(name)) return std::string_view();
  pos_ = end;
  return name;
}

bool PythonicCallStream::ScanValue() {
  for (; scan_ < source_.size(); ++scan_) {
    const char c = source_[scan_];
    if (quote_ != 0) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '\n' && !triple_) {
        mode_ = Mode::kStopped;  // a line break ends a one-line string: not Python
        return true;
      } else if (c == quote_ && !triple_) {
        quote_ = 0;
      } else if (c == quote_ && scan_ + 2 < source_.size() && source_[scan_ + 1] == quote_ &&
                 source_[scan_ + 2] == quote_) {
        quote_ = 0;
        scan_ += 2;
      } else if (c == quote_ && scan_ + 2 >= source_.size()) {
        return false;  // may be the closing triple quote: wait for the rest of it
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      if (scan_ + 2 >= source_.size()) return false;  // one quote or three
      quote_ = c;
      triple_ = source_[scan_ + 1] == c && source_[scan_ + 2] == c;
      if (triple_) scan_ += 2;
    } else if (c == '#') {
      const size_t end = source_.find('\n', scan_);
      if (end == std::string::npos) return false;
      scan_ = end;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth_;
    } else if (c == ')' && depth_ == 0) {
      return true;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth_ == 0) {
        mode_ = Mode::kStopped;
        return true;
      }
      --depth_;
    } else if (c == ',' && depth_ == 0) {
      return true;
    }
  }
  return false;
}

bool PythonicCallStream::AppendArgument() {
  std::optional<Json> value =
      Reader(std::string_view(source_).substr(value_start_, scan_ - value_start_)).ArgumentValue();
  if (!value.has_value()) return false;
  std::optional<std::string> key = PyJsonDumps(Json(keyword_));
  std::optional<std::string> text = PyJsonDumps(*value);
  if (!key.has_value() || !text.has_value()) return false;
  const std::string member = absl::StrCat(*key, ": ", *text);
  if (arguments_++ == 0) {
    calls_.push_back({name_, absl::StrCat("{", member)});
  } else {
    absl::StrAppend(&calls_.back().arguments, ", ", member);
  }
  return true;
}

void PythonicCallStream::CloseCall() {
  if (arguments_ == 0) {
    calls_.push_back({name_, "{}"});
  } else {
    calls_.back().arguments.push_back('}');
  }
  ++pos_;
  mode_ = Mode::kAfterCall;
}

std::optional<nlohmann::ordered_json> ParsePythonLiteral(std::string_view text) {
  const std::optional<std::string> source = PythonSource(text);
  if (!source.has_value()) return std::nullopt;
  return Reader(*source).Literal();
}

}  // namespace headroom::router::openai
