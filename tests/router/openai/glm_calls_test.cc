// The glm45 and glm47 tool-call parsers against the algorithms vLLM publishes, run by Python's own
// re, json and ast (scripts/gen_glm_fixtures.py): whole replies, the same replies streamed in
// pieces through the response builder as a client joins them, and the calls GLM-4.5's and
// GLM-4.7's real chat templates write read back to the arguments they were written from.
#include "router/openai/glm_calls.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/openai/reasoning_parser.h"
#include "router/openai/tool_call_stream.h"
#include "router/openai/tool_parser.h"
#include "tests/router/openai/stream_deltas.h"
#include "tests/router/openai/template_fixture.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

// Each parser's fixture: the replies Python labelled with its algorithm, and how many of them have
// calls (to check the fixture is the one written).
struct Parser {
  ToolCallParser parser;
  const char* name;
  const char* fixture;
  size_t with_calls;
  size_t cases;
};
constexpr Parser kParsers[] = {{ToolCallParser::kGlm45, "glm45", "glm45_calls.json", 509, 719},
                               {ToolCallParser::kGlm47, "glm47", "glm47_calls.json", 650, 907}};

// Every reply of each fixture (hand-written and mutated) gives the content and the calls Python
// computes, arguments byte for byte.
TEST(GlmCallsTest, ReadsWhatVllmsAlgorithmReadsInPython) {
  for (const Parser& p : kParsers) {
    SCOPED_TRACE(p.name);
    const Json fixture = CallsFixture(p.fixture);
    ASSERT_TRUE(fixture.contains("cases"));
    const ParsedRequest request = AutoToolRequest(p.parser, fixture["tools"], false);
    ASSERT_EQ(request.tools.tools, fixture["tools"]) << "the router normalizes the tools otherwise";
    size_t with_calls = 0;
    for (const Json& c : fixture["cases"]) {
      with_calls += ExpectParsesAsLabelled(p.parser, c, &request.tools.tools) ? 1u : 0u;
    }
    EXPECT_EQ(with_calls, p.with_calls);
    EXPECT_EQ(fixture["cases"].size(), p.cases);
    EXPECT_EQ(ParseToolCallParserName(p.name).value(), p.parser);
    EXPECT_TRUE(KeepsSpecialTokens(p.parser)) << "vLLM's adjust_request";
  }
}

// Without tools no parameter is typed string: every value is read as JSON or a Python literal.
TEST(GlmCallsTest, WithoutToolsValuesAreReadAsJson) {
  const ParsedToolOutput parsed = ParseToolCalls(
      ToolCallParser::kGlm45,
      "<tool_call>f\n<arg_key>n</arg_key>\n<arg_value> 5 </arg_value>\n<arg_key>s</arg_key>\n"
      "<arg_value> x </arg_value>\n</tool_call>");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, R"({"n": 5, "s": "x"})");
}

// Streams every reply of `fixture` at piece sizes 1, 5 and 9 against the same reply answered
// whole: it joins to the same content and the same calls with the same ids and arguments, but
// where a stream cannot follow the whole parse (docs/router.md): a key given twice (sent twice,
// which a JSON reader takes as the whole parse's value), or a reply cut inside a block, whose
// call went out and stays after the ones the whole parse has. Returns how many replies had their
// first call go out before their last piece, a byte at a time.
size_t StreamAgainstWhole(ToolCallParser parser, const Json& fixture) {
  size_t early = 0;
  for (const Json& c : fixture["cases"]) {
    const std::string reply = c["text"].get<std::string>();
    for (size_t step = 1; step <= 9; step += 4) {
      const StreamedAndWhole r =
          StreamAndAnswerWhole(AutoToolRequest(parser, fixture["tools"], false),
                               AutoToolRequest(parser, fixture["tools"], true), reply, step);
      if (r.same) {
        if (step == 1 && !r.calls.empty() && r.calls[0].first_event + 1 < r.events) ++early;
        continue;
      }
      if (c["repeated_key"].get<bool>() && r.calls.size() == r.expected.size()) {
        for (size_t k = 0; k < r.calls.size(); ++k) {
          EXPECT_EQ(Json::parse(r.calls[k].arguments),
                    Json::parse(r.expected[k]["function"]["arguments"].get<std::string>()))
              << reply;
        }
        continue;
      }
      EXPECT_TRUE(c["open_block"].get<bool>()) << "step " << step << ": " << reply << "\n" << r.sse;
      EXPECT_EQ(r.calls.size(), r.expected.size() + 1) << reply << "\n" << r.sse;
      for (size_t k = 0; k < std::min(r.calls.size(), r.expected.size()); ++k) {
        EXPECT_EQ(r.calls[k].name, r.expected[k]["function"]["name"]) << reply;
        EXPECT_EQ(r.calls[k].arguments, r.expected[k]["function"]["arguments"]) << reply;
      }
      EXPECT_EQ(reply.substr(0, r.content.size()), r.content) << reply;
    }
  }
  return early;
}

TEST(GlmCallsTest, StreamedCallsJoinToTheWholeReplys) {
  for (const Parser& p : kParsers) {
    SCOPED_TRACE(p.name);
    const Json fixture = CallsFixture(p.fixture);
    ASSERT_TRUE(fixture.contains("cases"));
    // A call without arguments goes out with its block's end, often the reply's last byte (149
    // of glm45's replies with calls start with one).
    EXPECT_GT(StreamAgainstWhole(p.parser, fixture), p.with_calls * 2 / 3)
        << "calls came whole at the end";
  }
}

// A long value streams pair by pair: the file's path goes out before its content is written, and
// each call closes when its block ends.
TEST(GlmCallsTest, PairsStreamAsEachEnds) {
  const Json fixture = CallsFixture("glm45_calls.json");
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

  // GLM-4.7's: the name ends at <arg_key>; a backslash-n may come before a value.
  ToolCallStreamer glm47(ToolCallStreamer::Framing::kGlm47, &fixture["tools"]);
  text = "<tool_call>get_weather<arg_key>city</arg_key>\\";
  glm47.Read(text);
  EXPECT_TRUE(glm47.calls().empty());
  text += "n<arg_value>Oslo</arg_value><arg_key>days";
  glm47.Read(text);
  ASSERT_EQ(glm47.calls().size(), 1u);
  EXPECT_EQ(glm47.calls()[0].name, "get_weather");
  EXPECT_EQ(glm47.calls()[0].arguments, R"({"city": "Oslo")");
  text += "</arg_key><arg_value>2</arg_value></tool_call><tool_call>ping</tool_call>";
  glm47.Read(text);
  ASSERT_EQ(glm47.calls().size(), 2u);
  EXPECT_EQ(glm47.calls()[0].arguments, R"({"city": "Oslo", "days": 2})");
  EXPECT_EQ(glm47.calls()[1].name, "ping");
  EXPECT_EQ(glm47.calls()[1].arguments, "{}");
}

// The first assistant turn with a call in `case_name` of the chat-template fixture's
// `template_name` (glm4.5, glm4.7), as transformers rendered it: what the model is trained to write
// after
// "<|assistant|>" (up to the next role tag); and the case itself.
std::pair<std::string, Json> RenderedCallTurn(const std::string& template_name,
                                              const std::string& case_name) {
  constexpr std::string_view kAssistant = "<|assistant|>";
  for (const Json& c : TemplateCases(template_name)) {
    if (c["name"] != case_name) continue;
    const auto& text = c["expected"].get_ref<const std::string&>();
    for (size_t at = text.find(kAssistant); at != std::string::npos;
         at = text.find(kAssistant, at + 1)) {
      const size_t start = at + kAssistant.size();
      const std::string turn = text.substr(start, text.find("<|", start) - start);
      if (turn.find("<tool_call>") != std::string::npos) return {turn, c};
    }
  }
  ADD_FAILURE() << "no " << template_name << " case " << case_name << " with a call";
  return {};
}

void ExpectReadsBack(const std::string& template_name, const std::string& name,
                     ToolCallParser parser, PromptReasoning prompt) {
  SCOPED_TRACE(template_name + " / " + name);
  auto [turn, c] = RenderedCallTurn(template_name, name);
  if (prompt == PromptReasoning::kOpened && turn.starts_with("<think>")) turn.erase(0, 7);
  const Json* assistant = nullptr;
  for (const Json& message : c["messages"]) {
    if (message["role"] == "assistant" && message.contains("tool_calls")) {
      assistant = &message;
      break;
    }
  }
  ASSERT_NE(assistant, nullptr);
  ReasoningSplitter splitter(ReasoningParser::kGlm45, prompt);
  std::string reasoning;
  std::string content;
  splitter.Feed(turn, true, &reasoning, &content);
  EXPECT_EQ(reasoning, assistant->value("reasoning_content", ""));
  const ParsedToolOutput parsed = ParseToolCalls(parser, content, &c["tools"]);
  EXPECT_FALSE(parsed.content.has_value()) << *parsed.content;
  const Json& written = (*assistant)["tool_calls"];
  ASSERT_EQ(parsed.calls.size(), written.size()) << turn;
  for (size_t k = 0; k < written.size(); ++k) {
    EXPECT_EQ(parsed.calls[k].name, written[k]["function"]["name"]);
    EXPECT_EQ(Json::parse(parsed.calls[k].arguments), written[k]["function"]["arguments"]);
  }
}

// The templates write each argument's value bare (strings as they are, others as JSON). Split by
// the glm45 reasoning parser and read by the family's tool parser with the request's tools, as the
// router reads a reply, an assistant turn gives back the calls the conversation wrote and no
// content (GLM-4.5's line break before its calls is none). GLM-4.7's prompt ends by opening
// <think>, so its reply is the turn without that tag, read as reasoning from its first byte.
TEST(GlmCallsTest, ReadsBackTheCallsTheTemplatesWrite) {
  struct Template {
    const char* name;
    ToolCallParser parser;
    PromptReasoning prompt;
  };
  for (const Template& t : {Template{"glm4.5", ToolCallParser::kGlm45, PromptReasoning::kNone},
                            Template{"glm4.7", ToolCallParser::kGlm47, PromptReasoning::kOpened}}) {
    for (const char* name : {"tool_call_with_structured_arguments", "tool_call_without_arguments",
                             "parallel_tool_calls", "reasoning_across_tool_calls"}) {
      ExpectReadsBack(t.name, name, t.parser, t.prompt);
    }
  }
}

}  // namespace
}  // namespace headroom::router::openai
