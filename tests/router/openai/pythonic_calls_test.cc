// Streaming the pythonic tool-call format (vLLM's pythonic / llama4_pythonic): the fixture's
// replies (labelled by Python's ast, scripts/gen_pythonic_fixtures.py) streamed in pieces through
// the response builder join to what the whole reply gives, and PythonicCallStream hands out each
// argument once its value has ended. (The whole parse is tested in tools_test.cc.)
#include "router/openai/pythonic_calls.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/tool_parser.h"
#include "tests/router/openai/stream_deltas.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

ParsedRequest AutoRequest(bool stream) {
  return AutoToolRequest(ToolCallParser::kPythonic,
                         {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}, stream);
}

// Streamed at piece sizes 1, 5 and 9, every fixture reply Python reads as calls joins to what the
// whole reply gives (the same calls, ids and arguments; no content), the first call going out
// before the reply ends; but for a keyword given twice, whose first value went out. A reply that
// turns out not to be calls after a call went out keeps the call as streamed and sends none of its
// text as content, as vLLM's streaming does.
TEST(PythonicCallsTest, StreamedCallsJoinToTheWholeReplys) {
  const Json fixture = CallsFixture("pythonic_calls.json");
  ASSERT_TRUE(fixture.contains("cases"));
  const FixtureStreamCounts counts =
      StreamFixtureCases(fixture, AutoRequest, /*refused_sends_no_content=*/true);
  EXPECT_GT(counts.early, 100) << "calls came whole at the end";
  EXPECT_GT(counts.streamed_then_refused, 0);
}

struct Expected {
  std::string name;
  std::string arguments;
};

// `stream`'s calls so far are `want`.
void ExpectCalls(const PythonicCallStream& stream, const std::vector<Expected>& want,
                 const std::string& text) {
  ASSERT_EQ(stream.calls().size(), want.size()) << text;
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(stream.calls()[k].name, want[k].name) << text;
    EXPECT_EQ(stream.calls()[k].arguments, want[k].arguments) << text;
  }
}

// Each argument goes out once its value has ended, written as json.dumps writes it; commas and
// parentheses inside strings, brackets and comments do not end a value, and a call without
// arguments goes out at its ')'.
TEST(PythonicCallsTest, EachArgumentGoesOutOnceItsValueEnds) {
  PythonicCallStream stream;
  std::string text;
  const auto feed = [&](const std::string& piece, const std::vector<Expected>& want) {
    text += piece;
    stream.Read(text);
    ExpectCalls(stream, want, text);
  };
  // The arguments' json.dumps text as it grows.
  const std::string q = R"j({"q": "a, b)")j";
  const std::string tags = q + R"j(, "tags": ["x", "y"])j";
  const Expected search = {"search", tags + R"j(, "n": 16})j"};
  const Expected get_time = {"get_time", "{}"};
  const std::string code = R"j({"code": "f(a, b)\n")j";
  feed(" <|python_start|>[search(q=\"a, b", {});
  feed(")\", ", {{"search", q}});
  feed("tags=['x', \"y\"]", {{"search", q}});
  feed(", # a comment, with (a paren\n  n=0x10", {{"search", tags}});
  feed(")", {search});
  feed(",\n get_time(", {search});
  feed(")", {search, get_time});
  feed(", run(code='''f(a, b)\n''', d={'k': (1, None)}", {search, get_time, {"run", code}});
  const Expected run = {"run", code + R"j(, "d": {"k": [1, null]}})j"};
  feed(")]<|python_end|>", {search, get_time, run});
  feed(" and [more(x=1)]", {search, get_time, run});
}

// A value, a quote or a name cut at the end of the text waits for the rest: nothing goes out that
// the next piece could change.
TEST(PythonicCallsTest, ACutValueWaitsForItsEnd) {
  const std::string reply = R"([f(a="""x"y""", b=1.5e3, c=True)])";
  const size_t a_end = reply.find(", b=");
  const size_t b_end = reply.find(", c=");
  const size_t close = reply.find(")]");
  for (size_t cut = 1; cut < reply.size(); ++cut) {
    const std::string prefix = reply.substr(0, cut);
    PythonicCallStream stream;
    stream.Read(prefix);
    std::vector<Expected> want;
    if (cut > close) {
      want = {{"f", R"({"a": "x\"y", "b": 1500.0, "c": true})"}};
    } else if (cut > b_end) {
      want = {{"f", R"({"a": "x\"y", "b": 1500.0)"}};
    } else if (cut > a_end) {
      want = {{"f", R"({"a": "x\"y")"}};
    }
    ExpectCalls(stream, want, prefix);
  }
}

// What the whole parse refuses stops the stream where it shows: a positional argument, a
// comparison, a keyword as a name, a value Python does not read, text before the list, a line
// break in a one-line string, a stray bracket, a NUL byte.
TEST(PythonicCallsTest, WhatTheWholeParseRefusesStopsTheStream) {
  const std::vector<std::string> replies = {
      "[f(1)]",         "[f(a==1)]",    "[True(a=1)]", "[f(if=1)]",   "[f(a=x)]",
      "Sure: [f(a=1)]", "[f(a='x\n')]", "[f(a=1]",     "[1, f(a=1)]", std::string("[f(a=1\0)]", 9)};
  for (const std::string& reply : replies) {
    PythonicCallStream stream;
    stream.Read(reply);
    EXPECT_TRUE(stream.calls().empty()) << reply;
  }
  // Calls before the refusal stay; none after it.
  PythonicCallStream stream;
  stream.Read("[f(a=1), g(2), h(b=3)]");
  ExpectCalls(stream, {{"f", R"({"a": 1})"}}, "[f(a=1), g(2), h(b=3)]");
}

}  // namespace
}  // namespace headroom::router::openai
