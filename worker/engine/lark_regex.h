// What a Lark grammar's terminals are written with, as EBNF text for EbnfGrammar (lark_grammar.h):
// sets of code points, literal text, and /regex/ terminals in Python's `re` syntax (Lark's).
//
// The regex subset: literals, `.` (any character but "\n"; any with the `s` flag), classes
// `[a-z]` / `[^...]` with ranges and escapes, \d \D \w \W \s \S (ASCII: `\w` is [A-Za-z0-9_],
// where Python's str patterns also take other scripts' letters and digits), \n \t \r \f \v \a \0
// \xHH \uHHHH \UHHHHHHHH and escaped punctuation, groups `(...)` `(?:...)` `(?P<name>...)`,
// flag groups `(?i)` `(?s)` `(?i:...)`, alternation `|`, quantifiers `* + ? {m} {m,} {,n} {m,n}`
// (a lazy `?` after one is dropped: it changes which match a search finds, not what matches).
// Refused with the reason: anchors, lookaround, backreferences, word boundaries, possessive
// quantifiers, the verbose flag, groups nested deeper than kMaxLarkNesting. A token is matched
// whole, so anchors have nothing to anchor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::worker {

// Deepest nesting of groups in a Lark grammar's expansions or in one of its regexes (the readers
// recurse into each; the EBNF they become nests deeper still, EbnfGrammar::kMaxGroupDepth).
inline constexpr int kMaxLarkNesting = 64;

// Code points as sorted, disjoint, non-adjacent ranges [lo, hi].
using CodePointSet = std::vector<std::pair<uint32_t, uint32_t>>;

// `ranges` (any order, overlapping) made a CodePointSet.
CodePointSet NormalizedSet(CodePointSet ranges);
// With the other case of every ASCII letter in it.
CodePointSet WithBothCases(const CodePointSet& set);

// An EBNF element matching one code point of `set` (not empty); surrogates, which are no
// characters, are left out.
std::string EbnfClass(const CodePointSet& set);
// An EBNF element matching `text` (UTF-8) exactly, or with `ignore_case` each ASCII letter in
// either case. Empty text is "".
std::string EbnfLiteral(std::string_view text, bool ignore_case);

// Python's \xHH, \uHHHH and \UHHHHHHHH (`letter` x, u or U): reads the escape's hex digits from
// `text` at *pos; false where they are too few or write no character (past U+10FFFF).
[[nodiscard]] bool ReadHexEscape(std::string_view text, char letter, size_t* pos,
                                 uint32_t* code_point);

struct RegexFlags {
  bool ignore_case = false;  // i
  bool dot_all = false;      // s
};

// A regex in the subset above as one EBNF element (parenthesized). InvalidArgument with the
// reason; `*error_offset` is then where in `pattern` it was found.
absl::StatusOr<std::string> RegexToEbnf(std::string_view pattern, RegexFlags flags,
                                        size_t* error_offset);

}  // namespace headroom::worker
