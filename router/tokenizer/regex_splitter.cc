#include "router/tokenizer/regex_splitter.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "re2/re2.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router {
namespace {

// Oniguruma's Unicode `\s`: White_Space = \t..\r, U+0085 and the Z categories (Zs, Zl, Zp).
constexpr std::string_view kSpaceClassBody = "\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}";
// Oniguruma's Unicode `\w`: letters, marks, decimal numbers and connector punctuation.
constexpr std::string_view kWordClassBody = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view kLookaheadTail = "\\s+(?!\\S)|\\s+";

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

absl::Status Unsupported(std::string_view pattern, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported regex construct ", Sv(what), " in pattern '", Sv(pattern), "'"));
}

}  // namespace

bool IsUnicodeWhitespace(char32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  switch (cp) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

absl::StatusOr<std::string> TranslateOnigurumaPattern(std::string_view pattern,
                                                      bool* whitespace_lookahead) {
  *whitespace_lookahead = false;
  std::string_view body = pattern;
  if (body.size() >= kLookaheadTail.size() &&
      body.substr(body.size() - kLookaheadTail.size()) == kLookaheadTail) {
    body.remove_suffix(kLookaheadTail.size());
    *whitespace_lookahead = true;
  }
  std::string out;
  out.reserve(pattern.size() * 2);
  bool in_class = false;
  size_t i = 0;
  while (i < body.size()) {
    const char c = body[i];
    if (c == '\\') {
      if (i + 1 >= body.size()) return Unsupported(pattern, "trailing backslash");
      const char e = body[i + 1];
      i += 2;
      switch (e) {
        case 's':
          absl::StrAppend(&out, in_class ? "" : "[", Sv(kSpaceClassBody), in_class ? "" : "]");
          break;
        case 'S':
          if (in_class) return Unsupported(pattern, "\\S inside a character class");
          absl::StrAppend(&out, "[^", Sv(kSpaceClassBody), "]");
          break;
        case 'w':
          absl::StrAppend(&out, in_class ? "" : "[", Sv(kWordClassBody), in_class ? "" : "]");
          break;
        case 'W':
          if (in_class) return Unsupported(pattern, "\\W inside a character class");
          absl::StrAppend(&out, "[^", Sv(kWordClassBody), "]");
          break;
        case 'd':
          out.append("\\p{Nd}");
          break;
        case 'D':
          out.append("\\P{Nd}");
          break;
        case 'u':
          if (i + 4 > body.size() || !IsHex(body[i]) || !IsHex(body[i + 1]) ||
              !IsHex(body[i + 2]) || !IsHex(body[i + 3])) {
            return Unsupported(pattern, "\\u without four hex digits");
          }
          absl::StrAppend(&out, "\\x{", Sv(body.substr(i, 4)), "}");
          i += 4;
          break;
        case 'h':
        case 'H':
        case 'K':
        case 'G':
        case 'R':
        case 'X':
        case 'k':
        case 'g':
          return Unsupported(pattern, absl::StrCat("\\", std::string(1, e)));
        default:
          out.push_back('\\');
          out.push_back(e);
          break;
      }
      continue;
    }
    if (in_class) {
      if (c == '[') {
        if (i + 1 < body.size() && body[i + 1] == ':') {  // POSIX class [:alpha:]
          const size_t close = body.find(":]", i + 2);
          if (close == std::string_view::npos) return Unsupported(pattern, "unterminated [:");
          out.append(body.substr(i, close + 2 - i));
          i = close + 2;
          continue;
        }
        return Unsupported(pattern, "nested character class");
      }
      if (c == '&' && i + 1 < body.size() && body[i + 1] == '&') {
        return Unsupported(pattern, "character class intersection &&");
      }
      if (c == ']') in_class = false;
      out.push_back(c);
      ++i;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out.push_back(c);
      ++i;
      // A ']' or '^]' right after '[' is a literal.
      if (i < body.size() && body[i] == '^') out.push_back(body[i++]);
      if (i < body.size() && body[i] == ']') out.push_back(body[i++]);
      continue;
    }
    if (c == '(' && i + 2 < body.size() && body[i + 1] == '?') {
      const char k = body[i + 2];
      if (k == '=' || k == '!')
        return Unsupported(pattern, absl::StrCat("lookahead (?", std::string(1, k)));
      if (k == '>') return Unsupported(pattern, "atomic group (?>");
      if (k == '<' && i + 3 < body.size() && (body[i + 3] == '=' || body[i + 3] == '!')) {
        return Unsupported(pattern, "lookbehind (?<");
      }
    }
    out.push_back(c);
    ++i;
  }
  if (in_class) return Unsupported(pattern, "unterminated character class");
  if (*whitespace_lookahead) {
    absl::StrAppend(&out, "(?P<", Sv(kWhitespaceGroup), ">[", Sv(kSpaceClassBody), "]+)");
  }
  return out;
}

RegexMatcher::~RegexMatcher() = default;

absl::StatusOr<std::unique_ptr<RegexMatcher>> RegexMatcher::Create(std::string_view pattern) {
  bool lookahead = false;
  auto translated = TranslateOnigurumaPattern(pattern, &lookahead);
  if (!translated.ok()) return translated.status();
  std::unique_ptr<RegexMatcher> m(new RegexMatcher());
  m->translated_ = *std::move(translated);
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingUTF8);
  options.set_log_errors(false);
  options.set_max_mem(int64_t{64} << 20);
  m->re_ = std::make_unique<re2::RE2>(
      re2::StringPiece(m->translated_.data(), m->translated_.size()), options);
  if (!m->re_->ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot compile regex '", Sv(pattern),
                                                   "' (as RE2 '", m->translated_,
                                                   "'): ", m->re_->error()));
  }
  if (lookahead) {
    const auto& groups = m->re_->NamedCapturingGroups();
    const auto it = groups.find(std::string(kWhitespaceGroup));
    if (it == groups.end()) return absl::InternalError("whitespace group missing");
    m->whitespace_group_ = it->second;
  }
  return m;
}

absl::StatusOr<std::unique_ptr<RegexMatcher>> RegexMatcher::CreateLiteral(
    std::string_view literal) {
  if (literal.empty()) return absl::InvalidArgumentError("empty literal pattern");
  std::unique_ptr<RegexMatcher> m(new RegexMatcher());
  m->literal_ = std::string(literal);
  m->translated_ = RE2::QuoteMeta(re2::StringPiece(literal.data(), literal.size()));
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingUTF8);
  options.set_log_errors(false);
  m->re_ = std::make_unique<re2::RE2>(
      re2::StringPiece(m->translated_.data(), m->translated_.size()), options);
  if (!m->re_->ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot compile literal '", Sv(literal), "': ", m->re_->error()));
  }
  return m;
}

void RegexMatcher::FindAll(std::string_view text, std::vector<ByteRange>& out) const {
  if (!literal_.empty()) {
    for (size_t at = text.find(literal_); at != std::string_view::npos;
         at = text.find(literal_, at + literal_.size())) {
      out.push_back({at, at + literal_.size()});
    }
    return;
  }
  const re2::StringPiece input(text.data(), text.size());
  const int nsub = whitespace_group_ >= 0 ? whitespace_group_ + 1 : 1;
  std::vector<re2::StringPiece> groups(static_cast<size_t>(nsub));
  re2::StringPiece whole;
  size_t pos = 0;
  while (pos < text.size()) {
    // Find the match bounds with one submatch (the DFA alone), then ask for the whitespace group
    // only when the match is whitespace-only: most matches are not.
    if (!re_->Match(input, pos, text.size(), RE2::UNANCHORED, &whole, 1)) break;
    size_t begin = static_cast<size_t>(whole.data() - text.data());
    size_t end = begin + whole.size();
    if (end == begin) {  // empty match: step over one character
      if (begin >= text.size()) break;
      pos = begin + utf8::CharLength(static_cast<unsigned char>(text[begin]));
      continue;
    }
    if (whitespace_group_ >= 0) {
      bool all_space = true;
      size_t last_char = begin;
      size_t chars = 0;
      for (size_t p = begin; p < end;) {
        char32_t cp = 0;
        const size_t len = utf8::Decode(text, p, &cp);
        if (!IsUnicodeWhitespace(cp)) {
          all_space = false;
          break;
        }
        last_char = p;
        ++chars;
        p += len;
      }
      if (all_space && chars >= 2 && end < text.size() &&
          re_->Match(input, begin, end, RE2::ANCHOR_BOTH, groups.data(), nsub) &&
          groups[static_cast<size_t>(whitespace_group_)].data() != nullptr) {
        // `\s+(?!\S)` backtracks one character so that the next token keeps its leading space.
        end = last_char;
      }
    }
    out.push_back({begin, end});
    pos = end;
  }
}

absl::StatusOr<std::unique_ptr<RegexMatcher>> ParsePattern(const json_util::Json& spec,
                                                           std::string_view path) {
  if (const json_util::Json* s = json_util::Find(spec, "String"); s != nullptr && s->is_string()) {
    const auto& literal = s->get_ref<const std::string&>();
    if (literal.empty())
      return json_util::Expected(json_util::Child(path, "String"), "a non-empty string");
    return RegexMatcher::CreateLiteral(literal);
  }
  if (const json_util::Json* r = json_util::Find(spec, "Regex"); r != nullptr && r->is_string()) {
    auto m = RegexMatcher::Create(r->get_ref<const std::string&>());
    if (!m.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(json_util::Child(path, "Regex"), ": ", m.status().message()));
    }
    return m;
  }
  return json_util::Expected(path, "{\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace headroom::router
