// The token lists of a guided regex (regex_matcher.h), made cheaper than trying every token:
//
// RegexTokenClasses: the automaton tells code points apart only by class (JsonRegex::
// CharacterClasses; for `[A-Za-z ,']+\.`: letters, the space, the comma, the apostrophe, the dot
// and the rest), so two tokens whose characters fall in the same classes one for one (" the" and
// " cat") are accepted from the same states. Tokens are grouped by that class sequence once per
// pattern, and a step tries one token per group: a real 128k vocabulary has ~1k-5k sequences.
// Tokens that are not whole UTF-8 characters (byte-level pieces of one) are tried one by one, as
// is every token while the output ends inside a character.
//
// RegexMaskCache: each state's list, computed once per pattern (SharedGuidedRegex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_regex.h"
#include "worker/engine/regex_matcher.h"
#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {

class RegexTokenClasses {
 public:
  // One class sequence: its tokens, and one of them to try for all.
  struct Group {
    int32_t representative = -1;
    std::vector<int32_t> ids;
  };

  RegexTokenClasses(const JsonRegex& regex, const JsonVocabulary& vocabulary);

  [[nodiscard]] const std::vector<Group>& groups() const { return groups_; }
  // Tokens that are not whole characters, by first byte: tried one by one after their first byte.
  // (Empty tokens are in no list.)
  [[nodiscard]] const std::vector<int32_t>& others(uint8_t first_byte) const {
    return others_[first_byte];
  }

 private:
  std::vector<Group> groups_;
  std::vector<std::vector<int32_t>> others_ = std::vector<std::vector<int32_t>>(256);
};

// Writes to `allowed` (cleared first, in no particular order) every token id whose bytes `matcher`
// accepts whole: JsonAllowedTokens's answer, one try per group (`classes` built for the matcher's
// regex and `vocabulary`).
void RegexAllowedTokens(const RegexMatcher& matcher, const RegexTokenClasses& classes,
                        const JsonVocabulary& vocabulary, std::vector<int32_t>* allowed);

// The tokens a regex allows in each state it has been in. A regex has few states (its automaton's
// state set and a partial character), and free text stays in the same one step after step.
using RegexMaskCache = TokenMaskCache<RegexMatcher>;

// A guided regex as the engine keeps it for all the requests that give the pattern: compiled,
// the vocabulary grouped by its classes, and each state's token list once computed (the engine
// thread's: not thread-safe).
struct SharedGuidedRegex {
  SharedGuidedRegex(JsonRegex compiled, const JsonVocabulary& vocabulary)
      : regex(std::move(compiled)), classes(regex, vocabulary) {}

  JsonRegex regex;
  RegexTokenClasses classes;
  RegexMaskCache masks;
};

}  // namespace headroom::worker
