// RegexMatcher: vLLM's guided_regex (structured_outputs.regex): the output's text must match a
// regular expression as a whole (Python's re.fullmatch). The pattern is JsonRegex's ECMA-262
// subset compiled for a full match (json_regex.h, which lists what is refused); the text is read
// one byte at a time as UTF-8, so a token may end inside a character.
//
// Prefix-exact: a byte is accepted exactly when the text plus it can still be finished into a
// match, so a request whose every token was chosen from JsonAllowedTokens never dead-ends (unless
// the vocabulary lacks the bytes a match needs). A copyable value (one per token tried): the
// automaton's states and a UTF-8 reader, 48 bytes.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_regex.h"
#include "worker/engine/utf8_reader.h"

namespace headroom::worker {

// A guided regex compiled for RegexMatcher: JsonRegex::Compile with Anchoring::kFullMatch, and
// a pattern that matches no string at all (`[]`, `a[]`) refused, as it would dead-end at once.
// InvalidArgument with the reason.
absl::StatusOr<JsonRegex> CompileGuidedRegex(std::string_view pattern);

class RegexMatcher {
 public:
  // `regex` (from CompileGuidedRegex) must outlive the matcher.
  explicit RegexMatcher(const JsonRegex* regex) : regex_(regex), states_(regex->start()) {}

  [[nodiscard]] bool Feed(uint8_t byte);
  [[nodiscard]] bool Feed(std::string_view bytes);

  // The text so far matches: the engine may offer EOS.
  [[nodiscard]] bool CanEnd() const {
    return utf8_.BetweenCharacters() && regex_->Accepts(states_);
  }
  // The text matches and no character can follow: the request is done.
  [[nodiscard]] bool Complete() const;
  // For JsonAllowedTokens: a regex has no free string text to skip trying.
  [[nodiscard]] bool AtStringText() const { return false; }
  // Not inside a character split across tokens.
  [[nodiscard]] bool BetweenCharacters() const { return utf8_.BetweenCharacters(); }

  // Matchers of the same regex in the same state accept the same bytes from here on.
  friend bool operator==(const RegexMatcher& a, const RegexMatcher& b) {
    return a.regex_ == b.regex_ && a.states_ == b.states_ && a.utf8_ == b.utf8_;
  }
  template <typename H>
  friend H AbslHashValue(H h, const RegexMatcher& m) {
    return H::combine(std::move(h), m.regex_, std::hash<JsonRegex::States>()(m.states_),
                      m.utf8_.Packed());
  }

 private:
  const JsonRegex* regex_;
  JsonRegex::States states_;
  Utf8Reader utf8_;
};

extern template void JsonAllowedTokens<RegexMatcher>(const RegexMatcher&, const JsonVocabulary&,
                                                     std::vector<int32_t>*);

}  // namespace headroom::worker
