#include "worker/engine/regex_tokens.h"

#include <algorithm>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "worker/engine/utf8_reader.h"

namespace headroom::worker {
namespace {

// Class ids are written two bytes each into a signature string.
constexpr size_t kMaxClasses = 65535;

// The class ids of `bytes`' characters as a signature, or false when `bytes` is not whole UTF-8
// characters.
bool Signature(std::string_view bytes, const JsonRegex::Classes& classes, std::string* out) {
  out->clear();
  Utf8Reader reader;
  for (const char c : bytes) {
    switch (reader.Feed(static_cast<uint8_t>(c))) {
      case Utf8Reader::Step::kRefused:
        return false;
      case Utf8Reader::Step::kPartial:
        continue;
      case Utf8Reader::Step::kCharacter:
        break;
    }
    const auto run = static_cast<size_t>(
        std::upper_bound(classes.starts.begin(), classes.starts.end(), reader.code_point()) -
        classes.starts.begin() - 1);
    const auto id = static_cast<uint32_t>(classes.class_of[run]);
    out->push_back(static_cast<char>(id & 0xFF));
    out->push_back(static_cast<char>(id >> 8));
  }
  return reader.BetweenCharacters();
}

}  // namespace

RegexTokenClasses::RegexTokenClasses(const JsonRegex& regex, const JsonVocabulary& vocabulary) {
  const JsonRegex::Classes classes = regex.CharacterClasses();
  const std::vector<std::string>& tokens = vocabulary.token_bytes();
  absl::flat_hash_map<std::string, size_t> group_of;
  std::string signature;
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty()) continue;  // never allowed (special tokens)
    if (static_cast<size_t>(classes.count) > kMaxClasses ||
        !Signature(tokens[id], classes, &signature)) {
      others_[static_cast<uint8_t>(tokens[id][0])].push_back(static_cast<int32_t>(id));
      continue;
    }
    const auto [it, added] = group_of.try_emplace(signature, groups_.size());
    if (added) groups_.push_back({.representative = static_cast<int32_t>(id), .ids = {}});
    groups_[it->second].ids.push_back(static_cast<int32_t>(id));
  }
}

void RegexAllowedTokens(const RegexMatcher& matcher, const RegexTokenClasses& classes,
                        const JsonVocabulary& vocabulary, std::vector<int32_t>* allowed) {
  if (!matcher.BetweenCharacters()) {
    // The next byte continues a character: the classes of whole characters do not apply.
    JsonAllowedTokens(matcher, vocabulary, allowed);
    return;
  }
  allowed->clear();
  const std::vector<std::string>& tokens = vocabulary.token_bytes();
  for (const RegexTokenClasses::Group& group : classes.groups()) {
    RegexMatcher next = matcher;
    if (next.Feed(tokens[static_cast<size_t>(group.representative)])) {
      allowed->insert(allowed->end(), group.ids.begin(), group.ids.end());
    }
  }
  // A refused first byte rules out every token that starts with it.
  for (int byte = 0; byte < 256; ++byte) {
    const std::vector<int32_t>& others = classes.others(static_cast<uint8_t>(byte));
    if (others.empty()) continue;
    RegexMatcher after_first = matcher;
    if (!after_first.Feed(static_cast<uint8_t>(byte))) continue;
    for (const int32_t id : others) {
      RegexMatcher next = after_first;
      if (next.Feed(std::string_view(tokens[static_cast<size_t>(id)]).substr(1))) {
        allowed->push_back(id);
      }
    }
  }
}

}  // namespace headroom::worker
