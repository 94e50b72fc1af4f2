// The granite tool-call parser against vLLM's algorithm run by Python's own str and json
// (scripts/gen_granite_fixtures.py): whole replies, and the same replies streamed in pieces
// through the response builder, as a client joins them.
#include <cstdlib>
#include <fstream>
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

Json Fixture() {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  std::ifstream in(std::string(root != nullptr ? root : ".") +
                   "/tests/router/openai/fixtures/granite_calls.json");
  EXPECT_TRUE(in.good()) << "missing fixture granite_calls.json (is HEADROOM_SOURCE_DIR set?)";
  return in.good() ? Json::parse(in) : Json::object();
}

// A chat request with one tool and tool_choice "auto" read by the granite parser.
ParsedRequest AutoRequest(bool stream) {
  absl::StatusOr<ParsedRequest> r = ParseChatRequest(Json{
      {"messages", {{{"role", "user"}, {"content", "Go."}}}},
      {"tools", {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}},
      {"stream", stream}}.dump());
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  r->tools.choice.parser = ToolCallParser::kGranite;
  return *std::move(r);
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
  int early = 0;
  int streamed_then_refused = 0;
  for (const Json& c : fixture["cases"]) {
    const std::string reply = c["text"].get<std::string>();
    for (size_t step = 1; step <= 9; step += 4) {
      const StreamedAndWhole r =
          StreamAndAnswerWhole(AutoRequest(false), AutoRequest(true), reply, step);
      if (!r.same) {
        if (c["repeated_key"].get<bool>()) {
          // A key given twice: the stream sent the first; the calls are the same ones.
          ASSERT_EQ(r.calls.size(), r.expected.size()) << reply;
          for (size_t k = 0; k < r.calls.size(); ++k) {
            EXPECT_EQ(r.calls[k].name, r.expected[k]["function"]["name"]) << reply;
          }
          continue;
        }
        EXPECT_TRUE(c["calls"].empty()) << "step " << step << ": " << reply << "\n" << r.sse;
        EXPECT_EQ(r.content, "") << reply;
        EXPECT_FALSE(r.calls.empty()) << reply;
        ++streamed_then_refused;
        continue;
      }
      if (step == 1 && !r.calls.empty() && r.calls[0].first_event + 1 < r.events) ++early;
    }
  }
  EXPECT_GT(early, 150) << "calls came whole at the end";
  EXPECT_GT(streamed_then_refused, 0);
  RecordProperty("streamed_then_refused", streamed_then_refused);
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
