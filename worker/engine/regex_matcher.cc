#include "worker/engine/regex_matcher.h"

namespace headroom::worker {

absl::StatusOr<JsonRegex> CompileGuidedRegex(std::string_view pattern) {
  absl::StatusOr<JsonRegex> regex = JsonRegex::Compile(pattern, JsonRegex::Anchoring::kFullMatch);
  if (regex.ok() && regex->start().none()) {
    return absl::InvalidArgumentError("the pattern matches no string");
  }
  return regex;
}

bool RegexMatcher::Feed(uint8_t byte) {
  switch (utf8_.Feed(byte)) {
    case Utf8Reader::Step::kRefused:
      return false;
    case Utf8Reader::Step::kPartial: {
      // Accepted only when some character this one can still become continues the match.
      Utf8Reader::Range ranges[2];
      const int n = utf8_.PossibleCodePoints(ranges);
      for (int i = 0; i < n; ++i) {
        if (regex_->Continues(states_, ranges[i].lo, ranges[i].hi)) return true;
      }
      return false;
    }
    case Utf8Reader::Step::kCharacter:
      break;
  }
  states_ = regex_->Step(states_, utf8_.code_point());
  return states_.any();
}

bool RegexMatcher::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (!Feed(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool RegexMatcher::Complete() const {
  return CanEnd() && !regex_->Continues(states_, 0, 0xD7FF) &&
         !regex_->Continues(states_, 0xE000, 0x10FFFF);
}

template void JsonAllowedTokens<RegexMatcher>(const RegexMatcher&, const JsonVocabulary&,
                                              std::vector<int32_t>*);

}  // namespace headroom::worker
