// JsonSchema / JsonSchemaMatcher against Python's jsonschema as the reference of what a schema
// accepts: tests/worker/fixtures/json_schema_cases.json (scripts/gen_json_schema_fixtures.py)
// labels random documents and mutations of them, and the matcher must read exactly the valid
// ones whole. Random walks through the matcher never reach a dead end and end in JSON; the token
// index gives exactly the tokens a copy of the matcher accepts; refused schemas name the reason
// and the place; the choices the specification leaves open are checked by hand.
#include "worker/engine/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/worker/fixtures.h"
#include "tests/worker/json_text.h"
#include "tests/worker/state_key_check.h"
#include "worker/engine/json_lexer.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_regex.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

Json LoadFixture(const char* part) {
  std::ifstream in(testdata::FixtureDir("json_schema_cases.json"));
  EXPECT_TRUE(in.good()) << "missing fixture json_schema_cases.json";
  return Json::parse(in)[part];
}
Json LoadCases() { return LoadFixture("cases"); }

std::shared_ptr<const JsonSchema> MustCompile(const std::string& text) {
  absl::StatusOr<std::shared_ptr<const JsonSchema>> schema = JsonSchema::Compile(text);
  EXPECT_TRUE(schema.ok()) << schema.status() << " for " << text;
  return schema.ok() ? *schema : nullptr;
}

// The matcher reads `text` whole and may end there.
bool Accepts(const JsonSchema& schema, std::string_view text) {
  JsonSchemaMatcher matcher(&schema);
  return matcher.Feed(text) && (matcher.Complete() || matcher.CanEnd());
}

TEST(JsonSchemaTest, ReadsExactlyTheDocumentsJsonschemaAccepts) {
  int valid = 0;
  int invalid = 0;
  for (const Json& c : LoadCases()) {
    const std::shared_ptr<const JsonSchema> schema = MustCompile(c["schema"].dump());
    ASSERT_NE(schema, nullptr);
    for (const Json& doc : c["documents"]) {
      const auto text = doc["text"].get<std::string>();
      const bool expected = doc["valid"].get<bool>();
      EXPECT_EQ(Accepts(*schema, text), expected)
          << (expected ? "refused valid " : "accepted invalid ") << text << "\nschema "
          << c["schema"].dump();
      (expected ? valid : invalid) += 1;
    }
  }
  EXPECT_GT(valid, 200);
  EXPECT_GT(invalid, 200);
}

// A walk: random bytes the matcher accepts until it completes (or may end and the walk stops
// there); after `patience` bytes it mostly takes the first accepted byte of `kClosers`, so most
// walks end (one inside an unanchored pattern may not find a match by chance: it stops after 4000
// bytes, unfinished). Every state on the way must accept some byte: a dead end fails the test.
struct WalkResult {
  std::string text;
  bool finished = false;
};
WalkResult Walk(const JsonSchema& schema, std::mt19937_64& rng, size_t patience) {
  static const std::string kClosers = "\"}]Z:,ntf[{0a";
  JsonSchemaMatcher matcher(&schema);
  std::string text;
  while (!matcher.Complete() && text.size() < 4000) {
    if (matcher.CanEnd() && rng() % 4 == 0) break;
    std::vector<uint8_t> accepted;
    for (int b = 0; b < 256; ++b) {
      JsonSchemaMatcher next = matcher;
      if (next.Feed(static_cast<uint8_t>(b))) accepted.push_back(static_cast<uint8_t>(b));
    }
    if (accepted.empty()) {
      EXPECT_TRUE(matcher.CanEnd()) << "dead end after " << text;
      break;
    }
    uint8_t byte = accepted[rng() % accepted.size()];
    if (text.size() > patience && rng() % 4 != 0) {
      for (const char c : kClosers) {
        if (std::find(accepted.begin(), accepted.end(), static_cast<uint8_t>(c)) !=
            accepted.end()) {
          byte = static_cast<uint8_t>(c);
          break;
        }
      }
    }
    EXPECT_TRUE(matcher.Feed(byte));
    text.push_back(static_cast<char>(byte));
  }
  const bool finished = matcher.Complete() || matcher.CanEnd();
  return {.text = std::move(text), .finished = finished};
}

TEST(JsonSchemaTest, RandomWalksNeverDeadEndAndAreJson) {
  std::mt19937_64 rng(7);
  int walks = 0;
  for (const Json& c : LoadCases()) {
    const std::shared_ptr<const JsonSchema> schema = MustCompile(c["schema"].dump());
    ASSERT_NE(schema, nullptr);
    int finished = 0;
    for (int i = 0; i < 25; ++i) {
      const WalkResult walk = Walk(*schema, rng, 40 + 20 * static_cast<size_t>(i));
      if (!walk.finished) continue;
      ++finished;
      EXPECT_TRUE(testdata::Parses(walk.text)) << walk.text;
      EXPECT_TRUE(Accepts(*schema, walk.text)) << walk.text;
    }
    EXPECT_GE(finished, 15) << c["schema"].dump();
    walks += finished;
  }
  EXPECT_GT(walks, 150);
}

TEST(JsonSchemaTest, AllowedTokensAreExactlyThoseTheMatcherAccepts) {
  std::mt19937_64 rng(3);
  std::vector<std::string> tokens = {
      "",     "\"name\"", "\"na",  "me\":", "\":",    "\",\"", "ing", " the", "\\u",  "\\n",
      "\xC3", "\xA9",     "\"}",   "}}",    "],",     "12",    "123", "tru",  "null", "gree",
      "nish", "\"red",    "\"cat", "dog\"", "-1.5e+", "\\\"",  " \"", "[[",   "é",    "😀"};
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  const std::string alphabet = "{}[]:,\"\\ abcdeginlmrstu0123456789-.\xC3\xA9";
  for (int i = 0; i < 1500; ++i) {
    std::string token;
    for (size_t n = 1 + rng() % 5; n > 0; --n) token.push_back(alphabet[rng() % alphabet.size()]);
    tokens.push_back(token);
  }
  const JsonVocabulary vocabulary(tokens);
  std::vector<int32_t> allowed;
  int states = 0;
  for (const Json& c : LoadCases()) {
    const std::shared_ptr<const JsonSchema> schema = MustCompile(c["schema"].dump());
    ASSERT_NE(schema, nullptr);
    for (int walk = 0; walk < 3; ++walk) {
      const std::string text = Walk(*schema, rng, 60).text;
      JsonSchemaMatcher matcher(schema.get());
      for (size_t i = 0; i < text.size(); ++i) {
        JsonAllowedTokens(matcher, vocabulary, &allowed);
        std::sort(allowed.begin(), allowed.end());
        std::vector<int32_t> expected;
        for (size_t id = 0; id < tokens.size(); ++id) {
          JsonSchemaMatcher next = matcher;
          if (!tokens[id].empty() && next.Feed(tokens[id])) {
            expected.push_back(static_cast<int32_t>(id));
          }
        }
        ASSERT_EQ(allowed, expected) << "after " << text.substr(0, i);
        ++states;
        ASSERT_TRUE(matcher.Feed(static_cast<uint8_t>(text[i])));
      }
    }
  }
  EXPECT_GT(states, 500);
}

// The state key (what the engine caches token lists by): over random walks of every fixture
// schema (bounds, patterns, anyOf, enums, nesting), prefixes with the same key accept the same
// bytes from there on, and most prefixes share their key with an earlier one.
TEST(JsonSchemaTest, PrefixesWithTheSameStateKeyAcceptTheSameBytes) {
  std::mt19937_64 rng(5);
  size_t prefixes = 0;
  int shared = 0;
  for (const Json& c : LoadCases()) {
    const std::shared_ptr<const JsonSchema> schema = MustCompile(c["schema"].dump());
    ASSERT_NE(schema, nullptr);
    std::vector<std::string> texts;
    for (int i = 0; i < 12; ++i) {
      texts.push_back(Walk(*schema, rng, 30 + 10 * static_cast<size_t>(i)).text);
      prefixes += texts.back().size() + 1;
    }
    shared += testdata::CheckStateKeys<JsonSchemaMatcher>(
        texts, [&] { return JsonSchemaMatcher(schema.get()); });
    ASSERT_FALSE(HasFatalFailure()) << c["schema"].dump();
  }
  EXPECT_GT(shared, static_cast<int>(prefixes / 4)) << "of " << prefixes;

  const std::shared_ptr<const JsonSchema> schema = MustCompile(
      R"({"type":"object","properties":{"s":{"type":"string"},"b":{"type":"string","maxLength":3},
          "n":{"type":"integer","maximum":500},"l":{"type":"array","items":{"type":"integer"}}}})");
  ASSERT_NE(schema, nullptr);
  const auto key = [&](const std::string& text) {
    JsonSchemaMatcher m(schema.get());
    EXPECT_TRUE(m.Feed(text)) << text;
    return testdata::StateKey(m);
  };
  EXPECT_EQ(key(R"({"s": "ab)"), key(R"({"s": ")")) << "an unbounded string's length is no state";
  EXPECT_NE(key(R"({"b": "ab)"), key(R"({"b": ")")) << "a bounded one's is";
  EXPECT_EQ(key(R"({"l": [1, 22, )"), key(R"({"l": [3, )")) << "nor an unbounded array's items";
  EXPECT_NE(key(R"({"l": [1, 22)"), key(R"({"l": [1, 2)")) << "a number's length is bounded";
  EXPECT_NE(key(R"({"n": 4)"), key(R"({"n": 6)")) << "46 fits under 500, 66 does not";
  EXPECT_NE(key(R"({"s": "a", )"), key(R"({"b": "a", )")) << "which properties were read";
}

struct Refusal {
  std::string schema;
  std::string message;  // a part of the error
};

TEST(JsonSchemaTest, RefusesWhatItCannotEnforceAndSaysWhereAndWhy) {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 33; ++i) {
    deep = R"({"type":"object","properties":{"a":)" + deep + R"(},"required":["a"]})";
  }
  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i < 65; ++i)
    wide += (i > 0 ? "," : "") + Json("p" + std::to_string(i)).dump() + ":{}";
  wide += "}}";
  // An enum value nested 20k deep (within the 64 KiB): walking it recursively risks the stack.
  const std::string nested_enum =
      R"({"enum":[)" + std::string(20000, '[') + std::string(20000, ']') + "]}";
  const std::vector<Refusal> refusals = {
      {nested_enum, "the schema nests arrays and objects more than 128 levels deep"},
      {R"j({"type":"string","pattern":"^(?=a)"})j",
       "at the root: pattern: lookahead is not supported"},
      {R"j({"type":"string","pattern":"(a)\\1"})j", "pattern: backreferences are not supported"},
      {R"({"type":"string","pattern":"a\\b"})", "pattern: word boundaries"},
      {R"({"type":"string","pattern":"a^b"})", "pattern: ^ is supported only at the start"},
      {R"j({"type":"string","pattern":"(a"})j", "pattern: unbalanced '('"},
      {R"({"type":"string","pattern":"a{3,1}"})", "pattern: {3,1}: the bounds are reversed"},
      {R"({"type":"string","pattern":"[z-a]"})", "pattern: a class range is out of order"},
      {R"({"type":"string","pattern":"a{1000}b{1000}"})", "more than 256 automaton states"},
      {R"({"type":"string","pattern":"[^\\s\\S]"})", "accepts no value"},
      {R"({"type":"string","pattern":"^a+$","maxLength":3})",
       "minLength/maxLength beside pattern is not supported"},
      {R"({"type":"string","format":"uuid","pattern":"a"})",
       "pattern beside format \"uuid\" is not supported"},
      {R"({"type":"object","properties":{"at":{"type":"string","format":"email"}}})",
       "at /properties/at: format \"email\" is not supported (date, time, date-time, uuid"},
      {R"({"type":"object","properties":{"p":{"type":"number","minimum":0}}})",
       "at /properties/p: minimum on a number is not supported (on an integer it is)"},
      {R"({"type":"integer","minimum":5,"exclusiveMaximum":5})",
       "no integer lies between the bounds (at least 5, at most 4)"},
      {R"({"type":"integer","exclusiveMinimum":true})", "exclusiveMinimum must be a number"},
      {R"({"type":"integer","multipleOf":2})", "multipleOf is not supported"},
      {R"({"$ref":"https://example.com/s.json"})", "only references into the same schema"},
      {R"({"$ref":"#/$defs/Missing"})", "$ref \"#/$defs/Missing\" points nowhere"},
      {R"({"type":"string","minLength":5,"maxLength":2})", "minLength 5 > maxLength 2"},
      {R"({"type":"array","minItems":3,"maxItems":1})", "minItems 3 > maxItems 1"},
      {R"({"enum":[]})", "accepts no value"},
      {R"({"type":"string","enum":[1,2]})", "accepts no value"},
      {R"({"type":"object","properties":{"a":false},"required":["a"]})", "accepts no value"},
      {R"({"type":"object","properties":{"a":{}},"additionalProperties":true})",
       "additionalProperties beside properties is not supported"},
      {R"({"allOf":[{"type":"string"},{"maxLength":3}]})", "allOf is supported with exactly one"},
      {R"({"type":"array","items":[{"type":"string"}]})", "items as an array (tuples)"},
      {R"({"type":"array","uniqueItems":true})", "uniqueItems is not supported"},
      {R"({"type":"object","required":["b"],"properties":{"a":{}}})",
       "required names \"b\", which is not in properties"},
      {R"({"type":"color"})", "unknown type \"color\""},
      {R"({"type":"string","anyOf":[{"maxLength":1}]})", "anyOf beside type is not supported"},
      {R"({"minLength":1,"minItems":1})", "give one"},
      {R"({"type":"string","maxLength":-1})", "maxLength must be a non-negative integer, got -1"},
      {R"([1])", "a schema must be an object or a boolean, got array"},
      {R"({"type":)", "not valid JSON"},
      {deep, "nests containers 33 deep; at most 32"},
      {wide, "65 properties; at most 64"},
  };
  for (const Refusal& r : refusals) {
    const absl::StatusOr<std::shared_ptr<const JsonSchema>> schema = JsonSchema::Compile(r.schema);
    ASSERT_FALSE(schema.ok()) << r.schema;
    EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(schema.status().message().find(r.message), std::string_view::npos)
        << schema.status() << "\nwanted: " << r.message;
  }
  std::string nested = "{}";
  for (int i = 0; i < 200; ++i) nested = R"({"type":"array","items":)" + nested + "}";
  // Refused by its JSON nesting (128) before the compiler's own bound of 128 schema levels.
  EXPECT_NE(JsonSchema::Compile(nested).status().message().find(
                "nests arrays and objects more than 128 levels deep"),
            std::string_view::npos);
  // 6 nodes for "any value", 7 types, their anyOf and the array: 15.
  const JsonSchema::Options few{.max_nodes = 14};
  const std::string types = R"({"type":"array","items":{"type":["string","integer","null",
      "boolean","number","array","object"]}})";
  EXPECT_EQ(JsonSchema::Compile(types, few).status().message(),
            "at the root: the schema expands to more than 14 parts");
  EXPECT_TRUE(JsonSchema::Compile(types, JsonSchema::Options{.max_nodes = 15}).ok());
}

// Patterns against Python's re.search on the fixture's strings: JsonRegex on the text, and the
// schema {"type": "string", "pattern": ...} on its JSON spelling (escapes, surrogate pairs).
TEST(JsonSchemaTest, PatternsMatchWhatPythonsReFinds) {
  int matches = 0;
  int strings = 0;
  for (const Json& p : LoadFixture("patterns")) {
    const auto pattern = p["pattern"].get<std::string>();
    const absl::StatusOr<JsonRegex> regex = JsonRegex::Compile(pattern);
    ASSERT_TRUE(regex.ok()) << pattern << ": " << regex.status();
    const auto schema = MustCompile(Json{{"type", "string"}, {"pattern", pattern}}.dump());
    ASSERT_NE(schema, nullptr);
    for (const Json& s : p["strings"]) {
      const bool match = s["match"].get<bool>();
      EXPECT_EQ(regex->Matches(s["text"].get<std::string>()), match)
          << pattern << " on " << s["json"].get<std::string>();
      EXPECT_EQ(Accepts(*schema, s["json"].get<std::string>()), match)
          << pattern << " on " << s["json"].get<std::string>();
      matches += match ? 1 : 0;
      ++strings;
    }
  }
  EXPECT_GT(matches, 100);
  EXPECT_GT(strings - matches, 300);
}

// Inside a character (a UTF-8 sequence, an escape, a surrogate pair) the lexer's possible code
// points hold the one the character becomes, and nothing else: each range's ends can be written
// starting with the bytes read so far.
TEST(JsonSchemaTest, PartialCharactersKnowTheCodePointsTheyCanBecome) {
  // Every way JSON writes `cp` (raw UTF-8, \u escapes, a short escape where there is one).
  const auto spellings = [](uint32_t cp) {
    std::vector<std::string> out;
    std::string raw;
    if (cp < 0x80) {
      raw.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      raw = {static_cast<char>(0xC0 | cp >> 6), static_cast<char>(0x80 | (cp & 0x3F))};
    } else if (cp < 0x10000) {
      raw = {static_cast<char>(0xE0 | cp >> 12), static_cast<char>(0x80 | (cp >> 6 & 0x3F)),
             static_cast<char>(0x80 | (cp & 0x3F))};
    } else {
      raw = {static_cast<char>(0xF0 | cp >> 18), static_cast<char>(0x80 | (cp >> 12 & 0x3F)),
             static_cast<char>(0x80 | (cp >> 6 & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    if (cp >= 0x20 && cp != '"' && cp != '\\') out.push_back(raw);
    char buffer[16];
    if (cp < 0x10000) {
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", cp);
      out.emplace_back(buffer);
    } else {
      const uint32_t v = cp - 0x10000;
      std::snprintf(buffer, sizeof(buffer), "\\u%04x\\u%04x", 0xD800 + (v >> 10),
                    0xDC00 + (v & 0x3FF));
      out.emplace_back(buffer);
    }
    if (cp == '\n') out.emplace_back("\\n");
    if (cp == '"') out.emplace_back("\\\"");
    return out;
  };
  // Can some spelling of `cp` start with `prefix`?
  const auto reachable = [&](const std::string& prefix, uint32_t cp) {
    for (const std::string& s : spellings(cp)) {
      if (s.compare(0, prefix.size(), prefix) == 0 && s.size() > prefix.size()) return true;
    }
    return false;
  };
  std::mt19937_64 rng(5);
  std::vector<uint32_t> samples = {0x0A,   0x22,   0x41,   0x7F,   0x80,    0x7FF,   0x800,
                                   0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF};
  for (int i = 0; i < 300; ++i) {
    uint32_t cp = static_cast<uint32_t>(rng() % 0x110000);
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0x41;
    samples.push_back(cp);
  }
  int checked = 0;
  for (const uint32_t cp : samples) {
    for (const std::string& spelling : spellings(cp)) {
      JsonStringLexer lexer;
      for (size_t i = 0; i < spelling.size(); ++i) {
        const JsonStringLexer::Step step = lexer.Feed(static_cast<uint8_t>(spelling[i]));
        if (i + 1 == spelling.size()) {
          ASSERT_EQ(step, JsonStringLexer::Step::kCharacter) << spelling;
          EXPECT_EQ(lexer.code_point(), cp) << spelling;
          continue;
        }
        ASSERT_EQ(step, JsonStringLexer::Step::kPartial) << spelling;
        JsonStringLexer::Range ranges[3];
        const int n = lexer.PossibleCodePoints(ranges);
        const std::string prefix = spelling.substr(0, i + 1);
        bool holds = false;
        for (int r = 0; r < n; ++r) {
          holds = holds || (ranges[r].lo <= cp && cp <= ranges[r].hi);
          EXPECT_TRUE(reachable(prefix, ranges[r].lo)) << prefix << " lo " << ranges[r].lo;
          EXPECT_TRUE(reachable(prefix, ranges[r].hi)) << prefix << " hi " << ranges[r].hi;
          ++checked;
        }
        EXPECT_TRUE(holds) << spelling << " does not hold " << cp;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(JsonSchemaTest, ObjectsTakeDeclaredPropertiesInAnyOrderOnceAndRequiredOnesBeforeClosing) {
  const auto schema = MustCompile(R"({"type":"object","properties":{
      "a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["a","b"]})");
  EXPECT_TRUE(Accepts(*schema, R"({"b":"x","a":1})"));
  EXPECT_TRUE(Accepts(*schema, R"({"c":true,"a":1,"b":""})"));
  EXPECT_FALSE(Accepts(*schema, R"({"a":1})"));                // b is required
  EXPECT_FALSE(Accepts(*schema, R"({"a":1,"b":"x","d":0})"));  // only declared properties
  EXPECT_FALSE(Accepts(*schema, R"({"a":1,"a":2,"b":"x"})"));  // each once
  JsonSchemaMatcher m(schema.get());
  ASSERT_TRUE(m.Feed(R"({"a":1)"));
  JsonSchemaMatcher closed = m;
  EXPECT_FALSE(closed.Feed('}'));  // refused at the byte, not at the end
  // Without properties an object takes any keys (a map); {"type":"object"} any object.
  const auto map = MustCompile(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(Accepts(*map, R"({"x":1,"y z":-2})"));
  EXPECT_FALSE(Accepts(*map, R"({"x":"1"})"));
  EXPECT_TRUE(Accepts(*MustCompile(R"({"type":"object"})"), R"({"k":[1,{"n":null}],"s":"t"})"));
  EXPECT_TRUE(Accepts(*MustCompile(R"({"properties":{"a":{}}})"), R"({"a":[]})"));
  EXPECT_FALSE(Accepts(*MustCompile(R"({"properties":{"a":{}}})"), R"([])"));  // inferred object
  // A pattern or a string format without a type makes a string, checked.
  EXPECT_TRUE(Accepts(*MustCompile(R"({"pattern":"^a+$"})"), R"("aa")"));
  EXPECT_FALSE(Accepts(*MustCompile(R"({"pattern":"^a+$"})"), R"("ab")"));
  EXPECT_FALSE(Accepts(*MustCompile(R"({"format":"date"})"), R"("2023-02-29")"));
  EXPECT_FALSE(Accepts(*MustCompile(R"({"format":"date"})"), "1"));
  // Formats nobody checks are annotations: OpenAPI's int32, a custom name.
  EXPECT_TRUE(Accepts(*MustCompile(R"({"type":"integer","format":"int32"})"), "7"));
  EXPECT_TRUE(Accepts(*MustCompile(R"({"type":"string","format":"my-id"})"), R"("x")"));
}

TEST(JsonSchemaTest, LiteralsAreSpelledCompactlyAndNumbersMayEndTheDocument) {
  const auto numbers = MustCompile(R"({"enum":[1,12,"a",[1,2],{"k":null}]})");
  EXPECT_TRUE(Accepts(*numbers, "12"));
  EXPECT_TRUE(Accepts(*numbers, "[1,2]"));
  EXPECT_FALSE(Accepts(*numbers, "[1, 2]"));
  EXPECT_TRUE(Accepts(*numbers, R"({"k":null})"));
  JsonSchemaMatcher m(numbers.get());
  ASSERT_TRUE(m.Feed('1'));
  EXPECT_TRUE(m.CanEnd());     // 1 is whole...
  EXPECT_FALSE(m.Complete());  // ...but 12 could follow
  EXPECT_FALSE(JsonSchemaMatcher(numbers.get()).Feed('3'));
  const auto integer = MustCompile(R"({"type":"integer"})");
  EXPECT_TRUE(Accepts(*integer, "-120"));
  EXPECT_FALSE(Accepts(*integer, "1.0"));
  EXPECT_FALSE(Accepts(*integer, "01"));
  const auto number = MustCompile(R"({"type":"number"})");
  EXPECT_TRUE(Accepts(*number, "-0.5e+10"));
  EXPECT_TRUE(Accepts(*number, std::string(32, '7')));
  EXPECT_FALSE(Accepts(*number, std::string(33, '7')));  // numbers stop at 32 bytes
  // A '.' at byte 31 is refused: no digit could follow it.
  EXPECT_FALSE(Accepts(*number, std::string(31, '7') + "."));
}

// Bounded integers are decided digit by digit: a digit is taken only when some integer starting
// with what was read lies in the bounds, and the number ends only inside them.
TEST(JsonSchemaTest, IntegerBoundsAreKeptDigitByDigit) {
  const auto range = MustCompile(R"({"type":"integer","minimum":100,"exclusiveMaximum":151})");
  const auto feeds = [](const JsonSchema& schema, std::string_view text) {
    JsonSchemaMatcher m(&schema);
    return m.Feed(text);
  };
  EXPECT_TRUE(feeds(*range, "15"));
  EXPECT_FALSE(feeds(*range, "2"));
  EXPECT_FALSE(feeds(*range, "16"));
  EXPECT_FALSE(feeds(*range, "-"));
  EXPECT_FALSE(feeds(*range, "0"));
  EXPECT_FALSE(feeds(*range, "1500"));
  EXPECT_TRUE(Accepts(*range, "150"));
  EXPECT_FALSE(Accepts(*range, "151"));
  EXPECT_FALSE(Accepts(*range, "15"));  // a prefix of 150, not a value in range
  const auto negative = MustCompile(R"({"type":"integer","maximum":-10})");
  EXPECT_TRUE(feeds(*negative, "-9"));  // -90 fits
  EXPECT_FALSE(Accepts(*negative, "-9"));
  EXPECT_TRUE(Accepts(*negative, "-90"));
  EXPECT_FALSE(feeds(*negative, "-0"));
  EXPECT_FALSE(feeds(*negative, "1"));
  const auto zero = MustCompile(R"({"type":"integer","minimum":-0.5,"maximum":0.5})");
  EXPECT_TRUE(Accepts(*zero, "0"));
  EXPECT_TRUE(Accepts(*zero, "-0"));
  EXPECT_FALSE(feeds(*zero, "-1"));
  // Inside an object the number ends at the ',' or '}' only when in range.
  const auto object = MustCompile(
      R"({"type":"object","properties":{"n":{"type":"integer","minimum":10}},"required":["n"]})");
  EXPECT_FALSE(feeds(*object, R"({"n":9})"));
  EXPECT_TRUE(Accepts(*object, R"({"n":99})"));
}

TEST(JsonSchemaTest, StringLengthsCountCharactersAndBoundWhereTheStringCanClose) {
  const auto schema = MustCompile(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(Accepts(*schema, R"("é😀")"));
  EXPECT_TRUE(Accepts(*schema, R"("\ud83d\ude00\n")"));  // a surrogate pair is one character
  EXPECT_FALSE(Accepts(*schema, R"("a")"));
  EXPECT_FALSE(Accepts(*schema, R"("abcd")"));
  JsonSchemaMatcher m(schema.get());
  ASSERT_TRUE(m.Feed(R"("abc)"));
  EXPECT_FALSE(JsonSchemaMatcher(m).Feed('d'));
  EXPECT_TRUE(m.Feed('"'));
  EXPECT_TRUE(m.Complete());
}

TEST(JsonSchemaTest, RecursionStopsOfferingChildrenAtTheDepthLimit) {
  const auto tree = MustCompile(R"({"$ref":"#/$defs/N","$defs":{"N":{"type":"object",
      "properties":{"c":{"$ref":"#/$defs/N"}},"additionalProperties":false}}})");
  JsonSchemaMatcher m(tree.get());
  for (int i = 0; i < 31; ++i) ASSERT_TRUE(m.Feed(R"({"c":)")) << i;
  ASSERT_TRUE(m.Feed('{'));  // the 32nd object
  EXPECT_FALSE(JsonSchemaMatcher(m).Feed('"'));
  EXPECT_TRUE(m.Feed(std::string(32, '}')));
  EXPECT_TRUE(m.Complete());
  // Whitespace between tokens in runs of at most 16.
  EXPECT_TRUE(Accepts(*tree, "{" + std::string(16, ' ') + "}"));
  EXPECT_FALSE(Accepts(*tree, "{" + std::string(17, ' ') + "}"));
}

// An anyOf that refers to itself (directly, or through $defs) reads as its other alternatives;
// integral floats in an integer enum are kept (JSON Schema counts 1e300 as an integer).
TEST(JsonSchemaTest, RecursiveAnyOfAndIntegralFloatsInIntegerEnums) {
  const auto direct = MustCompile(R"({"anyOf":[{"$ref":"#"},{"type":"string","maxLength":2}]})");
  EXPECT_TRUE(Accepts(*direct, R"("ab")"));
  EXPECT_FALSE(Accepts(*direct, R"("abc")"));
  const auto through = MustCompile(R"({"$ref":"#/$defs/A","$defs":{"A":{"anyOf":[
      {"$ref":"#/$defs/B"},{"type":"integer"}]},"B":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"null"}]}}})");
  EXPECT_TRUE(Accepts(*through, "12"));
  EXPECT_TRUE(Accepts(*through, "null"));
  EXPECT_FALSE(Accepts(*through, "true"));
  const auto huge = MustCompile(R"({"type":"integer","enum":[1e300,2,2.5]})");
  EXPECT_TRUE(Accepts(*huge, "2"));
  EXPECT_TRUE(Accepts(*huge, "1e+300"));
  EXPECT_FALSE(Accepts(*huge, "2.5"));
}

TEST(JsonSchemaTest, AnyOfKeepsEveryAlternativeThatAgreesSoFar) {
  const auto schema = MustCompile(R"({"anyOf":[
      {"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},
       "required":["kind","x"]},
      {"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"string"}},
       "required":["kind","y"]},
      {"type":"null"}]})");
  EXPECT_TRUE(Accepts(*schema, R"({"kind":"a","x":1})"));
  EXPECT_TRUE(Accepts(*schema, R"({"kind":"b","y":"1"})"));
  EXPECT_TRUE(Accepts(*schema, "null"));
  EXPECT_FALSE(Accepts(*schema, R"({"kind":"a","y":"1"})"));
  EXPECT_FALSE(Accepts(*schema, R"({"kind":"b","x":1})"));
  // Before "kind" both objects are open: x and y are both offered.
  JsonSchemaMatcher m(schema.get());
  ASSERT_TRUE(m.Feed("{"));
  EXPECT_TRUE(JsonSchemaMatcher(m).Feed(R"("x":1,"kind":"a"})"));
  EXPECT_TRUE(JsonSchemaMatcher(m).Feed(R"("y":"s","kind":"b"})"));
}

}  // namespace
}  // namespace headroom::worker
