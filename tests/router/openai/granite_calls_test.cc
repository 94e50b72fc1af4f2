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
    const std::string text = c["text"].get<std::string>();
    const ParsedToolOutput parsed = ParseToolCalls(ToolCallParser::kGranite, text);
    if (c["content"].is_null()) {
      EXPECT_FALSE(parsed.content.has_value()) << text;
    } else {
      EXPECT_EQ(parsed.content, c["content"].get<std::string>()) << text;
    }
    ASSERT_EQ(parsed.calls.size(), c["calls"].size()) << text;
    for (size_t k = 0; k < parsed.calls.size(); ++k) {
      EXPECT_EQ(parsed.calls[k].name, c["calls"][k]["name"]) << text;
      EXPECT_EQ(parsed.calls[k].arguments, c["calls"][k]["arguments"]) << text;
    }
    with_calls += parsed.calls.empty() ? 0 : 1;
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
    ResponseBuilder whole(AutoRequest(false), "chatcmpl-00000000000000aa", 1, "m", nullptr);
    whole.Accumulate(0, LastPiece(reply, v1::FINISH_REASON_STOP));
    const Json message = Json::parse(whole.Body())["choices"][0]["message"];
    const Json expected = message.value("tool_calls", Json::array());
    const std::string expected_content =
        message["content"].is_null() ? "" : message["content"].get<std::string>();
    for (size_t step = 1; step <= 9; step += 4) {
      ResponseBuilder stream(AutoRequest(true), "chatcmpl-00000000000000aa", 1, "m", nullptr);
      const std::string sse = StreamInPieces(stream, reply, step, v1::FINISH_REASON_STOP);
      const std::vector<Json> deltas = Deltas(sse);
      std::string content;
      for (const Json& delta : deltas) content += delta.value("content", "");
      const std::vector<JoinedCall> calls = JoinCalls(deltas);
      bool same = content == expected_content && calls.size() == expected.size();
      for (size_t k = 0; same && k < calls.size(); ++k) {
        same = calls[k].id == expected[k]["id"] &&
               calls[k].name == expected[k]["function"]["name"] &&
               calls[k].arguments == expected[k]["function"]["arguments"];
      }
      if (!same) {
        if (c["repeated_key"].get<bool>()) {
          // A key given twice: the stream sent the first; the calls are the same ones.
          ASSERT_EQ(calls.size(), expected.size()) << reply;
          for (size_t k = 0; k < calls.size(); ++k) {
            EXPECT_EQ(calls[k].name, expected[k]["function"]["name"]) << reply;
          }
          continue;
        }
        EXPECT_TRUE(c["calls"].empty()) << "step " << step << ": " << reply << "\n" << sse;
        EXPECT_EQ(content, "") << reply;
        EXPECT_FALSE(calls.empty()) << reply;
        ++streamed_then_refused;
        continue;
      }
      if (step == 1 && !calls.empty() && calls[0].first_event + 1 < deltas.size()) ++early;
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
