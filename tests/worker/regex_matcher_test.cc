// RegexMatcher (vLLM's guided_regex) against Python's re.fullmatch as the reference of what a
// pattern matches: tests/worker/fixtures/regex_cases.json (scripts/gen_regex_fixtures.py) labels
// each pattern's examples and random mutations of them. Random walks through the token index
// never dead-end and end in text the C library's POSIX regexec (another implementation) fully
// matches; a character
// split across tokens is followed; refused patterns say why.
#include "worker/engine/regex_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/worker/fixtures.h"
#include "tests/worker/posix_regex.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_regex.h"
#include "worker/engine/regex_tokens.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

JsonRegex MustCompile(const std::string& pattern) {
  absl::StatusOr<JsonRegex> regex = CompileGuidedRegex(pattern);
  EXPECT_TRUE(regex.ok()) << pattern << ": " << regex.status();
  return regex.ok() ? *std::move(regex) : JsonRegex();
}

// Fed one byte at a time, `text` is read whole and may end there.
bool MatchesByteByByte(const JsonRegex& regex, std::string_view text) {
  RegexMatcher matcher(&regex);
  for (const char c : text) {
    if (!matcher.Feed(static_cast<uint8_t>(c))) return false;
  }
  return matcher.CanEnd();
}

TEST(RegexMatcherTest, MatchesExactlyWhatPythonsFullmatchMatches) {
  std::ifstream in(testdata::FixtureDir("regex_cases.json"));
  ASSERT_TRUE(in.good()) << "missing fixture regex_cases.json";
  int matches = 0;
  int strings = 0;
  const Json fixture = Json::parse(in);
  for (const Json& p : fixture["patterns"]) {
    const auto pattern = p["pattern"].get<std::string>();
    const JsonRegex regex = MustCompile(pattern);
    for (const Json& s : p["strings"]) {
      const auto text = s["text"].get<std::string>();
      const bool match = s["match"].get<bool>();
      EXPECT_EQ(regex.Matches(text), match) << pattern << " on " << s["text"].dump();
      EXPECT_EQ(MatchesByteByByte(regex, text), match) << pattern << " on " << s["text"].dump();
      if (match) {
        // Prefix-exact: no byte of a matching text is refused on the way.
        RegexMatcher matcher(&regex);
        for (size_t i = 0; i < text.size(); ++i) {
          ASSERT_TRUE(matcher.Feed(static_cast<uint8_t>(text[i])))
              << pattern << " refused byte " << i << " of " << s["text"].dump();
        }
      }
      matches += match ? 1 : 0;
      ++strings;
    }
  }
  EXPECT_GT(matches, 80);
  EXPECT_GT(strings - matches, 600);
}

// The search form of a pattern (JSON Schema's) still matches anywhere; the full form does not.
TEST(RegexMatcherTest, FullMatchAnchorsBothEnds) {
  const absl::StatusOr<JsonRegex> search = JsonRegex::Compile("b+");
  ASSERT_TRUE(search.ok());
  EXPECT_TRUE(search->Matches("abbc"));
  const JsonRegex full = MustCompile("b+");
  EXPECT_FALSE(full.Matches("abbc"));
  EXPECT_TRUE(full.Matches("bb"));
  EXPECT_TRUE(MustCompile("^b+$").Matches("bb"));
}

// A token may end inside a character: the lead byte is taken only when a character it starts
// can continue the match, and the rest completes it in the next token.
TEST(RegexMatcherTest, FollowsACharacterSplitAcrossTokens) {
  const JsonRegex regex = MustCompile("[😀-😂]é");
  RegexMatcher matcher(&regex);
  EXPECT_TRUE(matcher.Feed(std::string_view("\xF0\x9F")));
  EXPECT_FALSE(matcher.CanEnd()) << "inside a character";
  RegexMatcher wrong = matcher;
  EXPECT_FALSE(wrong.Feed(std::string_view("\x98\x83"))) << "U+1F603 is outside the class";
  EXPECT_TRUE(matcher.Feed(std::string_view("\x98\x81\xC3")));
  EXPECT_FALSE(matcher.Complete());
  EXPECT_TRUE(matcher.Feed(0xA9));
  EXPECT_TRUE(matcher.Complete());
  EXPECT_FALSE(matcher.Feed('x')) << "nothing follows a complete match";

  // Not UTF-8: an overlong form, a surrogate, a lone continuation byte.
  const JsonRegex any = MustCompile(".*");
  for (const std::string_view bad : {"\xC0\x80", "\xED\xA0\x80", "\x80"}) {
    EXPECT_FALSE(RegexMatcher(&any).Feed(bad))
        << Json(std::string(bad)).dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  // A lead byte whose characters the pattern cannot take is refused at once.
  const JsonRegex ascii = MustCompile("[a-z]*");
  EXPECT_FALSE(RegexMatcher(&ascii).Feed(0xC3));
}

// CanEnd: the text matches; Complete: and nothing may follow (the engine stops the request).
TEST(RegexMatcherTest, KnowsWhereTheOutputMayAndMustEnd) {
  const JsonRegex regex = MustCompile("ab?");
  RegexMatcher matcher(&regex);
  EXPECT_FALSE(matcher.CanEnd());
  ASSERT_TRUE(matcher.Feed('a'));
  EXPECT_TRUE(matcher.CanEnd());
  EXPECT_FALSE(matcher.Complete()) << "b may follow";
  ASSERT_TRUE(matcher.Feed('b'));
  EXPECT_TRUE(matcher.Complete());

  const JsonRegex empty = MustCompile("x*");
  EXPECT_TRUE(RegexMatcher(&empty).CanEnd());
  EXPECT_FALSE(RegexMatcher(&empty).Complete());
}

// The vocabulary of `text`'s pieces: single bytes plus some multi-byte tokens, UTF-8 split.
JsonVocabulary TestVocabulary() {
  std::vector<std::string> tokens = {
      "",    "555",   "-1",   "23",       "yes",      "no",   "maybe", "ye",  "Neg", "ative",
      "@ex", "ample", ".com", "\xF0\x9F", "\x98\x80", "\xC3", "\xA9",  " wo", "rld", "."};
  for (int b = 1; b < 128; ++b) tokens.emplace_back(1, static_cast<char>(b));
  return JsonVocabulary(std::move(tokens));
}

// Random walks: take a random allowed token until the matcher is complete (or, where it may
// end, stop at random); every walk ends in a text the pattern's POSIX ERE spelling fully
// matches, and no step finds nothing allowed.
TEST(RegexMatcherTest, RandomWalksThroughTheTokenIndexEndInMatches) {
  ASSERT_TRUE(testdata::PosixFullMatch("[0-9]{3}", "123"));  // the oracle itself
  ASSERT_FALSE(testdata::PosixFullMatch("[0-9]{3}", "1234"));
  const JsonVocabulary vocabulary = TestVocabulary();
  std::mt19937 rng(7);
  // Each pattern and its POSIX ERE spelling.
  const std::vector<std::pair<std::string, std::string>> patterns = {
      {R"(\d{3}-\d{3}-\d{4})", "[0-9]{3}-[0-9]{3}-[0-9]{4}"},
      {"(yes|no|maybe)", "(yes|no|maybe)"},
      {R"([a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4})", R"([a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4})"},
      {R"(((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?))",
       R"(((25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?))"},
      {R"(-?(0|[1-9]\d*)(\.\d+)?)", R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?)"},
      {R"(\w+( \w+)*\.)", R"([A-Za-z0-9_]+( [A-Za-z0-9_]+)*\.)"},
      {"(Positive|Negative|Neutral)", "(Positive|Negative|Neutral)"},
      {R"(Answer: [A-D]\n)", "Answer: [A-D]\n"},  // ERE: a raw newline
  };
  std::vector<int32_t> allowed;
  for (const auto& [pattern, ere] : patterns) {
    const JsonRegex regex = MustCompile(pattern);
    for (int walk = 0; walk < 50; ++walk) {
      RegexMatcher matcher(&regex);
      std::string text;
      for (int step = 0; step < 64 && !matcher.Complete(); ++step) {
        if (matcher.CanEnd() && rng() % 4 == 0) break;
        JsonAllowedTokens(matcher, vocabulary, &allowed);
        ASSERT_FALSE(allowed.empty()) << pattern << " dead-ended after " << text;
        const int32_t id = allowed[rng() % allowed.size()];
        const std::string& bytes = vocabulary.token_bytes()[static_cast<size_t>(id)];
        ASSERT_TRUE(matcher.Feed(bytes)) << pattern << ": the index offered " << bytes;
        text += bytes;
      }
      if (!matcher.CanEnd()) continue;  // cut at 64 tokens (an unbounded repeat)
      EXPECT_TRUE(testdata::PosixFullMatch(ere, text)) << pattern << " produced " << text;
    }
  }
}

// The cache gives each state's list as computed, computes it once per state, and starts over
// when its lists would pass the bound.
TEST(RegexMatcherTest, MaskCacheComputesEachStateOnce) {
  const JsonVocabulary vocabulary = TestVocabulary();
  const JsonRegex regex = MustCompile(R"([a-z ]+(\.|!))");
  const auto compute_for = [&](const RegexMatcher& m) {
    return [&vocabulary, m](std::vector<int32_t>* list) { JsonAllowedTokens(m, vocabulary, list); };
  };
  RegexMaskCache cache;
  std::vector<RegexMatcher> seen;
  std::mt19937 rng(11);
  RegexMatcher matcher(&regex);
  std::vector<int32_t> direct;
  for (int step = 0; step < 40 && !matcher.Complete(); ++step) {
    const std::vector<int32_t> cached = cache.Get(matcher, compute_for(matcher))->SortedIds();
    JsonAllowedTokens(matcher, vocabulary, &direct);
    std::sort(direct.begin(), direct.end());
    ASSERT_EQ(cached, direct) << "step " << step;
    if (std::find(seen.begin(), seen.end(), matcher) == seen.end()) seen.push_back(matcher);
    // Mostly text, so the walk stays in the same state.
    const int32_t id = step < 30 ? direct[rng() % direct.size()] : '.';
    ASSERT_TRUE(matcher.Feed(vocabulary.token_bytes()[static_cast<size_t>(id)]));
  }
  EXPECT_TRUE(matcher.Complete());
  EXPECT_EQ(cache.misses(), static_cast<int64_t>(seen.size()));
  EXPECT_LE(seen.size(), 3u) << "before any text, in text, after a space";

  // A bound below two lists: each new state starts over, a repeated one is still a hit.
  RegexMaskCache small(AllowedTokens(direct).bytes() + RegexMaskCache::kEntryBytes + 1);
  RegexMatcher start(&regex);
  RegexMatcher after = start;
  ASSERT_TRUE(after.Feed('a'));
  const RegexMaskCache::List first = small.Get(start, compute_for(start));
  EXPECT_EQ(small.Get(start, compute_for(start)), first) << "the same list, not a copy";
  EXPECT_EQ(small.misses(), 1);
  const std::vector<int32_t> held = first->SortedIds();
  small.Get(after, compute_for(after));
  EXPECT_EQ(small.misses(), 2);
  EXPECT_EQ(first->SortedIds(), held) << "a list held through a start-over stays whole";
  EXPECT_EQ(small.Get(start, compute_for(start))->SortedIds(), held)
      << "recomputed after the start-over";
  EXPECT_EQ(small.misses(), 3);
}

// Grouping tokens by character classes gives the token index's answer in every state of random
// walks (between characters and inside one split across tokens), with fewer tries: one per class
// sequence.
TEST(RegexMatcherTest, ClassGroupsGiveTheSameTokensAsTryingEachOne) {
  std::vector<std::string> tokens = TestVocabulary().token_bytes();
  for (const char* word : {" the", " cat", " Dog", "ing", "  ", ". ", ",", "'s", "42", "é", "😀"}) {
    tokens.emplace_back(word);
  }
  const JsonVocabulary vocabulary(std::move(tokens));
  std::mt19937 rng(5);
  std::vector<int32_t> by_groups;
  std::vector<int32_t> each;
  for (const std::string pattern : {R"([A-Za-z ,']+\.)", R"(\d{3}-\d{4})", "(yes|no|maybe)",
                                    "[😀-😂]+é? [a-z]*", R"([^aeiou]{2,6}!)", ".{0,12}x"}) {
    const JsonRegex regex = MustCompile(pattern);
    const RegexTokenClasses classes(regex, vocabulary);
    size_t grouped = 0;
    for (const auto& group : classes.groups()) grouped += group.ids.size();
    EXPECT_LT(classes.groups().size(), grouped) << pattern << ": some tokens share a sequence";
    for (int walk = 0; walk < 20; ++walk) {
      RegexMatcher matcher(&regex);
      for (int step = 0; step < 24 && !matcher.Complete(); ++step) {
        RegexAllowedTokens(matcher, classes, vocabulary, &by_groups);
        JsonAllowedTokens(matcher, vocabulary, &each);
        std::sort(by_groups.begin(), by_groups.end());
        std::sort(each.begin(), each.end());
        ASSERT_EQ(by_groups, each) << pattern << " at step " << step;
        if (each.empty()) break;
        const int32_t id = each[rng() % each.size()];
        ASSERT_TRUE(matcher.Feed(vocabulary.token_bytes()[static_cast<size_t>(id)]));
      }
    }
  }
}

// UTF-16 escapes: a surrogate pair is the character it writes (as JSON reads it); a lone
// surrogate, which no UTF-8 text holds, matches nothing, so it neither leaves a dead end after
// "ab" nor lets a pattern of it through.
TEST(RegexMatcherTest, SurrogateEscapesAreCharactersOrNothing) {
  EXPECT_TRUE(MustCompile(R"(\uD83D\uDE00+)").Matches("😀😀"));
  EXPECT_TRUE(MustCompile(R"([\uD83D\uDE00-\uD83D\uDE02]x)").Matches("😁x"));
  EXPECT_FALSE(MustCompile(R"([\uD83D\uDE00-\uD83D\uDE02]x)").Matches("😃x"));
  const JsonRegex either = MustCompile(R"(ab|ab\uDC00c)");
  RegexMatcher matcher(&either);
  ASSERT_TRUE(matcher.Feed(std::string_view("ab")));
  EXPECT_TRUE(matcher.Complete()) << "the branch through a lone surrogate is dead";
  for (const char* pattern : {R"(\uDC00)", R"(a\uD800b)", R"([\uD800-\uDFFF]+)"}) {
    EXPECT_EQ(CompileGuidedRegex(pattern).status().message(), "the pattern matches no string")
        << pattern;
  }
}

TEST(RegexMatcherTest, RefusedPatternsSayWhy) {
  const auto error = [](const std::string& pattern) {
    return std::string(CompileGuidedRegex(pattern).status().message());
  };
  EXPECT_EQ(error("a[]b"), "the pattern matches no string");
  EXPECT_EQ(error("(?=a)b"), "lookahead is not supported");
  EXPECT_EQ(error("(a)\\1"), "backreferences are not supported");
  EXPECT_EQ(error("a{5,2}"), "{5,2}: the bounds are reversed");
  EXPECT_EQ(error("[a-z]{300}"), "the pattern needs more than 256 automaton states");
  EXPECT_EQ(error(std::string(20000, '(') + "a" + std::string(20000, ')')),
            "groups nest more than 100 levels deep");
}

// A pattern's text must be well-formed UTF-8 (RFC 3629). A byte sequence that decodes leniently
// to a code point no UTF-8 text can spell used to compile into a matcher with nothing to accept
// (found by fuzz/json_schema_fuzz.cc: `\xFD\x9D\x83\x9F`).
TEST(RegexMatcherTest, PatternsThatAreNotWellFormedUtf8AreRefused) {
  for (const std::string& bad : {std::string("\xFD\x9D\x83\x9F"),  // lead byte above 0xF4
                                 std::string("\xF4\x90\x80\x80"),  // above U+10FFFF
                                 std::string("\xC0\x80"),          // overlong NUL
                                 std::string("\xE0\x80\x80"),      // overlong
                                 std::string("\xED\xA0\x80"),      // a surrogate
                                 std::string("a\xFF"
                                             "b"),
                                 std::string("\xE2\x82")}) {
    const absl::StatusOr<JsonRegex> regex = CompileGuidedRegex(bad);
    EXPECT_EQ(regex.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(regex.status().message().find("not valid UTF-8"), std::string::npos)
        << regex.status();
  }
  // Well-formed patterns at the edges of the ranges, each with a text it matches.
  for (const auto& [pattern, text] : std::vector<std::pair<std::string, std::string>>{
           {"\xC3\xA9+", "\xC3\xA9\xC3\xA9"},         // U+00E9, repeated
           {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},  // U+1F600
           {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},  // U+10FFFF, the last code point
           {"\xEF\xBF\xBD", "\xEF\xBF\xBD"}}) {       // U+FFFD
    const absl::StatusOr<JsonRegex> regex = CompileGuidedRegex(pattern);
    ASSERT_TRUE(regex.ok()) << regex.status();
    RegexMatcher matcher(&*regex);
    for (const char c : text) EXPECT_TRUE(matcher.Feed(static_cast<uint8_t>(c))) << pattern;
    EXPECT_TRUE(matcher.CanEnd()) << pattern;
  }
}

}  // namespace
}  // namespace headroom::worker
