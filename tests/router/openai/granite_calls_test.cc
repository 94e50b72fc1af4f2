// The granite tool-call parser against vLLM's algorithm run by Python's own str and json
// (scripts/gen_granite_fixtures.py): whole replies, and the same replies streamed in pieces
// through the response builder, as a client joins them.
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

Json Fixture() { return CallsFixture("granite_calls.json"); }

// A chat request with one tool and tool_choice "auto" read by the granite parser.
ParsedRequest AutoRequest(bool stream) {
  return AutoToolRequest(ToolCallParser::kGranite,
                         {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}, stream);
}

// Every reply of the fixture (hand-written, generated and mutated) gives the content and the
// calls Python computes, arguments byte for byte.
TEST(GraniteCallsTest, ReadsWhatVllmsAlgorithmReadsInPython) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("cases"));
  int with_calls = 0;
  for (const Json& c : fixture["cases"]) {
    with_calls += ExpectParsesAsLabelled(ToolCallParser::kGranite, c) ? 1 : 0;
  }
  EXPECT_GT(with_calls, 200);
  EXPECT_GT(fixture["cases"].size() - static_cast<size_t>(with_calls), 300u);
  EXPECT_EQ(ParseToolCallParserName("granite").value(), ToolCallParser::kGranite);
  EXPECT_FALSE(KeepsSpecialTokens(ToolCallParser::kGranite));
}

// Streamed at piece sizes 1, 5 and 9, every fixture reply with calls joins to what the whole reply
// gives: the same calls with the same ids and arguments, streamed before the reply ends (but for
// a key given twice, whose first value went out). A reply that turns out not to be calls after a
// call went out (text after the array, a later element that is not a call, JSON broken further
// on: the mutated replies) keeps the calls as streamed and sends none of its text as content, as
// vLLM's streaming does; one that never looked like the array streams as content.
TEST(GraniteCallsTest, StreamedCallsJoinToTheWholeReplys) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("cases"));
  const FixtureStreamCounts counts =
      StreamFixtureCases(fixture, AutoRequest, /*refused_sends_no_content=*/true);
  EXPECT_GT(counts.early, 150) << "calls came whole at the end";
  EXPECT_GT(counts.streamed_then_refused, 0);
  RecordProperty("streamed_then_refused", counts.streamed_then_refused);
}

// The array streams call by call: the first call's arguments go out before the second call
// begins, and nothing is content while the reply may still be the array.
TEST(GraniteCallsTest, CallsStreamAsTheArrayGrows) {
  ToolCallStreamer stream(ToolCallStreamer::Framing::kGranite);
  std::string text = "<tool_call>\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 1u);
  EXPECT_EQ(stream.calls()[0].name, "get_weather");
  EXPECT_EQ(stream.calls()[0].arguments, R"({"city": "Par)");
  text += "is\"}}, {\"name\": \"get_time\", \"arguments\": {}}]";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 2u);
  EXPECT_EQ(stream.calls()[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(stream.calls()[1].arguments, "{}");

  for (const std::string_view held :
       {"", "  \n", "<", "<tool_c", "<|tool_call|>", "<tool_call>\n"}) {
    EXPECT_EQ(StreamableContent(ToolCallParser::kGranite, held, true), 0u) << held;
    EXPECT_FALSE(HoldsCallStart(ToolCallParser::kGranite, held)) << held;
  }
  EXPECT_TRUE(HoldsCallStart(ToolCallParser::kGranite, "<|tool_call|><tool_call> ["));
  // Not the array: content at once, and later text too.
  for (const std::string_view content : {"Sure", "<tool_call>x", "<|tool_call|> <tool_call>["}) {
    EXPECT_EQ(StreamableContent(ToolCallParser::kGranite, content, true), content.size())
        << content;
  }
  EXPECT_EQ(StreamableContent(ToolCallParser::kGranite, "[1]", false), 3u);
}

}  // namespace
}  // namespace headroom::router::openai
