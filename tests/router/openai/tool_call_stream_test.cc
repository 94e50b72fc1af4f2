// Streaming tool calls: JsonDumpsStream gives out, piece by piece, exactly the arguments the whole
// reply's parse writes (json.dumps of the parsed value, jinja::ToJson, itself checked against
// Python in the chat-template fixtures), and never a byte it would take back; ToolCallStreamer
// finds the calls in each family's framing.
#include "router/openai/tool_call_stream.h"

#include <random>
#include <string>
#include <vector>

#include "common/json_depth.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/jinja/value.h"
#include "router/openai/tool_parser.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

// What the whole reply's parse writes for the JSON `text`.
std::string WholeDumps(const std::string& text) {
  return *jinja::ToJson(jinja::Value::FromJson(Json::parse(text)), {});
}

// Feeds `text` in pieces of 1..max_piece bytes; checks that what came out after each piece is the
// start of `expected`, and returns all of it.
std::string FeedInPieces(const std::string& text, std::mt19937& rng, size_t max_piece,
                         const std::string& expected) {
  JsonDumpsStream stream;
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(text.size() - at, 1 + rng() % max_piece);
    EXPECT_EQ(stream.Feed(std::string_view(text).substr(at, n), &out), n) << text;
    EXPECT_EQ(expected.compare(0, out.size(), out), 0)
        << "gave out " << out << " for " << text.substr(0, at + n);
    at += n;
  }
  EXPECT_FALSE(stream.invalid()) << text;
  return out;
}

Json RandomValue(std::mt19937& rng, int depth) {
  static const std::vector<std::string> kStrings = {"",
                                                    "Paris",
                                                    "Z\xC3\xBCrich",
                                                    "say \"hi\"",
                                                    "back\\slash",
                                                    "tab\tnew\nline",
                                                    "\x01",
                                                    "\xF0\x9F\x98\x80 emoji",
                                                    "slash/",
                                                    "\xE2\x82\xAC 5"};
  switch (rng() % (depth > 3 ? 5 : 7)) {
    case 0:
      return kStrings[rng() % kStrings.size()];
    case 1:
      return static_cast<int64_t>(rng() % 2001) - 1000;
    case 2: {
      static const double kFloats[] = {0.5, -2.25, 1e5, 1.5e-7, 3.0, 1e16, 123456.789, -0.0};
      return kFloats[rng() % 8];
    }
    case 3:
      return rng() % 2 == 0;
    case 4:
      return nullptr;
    case 5: {
      Json array = Json::array();
      for (size_t n = rng() % 4; n > 0; --n) array.push_back(RandomValue(rng, depth + 1));
      return array;
    }
    default: {
      Json object = Json::object();
      for (size_t n = rng() % 4; n > 0; --n) {
        object[kStrings[rng() % kStrings.size()] + std::to_string(n)] = RandomValue(rng, depth + 1);
      }
      return object;
    }
  }
}

TEST(JsonDumpsStreamTest, GivesOutWhatTheWholeParseWritesAndNothingItWouldTakeBack) {
  std::mt19937 rng(23);
  int checked = 0;
  for (int i = 0; i < 300; ++i) {
    Json doc = Json::object();
    doc["v"] = RandomValue(rng, 1);
    // The model's spellings: compact, indented, with non-ASCII as \u escapes.
    for (const std::string& text : {doc.dump(), doc.dump(2), doc.dump(-1, ' ', true)}) {
      const std::string expected = WholeDumps(text);
      EXPECT_EQ(FeedInPieces(text, rng, 1 + static_cast<size_t>(i % 8), expected), expected)
          << text;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 900);
}

// Spellings json.dumps(json.loads(text), ensure_ascii=False) rewrites, as Python writes them.
TEST(JsonDumpsStreamTest, RewritesAsPythonsJsonDumps) {
  std::mt19937 rng(5);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"a":1e5,"b":"\u00e9\/","c":[ ],"d":-0.0,"e":10})",
       R"({"a": 100000.0, "b": "é/", "c": [], "d": -0.0, "e": 10})"},
      {R"(["\ud83d\ude00", "tab\there", "\u0001", 1.50, 2E-3])",
       R"(["😀", "tab\there", "\u0001", 1.5, 0.002])"},
      {"{\n  \"k\" :\t{ \"n\" : null , \"t\" : true }\n}", R"({"k": {"n": null, "t": true}})"},
  };
  for (const auto& [text, python] : cases) {
    EXPECT_EQ(FeedInPieces(text, rng, 3, python), python);
  }
}

TEST(JsonDumpsStreamTest, StopsAtTheValuesEndAndRefusesWhatIsNotJson) {
  JsonDumpsStream object;
  std::string out;
  EXPECT_EQ(object.Feed(R"({"a": [1]} tail)", &out), 10u);
  EXPECT_TRUE(object.done());
  EXPECT_EQ(out, R"({"a": [1]})");

  JsonDumpsStream number;  // a number ends at the byte after it, which is not its own
  out.clear();
  EXPECT_EQ(number.Feed("12", &out), 2u);
  EXPECT_FALSE(number.done());
  EXPECT_EQ(out, "");
  EXPECT_EQ(number.Feed(", 3", &out), 0u);
  EXPECT_TRUE(number.done());
  EXPECT_EQ(out, "12");

  for (const std::string& bad :
       std::vector<std::string>{R"({"a" 1})", "[1,]", R"({"a":1,})", R"("\udc00")", R"("\ud83dx")",
                                "tru e", "[01]", "[1}", "\"a\x01\"", std::string(200, '[')}) {
    JsonDumpsStream stream;
    out.clear();
    (void)stream.Feed(bad, &out);
    EXPECT_TRUE(stream.invalid()) << bad;
  }
}

// Each framing, fed a byte at a time: the calls' names, and arguments that end as the whole
// parse's; a call shows up once its name is read and its arguments have begun.
TEST(ToolCallStreamerTest, FindsTheCallsInEachFamilysFraming) {
  using Framing = ToolCallStreamer::Framing;
  struct Case {
    Framing framing;
    std::string text;  // from where the calls may begin
    std::vector<ToolCall> calls;
  };
  const std::vector<Case> cases = {
      {Framing::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n"
       "</tool_call>\n<tool_call>\n{\"arguments\": {}, \"name\": \"get_time\"}\n</tool_call>",
       {{"get_weather", R"({"city": "Paris"})"}, {"get_time", "{}"}}},
      {Framing::kLlama3,
       "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"n\": 1.0}}; {\"name\": \"b\", "
       "\"arguments\": [true]}",
       {{"a", R"({"n": 1.0})"}, {"b", "[true]"}}},
      {Framing::kMistral,
       "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"k\": \"\\u00e9\"}}, {\"name\": \"b\", "
       "\"arguments\": {}}]",
       {{"a", R"({"k": "é"})"}, {"b", "{}"}}},
      {Framing::kJsonArray,
       R"([{"name": "get_time", "parameters": {}}, {"name": "w", "parameters": {"x": [1, 2]}}])",
       {{"get_time", "{}"}, {"w", R"({"x": [1, 2]})"}}},
  };
  for (const Case& c : cases) {
    ToolCallStreamer streamer(c.framing);
    size_t first_seen = 0;
    for (size_t n = 1; n <= c.text.size(); ++n) {
      streamer.Read(std::string_view(c.text).substr(0, n));
      if (first_seen == 0 && !streamer.calls().empty()) first_seen = n;
    }
    ASSERT_EQ(streamer.calls().size(), c.calls.size()) << c.text;
    for (size_t k = 0; k < c.calls.size(); ++k) {
      EXPECT_EQ(streamer.calls()[k].name, c.calls[k].name) << c.text;
      EXPECT_EQ(streamer.calls()[k].arguments, c.calls[k].arguments) << c.text;
    }
    EXPECT_LT(first_seen, c.text.size() / 2) << "the first call showed up late: " << c.text;
  }

  // Not calls: framing that stops the stream, and objects without a name.
  for (const auto& [framing, text] : std::vector<std::pair<Framing, std::string>>{
           {Framing::kMistral, "[TOOL_CALLS] nope"},
           {Framing::kLlama3, "{\"city\": \"Paris\"}; {\"name\": \"a\""},
           {Framing::kHermes, "<tool_call>\n[1, 2]"}}) {
    ToolCallStreamer streamer(framing);
    streamer.Read(text);
    EXPECT_TRUE(streamer.calls().empty()) << text;
  }
}

// Where the stream and the whole parse could disagree, they agree as far as a stream can: the
// nesting limit counts the framing's containers as the whole parse does (kMaxJsonNesting over the
// object, and the array mistral's and "required"'s calls are in), and a Llama object with both
// "parameters" and "arguments" is read by whichever comes first.
TEST(ToolCallStreamerTest, AgreesWithTheWholeParseAtItsEdges) {
  using Framing = ToolCallStreamer::Framing;
  const auto nested = [](int depth) {
    return std::string(static_cast<size_t>(depth), '[') +
           std::string(static_cast<size_t>(depth), ']');
  };
  struct Case {
    Framing framing;
    ToolCallParser parser;
    std::string open;
    std::string close;
    int deepest;  // the deepest arguments the whole parse takes
  };
  const std::vector<Case> cases = {
      {Framing::kHermes, ToolCallParser::kHermes, "<tool_call>\n", "\n</tool_call>",
       kMaxJsonNesting - 1},
      {Framing::kMistral, ToolCallParser::kMistral, "[TOOL_CALLS] [", "]", kMaxJsonNesting - 2},
  };
  for (const Case& c : cases) {
    for (const int depth : {c.deepest, c.deepest + 1}) {
      const std::string text =
          c.open + R"({"name": "f", "arguments": )" + nested(depth) + "}" + c.close;
      const ParsedToolOutput whole = ParseToolCalls(c.parser, text);
      ToolCallStreamer streamer(c.framing);
      streamer.Read(text);
      EXPECT_EQ(whole.calls.size(), depth == c.deepest ? 1u : 0u) << depth;
      // The call went out once its arguments began; past the limit the stream stops at the
      // bracket the whole parse refuses.
      ASSERT_EQ(streamer.calls().size(), 1u) << "depth " << depth << ": " << text;
      EXPECT_EQ(streamer.calls()[0].arguments,
                whole.calls.empty() ? std::string(static_cast<size_t>(c.deepest), '[')
                                    : whole.calls[0].arguments);
    }
  }

  const std::string both = R"({"name": "f", "parameters": {"a": 1}, "arguments": {"b": 2}})";
  const ParsedToolOutput whole = ParseToolCalls(ToolCallParser::kLlama3Json, both);
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0].arguments, R"({"a": 1})");
  ToolCallStreamer streamer(Framing::kLlama3);
  streamer.Read(both);
  ASSERT_EQ(streamer.calls().size(), 1u);
  EXPECT_EQ(streamer.calls()[0].arguments, whole.calls[0].arguments);
}

}  // namespace
}  // namespace headroom::router::openai
