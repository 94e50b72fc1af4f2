// JsonMatcher against nlohmann::json as the reference of what JSON is. On mutated documents:
// every prefix the matcher accepts has a continuation (found through the matcher) that nlohmann
// parses, so a constrained generation never reaches a dead end; the first byte it refuses leaves a
// prefix that none of a set of common endings makes into JSON. Whole documents are accepted to
// their end. The matcher's own limits (depth, whitespace runs, object-only) and the surrogate
// rules are checked by hand.
#include "worker/engine/json_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/worker/json_text.h"
#include "tests/worker/state_key_check.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;
using testdata::Parses;

// A continuation that makes `matcher` (which read `text`) complete, found greedily over bytes
// that close things first; nlohmann checks it. Empty optional when none is found in 256 bytes.
std::optional<std::string> Completion(const std::string& text, JsonMatcher matcher) {
  static const std::string kOrder = "\"}]:0DC\\uraels\x80\xA0\x90";
  std::string suffix;
  for (int step = 0; step < 256; ++step) {
    if (Parses(text + suffix)) return suffix;
    bool moved = false;
    for (const char byte : kOrder) {
      JsonMatcher next = matcher;
      if (!next.Feed(static_cast<uint8_t>(byte))) continue;
      matcher = next;
      suffix.push_back(byte);
      moved = true;
      break;
    }
    if (!moved) return std::nullopt;
  }
  return std::nullopt;
}

// Some endings that finish common prefixes; a refused prefix must not parse with any of them.
const std::vector<std::string> kEndings = {
    "",      "\"",  "0",     "}",     "]",      "\"}",      "\"]",        "0}",  "0]",
    "ull",   "rue", "alse",  "e",     "l",      "ll",       "ue",         "lse", "se",
    "\":0}", ":0}", "\"\"}", "\"\"]", "0\"}",   "\"k\":0}", "\x80\"}",    "}]",  "]}",
    "0}]",   "0]}", "\"}]",  "\"]}",  "\":0}]", "000\"}",   "\x80\x80\"}"};

// A random JSON value without the letter d (so no mutation can make a surrogate escape, where
// nlohmann decides only after the fourth hex digit and the matcher earlier) and without deep
// nesting or long whitespace runs (the matcher's own limits).
Json RandomValue(std::mt19937_64& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth >= 4 ? 5 : 7);
  const std::vector<std::string> words = {"a",    "bc",           "\xC3\xA9t\xC3\xA9",
                                          "x\ny", "\xE2\x82\xAC", "\xF0\x9F\x99\x82",
                                          "q\"t", "s/l\\",        ""};
  switch (kind(rng)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng() % 2001) - 1000;
    case 3:
      return static_cast<double>(rng() % 100000) / 64.0 - 700.0;
    case 4:
    case 5:
      return words[rng() % words.size()];
    case 6: {
      Json array = Json::array();
      for (size_t i = rng() % 4; i > 0; --i) array.push_back(RandomValue(rng, depth + 1));
      return array;
    }
    default: {
      Json object = Json::object();
      for (size_t i = rng() % 4; i > 0; --i) {
        object[words[rng() % words.size()] + std::to_string(i)] = RandomValue(rng, depth + 1);
      }
      return object;
    }
  }
}

TEST(JsonMatcherTest, AcceptsExactlyThePrefixesNlohmannReads) {
  std::mt19937_64 rng(20261123);
  // Bytes a mutation inserts or writes: JSON's structure, escapes, number parts, letters of the
  // literals, UTF-8 leads and continuations (valid and not), a control character.
  const std::string alphabet =
      "{}[]:,\"\\/ \n\tbfnrtu0123456789-+.eEalsx\x01\x1F\x7F\xC3\xA9\xE2\x82\xAC\xF0\x9F\x99\xED"
      "\xA0\x80\xC0\xFF";
  int compared = 0, refused = 0;
  for (int doc = 0; doc < 2000; ++doc) {
    // Mostly containers (so the mutations meet structure), sometimes a bare value.
    Json value = RandomValue(rng, 0);
    if (doc % 8 != 0)
      value = rng() % 2 == 0 ? Json{{"k", value}, {"l", RandomValue(rng, 1)}}
                             : Json::array({value, RandomValue(rng, 1)});
    std::string text = value.dump(rng() % 2 == 0 ? -1 : 2);
    for (int m = static_cast<int>(rng() % 4); m > 0 && !text.empty(); --m) {
      const size_t at = rng() % text.size();
      const char byte = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          text[at] = byte;
          break;
        case 1:
          text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), byte);
          break;
        default:
          text.erase(at, 1);
      }
    }
    JsonMatcher matcher(JsonMatcher::Options{.object_only = false});
    for (size_t i = 0; i < text.size(); ++i) {
      const std::string prefix = text.substr(0, i + 1);
      const bool accepted = matcher.Feed(static_cast<uint8_t>(text[i]));
      ++compared;
      if (!accepted) {
        ++refused;
        for (const std::string& ending : kEndings) {
          ASSERT_FALSE(Parses(prefix + ending)) << "refused a prefix that JSON continues: "
                                                << Json(prefix + ending).dump(-1, ' ', true);
        }
        break;
      }
      // Accepted: some JSON document starts with it, and the matcher leads there.
      const std::optional<std::string> completion = Completion(prefix, matcher);
      ASSERT_TRUE(completion.has_value())
          << "no completion of an accepted prefix: " << Json(prefix).dump(-1, ' ', true);
      if (matcher.Complete()) break;  // nothing follows a whole value (nlohmann allows spaces)
    }
  }
  EXPECT_GT(refused, 1000) << "the mutations should break many documents";
  EXPECT_GT(compared, 30000);
}

TEST(JsonMatcherTest, WholeDocumentsAreReadToTheirEnd) {
  std::mt19937_64 rng(7);
  for (int doc = 0; doc < 300; ++doc) {
    Json value = RandomValue(rng, 0);
    if (!value.is_object()) value = Json{{"v", value}};
    const std::string text = value.dump(doc % 2 == 0 ? -1 : 2);
    JsonMatcher matcher;
    ASSERT_TRUE(matcher.Feed(text)) << text;
    EXPECT_TRUE(matcher.Complete()) << text;
  }
}

bool Reads(std::string_view text, JsonMatcher::Options options = {}) {
  JsonMatcher matcher(options);
  return matcher.Feed(text);
}

TEST(JsonMatcherTest, ObjectOnlyWantsAnObjectAndCompletesWhenItCloses) {
  EXPECT_FALSE(Reads("[1]"));
  EXPECT_FALSE(Reads("\"a\""));
  EXPECT_TRUE(Reads("  {"));
  JsonMatcher matcher;
  ASSERT_TRUE(matcher.Feed(R"({"a": [1, {"b": null}], "c": "\u00e9"})"));
  EXPECT_TRUE(matcher.Complete());
  EXPECT_FALSE(matcher.Feed(' ')) << "nothing after the value, not even whitespace";
  JsonMatcher open;
  ASSERT_TRUE(open.Feed(R"({"a": 1)"));
  EXPECT_FALSE(open.Complete());
}

TEST(JsonMatcherTest, StringsRefuseControlCharactersAndBadUtf8) {
  EXPECT_FALSE(Reads("{\"a\": \"\x1F"));
  EXPECT_FALSE(Reads("{\"a\": \"\n"));
  EXPECT_TRUE(Reads("{\"a\": \"\\n\xC3\xA9\xE2\x82\xAC\xF0\x9F\x99\x82\x7F\""));
  EXPECT_FALSE(Reads("{\"a\": \"\xC0\x80")) << "overlong";
  EXPECT_FALSE(Reads("{\"a\": \"\xED\xA0")) << "a surrogate in UTF-8";
  EXPECT_FALSE(Reads("{\"a\": \"\xF4\x90")) << "past U+10FFFF";
  EXPECT_FALSE(Reads("{\"a\": \"\xE2\x82\"")) << "a sequence cut short";
}

TEST(JsonMatcherTest, SurrogateEscapesComeInPairs) {
  EXPECT_TRUE(Reads(R"({"a": "\ud83d\ude42"})"));
  EXPECT_FALSE(Reads(R"({"a": "\udE)")) << "a low surrogate alone";
  EXPECT_FALSE(Reads(R"({"a": "\ud83dx)")) << "a high surrogate not followed by a low one";
  EXPECT_FALSE(Reads(R"({"a": "\ud83d\u00)")) << "the second must be a low surrogate";
  EXPECT_TRUE(Reads(R"({"a": "\ud83d\udc)"));
}

TEST(JsonMatcherTest, DepthAndWhitespaceRunsAreBounded) {
  const JsonMatcher::Options shallow{.object_only = false, .max_depth = 3, .max_whitespace = 4};
  EXPECT_TRUE(Reads("[[[", shallow));
  EXPECT_FALSE(Reads("[[[[", shallow));
  EXPECT_TRUE(Reads("[    1,    2", shallow));
  EXPECT_FALSE(Reads("[     1", shallow));
  EXPECT_TRUE(Reads("[\"     \"", shallow)) << "spaces inside a string are text";
}

// JsonAllowedTokens (which skips tokens by first byte and allows string text untried) gives
// exactly the tokens a copy of the matcher accepts whole, in every state met along random
// documents, over a vocabulary of every byte, tricky tokens (escapes, split UTF-8, quotes with
// structure) and random strings of JSON's bytes.
TEST(JsonMatcherTest, AllowedTokensAreExactlyThoseTheMatcherAccepts) {
  std::mt19937_64 rng(99);
  std::vector<std::string> tokens = {"",         "\",\"",    "\\u", "\\ud83d", "\\ude42", "\\n",
                                     "\xE2\x82", "\x82\xAC", " \"", "\":",     "}}",      "true",
                                     "e+1",      "\"}",      "ing", " the",    "\\",      "\\\"",
                                     "0.5",      "-",        "[\"", "\u00e9",  "\x80",    "nul"};
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  const std::string alphabet = "{}[]:,\"\\ \nabcdefnrtu0123456789-+.eE\xC3\xA9\xE2\x82\xAC\xED";
  for (int i = 0; i < 3000; ++i) {
    std::string token;
    for (size_t n = 1 + rng() % 6; n > 0; --n) token.push_back(alphabet[rng() % alphabet.size()]);
    tokens.push_back(token);
  }
  const JsonVocabulary vocabulary(tokens);
  std::vector<int32_t> allowed;
  int states = 0;
  for (int doc = 0; doc < 40; ++doc) {
    const std::string text =
        Json{{"k", RandomValue(rng, 0)}, {"l", RandomValue(rng, 1)}}.dump(doc % 2 == 0 ? -1 : 2);
    JsonMatcher matcher;
    for (size_t i = 0; i <= text.size() && !matcher.Complete(); ++i) {
      JsonAllowedTokens(matcher, vocabulary, &allowed);
      std::sort(allowed.begin(), allowed.end());
      std::vector<int32_t> expected;
      for (size_t id = 0; id < tokens.size(); ++id) {
        JsonMatcher next = matcher;
        if (!tokens[id].empty() && next.Feed(tokens[id])) {
          expected.push_back(static_cast<int32_t>(id));
        }
      }
      ASSERT_EQ(allowed, expected) << "after " << Json(text.substr(0, i)).dump(-1, ' ', true);
      ++states;
      if (i < text.size()) {
        ASSERT_TRUE(matcher.Feed(static_cast<uint8_t>(text[i])));
      }
    }
  }
  EXPECT_GT(states, 1000);
}

// The state key (what the engine caches token lists by): prefixes with the same key accept the
// same bytes from there on, over random documents compact and indented, with escapes and split
// UTF-8; and what was read inside a string or a number does not split keys.
TEST(JsonMatcherTest, PrefixesWithTheSameStateKeyAcceptTheSameBytes) {
  std::mt19937_64 rng(17);
  std::vector<std::string> texts;
  for (int i = 0; i < 150; ++i) {
    const Json doc = {{"k", RandomValue(rng, 1)}, {"list", {RandomValue(rng, 2), 1}}};
    texts.push_back(doc.dump(i % 3 == 0 ? 2 : -1));
  }
  texts.push_back(R"({"e": "\u00e9\ud83d\ude00\n", "n": -0.5e+10, "t": [true, false, null]})");
  size_t prefixes = 0;
  for (const std::string& t : texts) prefixes += t.size() + 1;
  const int shared = testdata::CheckStateKeys<JsonMatcher>(texts, [] { return JsonMatcher(); });
  // Most steps come back to a state seen before: that is what the cache is for.
  EXPECT_GT(shared, static_cast<int>(prefixes / 2)) << "of " << prefixes;

  const auto key = [](const std::string& text) {
    JsonMatcher m;
    EXPECT_TRUE(m.Feed(text)) << text;
    return testdata::StateKey(m);
  };
  EXPECT_EQ(key(R"({"a": 12)"), key(R"({"bc": 3456)"));
  EXPECT_EQ(key(R"({"a": "xy)"), key(R"({"b": ")"));
  EXPECT_EQ(key(R"({"a": "x", )"), key(R"({"b": [1, 2], )"));
  EXPECT_NE(key(R"({"a": [)"), key(R"({"a": {)"));
  EXPECT_NE(key(R"({"a": 1)"), key(R"({"a": 1.)"));
  EXPECT_NE(key(R"({"a": 0)"), key(R"({"a": 1)")) << "after a leading 0 no digit may follow";
  EXPECT_NE(key(R"({"a": "x)"), key(R"({"x)")) << "a key's string, then a value's";
  EXPECT_NE(key("{\"a\": \"\xC3"), key(R"({"a": ")")) << "inside a character";
}

}  // namespace
}  // namespace headroom::worker
