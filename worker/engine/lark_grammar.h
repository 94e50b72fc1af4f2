// Lark grammars for vLLM's guided_grammar (structured_outputs.grammar): vLLM reads a grammar that
// has no `::=` line as Lark (the syntax of Python's Lark parser, which llguidance also reads) and
// converts it; headroom translates it to EBNF (ebnf_grammar.h) and compiles that.
//
// The subset (docs/engine.md, "Guided grammar"): definitions `name: expansions` (rules,
// lowercase) and `NAME: expansions` (terminals, uppercase), with the `?` / `!` prefixes and
// `.priority` suffixes accepted and ignored; alternatives `|`, also at the start of the next
// line; "strings" (Python escapes, the `i` flag), 'strings', "a".."z" ranges, /regex/ with the
// flags i and s (lark_regex.h), ( groups ), [optional] parts, `* + ?`, `~n`, `~n..m`, `{n,m}`,
// `-> alias` (ignored: it names a tree node); `%import common.NAME` (also `-> NEW` and
// `common (A, B)`) for the terminals of Lark's common.lark; `%ignore` items (whitespace,
// comments), which may then appear before every token of a rule and at the end of the text.
// Comments `//` and `#`. The text is matched as a whole, by the Earley matcher, character by
// character: the language of Lark's Earley parser with lexer="dynamic_complete".
// The start is the rule `start`, or else the first definition (as vLLM's converter picks it).
// Refused with the line and column: templates, %declare / %override / %extend, imports from
// other files, a reference to an undefined name, a terminal that uses a rule, duplicates.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "worker/engine/ebnf_grammar.h"

namespace headroom::worker {

// vLLM's test: no line, comments (`#`, `//`) cut off, holds "::=".
[[nodiscard]] bool LooksLikeLark(std::string_view grammar);

// The grammar as EBNF; InvalidArgument "Lark grammar error at line L, column C: <reason>".
absl::StatusOr<std::string> LarkToEbnf(std::string_view lark);

// A request's grammar: EBNF, or Lark (LooksLikeLark) translated first.
absl::StatusOr<std::shared_ptr<const EbnfGrammar>> CompileGuidedGrammar(std::string_view text);

}  // namespace headroom::worker
