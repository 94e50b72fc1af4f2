// The qwen3_coder and seed_oss tool-call parsers against the algorithms vLLM publishes, run by
// Python's own re, int, float, json and ast (scripts/gen_qwen3_coder_fixtures.py): whole replies,
// and the same replies streamed in pieces through the response builder, as a client joins them;
// and the calls Seed-OSS's real chat template writes, read back.
#include "router/openai/qwen3_coder_calls.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/openai/pythonic_calls.h"
#include "router/openai/reasoning_parser.h"
#include "router/openai/tool_parser.h"
#include "tests/router/openai/stream_deltas.h"
#include "tests/router/openai/template_fixture.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

Json Fixture() { return CallsFixture("qwen3_coder_calls.json"); }

// The two parsers of the format, each with the fixture Python labelled by its algorithm.
struct Format {
  ToolCallParser parser;
  const char* name;
  const char* fixture;
};
constexpr Format kFormats[] = {
    {ToolCallParser::kQwen3Coder, "qwen3_coder", "qwen3_coder_calls.json"},
    {ToolCallParser::kSeedOss, "seed_oss", "seed_oss_calls.json"}};

// Every reply of each fixture (hand-written and mutated) gives the content and the calls Python
// computes, arguments byte for byte.
TEST(Qwen3CoderCallsTest, ReadsWhatVllmsAlgorithmReadsInPython) {
  for (const Format& f : kFormats) {
    SCOPED_TRACE(f.name);
    const Json fixture = CallsFixture(f.fixture);
    ASSERT_TRUE(fixture.contains("cases"));
    // The router hands the parser its normalized tools, as the fixture's are.
    const ParsedRequest request = AutoToolRequest(f.parser, fixture["tools"], false);
    ASSERT_EQ(request.tools.tools, fixture["tools"]);
    int with_calls = 0;
    for (const Json& c : fixture["cases"]) {
      with_calls += ExpectParsesAsLabelled(f.parser, c, &request.tools.tools) ? 1 : 0;
    }
    EXPECT_GT(with_calls, 500);
    EXPECT_GT(fixture["cases"].size() - static_cast<size_t>(with_calls), 100u);
    EXPECT_EQ(ParseToolCallParserName(f.name).value(), f.parser);
  }
  EXPECT_EQ(ParseToolCallParserName("qwen3_xml").value(), ToolCallParser::kQwen3Coder)
      << "vLLM's other parser for the format";
  // Seed-OSS's tags may be special tokens; Qwen3-Coder's are plain text.
  EXPECT_TRUE(KeepsSpecialTokens(ToolCallParser::kSeedOss));
  EXPECT_FALSE(KeepsSpecialTokens(ToolCallParser::kQwen3Coder));
}

// Without tools every value is its text.
TEST(Qwen3CoderCallsTest, WithoutToolsValuesAreText) {
  const ParsedToolOutput parsed = ParseToolCalls(
      ToolCallParser::kQwen3Coder,
      "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, R"({"n": "5"})");
}

// A parameter name given twice within one function: the whole parse keeps the first one's place
// with the last value, which a stream that already sent the first cannot follow.
bool HasRepeatedParameter(std::string_view reply) {
  std::vector<std::string_view> names;
  for (size_t at = 0; at < reply.size();) {
    const size_t function = reply.find("<function=", at);
    const size_t parameter = reply.find("<parameter=", at);
    if (parameter == std::string_view::npos) return false;
    if (function < parameter) {
      names.clear();
      at = function + 1;
      continue;
    }
    const size_t begin = parameter + 11;
    const std::string_view name = reply.substr(begin, reply.find('>', begin) - begin);
    if (std::find(names.begin(), names.end(), name) != names.end()) return true;
    names.push_back(name);
    at = begin;
  }
  return false;
}

// Streamed at piece sizes 1, 5 and 9, every fixture reply joins to what the whole reply gives:
// the same content, and the same calls with the same ids and arguments; calls stream before the
// reply ends. Where it cannot (docs/router.md): a name given twice, or a reply that turns out not
// to parse (a value that raises, a parameter without '>') after a call went out; the call then
// stays as streamed.
TEST(Qwen3CoderCallsTest, StreamedCallsJoinToTheWholeReplys) {
  for (const Format& f : kFormats) {
    SCOPED_TRACE(f.name);
    const Json fixture = CallsFixture(f.fixture);
    ASSERT_TRUE(fixture.contains("cases"));
    int early = 0;
    int diverged = 0;
    for (const Json& c : fixture["cases"]) {
      const std::string reply = c["text"].get<std::string>();
      for (size_t step = 1; step <= 9; step += 4) {
        const StreamedAndWhole r =
            StreamAndAnswerWhole(AutoToolRequest(f.parser, fixture["tools"], false),
                                 AutoToolRequest(f.parser, fixture["tools"], true), reply, step);
        if (!r.same) {
          ++diverged;
          if (HasRepeatedParameter(reply) && r.calls.size() == r.expected.size()) {
            // The name went out twice; read as JSON, the arguments are the whole parse's value.
            for (size_t k = 0; k < r.calls.size(); ++k) {
              EXPECT_EQ(Json::parse(r.calls[k].arguments),
                        Json::parse(r.expected[k]["function"]["arguments"].get<std::string>()))
                  << reply;
            }
          } else {
            EXPECT_TRUE(c["raised"].get<bool>()) << "step " << step << ": " << reply << "\n"
                                                 << r.sse;
          }
          continue;
        }
        if (step == 1 && !r.calls.empty() && r.calls[0].first_event + 1 < r.events) ++early;
      }
    }
    EXPECT_GT(early, 300) << "calls came whole at the end";
    EXPECT_LT(diverged, 40);
  }
}

// A long value streams parameter by parameter: the file's path goes out before its content is
// written, and each call closes before the next begins.
TEST(Qwen3CoderCallsTest, ParametersStreamAsEachEnds) {
  const Json fixture = Fixture();
  ASSERT_TRUE(fixture.contains("tools"));
  ToolCallStreamer stream(ToolCallStreamer::Framing::kQwen3Coder, &fixture["tools"]);
  std::string text = "<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 1u);
  EXPECT_EQ(stream.calls()[0].name, "write_file");
  EXPECT_EQ(stream.calls()[0].arguments, R"({"path": "a.txt")");
  text += "<parameter=content>\nline 1\n";
  stream.Read(text);
  EXPECT_EQ(stream.calls()[0].arguments, R"({"path": "a.txt")") << "the value has not ended";
  text += "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 1u) << "a call starts with its first parameter";
  EXPECT_EQ(stream.calls()[0].arguments, R"({"path": "a.txt", "content": "line 1"})");
  text += "<parameter=days>\n 4 \n<parameter=city>\nOslo\n";
  stream.Read(text);
  ASSERT_EQ(stream.calls().size(), 2u);
  EXPECT_EQ(stream.calls()[1].name, "get_weather");
  EXPECT_EQ(stream.calls()[1].arguments, R"({"days": 4)");
  text += "</function>";
  stream.Read(text);
  EXPECT_EQ(stream.calls()[1].arguments, R"({"days": 4, "city": "Oslo"})");

  // A reply that starts with <function= outside a block is read whole at the end: a later
  // <tool_call> would leave that function out.
  ToolCallStreamer bare(ToolCallStreamer::Framing::kQwen3Coder, &fixture["tools"]);
  bare.Read("<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>");
  EXPECT_TRUE(bare.calls().empty());
}

// Python's ast.literal_eval, which values of some types go through: one expression or a tuple,
// comments and blank lines around it, but a line break outside brackets ends it.
TEST(Qwen3CoderCallsTest, PythonLiteralsAsLiteralEvalReadsThem) {
  const auto literal = [](std::string_view text) -> std::string {
    std::optional<Json> value = ParsePythonLiteral(text);
    return value.has_value() ? value->dump() : "refused";
  };
  EXPECT_EQ(literal("1, 2"), "[1,2]");
  EXPECT_EQ(literal("(1,)"), "[1]");
  EXPECT_EQ(literal("1,"), "[1]");
  EXPECT_EQ(literal("  -5 # five\n\n"), "-5");
  EXPECT_EQ(literal("\n\n{'a': [True, None]}"), R"({"a":[true,null]})");
  EXPECT_EQ(literal("[1,\n 2]"), "[1,2]");
  EXPECT_EQ(literal("-\n1"), "refused");
  EXPECT_EQ(literal("\n  1"), "refused") << "IndentationError";
  EXPECT_EQ(literal("1\n2"), "refused");
  EXPECT_EQ(literal("Paris"), "refused");
  EXPECT_EQ(literal("'a' 'b'"), R"("ab")");
  EXPECT_EQ(literal("-(\n5\n)"), "-5") << "a line break inside a sign's parentheses";
  // Python compiles source with its line ends made "\n", and refuses a NUL byte.
  EXPECT_EQ(literal("'a\rb'"), "refused") << "a line end inside a one-line string";
  EXPECT_EQ(literal("'''a\r\nb\rc'''"), R"("a\nb\nc")");
  EXPECT_EQ(literal(std::string_view("1 #\0", 4)), "refused");
}

// Seed-OSS's chat template writes a call's values bare, non-strings as Python's str() of them
// ("['a', 'b']", "True"): split by the seed_oss reasoning parser and read by the seed_oss tool
// parser with the request's tools, as the router reads a reply, an assistant turn gives back the
// calls it was written from, each value converted by its parameter's type (a parameter the
// schema does not name stays text). The reply is the turn after "<seed:bos>assistant\n"; a turn
// without reasoning is one whose prompt closed it (thinking_budget 0).
TEST(Qwen3CoderCallsTest, SeedOssReadsBackTheCallsItsTemplateWrites) {
  int checked = 0;
  for (const Json& c : TemplateCases("seed-oss")) {
    const std::string name = c["name"].get<std::string>();
    if (name != "tool_call_round_trip" && name != "parallel_tool_calls" &&
        name != "reasoning_across_tool_calls" && name != "tool_call_with_structured_arguments") {
      continue;
    }
    const Json* assistant = nullptr;
    for (const Json& message : c["messages"]) {
      if (message["role"] == "assistant" && message.contains("tool_calls")) assistant = &message;
    }
    ASSERT_NE(assistant, nullptr) << name;
    const std::string& text = c["expected"].get_ref<const std::string&>();
    const size_t start = text.find("<seed:bos>assistant\n", text.find("<seed:bos>user"));
    ASSERT_NE(start, std::string::npos) << name;
    const size_t from = start + std::string_view("<seed:bos>assistant\n").size();
    const std::string reply = text.substr(from, text.find("<seed:eos>", from) - from);
    const bool thinks = assistant->contains("reasoning_content");
    ReasoningSplitter splitter(ReasoningParser::kSeedOss,
                               thinks ? PromptReasoning::kNone : PromptReasoning::kClosed);
    std::string reasoning;
    std::string content;
    splitter.Feed(reply, true, &reasoning, &content);
    EXPECT_EQ(reasoning, assistant->value("reasoning_content", "")) << name;
    const ParsedToolOutput parsed = ParseToolCalls(ToolCallParser::kSeedOss, content, &c["tools"]);
    EXPECT_EQ(parsed.content.value_or("").find_first_not_of('\n'), std::string::npos) << name;
    const Json& written = (*assistant)["tool_calls"];
    ASSERT_EQ(parsed.calls.size(), written.size()) << name << ": " << reply;
    for (size_t k = 0; k < written.size(); ++k) {
      EXPECT_EQ(parsed.calls[k].name, written[k]["function"]["name"]) << name;
      Json want = written[k]["function"]["arguments"];
      if (name == "tool_call_with_structured_arguments") {
        // Not in search_docs' schema: the text the template wrote.
        want["strict"] = "True";
        want["filter"] = "{'lang': 'fr', 'min': 1.5}";
        want["none"] = "None";
      }
      EXPECT_EQ(Json::parse(parsed.calls[k].arguments), want) << name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace headroom::router::openai
