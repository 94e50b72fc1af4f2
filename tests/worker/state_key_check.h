// Checks a matcher's AppendStateKey, on which TokenMaskCache serves one state's token list to
// another: prefixes whose matchers have the same key must accept the same bytes from there on.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace headroom::worker::testdata {

template <typename Matcher>
std::string StateKey(const Matcher& matcher) {
  std::string key;
  matcher.AppendStateKey(&key);
  return key;
}

// `a` and `b` have the same key: along `continuation` (bytes `a` accepts), both accept exactly the
// same bytes at every point, end alike, and keep equal keys.
template <typename Matcher>
void ExpectSameFuture(Matcher a, Matcher b, const std::string& continuation,
                      const std::string& where) {
  for (size_t i = 0;; ++i) {
    const std::string at = where + " + " + continuation.substr(0, i);
    ASSERT_EQ(StateKey(a), StateKey(b)) << at;
    ASSERT_EQ(a.Complete(), b.Complete()) << at;
    if constexpr (requires { a.CanEnd(); }) {
      ASSERT_EQ(a.CanEnd(), b.CanEnd()) << at;
    }
    for (int byte = 0; byte < 256; ++byte) {
      Matcher x = a;
      Matcher y = b;
      ASSERT_EQ(x.Feed(static_cast<uint8_t>(byte)), y.Feed(static_cast<uint8_t>(byte)))
          << at << " then byte " << byte;
    }
    if (i == continuation.size()) return;
    const auto c = static_cast<uint8_t>(continuation[i]);
    if (!a.Feed(c)) return;
    ASSERT_TRUE(b.Feed(c)) << at;
  }
}

// Reads every prefix of each of `texts` with a fresh matcher from `make()`, groups the prefixes by
// key, and checks that within each group the prefixes agree (ExpectSameFuture, along the next
// `horizon` bytes of the group's first text; at most `per_group` members). Returns how many
// prefixes shared a key with an earlier one (the hits a cache would have had).
template <typename Matcher, typename Make>
int CheckStateKeys(const std::vector<std::string>& texts, Make make, size_t horizon = 16,
                   size_t per_group = 3) {
  struct Seen {
    Matcher matcher;
    std::string where;
    std::string rest;  // what followed in its text
  };
  std::map<std::string, std::vector<Seen>> groups;
  int shared = 0;
  for (const std::string& text : texts) {
    Matcher matcher = make();
    for (size_t i = 0;; ++i) {
      std::vector<Seen>& group = groups[StateKey(matcher)];
      if (!group.empty()) ++shared;
      if (group.size() < per_group) {
        group.push_back({matcher, text.substr(0, i), text.substr(i, horizon)});
      }
      if (i == text.size() || !matcher.Feed(static_cast<uint8_t>(text[i]))) break;
    }
  }
  for (const auto& [key, group] : groups) {
    for (size_t m = 1; m < group.size(); ++m) {
      ExpectSameFuture(group[0].matcher, group[m].matcher, group[0].rest,
                       "'" + group[0].where + "' vs '" + group[m].where + "'");
      if (::testing::Test::HasFatalFailure()) return shared;
    }
  }
  return shared;
}

}  // namespace headroom::worker::testdata
