// The phi4_mini_json tool-call parser against its rule run by Python's own str and json
// (scripts/gen_phi4_mini_fixtures.py, which states how it differs from vLLM's): whole replies,
// and the same replies streamed in pieces through the response builder, as a client joins them.
#include <string>

#include "gtest/gtest.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/openai/tool_call_stream.h"
#include "router/openai/tool_parser.h"
#include "tests/router/openai/stream_deltas.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

Json Fixture() { return CallsFixture("phi4_mini_calls.json"); }

// A chat request with one tool and tool_choice "auto" read by the phi4_mini_json parser.
ParsedRequest AutoRequest(bool stream) {
  return AutoToolRequest(ToolCallParser::kPhi4MiniJson,
                         {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}, stream);
}

// Every reply of the fixture (hand-written, generated and mutated) gives the content and the
// calls Python computes, arguments byte for byte.
TEST(Phi4MiniCallsTest, ReadsWhatPythonReads) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("cases"));
  int with_calls = 0;
  for (const Json& c : fixture["cases"]) {
    with_calls += ExpectParsesAsLabelled(ToolCallParser::kPhi4MiniJson, c) ? 1 : 0;
  }
  EXPECT_GT(with_calls, 250);
  EXPECT_GT(fixture["cases"].size() - static_cast<size_t>(with_calls), 400u);
  EXPECT_EQ(ParseToolCallParserName("phi4_mini_json").value(), ToolCallParser::kPhi4MiniJson);
  EXPECT_FALSE(KeepsSpecialTokens(ToolCallParser::kPhi4MiniJson));
}

// Streamed at piece sizes 1, 5 and 9, every fixture reply with calls joins to what the whole reply
// gives: the same content before the tag, the same calls with the same ids and arguments, streamed
// before the reply ends (but for a key given twice, whose first value went out). A reply whose
// array turns out not to be calls after a call went out keeps the calls as streamed and sends no
// more of its text as content, as vLLM's streaming does.
TEST(Phi4MiniCallsTest, StreamedCallsJoinToTheWholeReplys) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("cases"));
  const FixtureStreamCounts counts =
      StreamFixtureCases(fixture, AutoRequest, /*refused_sends_no_content=*/false);
  EXPECT_GT(counts.early, 200) << "calls came whole at the end";
  EXPECT_GT(counts.streamed_then_refused, 0);
}

// The array streams call by call, the text before the tag goes out as content, and a tail that
// may still become the tag is held back.
TEST(Phi4MiniCallsTest, CallsStreamAsTheArrayGrows) {
  ToolCallStreamer stream(ToolCallStreamer::Framing::kPhi4Mini);
  std::string text =
      "functools[{\"name\": \"search\", \"arguments\": {\"tags\": [\"a\"], \"q\": \"Par";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 1u);
  EXPECT_EQ(stream.calls()[0].name, "search");
  EXPECT_EQ(stream.calls()[0].arguments, R"({"tags": ["a"], "q": "Par)");
  text += "is\"}}, {\"name\": \"get_time\", \"parameters\": {}}]";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 2u);
  EXPECT_EQ(stream.calls()[0].arguments, R"({"tags": ["a"], "q": "Paris"})");
  EXPECT_EQ(stream.calls()[1].name, "get_time");
  EXPECT_EQ(stream.calls()[1].arguments, "{}");

  EXPECT_EQ(StreamableContent(ToolCallParser::kPhi4MiniJson, "Let me check. functo"), 14u);
  EXPECT_EQ(StreamableContent(ToolCallParser::kPhi4MiniJson, "import functools\n"), 17u);
  EXPECT_EQ(StreamableContent(ToolCallParser::kPhi4MiniJson, "ok functools[{"), 3u);
  EXPECT_FALSE(HoldsCallStart(ToolCallParser::kPhi4MiniJson, "functools"));
  EXPECT_TRUE(HoldsCallStart(ToolCallParser::kPhi4MiniJson, "functools["));
}

}  // namespace
}  // namespace headroom::router::openai
