#include "worker/engine/json_regex.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace headroom::worker {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int32_t kMaxRepeat = 1000;
// Groups nested deeper are refused: the parser and the automaton builder recurse per level.
constexpr int kMaxGroupDepth = 100;

struct Range {
  uint32_t lo = 0;
  uint32_t hi = 0;
};
// Sorted, disjoint, not adjacent.
using Set = std::vector<Range>;

Set Normalize(Set set) {
  std::sort(set.begin(), set.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  Set out;
  for (const Range& r : set) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

Set Complement(const Set& set) {
  Set out;
  uint32_t next = 0;
  for (const Range& r : Normalize(set)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

const Set& Digits() {
  static const Set set = {{'0', '9'}};
  return set;
}
const Set& WordCharacters() {
  static const Set set = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  return set;
}
// ECMA-262 WhiteSpace and LineTerminator.
const Set& Spaces() {
  static const Set set = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                          {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                          {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
  return set;
}
// `.`: anything but a line terminator.
const Set& Dot() {
  static const Set set = Complement({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}});
  return set;
}

// Decodes UTF-8 into code points; false on anything but well-formed UTF-8 (RFC 3629: no lead
// byte above 0xF4, no overlong form, no surrogate, nothing above U+10FFFF). A pattern from JSON
// is well formed; a code point no UTF-8 text can spell would leave the matcher nothing to accept.
bool Decode(std::string_view text, std::vector<uint32_t>* out) {
  static constexpr uint32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};  // by length
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<uint8_t>(text[i]);
    const int length = b < 0x80    ? 1
                       : b >= 0xF5 ? 0
                       : b >= 0xF0 ? 4
                       : b >= 0xE0 ? 3
                       : b >= 0xC2 ? 2
                                   : 0;
    if (length == 0 || i + static_cast<size_t>(length) > text.size()) return false;
    uint32_t cp = length == 1 ? b : b & (0x7Fu >> length);
    for (int k = 1; k < length; ++k) {
      const auto c = static_cast<uint8_t>(text[i + static_cast<size_t>(k)]);
      if ((c & 0xC0) != 0x80) return false;
      cp = cp << 6 | (c & 0x3Fu);
    }
    if (cp < kSmallest[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    out->push_back(cp);
    i += static_cast<size_t>(length);
  }
  return true;
}

struct Ast {
  enum class Kind : uint8_t { kEmpty, kSet, kConcat, kAlt, kRepeat };
  Kind kind = Kind::kEmpty;
  Set set{};
  std::vector<Ast> kids{};
  int32_t min = 0;
  int32_t max = 0;  // kRepeat; -1: unbounded
};

// A set's surrogates (U+D800-DFFF) removed: no UTF-8 text has them, so an edge on them would
// look live to the automaton while no character could take it.
Set WithoutSurrogates(Set set) {
  Set out;
  for (const Range& r : set) {
    if (r.lo < 0xD800) out.push_back({r.lo, std::min<uint32_t>(r.hi, 0xD7FF)});
    if (r.hi > 0xDFFF) out.push_back({std::max<uint32_t>(r.lo, 0xE000), r.hi});
  }
  return out;
}

Ast SetAst(Set set) {
  return Ast{.kind = Ast::Kind::kSet, .set = WithoutSurrogates(Normalize(std::move(set)))};
}
Ast AnyString() {
  return Ast{
      .kind = Ast::Kind::kRepeat, .kids = {SetAst({{0, kMaxCodePoint}})}, .min = 0, .max = -1};
}

absl::Status Bad(std::string_view message) {
  return absl::InvalidArgumentError(std::string(message));
}

class Parser {
 public:
  Parser(std::vector<uint32_t> pattern, JsonRegex::Anchoring anchoring)
      : p_(std::move(pattern)), anchoring_(anchoring) {}

  absl::StatusOr<Ast> Parse() {
    HR_ASSIGN_OR_RETURN(Ast ast, Alternation(0));
    if (i_ < p_.size()) return Bad("unbalanced ')'");
    return ast;
  }

 private:
  bool At(uint32_t c) const { return i_ < p_.size() && p_[i_] == c; }
  bool AtSequence(std::u32string_view s) const {
    for (size_t k = 0; k < s.size(); ++k) {
      if (i_ + k >= p_.size() || p_[i_ + k] != s[k]) return false;
    }
    return true;
  }

  absl::StatusOr<Ast> Alternation(int depth) {
    Ast alt{.kind = Ast::Kind::kAlt};
    while (true) {
      HR_ASSIGN_OR_RETURN(Ast branch, Concatenation(depth));
      alt.kids.push_back(std::move(branch));
      if (!At('|')) break;
      ++i_;
    }
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  // One alternative; at the top level `^` may open it and `$` close it, and an unanchored side
  // matches anything (a pattern matches anywhere in the string) unless the whole string must
  // match (kFullMatch).
  absl::StatusOr<Ast> Concatenation(int depth) {
    Ast seq{.kind = Ast::Kind::kConcat};
    bool anchored_start = false;
    bool anchored_end = false;
    if (At('^')) {
      if (depth > 0) return Bad("^ is supported only at the start of the pattern");
      anchored_start = true;
      ++i_;
    }
    while (i_ < p_.size() && !At('|') && !At(')')) {
      if (At('$')) {
        ++i_;
        if (depth > 0 || (i_ < p_.size() && !At('|'))) {
          return Bad("$ is supported only at the end of the pattern");
        }
        anchored_end = true;
        break;
      }
      if (At('^')) return Bad("^ is supported only at the start of the pattern");
      HR_ASSIGN_OR_RETURN(Ast atom, Repetition(depth));
      seq.kids.push_back(std::move(atom));
    }
    if (depth == 0 && anchoring_ == JsonRegex::Anchoring::kSearch) {
      if (!anchored_start) seq.kids.insert(seq.kids.begin(), AnyString());
      if (!anchored_end) seq.kids.push_back(AnyString());
    }
    return seq;
  }

  absl::StatusOr<Ast> Repetition(int depth) {
    HR_ASSIGN_OR_RETURN(Ast atom, Atom(depth));
    int32_t min = -1;
    int32_t max = -1;
    if (At('*')) {
      min = 0;
    } else if (At('+')) {
      min = 1;
    } else if (At('?')) {
      min = 0;
      max = 1;
    } else if (At('{')) {
      const size_t save = i_;
      ++i_;
      const int32_t n = Number();
      if (n >= 0 && At('}')) {
        min = max = n;
      } else if (n >= 0 && At(',')) {
        ++i_;
        const int32_t m = At('}') ? -1 : Number();
        if (At('}') && (m == -1 || m >= 0)) {
          min = n;
          max = m;
          if (m >= 0 && m < n)
            return Bad(absl::StrCat("{", n, ",", m, "}: the bounds are reversed"));
        }
      }
      if (min < 0) {
        i_ = save;  // not a quantifier: a literal '{' (ECMA-262 Annex B)
        return atom;
      }
      if (min > kMaxRepeat || max > kMaxRepeat) {
        return Bad(absl::StrCat("a repeat count above ", kMaxRepeat, " is not supported"));
      }
    } else {
      return atom;
    }
    ++i_;
    if (At('?')) ++i_;  // lazy: the same strings match
    if (At('*') || At('+') || At('?') || At('{')) return Bad("nothing to repeat");
    return Ast{.kind = Ast::Kind::kRepeat, .kids = {std::move(atom)}, .min = min, .max = max};
  }

  // Decimal digits (-1: none).
  int32_t Number() {
    int64_t n = -1;
    while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9') {
      n = std::min<int64_t>((n < 0 ? 0 : n) * 10 + (p_[i_] - '0'), 1'000'000);
      ++i_;
    }
    return static_cast<int32_t>(n);
  }

  absl::StatusOr<Ast> Atom(int depth) {
    const uint32_t c = p_[i_++];
    switch (c) {
      case '(': {
        if (AtSequence(U"?=") || AtSequence(U"?!")) return Bad("lookahead is not supported");
        if (AtSequence(U"?<=") || AtSequence(U"?<!")) return Bad("lookbehind is not supported");
        if (AtSequence(U"?:")) {
          i_ += 2;
        } else if (AtSequence(U"?<")) {
          while (i_ < p_.size() && p_[i_] != '>') ++i_;
          if (i_ == p_.size()) return Bad("unterminated group name");
          ++i_;
        } else if (At('?')) {
          return Bad("(? modifiers are not supported");
        }
        if (depth >= kMaxGroupDepth) {
          return Bad(absl::StrCat("groups nest more than ", kMaxGroupDepth, " levels deep"));
        }
        HR_ASSIGN_OR_RETURN(Ast inner, Alternation(depth + 1));
        if (!At(')')) return Bad("unbalanced '('");
        ++i_;
        return inner;
      }
      case ')':
        return Bad("unbalanced ')'");
      case '[':
        return Class();
      case '.':
        return SetAst(Dot());
      case '*':
      case '+':
      case '?':
        return Bad("nothing to repeat");
      case '\\': {
        HR_ASSIGN_OR_RETURN(Set set, Escape(/*in_class=*/false));
        return SetAst(std::move(set));
      }
      default:
        return SetAst({{c, c}});
    }
  }

  absl::StatusOr<Ast> Class() {
    const bool negated = At('^');
    if (negated) ++i_;
    Set set;
    while (!At(']')) {
      if (i_ >= p_.size()) return Bad("unterminated character class");
      HR_ASSIGN_OR_RETURN(Set lo, ClassAtom());
      if (At('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        HR_ASSIGN_OR_RETURN(Set hi, ClassAtom());
        if (lo.size() != 1 || hi.size() != 1 || lo[0].lo != lo[0].hi || hi[0].lo != hi[0].hi) {
          return Bad("a class range needs single characters at both ends");
        }
        if (hi[0].lo < lo[0].lo) return Bad("a class range is out of order");
        set.push_back({lo[0].lo, hi[0].lo});
      } else {
        set.insert(set.end(), lo.begin(), lo.end());
      }
    }
    ++i_;
    return SetAst(negated ? Complement(set) : std::move(set));
  }

  absl::StatusOr<Set> ClassAtom() {
    const uint32_t c = p_[i_++];
    if (c == '\\') return Escape(/*in_class=*/true);
    return Set{{c, c}};
  }

  // After a backslash.
  absl::StatusOr<Set> Escape(bool in_class) {
    if (i_ >= p_.size()) return Bad("a pattern cannot end with \\");
    const uint32_t c = p_[i_++];
    const auto one = [](uint32_t cp) { return Set{{cp, cp}}; };
    switch (c) {
      case 'd':
        return Digits();
      case 'D':
        return Complement(Digits());
      case 'w':
        return WordCharacters();
      case 'W':
        return Complement(WordCharacters());
      case 's':
        return Spaces();
      case 'S':
        return Complement(Spaces());
      case 't':
        return one(0x09);
      case 'n':
        return one(0x0A);
      case 'v':
        return one(0x0B);
      case 'f':
        return one(0x0C);
      case 'r':
        return one(0x0D);
      case '0':
        if (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9') {
          return Bad("octal escapes are not supported");
        }
        return one(0);
      case 'b':
        if (in_class) return one(0x08);
        return Bad("word boundaries (\\b) are not supported");
      case 'B':
        return Bad("word boundaries (\\B) are not supported");
      case 'x':
        return Hex(2, 2);
      case 'u':
        if (At('{')) {
          ++i_;
          HR_ASSIGN_OR_RETURN(Set cp, Hex(1, 6));
          if (!At('}')) return Bad("unterminated \\u{...}");
          ++i_;
          return cp;
        }
        return Utf16Escape();
      default:
        break;
    }
    if (c >= '1' && c <= '9') return Bad("backreferences are not supported");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      return Bad(
          absl::StrCat("the escape \\", std::string(1, static_cast<char>(c)), " is not supported"));
    }
    return one(c);  // escaped punctuation (or any other character) stands for itself
  }

  // \uXXXX after the "\u": a high surrogate followed by \u and a low one is the character the
  // pair writes (as JSON and ECMA-262's unicode mode read it); a lone surrogate matches nothing.
  absl::StatusOr<Set> Utf16Escape() {
    HR_ASSIGN_OR_RETURN(Set unit, Hex(4, 4));
    const uint32_t high = unit[0].lo;
    if (high < 0xD800 || high > 0xDBFF || !AtSequence(U"\\u")) return unit;
    const size_t save = i_;
    i_ += 2;
    const absl::StatusOr<Set> low = Hex(4, 4);
    if (!low.ok() || (*low)[0].lo < 0xDC00 || (*low)[0].lo > 0xDFFF) {
      i_ = save;  // not a pair: the next escape stands alone
      return unit;
    }
    const uint32_t cp = 0x10000 + ((high - 0xD800) << 10) + ((*low)[0].lo - 0xDC00);
    return Set{{cp, cp}};
  }

  absl::StatusOr<Set> Hex(int min_digits, int max_digits) {
    uint32_t value = 0;
    int digits = 0;
    while (digits < max_digits && i_ < p_.size()) {
      const uint32_t c = p_[i_];
      const int d = c >= '0' && c <= '9'   ? static_cast<int>(c - '0')
                    : c >= 'a' && c <= 'f' ? static_cast<int>(c - 'a' + 10)
                    : c >= 'A' && c <= 'F' ? static_cast<int>(c - 'A' + 10)
                                           : -1;
      if (d < 0) break;
      value = value * 16 + static_cast<uint32_t>(d);
      ++digits;
      ++i_;
    }
    if (digits < min_digits || value > kMaxCodePoint) return Bad("a bad hex escape");
    return Set{{value, value}};
  }

  std::vector<uint32_t> p_;
  JsonRegex::Anchoring anchoring_;
  size_t i_ = 0;
};

}  // namespace

// Thompson's construction, then the states that cannot reach the end are dropped.
class JsonRegexBuilder {
 public:
  explicit JsonRegexBuilder(JsonRegex& out) : out_(out) {}

  absl::Status Run(const Ast& ast) {
    HR_ASSIGN_OR_RETURN(const Fragment whole, Make(ast));
    const size_t n = edges_.size();
    // Epsilon closures.
    std::vector<JsonRegex::States> closure(n);
    for (size_t s = 0; s < n; ++s) {
      std::vector<int32_t> stack = {static_cast<int32_t>(s)};
      closure[s].set(s);
      while (!stack.empty()) {
        const int32_t at = stack.back();
        stack.pop_back();
        for (const int32_t to : epsilon_[static_cast<size_t>(at)]) {
          if (!closure[s].test(static_cast<size_t>(to))) {
            closure[s].set(static_cast<size_t>(to));
            stack.push_back(to);
          }
        }
      }
    }
    // Live: the states from which the end can be reached.
    JsonRegex::States live;
    live.set(static_cast<size_t>(whole.end));
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t s = 0; s < n; ++s) {
        if (live.test(s)) continue;
        bool reaches = (closure[s] & live).any();
        for (const JsonRegex::Edge& e : edges_[s])
          reaches = reaches || live.test(static_cast<size_t>(e.to));
        if (reaches) {
          live.set(s);
          changed = true;
        }
      }
    }
    out_.edges_.assign(n, {});
    out_.closure_.assign(n, {});
    for (size_t s = 0; s < n; ++s) {
      out_.closure_[s] = closure[s] & live;
      for (const JsonRegex::Edge& e : edges_[s]) {
        if (live.test(static_cast<size_t>(e.to))) out_.edges_[s].push_back(e);
      }
    }
    out_.accept_ = whole.end;
    out_.start_ = out_.closure_[static_cast<size_t>(whole.start)];
    return absl::OkStatus();
  }

 private:
  struct Fragment {
    int32_t start = -1;
    int32_t end = -1;
  };

  absl::StatusOr<int32_t> NewState() {
    if (edges_.size() >= JsonRegex::kMaxStates) {
      return Bad(
          absl::StrCat("the pattern needs more than ", JsonRegex::kMaxStates, " automaton states"));
    }
    edges_.emplace_back();
    epsilon_.emplace_back();
    return static_cast<int32_t>(edges_.size() - 1);
  }
  void Epsilon(int32_t from, int32_t to) { epsilon_[static_cast<size_t>(from)].push_back(to); }

  absl::StatusOr<Fragment> Make(const Ast& ast) {
    switch (ast.kind) {
      case Ast::Kind::kEmpty: {
        HR_ASSIGN_OR_RETURN(const int32_t s, NewState());
        return Fragment{s, s};
      }
      case Ast::Kind::kSet: {
        HR_ASSIGN_OR_RETURN(const int32_t s, NewState());
        HR_ASSIGN_OR_RETURN(const int32_t e, NewState());
        for (const Range& r : ast.set) edges_[static_cast<size_t>(s)].push_back({r.lo, r.hi, e});
        return Fragment{s, e};
      }
      case Ast::Kind::kConcat: {
        if (ast.kids.empty()) return Make(Ast{});
        HR_ASSIGN_OR_RETURN(Fragment whole, Make(ast.kids[0]));
        for (size_t i = 1; i < ast.kids.size(); ++i) {
          HR_ASSIGN_OR_RETURN(const Fragment next, Make(ast.kids[i]));
          Epsilon(whole.end, next.start);
          whole.end = next.end;
        }
        return whole;
      }
      case Ast::Kind::kAlt: {
        HR_ASSIGN_OR_RETURN(const int32_t s, NewState());
        HR_ASSIGN_OR_RETURN(const int32_t e, NewState());
        for (const Ast& kid : ast.kids) {
          HR_ASSIGN_OR_RETURN(const Fragment branch, Make(kid));
          Epsilon(s, branch.start);
          Epsilon(branch.end, e);
        }
        return Fragment{s, e};
      }
      case Ast::Kind::kRepeat: {
        const Ast& kid = ast.kids[0];
        HR_ASSIGN_OR_RETURN(Fragment whole, Make(ast.min > 0 ? kid : Ast{}));
        for (int32_t i = 1; i < ast.min; ++i) {
          HR_ASSIGN_OR_RETURN(const Fragment copy, Make(kid));
          Epsilon(whole.end, copy.start);
          whole.end = copy.end;
        }
        if (ast.max < 0) {  // kid*
          HR_ASSIGN_OR_RETURN(const Fragment loop, Make(kid));
          HR_ASSIGN_OR_RETURN(const int32_t e, NewState());
          Epsilon(whole.end, loop.start);
          Epsilon(whole.end, e);
          Epsilon(loop.end, loop.start);
          Epsilon(loop.end, e);
          whole.end = e;
        } else {  // up to max - min more, each optional
          HR_ASSIGN_OR_RETURN(const int32_t e, NewState());
          for (int32_t i = ast.min; i < ast.max; ++i) {
            HR_ASSIGN_OR_RETURN(const Fragment copy, Make(kid));
            Epsilon(whole.end, copy.start);
            Epsilon(whole.end, e);
            whole.end = copy.end;
          }
          Epsilon(whole.end, e);
          whole.end = e;
        }
        return whole;
      }
    }
    return Bad("unreachable");
  }

  JsonRegex& out_;
  std::vector<std::vector<JsonRegex::Edge>> edges_;
  std::vector<std::vector<int32_t>> epsilon_;
};

absl::StatusOr<JsonRegex> JsonRegex::Compile(std::string_view pattern, Anchoring anchoring) {
  std::vector<uint32_t> code_points;
  if (!Decode(pattern, &code_points)) return Bad("the pattern is not valid UTF-8");
  HR_ASSIGN_OR_RETURN(const Ast ast, Parser(std::move(code_points), anchoring).Parse());
  JsonRegex regex;
  HR_RETURN_IF_ERROR(JsonRegexBuilder(regex).Run(ast));
  return regex;
}

JsonRegex::States JsonRegex::Step(const States& states, uint32_t code_point) const {
  States next;
  for (size_t s = states._Find_first(); s < kMaxStates; s = states._Find_next(s)) {
    for (const Edge& e : edges_[s]) {
      if (code_point >= e.lo && code_point <= e.hi) next |= closure_[static_cast<size_t>(e.to)];
    }
  }
  return next;
}

bool JsonRegex::Continues(const States& states, uint32_t lo, uint32_t hi) const {
  for (size_t s = states._Find_first(); s < kMaxStates; s = states._Find_next(s)) {
    for (const Edge& e : edges_[s]) {
      if (e.lo <= hi && lo <= e.hi) return true;
    }
  }
  return false;
}

JsonRegex::Classes JsonRegex::CharacterClasses() const {
  // Sweep over the code points: a transition (a state and where it goes) enters the active set
  // at an edge's lo and leaves after its hi; between two such points the active set, so the
  // class, is constant. Code points with the same transitions from every state are one class.
  struct Event {
    uint32_t at = 0;
    int32_t edge = 0;  // the transition's id
    bool enters = false;
  };
  std::vector<Event> events;
  absl::flat_hash_map<std::pair<size_t, int32_t>, int32_t> transition_ids;
  for (size_t from = 0; from < edges_.size(); ++from) {
    for (const Edge& e : edges_[from]) {
      const int32_t id =
          transition_ids.try_emplace({from, e.to}, static_cast<int32_t>(transition_ids.size()))
              .first->second;
      events.push_back({.at = e.lo, .edge = id, .enters = true});
      if (e.hi < kMaxCodePoint) events.push_back({.at = e.hi + 1, .edge = id});
    }
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.at < b.at; });
  Classes out;
  absl::flat_hash_map<std::vector<int32_t>, int32_t> class_of_edges;
  std::vector<int32_t> active;  // sorted; a transition may be in twice (overlapping edges)
  std::vector<int32_t> key;
  const auto add_run = [&](uint32_t start) {
    key = active;
    key.erase(std::unique(key.begin(), key.end()), key.end());
    const auto [it, added] = class_of_edges.try_emplace(key, out.count);
    if (added) ++out.count;
    out.starts.push_back(start);
    out.class_of.push_back(it->second);
  };
  size_t i = 0;
  if (events.empty() || events[0].at > 0) add_run(0);
  while (i < events.size()) {
    const uint32_t at = events[i].at;
    for (; i < events.size() && events[i].at == at; ++i) {
      const auto pos = std::lower_bound(active.begin(), active.end(), events[i].edge);
      if (events[i].enters) {
        active.insert(pos, events[i].edge);
      } else {
        active.erase(pos);
      }
    }
    add_run(at);
  }
  return out;
}

bool JsonRegex::Matches(std::string_view text) const {
  std::vector<uint32_t> code_points;
  if (!Decode(text, &code_points)) return false;
  States states = start_;
  for (const uint32_t cp : code_points) {
    if (states.none()) return false;
    states = Step(states, cp);
  }
  return Accepts(states);
}

}  // namespace headroom::worker
