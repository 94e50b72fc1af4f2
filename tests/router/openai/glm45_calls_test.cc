// The glm45 tool-call parser against the algorithm vLLM publishes, run by Python's own re, json
// and ast (scripts/gen_glm45_fixtures.py): whole replies, the same replies streamed in pieces
// through the response builder as a client joins them, and the calls GLM-4.5's real chat template
// writes read back to the arguments they were written from.
#include "router/openai/glm45_calls.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/openai/reasoning_parser.h"
#include "router/openai/tool_call_stream.h"
#include "router/openai/tool_parser.h"
#include "tests/router/openai/stream_deltas.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

Json Fixture() { return CallsFixture("glm45_calls.json"); }

ParsedRequest AutoRequest(const Json& tools, bool stream) {
  return AutoToolRequest(ToolCallParser::kGlm45, tools, stream);
}

// Every reply of the fixture (hand-written and mutated) gives the content and the calls Python
// computes, arguments byte for byte.
TEST(Glm45CallsTest, ReadsWhatVllmsAlgorithmReadsInPython) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("cases"));
  const ParsedRequest request = AutoRequest(fixture["tools"], false);
  ASSERT_EQ(request.tools.tools, fixture["tools"]) << "the router normalizes the tools otherwise";
  int with_calls = 0;
  for (const Json& c : fixture["cases"]) {
    with_calls += ExpectParsesAsLabelled(ToolCallParser::kGlm45, c, &request.tools.tools) ? 1 : 0;
  }
  EXPECT_GT(with_calls, 450);
  EXPECT_GT(fixture["cases"].size() - static_cast<size_t>(with_calls), 150u);
  EXPECT_EQ(ParseToolCallParserName("glm45").value(), ToolCallParser::kGlm45);
  EXPECT_TRUE(KeepsSpecialTokens(ToolCallParser::kGlm45)) << "vLLM's adjust_request";
}

// Without tools no parameter is typed string: every value is read as JSON or a Python literal.
TEST(Glm45CallsTest, WithoutToolsValuesAreReadAsJson) {
  const ParsedToolOutput parsed = ParseToolCalls(
      ToolCallParser::kGlm45,
      "<tool_call>f\n<arg_key>n</arg_key>\n<arg_value> 5 </arg_value>\n<arg_key>s</arg_key>\n"
      "<arg_value> x </arg_value>\n</tool_call>");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, R"({"n": 5, "s": "x"})");
}

// Streamed at piece sizes 1, 5 and 9, every fixture reply joins to what the whole reply gives:
// the same content, and the same calls with the same ids and arguments; calls stream before the
// reply ends. Where it cannot (docs/router.md): a key given twice (sent twice, which a JSON reader
// takes as the whole parse's value), or a reply cut inside a block, whose call went out and
// stays, after the ones the whole parse has.
TEST(Glm45CallsTest, StreamedCallsJoinToTheWholeReplys) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("cases"));
  int early = 0;
  int diverged = 0;
  for (const Json& c : fixture["cases"]) {
    const std::string reply = c["text"].get<std::string>();
    for (size_t step = 1; step <= 9; step += 4) {
      const StreamedAndWhole r = StreamAndAnswerWhole(
          AutoRequest(fixture["tools"], false), AutoRequest(fixture["tools"], true), reply, step);
      if (r.same) {
        if (step == 1 && !r.calls.empty() && r.calls[0].first_event + 1 < r.events) ++early;
        continue;
      }
      ++diverged;
      if (c["repeated_key"].get<bool>() && r.calls.size() == r.expected.size()) {
        for (size_t k = 0; k < r.calls.size(); ++k) {
          EXPECT_EQ(Json::parse(r.calls[k].arguments),
                    Json::parse(r.expected[k]["function"]["arguments"].get<std::string>()))
              << reply;
        }
        continue;
      }
      ASSERT_TRUE(c["open_block"].get<bool>()) << "step " << step << ": " << reply << "\n" << r.sse;
      ASSERT_EQ(r.calls.size(), r.expected.size() + 1) << reply << "\n" << r.sse;
      for (size_t k = 0; k < r.expected.size(); ++k) {
        EXPECT_EQ(r.calls[k].name, r.expected[k]["function"]["name"]) << reply;
        EXPECT_EQ(r.calls[k].arguments, r.expected[k]["function"]["arguments"]) << reply;
      }
      EXPECT_EQ(reply.substr(0, r.content.size()), r.content) << reply;
    }
  }
  // 509 replies have calls, 149 of them a first call without arguments, which goes out with its
  // block's end (often the reply's last byte); 107 replies end inside a block.
  EXPECT_GT(early, 350) << "calls came whole at the end";
  EXPECT_LT(diverged, 200);
}

// A long value streams pair by pair: the file's path goes out before its content is written, and
// each call closes when its block ends.
TEST(Glm45CallsTest, PairsStreamAsEachEnds) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("tools"));
  ToolCallStreamer stream(ToolCallStreamer::Framing::kGlm45, &fixture["tools"]);
  std::string text = "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.txt";
  stream.Read(text);
  EXPECT_TRUE(stream.calls().empty()) << "a call starts with its first pair";
  text += "</arg_value>\n<arg_key>content</arg_key>\n<arg_value>line 1\n";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 1u);
  EXPECT_EQ(stream.calls()[0].name, "write_file");
  EXPECT_EQ(stream.calls()[0].arguments, R"({"path": "a.txt")");
  text += "</arg_value>\n</tool_call>\n<tool_call>get_weather\n<arg_key>days</arg_key>";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 1u);
  EXPECT_EQ(stream.calls()[0].arguments, R"({"path": "a.txt", "content": "line 1\n"})");
  text += " \n <arg_value> 4 </arg_value>\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 2u);
  EXPECT_EQ(stream.calls()[1].arguments, R"({"days": 4, "city": "Oslo")");
  text += "\n</tool_call>";
  stream.Read(text);
  EXPECT_EQ(stream.calls()[1].arguments, R"({"days": 4, "city": "Oslo"})");
}

// The first assistant turn with a call in `case_name` of GLM-4.5's chat-template fixture, as
// transformers rendered it: what the model is trained to write after "<|assistant|>" (up to the
// next role tag); and the case itself.
std::pair<std::string, Json> RenderedCallTurn(const std::string& case_name) {
  std::ifstream in(std::string(std::getenv("HEADROOM_SOURCE_DIR")) +
                   "/tests/router/jinja/fixtures/jinja_chat_templates.json");
  const Json fixture = Json::parse(in);
  constexpr std::string_view kAssistant = "<|assistant|>";
  for (const Json& t : fixture["templates"]) {
    if (t["name"] != "glm4.5") continue;
    for (const Json& c : t["cases"]) {
      if (c["name"] != case_name) continue;
      const auto& text = c["expected"].get_ref<const std::string&>();
      for (size_t at = text.find(kAssistant); at != std::string::npos;
           at = text.find(kAssistant, at + 1)) {
        const size_t start = at + kAssistant.size();
        const std::string turn = text.substr(start, text.find("<|", start) - start);
        if (turn.find("<tool_call>") != std::string::npos) return {turn, c};
      }
    }
  }
  ADD_FAILURE() << "no glm4.5 case " << case_name << " with a call";
  return {};
}

// The template writes each argument's value bare (strings as they are, others as JSON). Split by
// the glm45 reasoning parser and read by the glm45 tool parser with the request's tools, as the
// router reads a reply, the turn gives back the calls the conversation wrote and no content (the
// line break GLM writes before its calls is none).
TEST(Glm45CallsTest, ReadsBackTheCallsGlm45sTemplateWrites) {
  for (const char* name : {"tool_call_with_structured_arguments", "tool_call_without_arguments",
                           "parallel_tool_calls", "reasoning_across_tool_calls"}) {
    const auto [turn, c] = RenderedCallTurn(name);
    const Json* assistant = nullptr;
    for (const Json& message : c["messages"]) {
      if (message["role"] == "assistant" && message.contains("tool_calls")) {
        assistant = &message;
        break;
      }
    }
    ASSERT_NE(assistant, nullptr) << name;
    ReasoningSplitter splitter(ReasoningParser::kGlm45);
    std::string reasoning;
    std::string content;
    splitter.Feed(turn, true, &reasoning, &content);
    EXPECT_EQ(reasoning, assistant->value("reasoning_content", "")) << name;
    const ParsedToolOutput parsed = ParseToolCalls(ToolCallParser::kGlm45, content, &c["tools"]);
    EXPECT_FALSE(parsed.content.has_value()) << name << ": " << *parsed.content;
    const Json& written = (*assistant)["tool_calls"];
    ASSERT_EQ(parsed.calls.size(), written.size()) << name << ": " << turn;
    for (size_t k = 0; k < written.size(); ++k) {
      EXPECT_EQ(parsed.calls[k].name, written[k]["function"]["name"]) << name;
      EXPECT_EQ(Json::parse(parsed.calls[k].arguments), written[k]["function"]["arguments"])
          << name;
    }
  }
}

}  // namespace
}  // namespace headroom::router::openai
