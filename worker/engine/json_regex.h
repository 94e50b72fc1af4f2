// JsonRegex: a JSON Schema `pattern` compiled to an NFA over Unicode code points, matched one
// character at a time inside a string for constrained decoding (json_schema.h).
//
// Syntax: the ECMA-262 subset schemas use: literals, `.` (any character but line terminators),
// classes `[a-z]` / `[^...]`, escapes \d \D \w \W \s \S \t \n \r \f \v \0 \xHH \uHHHH \u{H...} and
// escaped punctuation, groups `(...)` `(?:...)` `(?<name>...)`, alternation `|`, quantifiers
// `*` `+` `?` `{n}` `{n,}` `{n,m}` (lazy `?` accepted: it does not change what matches), and `^` /
// `$` at the start / end of a top-level alternative. Refused with the reason: lookaround,
// backreferences, word boundaries, anchors elsewhere, and patterns of more than kMaxStates states.
//
// As in JSON Schema, a pattern matches anywhere in the string unless anchored (`a` matches "xax");
// compiled for a full match (vLLM's guided_regex, Python's re.fullmatch) it must match all of it.
//
// Prefix-exact: States are kept to the states from which the end of a match can still be reached,
// so a set that is not empty always has a way to a match.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::worker {

class JsonRegex {
 public:
  static constexpr int kMaxStates = 256;
  using States = std::bitset<kMaxStates>;

  enum class Anchoring : uint8_t {
    kSearch,     // the pattern may match anywhere in the string (JSON Schema's `pattern`)
    kFullMatch,  // the pattern must match the whole string
  };
  // InvalidArgument with the reason ("lookahead is not supported", "unbalanced ')'").
  static absl::StatusOr<JsonRegex> Compile(std::string_view pattern,
                                           Anchoring anchoring = Anchoring::kSearch);

  // Before the first character (empty: the pattern matches no string).
  [[nodiscard]] const States& start() const { return start_; }
  // The states after `code_point` (empty: no match continues this way).
  [[nodiscard]] States Step(const States& states, uint32_t code_point) const;
  // Some code point in [lo, hi] continues a match.
  [[nodiscard]] bool Continues(const States& states, uint32_t lo, uint32_t hi) const;
  // The string may end here.
  [[nodiscard]] bool Accepts(const States& states) const {
    return states.test(static_cast<size_t>(accept_));
  }

  // Whole-string match of `text` (UTF-8), for tests.
  [[nodiscard]] bool Matches(std::string_view text) const;

  // The code points split into the classes no edge of the automaton tells apart (two code points
  // of one class lead from every state set to the same one): the code points in runs
  // [starts[i], starts[i + 1]) (the last to U+10FFFF), starts[0] = 0, each run in class
  // class_of[i]. Runs inside the same edges share a class ([A-Z] and [a-z] when every edge that
  // takes one takes the other), so classes are as few as the automaton allows.
  struct Classes {
    std::vector<uint32_t> starts;
    std::vector<int32_t> class_of;
    int32_t count = 0;
  };
  [[nodiscard]] Classes CharacterClasses() const;

 private:
  friend class JsonRegexBuilder;
  struct Edge {
    uint32_t lo = 0;
    uint32_t hi = 0;
    int32_t to = -1;
  };

  // Per state: its character edges to live states, and its epsilon closure (live states only).
  std::vector<std::vector<Edge>> edges_;
  std::vector<States> closure_;
  States start_;
  int32_t accept_ = 0;
};

// Appends `states` to a state key (TokenMaskCache), 64 bits at a time.
inline void AppendStatesKey(std::string* key, const JsonRegex::States& states) {
  constexpr JsonRegex::States kWord(~uint64_t{0});
  for (int shift = 0; shift < JsonRegex::kMaxStates; shift += 64) {
    const uint64_t word = ((states >> static_cast<size_t>(shift)) & kWord).to_ullong();
    key->append(reinterpret_cast<const char*>(&word), sizeof word);
  }
}

}  // namespace headroom::worker
