// EbnfGrammar: vLLM's guided_grammar (structured_outputs.grammar) as xgrammar, vLLM's default
// backend, reads it: EBNF in xgrammar's dialect, which is llama.cpp's GBNF with repetition
// ranges. Compiled to a context-free grammar over bytes for GrammarMatcher (grammar_matcher.h).
//
// The dialect (docs/engine.md, "Guided grammar"):
//   root   ::= value ("," value)*        # a rule; `root` is where a text starts
//   value  ::= [0-9]+ | "\"" [^"\\]* "\"" | "(" value ")"
// Rules are `name ::= expression`; a name (letters, digits, `_`, `-`, `.`, not starting with a
// digit) starts its line. Elements: "literals" (escapes \n \r \t \b \f \a \v \0 \e \" \\ \/ \'
// \?, \xH..., \uHHHH, \UHHHHHHHH), [classes] of code points (ranges, `^` negation, `[^]` any
// character), rule references, ( groups ), sequences, `|` alternatives, and `* + ? {m} {m,}
// {m,n}` repetition. `#` comments run to the end of the line. Refused with the line and column:
// xgrammar's macros (Regex(...), TagDispatch(...)), rule options (`name[lazy] ::=`), lookahead
// assertions, undefined or duplicate rules, no `root`, groups nested deeper than kMaxGroupDepth.
//
// Compiled form: classes become their UTF-8 byte sequences (surrogates and bytes that are no
// part of a valid character never match), literals their bytes, repetition and groups helper
// rules (left-recursive lists, so the matcher's chart stays constant per repeated element). A
// rule that derives no text at all is dropped with every alternative that needs it; a grammar
// whose root derives none is refused.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::worker {

class EbnfGrammar {
 public:
  // Largest grammar accepted, in rule positions after repetition is expanded (`[a-z]{1000}` is
  // about a thousand).
  static constexpr int32_t kMaxPositions = 1 << 16;
  // Deepest nesting of ( groups ): parsing and compiling recurse into each, and a thread's stack
  // is not to be spent by a request's text.
  static constexpr int kMaxGroupDepth = 256;
  // A symbol at a position: a rule (>= 0), a set of bytes (kTerminal - index), or the end of an
  // alternative (kEnd).
  static constexpr int32_t kEnd = INT32_MIN;
  static constexpr int32_t kTerminal = -1;

  // InvalidArgument "EBNF parser error at line L, column C: <reason>" for text that does not
  // parse, or with the reason for a grammar that cannot be used.
  static absl::StatusOr<std::shared_ptr<const EbnfGrammar>> Compile(std::string_view ebnf);

  // What a grammar is made of (built by Compile).
  struct Tables {
    std::vector<int32_t> symbols;  // per position
    std::vector<int32_t> lhs;      // per position: the rule the alternative belongs to
    std::vector<std::vector<int32_t>> alternatives;  // per rule: its alternatives' first positions
    std::vector<uint8_t> nullable;                   // per rule: derives the empty text
    std::vector<std::bitset<256>> terminals;
    int32_t root = 0;
  };
  explicit EbnfGrammar(Tables tables) : t_(std::move(tables)) {}

  // The alternatives are laid end to end: an alternative of rule A with symbols X Y is the
  // positions p (before X), p + 1 (before Y) and p + 2 (kEnd), each with lhs A. An item of the
  // matcher is a position and where its rule started.
  [[nodiscard]] int32_t symbol(int32_t position) const {
    return t_.symbols[static_cast<size_t>(position)];
  }
  [[nodiscard]] int32_t lhs(int32_t position) const {
    return t_.lhs[static_cast<size_t>(position)];
  }
  // The first positions of `rule`'s alternatives.
  [[nodiscard]] const std::vector<int32_t>& alternatives(int32_t rule) const {
    return t_.alternatives[static_cast<size_t>(rule)];
  }
  [[nodiscard]] bool nullable(int32_t rule) const {
    return t_.nullable[static_cast<size_t>(rule)] != 0;
  }
  [[nodiscard]] static bool IsTerminal(int32_t symbol) { return symbol < 0 && symbol != kEnd; }
  [[nodiscard]] const std::bitset<256>& bytes(int32_t terminal_symbol) const {
    return t_.terminals[static_cast<size_t>(kTerminal - terminal_symbol)];
  }
  [[nodiscard]] const std::vector<std::bitset<256>>& terminals() const { return t_.terminals; }
  [[nodiscard]] int32_t root() const { return t_.root; }
  [[nodiscard]] int32_t num_positions() const { return static_cast<int32_t>(t_.symbols.size()); }
  [[nodiscard]] int32_t num_rules() const { return static_cast<int32_t>(t_.alternatives.size()); }

 private:
  Tables t_;
};

}  // namespace headroom::worker
