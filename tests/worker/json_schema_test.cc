// JsonSchema / JsonSchemaMatcher against Python's jsonschema as the reference of what a schema
// accepts: tests/worker/fixtures/json_schema_cases.json (scripts/gen_json_schema_fixtures.py)
// labels random documents and mutations of them, and the matcher must read exactly the valid
// ones whole. Random walks through the matcher never reach a dead end and end in JSON; the token
// index gives exactly the tokens a copy of the matcher accepts; refused schemas name the reason
// and the place; the choices the specification leaves open are checked by hand.
#include "worker/engine/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/worker/fixtures.h"
#include "tests/worker/json_text.h"
#include "worker/engine/json_matcher.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

Json LoadCases() {
  std::ifstream in(testdata::FixtureDir("json_schema_cases.json"));
  EXPECT_TRUE(in.good()) << "missing fixture json_schema_cases.json";
  return Json::parse(in)["cases"];
}

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
// there); after `patience` bytes it takes the first accepted byte of `kClosers`, so it ends.
// Every state on the way must accept some byte: a dead end fails the test.
std::string Walk(const JsonSchema& schema, std::mt19937_64& rng, size_t patience) {
  static const std::string kClosers = "\"}]0:,ntf[{a";
  JsonSchemaMatcher matcher(&schema);
  std::string text;
  while (!matcher.Complete() && text.size() < 20000) {
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
    if (text.size() > patience) {
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
  EXPECT_TRUE(matcher.Complete() || matcher.CanEnd()) << "unfinished " << text;
  return text;
}

TEST(JsonSchemaTest, RandomWalksNeverDeadEndAndAreJson) {
  std::mt19937_64 rng(7);
  int walks = 0;
  for (const Json& c : LoadCases()) {
    const std::shared_ptr<const JsonSchema> schema = MustCompile(c["schema"].dump());
    ASSERT_NE(schema, nullptr);
    for (int i = 0; i < 25; ++i) {
      const std::string text = Walk(*schema, rng, 40 + 20 * static_cast<size_t>(i));
      EXPECT_TRUE(testdata::Parses(text)) << text;
      EXPECT_TRUE(Accepts(*schema, text)) << text;
      ++walks;
    }
  }
  EXPECT_EQ(walks, 150);
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
      const std::string text = Walk(*schema, rng, 60);
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
  const std::vector<Refusal> refusals = {
      {R"({"type":"string","pattern":"^a+$"})", "at the root: pattern is not supported"},
      {R"({"type":"object","properties":{"at":{"type":"string","format":"date-time"}}})",
       "at /properties/at: format \"date-time\" is not enforced"},
      {R"({"type":"object","properties":{"age":{"type":"integer","minimum":0}}})",
       "at /properties/age: minimum is not supported"},
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
  EXPECT_NE(JsonSchema::Compile(nested).status().message().find("nests more than 128 levels"),
            std::string_view::npos);
  // 6 nodes for "any value", 7 types, their anyOf and the array: 15.
  const JsonSchema::Options few{.max_nodes = 14};
  const std::string types = R"({"type":"array","items":{"type":["string","integer","null",
      "boolean","number","array","object"]}})";
  EXPECT_EQ(JsonSchema::Compile(types, few).status().message(),
            "at the root: the schema expands to more than 14 parts");
  EXPECT_TRUE(JsonSchema::Compile(types, JsonSchema::Options{.max_nodes = 15}).ok());
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
