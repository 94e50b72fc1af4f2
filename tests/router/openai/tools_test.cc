// Function calling: a request's tools / tool_choice / tool messages as vLLM reads them, the schema
// a named or "required" call follows (checked by the worker's own schema matcher, which the
// generation obeys), and the calls read back from a finished reply.
#include "router/openai/tools.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "gtest/gtest.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/openai/tool_parser.h"
#include "tests/router/openai/stream_deltas.h"
#include "tests/router/openai/template_fixture.h"
#include "worker/engine/json_schema.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kWeather[] = R"({"type": "function", "function": {"name": "get_weather",
    "description": "Weather now", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}})";
constexpr char kTime[] = R"({"type": "function", "function": {"name": "get_time"}})";

ParsedRequest Chat(const std::string& extra) {
  absl::StatusOr<ParsedRequest> r = ParseChatRequest(
      R"({"messages": [{"role": "user", "content": "Weather in Paris?"}], )" + extra + "}");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : ParsedRequest{};
}

// Does the schema the request generates under accept `doc` whole?
bool SchemaAccepts(const ParsedRequest& r, const std::string& doc) {
  absl::StatusOr<std::shared_ptr<const worker::JsonSchema>> schema =
      worker::JsonSchema::Compile(r.generate.sampling().json_schema());
  EXPECT_TRUE(schema.ok()) << schema.status();
  if (!schema.ok()) return false;
  worker::JsonSchemaMatcher matcher(schema->get());
  return matcher.Feed(doc) && matcher.Complete();
}

TEST(ToolsTest, ToolsAreNormalizedAsVllmHandsThemToTheTemplate) {
  const ParsedRequest r =
      Chat(std::string(R"("tool_choice": "none", "tools": [)") + kWeather + ", " + kTime + "]");
  EXPECT_EQ(r.tools.choice.kind, ToolChoice::Kind::kNone);
  EXPECT_TRUE(r.generate.sampling().json_schema().empty()) << "none constrains nothing";
  // pydantic's model_dump: type, then function {name, description, parameters}; absent ones are
  // null; the parameters keep the client's key order (city before unit, properties before
  // required).
  EXPECT_EQ(r.tools.tools.dump(),
            R"([{"type":"function","function":{"name":"get_weather","description":"Weather now",)"
            R"("parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":)"
            R"({"enum":["c","f"]}},"required":["city"]}}},{"type":"function","function":)"
            R"({"name":"get_time","description":null,"parameters":null}}])");
}

TEST(ToolsTest, NamedFunctionConstrainsTheReplyToItsArguments) {
  const ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime +
                               R"(], "tool_choice": {"type": "function", "function": )"
                               R"({"name": "get_weather"}})");
  EXPECT_EQ(r.tools.choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(r.tools.choice.function, "get_weather");
  EXPECT_TRUE(SchemaAccepts(r, R"({"city": "Paris", "unit": "c"})"));
  EXPECT_TRUE(SchemaAccepts(r, R"({"city": "Paris"})"));
  EXPECT_FALSE(SchemaAccepts(r, R"({"unit": "c"})")) << "city is required";
  EXPECT_FALSE(SchemaAccepts(r, R"({"city": "Paris", "unit": "k"})"));
  const auto calls = ToolCallsFromText(r.tools.choice, R"({"city": "Paris"})");
  ASSERT_TRUE(calls.has_value());
  ASSERT_EQ(calls->size(), 1u);
  EXPECT_EQ((*calls)[0].name, "get_weather");
  EXPECT_EQ((*calls)[0].arguments, R"({"city": "Paris"})");

  // A function without parameters takes an empty object.
  const ParsedRequest t = Chat(std::string(R"("tools": [)") + kTime +
                               R"(], "tool_choice": {"type": "function", "function": )"
                               R"({"name": "get_time"}})");
  EXPECT_TRUE(SchemaAccepts(t, "{}"));
  EXPECT_FALSE(SchemaAccepts(t, R"({"x": 1})"));
}

TEST(ToolsTest, RequiredIsAnArrayOfCallsToTheGivenTools) {
  const ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime +
                               R"(], "tool_choice": "required")");
  EXPECT_EQ(r.tools.choice.kind, ToolChoice::Kind::kRequired);
  const std::string two = R"([{"name": "get_weather", "parameters": {"city": "Oslo"}}, )"
                          R"({"name": "get_time", "parameters": {}}])";
  EXPECT_TRUE(SchemaAccepts(r, two));
  EXPECT_FALSE(SchemaAccepts(r, "[]")) << "at least one call";
  EXPECT_FALSE(SchemaAccepts(r, R"([{"name": "get_time"}])")) << "parameters are required";
  EXPECT_FALSE(SchemaAccepts(r, R"([{"name": "launch", "parameters": {}}])"));
  EXPECT_FALSE(SchemaAccepts(r, R"([{"name": "get_weather", "parameters": {}}])"))
      << "get_weather's own schema applies to its parameters";

  // The calls come back with their arguments as Python's json.dumps writes them (vLLM's reply).
  const auto calls = ToolCallsFromText(
      r.tools.choice, R"([{"name":"get_weather","parameters":{"city":"Oslo","unit":"c"}},)"
                      R"({"name":"get_time","parameters":{}}])");
  ASSERT_TRUE(calls.has_value());
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].name, "get_weather");
  EXPECT_EQ((*calls)[0].arguments, R"({"city": "Oslo", "unit": "c"})");
  EXPECT_EQ((*calls)[1].arguments, "{}");
  // A reply cut by max_tokens holds no whole call.
  EXPECT_FALSE(ToolCallsFromText(r.tools.choice, R"([{"name": "get_wea)").has_value());

  // parallel_tool_calls false: one call at most.
  const ParsedRequest one = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime +
                                 R"(], "tool_choice": "required", "parallel_tool_calls": false)");
  EXPECT_FALSE(SchemaAccepts(one, two));
  EXPECT_TRUE(SchemaAccepts(one, R"([{"name": "get_time", "parameters": {}}])"));

  // "required" without tools behaves as "none" (OpenAI's and vLLM's rule).
  const ParsedRequest none = Chat(R"("tools": [], "tool_choice": "required")");
  EXPECT_TRUE(none.tools.given) << "an empty list is given (templates see [])";
  EXPECT_FALSE(Chat(R"("tools": null)").tools.given);
  EXPECT_FALSE(Chat(R"("n": 1)").tools.given);
  EXPECT_EQ(none.tools.choice.kind, ToolChoice::Kind::kNone);
  EXPECT_TRUE(none.generate.sampling().json_schema().empty());
}

TEST(ToolsTest, RequiredHoistsTheToolsDefsToTheRoot) {
  const std::string point =
      R"({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})";
  const std::string tools =
      R"({"function": {"name": "move", "parameters": {"type": "object", "properties": )"
      R"({"to": {"$ref": "#/$defs/Point"}}, "required": ["to"], "$defs": {"Point": )" +
      point +
      R"(}}}}, {"function": {"name": "mark", "parameters": {"type": "object", )"
      R"("properties": {"at": {"$ref": "#/$defs/Point"}}, "required": ["at"], )"
      R"("$defs": {"Point": )" +
      point + "}}}}";
  const ParsedRequest r = Chat(R"("tool_choice": "required", "tools": [)" + tools + "]");
  EXPECT_TRUE(SchemaAccepts(r, R"([{"name": "move", "parameters": {"to": {"x": 3}}}])"));
  EXPECT_FALSE(SchemaAccepts(r, R"([{"name": "mark", "parameters": {"at": {"x": "3"}}}])"));

  // Two different schemas under one $defs name cannot both hold at the root.
  std::string clash = tools;
  clash.replace(clash.rfind("integer"), 7, "string");
  absl::StatusOr<ParsedRequest> bad = ParseChatRequest(
      R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required", "tools": [)" +
      clash + "]}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("$defs \"Point\" differently"), std::string::npos)
      << bad.status();
}

TEST(ToolsTest, ToolMessagesReachTheTemplateAsVllmGivesThem) {
  absl::StatusOr<ParsedRequest> r = ParseChatRequest(R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"unit\": \"c\", \"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18 C", "name": "get_weather"}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->messages.size(), 3u);
  // The arguments are parsed into an object, keys in the order written (vLLM json.loads them).
  EXPECT_TRUE(r->messages[1].parts.empty());
  EXPECT_EQ(r->messages[1].fields.dump(),
            R"({"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather",)"
            R"("arguments":{"unit":"c","city":"Paris"}}}]})");
  EXPECT_EQ(r->messages[2].role, "tool");
  EXPECT_EQ(r->messages[2].fields.dump(), R"({"tool_call_id":"call_1","name":"get_weather"})");
}

TEST(ToolsTest, ANamedCallIsTheReplysToolCall) {
  const ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather +
                               R"(], "tool_choice": {"type": "function", "function": )"
                               R"({"name": "get_weather"}})");
  ResponseBuilder whole(r, "chatcmpl-00000000000000ab", 1, "m", nullptr);
  whole.Accumulate(0, Piece(R"({"city": )"));
  whole.Accumulate(0, LastPiece(R"("Paris"})", v1::FINISH_REASON_STOP));
  const Json message = Json::parse(whole.Body())["choices"][0]["message"];
  EXPECT_EQ(Json::parse(whole.Body())["choices"][0]["finish_reason"], "stop")
      << "a named function's call ends with stop (OpenAI, vLLM)";
  EXPECT_EQ(message["content"], "");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["type"], "function");
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city": "Paris"})");
  const std::string id = message["tool_calls"][0]["id"].get<std::string>();
  EXPECT_EQ(id.rfind("chatcmpl-tool-", 0), 0u) << id;

  // Streamed: the role, then the arguments as they come; the first piece carries id and name,
  // the later ones only arguments, all at index 0. Joined they are the whole arguments.
  ParsedRequest streamed = r;
  streamed.stream = true;
  ResponseBuilder stream(streamed, "chatcmpl-00000000000000ab", 1, "m", nullptr);
  std::string sse = stream.StreamEvents(0, Piece(R"({"city": )"));
  sse += stream.StreamEvents(0, LastPiece(R"("Paris"})", v1::FINISH_REASON_STOP));
  const std::vector<Json> deltas = Deltas(sse);
  ASSERT_EQ(deltas.size(), 2u) << sse;
  EXPECT_EQ(deltas[0]["role"], "assistant");
  EXPECT_EQ(deltas[0]["tool_calls"][0]["id"], id);
  EXPECT_EQ(deltas[0]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_FALSE(deltas[1]["tool_calls"][0].contains("id"));
  EXPECT_EQ(deltas[1]["tool_calls"][0]["index"], 0);
  EXPECT_EQ(deltas[0]["tool_calls"][0]["function"]["arguments"].get<std::string>() +
                deltas[1]["tool_calls"][0]["function"]["arguments"].get<std::string>(),
            R"({"city": "Paris"})");
}

// "required" calls stream as vLLM streams them: each call's id and name once its parameters
// begin, then its arguments piece by piece; joined, they are the non-streamed reply's calls.
TEST(ToolsTest, RequiredCallsStreamAsTheyCome) {
  const ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime +
                               R"(], "tool_choice": "required", "stream": true)");
  const std::string reply =
      R"([{"name": "get_time", "parameters": {}}, {"name": "get_weather", "parameters": )"
      R"({"city": "Oslo", "unit": "c"}}])";
  ParsedRequest unstreamed = r;
  unstreamed.stream = false;
  ResponseBuilder whole(unstreamed, "chatcmpl-00000000000000cd", 1, "m", nullptr);
  whole.Accumulate(0, LastPiece(reply, v1::FINISH_REASON_STOP));
  const Json expected = Json::parse(whole.Body())["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(expected.size(), 2u);

  ResponseBuilder stream(r, "chatcmpl-00000000000000cd", 1, "m", nullptr);
  const std::string sse = StreamInPieces(stream, reply, 4, v1::FINISH_REASON_STOP);
  const std::vector<Json> deltas = Deltas(sse);
  EXPECT_EQ(deltas[0]["role"], "assistant");
  const std::vector<JoinedCall> calls = JoinCalls(deltas);
  ASSERT_EQ(calls.size(), 2u) << sse;
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(calls[k].id, expected[k]["id"]);
    EXPECT_EQ(calls[k].name, expected[k]["function"]["name"]);
    EXPECT_EQ(calls[k].arguments, expected[k]["function"]["arguments"]);
  }
  EXPECT_LT(calls[1].first_event + 5, deltas.size()) << "get_weather's name came late";
  EXPECT_GE(calls[1].pieces, 5) << "its arguments came in one piece";
  EXPECT_NE(calls[0].id, calls[1].id);
  // "required" calls that stopped end with "tool_calls" (vLLM, as OpenAI), whole or streamed.
  EXPECT_NE(sse.find(R"("finish_reason":"tool_calls")"), std::string::npos) << sse;
  EXPECT_EQ(Json::parse(whole.Body())["choices"][0]["finish_reason"], "tool_calls");

  // Cut by max_tokens before a whole call: the text is the content, and no call is claimed.
  ResponseBuilder cut(unstreamed, "chatcmpl-00000000000000cd", 1, "m", nullptr);
  cut.Accumulate(0, LastPiece(R"([{"name": "get_ti)", v1::FINISH_REASON_LENGTH));
  const Json choice = Json::parse(cut.Body())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["message"]["content"], R"([{"name": "get_ti)");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
}

// The Hermes format, as the real Qwen2.5-7B-Instruct template instructs the model (the fixture's
// text, from the model's tokenizer_config.json): each call a JSON object with name and arguments
// between <tool_call> tags on lines of their own.
TEST(ToolParserTest, HermesIsTheFormatQwen25sTemplateAsksFor) {
  std::string qwen;
  for (const Json& t : RealTemplates()) {
    if (t["name"] == "qwen2.5") qwen = t["template"].get<std::string>();
  }
  EXPECT_NE(qwen.find(R"(<tool_call>\n{\"name\": <function-name>, \"arguments\": )"
                      R"(<args-json-object>}\n</tool_call>)"),
            std::string::npos)
      << "the template no longer describes the format the parser reads";

  const ParsedToolOutput one = ParseToolCalls(
      ToolCallParser::kHermes,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
      "\"unit\": \"c\"}}\n</tool_call>");
  EXPECT_FALSE(one.content.has_value());
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].name, "get_weather");
  EXPECT_EQ(one.calls[0].arguments, R"({"city": "Paris", "unit": "c"})");

  const ParsedToolOutput two = ParseToolCalls(
      ToolCallParser::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>");
  EXPECT_EQ(two.content, "Let me check.\n");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[1].name, "b");
  EXPECT_EQ(two.calls[1].arguments, R"({"x": [1, 2]})");

  // The last call may stop before its end tag (EOS right after the JSON).
  const ParsedToolOutput open = ParseToolCalls(
      ToolCallParser::kHermes, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"k\": 1}}\n");
  ASSERT_EQ(open.calls.size(), 1u);
  EXPECT_EQ(open.calls[0].arguments, R"({"k": 1})");

  // No call, or something that only looks like one: the whole reply is content.
  for (const char* text : {"Paris is sunny.", "<tool_call>\n{\"name\": \"a\"", "",
                           "<tool_call>{\"arguments\": {}}</tool_call>"}) {
    const ParsedToolOutput none = ParseToolCalls(ToolCallParser::kHermes, text);
    EXPECT_TRUE(none.calls.empty()) << text;
    EXPECT_EQ(none.content, std::string(text));
  }
  EXPECT_FALSE(ParseToolCallParserName("deepseek_v3").ok());
}

TEST(ToolParserTest, StreamingHoldsBackWhatMayStartACall) {
  auto ready = [](std::string_view text) {
    return StreamableContent(ToolCallParser::kHermes, text);
  };
  EXPECT_EQ(ready("Hello"), 5u);
  EXPECT_EQ(ready("Hello <tool"), 6u);
  EXPECT_EQ(ready("Hello <"), 6u);
  EXPECT_EQ(ready("Hello <b>"), 9u);
  EXPECT_EQ(ready("Hi <tool_call>\n{"), 3u);
  EXPECT_EQ(ready("<tool_call"), 0u);
  // What is held back begins a call (nothing more is scanned until the end) or only may.
  EXPECT_TRUE(HoldsCallStart(ToolCallParser::kHermes, "<tool_call>\n{"));
  EXPECT_FALSE(HoldsCallStart(ToolCallParser::kHermes, "<tool_ca"));
  EXPECT_TRUE(HoldsCallStart(ToolCallParser::kLlama3Json, "\n{\"na"));
  EXPECT_FALSE(HoldsCallStart(ToolCallParser::kLlama3Json, " \n"));
  EXPECT_FALSE(HoldsCallStart(ToolCallParser::kMistral, "[TOOL_"));
}

// An "auto" reply through the response builder: calls found become message.tool_calls with
// finish_reason "tool_calls"; a reply without one is ordinary content.
TEST(ToolParserTest, AutoRepliesAreReadForCalls) {
  ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime + "]");
  ASSERT_EQ(r.tools.choice.kind, ToolChoice::Kind::kAuto);
  r.tools.choice.parser = ToolCallParser::kHermes;  // what the HTTP front sets
  const std::string reply =
      "Sure. <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

  ResponseBuilder whole(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  whole.Accumulate(0, LastPiece(reply, v1::FINISH_REASON_STOP));
  const Json choice = Json::parse(whole.Body())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Sure. ");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_time");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], "{}");

  ResponseBuilder plain(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  plain.Accumulate(0, LastPiece("It is 18 C <b>now</b>.", v1::FINISH_REASON_STOP));
  const Json text = Json::parse(plain.Body())["choices"][0];
  EXPECT_EQ(text["finish_reason"], "stop");
  EXPECT_EQ(text["message"]["content"], "It is 18 C <b>now</b>.");
  EXPECT_FALSE(text["message"].contains("tool_calls"));

  // Streamed: content goes out until a call may start; the call arrives whole at the end. The
  // content deltas join to the text before the call, never a piece of the tag.
  ParsedRequest streamed = r;
  streamed.stream = true;
  ResponseBuilder stream(streamed, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  std::string sse = stream.StreamEvents(0, Piece("Sure. <to"));
  sse += stream.StreamEvents(0, Piece("ol_call>\n{\"name\": \"get_time\", "));
  sse +=
      stream.StreamEvents(0, LastPiece("\"arguments\": {}}\n</tool_call>", v1::FINISH_REASON_STOP));
  std::string content;
  Json calls;
  for (const Json& delta : Deltas(sse)) {
    content += delta.value("content", "");
    if (delta.contains("tool_calls")) calls = delta["tool_calls"];
  }
  EXPECT_EQ(content, "Sure. ");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["function"]["name"], "get_time");
  EXPECT_NE(sse.find(R"("finish_reason":"tool_calls")"), std::string::npos) << sse;

  // Held-back text that turns out not to be a call is sent after all.
  ResponseBuilder held(streamed, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  std::string text_sse = held.StreamEvents(0, Piece("a <"));
  text_sse += held.StreamEvents(0, LastPiece("b>", v1::FINISH_REASON_STOP));
  std::string joined;
  for (const Json& delta : Deltas(text_sse)) joined += delta.value("content", "");
  EXPECT_EQ(joined, "a <b>");
  EXPECT_NE(text_sse.find(R"("finish_reason":"stop")"), std::string::npos) << text_sse;
}

// "auto" calls stream too, in each parser's format, as vLLM streams them: the content before the
// calls, then each call's id and name once its arguments begin, then pieces of them. Whatever the
// pieces' sizes, the deltas join to the non-streamed reply: its content and its calls, with the
// arguments json.dumps writes (escapes, numbers and spacing rewritten).
TEST(ToolParserTest, AutoCallsStreamAsTheModelWritesThem) {
  const std::string args = R"({"city" : "Zürich \"old\" town",  "days":3, "temp":1e2,)"
                           R"( "tags":["a", {"b":null}]})";
  const std::vector<std::pair<ToolCallParser, std::string>> replies = {
      {ToolCallParser::kHermes,
       "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", "
       "\"arguments\": " +
           args +
           "}\n</tool_call>\n<tool_call>\n"
           "{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
      {ToolCallParser::kLlama3Json,
       "Checking.\n<|python_tag|>{\"name\": \"get_weather\", "
       "\"parameters\": " +
           args +
           "}; {\"name\": \"get_time\", "
           "\"parameters\": {}}"},
      {ToolCallParser::kMistral,
       "Checking.[TOOL_CALLS] [{\"name\": \"get_weather\", "
       "\"arguments\": " +
           args +
           "}, {\"name\": \"get_time\", "
           "\"arguments\": {}}]"},
  };
  for (const auto& [parser, reply] : replies) {
    ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime + "]");
    r.tools.choice.parser = parser;
    ResponseBuilder whole(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
    whole.Accumulate(0, LastPiece(reply, v1::FINISH_REASON_STOP));
    const Json message = Json::parse(whole.Body())["choices"][0]["message"];
    ASSERT_EQ(message["tool_calls"].size(), 2u) << reply;
    EXPECT_EQ(Json::parse(message["tool_calls"][0]["function"]["arguments"].get<std::string>()),
              Json::parse(args));
    for (const size_t step : {size_t{1}, size_t{3}, size_t{7}}) {
      r.stream = true;
      ResponseBuilder stream(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
      const std::string sse = StreamInPieces(stream, reply, step, v1::FINISH_REASON_STOP);
      const std::vector<Json> deltas = Deltas(sse);
      std::string content;
      for (const Json& delta : deltas) content += delta.value("content", "");
      EXPECT_EQ(content, message["content"]) << reply;
      const std::vector<JoinedCall> calls = JoinCalls(deltas);
      ASSERT_EQ(calls.size(), 2u) << sse;
      for (size_t k = 0; k < 2; ++k) {
        EXPECT_EQ(calls[k].id, message["tool_calls"][k]["id"]);
        EXPECT_EQ(calls[k].name, message["tool_calls"][k]["function"]["name"]);
        EXPECT_EQ(calls[k].arguments, message["tool_calls"][k]["function"]["arguments"])
            << "step " << step << ": " << sse;
      }
      EXPECT_LT(calls[0].first_event + 3, deltas.size()) << "the first call came late: " << sse;
      EXPECT_GE(calls[0].pieces, 3) << "its arguments came in one piece: " << sse;
      EXPECT_NE(sse.find(R"("finish_reason":"tool_calls")"), std::string::npos) << sse;
    }
  }
}

// A reply cut by max_tokens inside a call that has begun to stream: the call stays as streamed
// (it cannot be taken back) and its text is not sent as content too; finish_reason "length".
TEST(ToolParserTest, ACallCutWhileStreamingStaysAsStreamed) {
  ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + "]");
  r.tools.choice.parser = ToolCallParser::kHermes;
  r.stream = true;
  ResponseBuilder stream(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  const std::string sse = StreamInPieces(
      stream, "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
      5, v1::FINISH_REASON_LENGTH);
  const std::vector<Json> deltas = Deltas(sse);
  std::string content;
  for (const Json& delta : deltas) content += delta.value("content", "");
  EXPECT_EQ(content, "Checking.\n");
  const std::vector<JoinedCall> calls = JoinCalls(deltas);
  ASSERT_EQ(calls.size(), 1u) << sse;
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, R"({"city": "Par)") << "all that was written";
  EXPECT_NE(sse.find(R"("finish_reason":"length")"), std::string::npos) << sse;

  // The same for "required".
  ParsedRequest required = Chat(std::string(R"("tools": [)") + kWeather +
                                R"(], "tool_choice": "required", "stream": true)");
  ResponseBuilder cut(required, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  const std::string cut_sse = StreamInPieces(
      cut, R"([{"name": "get_weather", "parameters": {"city": "Par)", 5, v1::FINISH_REASON_LENGTH);
  std::string cut_content;
  for (const Json& delta : Deltas(cut_sse)) cut_content += delta.value("content", "");
  EXPECT_EQ(cut_content, "") << cut_sse;
  EXPECT_EQ(JoinCalls(Deltas(cut_sse)).size(), 1u) << cut_sse;
}

// The assistant turn of the fixture's tool_call_round_trip case for `template_name`, as
// transformers rendered it with the model's real template: what the model is trained to write
// when it calls get_weather(city="Paris", unit="celsius").
std::string RenderedCallTurn(const std::string& template_name, std::string_view open,
                             std::string_view close) {
  for (const Json& c : TemplateCases(template_name)) {
    if (c["name"] != "tool_call_round_trip") continue;
    const auto& text = c["expected"].get_ref<const std::string&>();
    const size_t call = text.find("get_weather", text.find(open));  // past the tool list
    const size_t start = text.rfind(open, call) + open.size();
    return text.substr(start, text.find(close, start) - start);
  }
  ADD_FAILURE() << "no tool_call_round_trip case for " << template_name;
  return "";
}

TEST(ToolParserTest, ParsersReadTheCallsTheRealTemplatesWrite) {
  struct Case {
    const char* template_name;
    ToolCallParser parser;
    std::string_view open;   // what precedes the assistant's call in the render
    std::string_view close;  // what ends it
  };
  for (const Case& c :
       {Case{"qwen2.5", ToolCallParser::kHermes, "<|im_start|>assistant\n", "<|im_end|>"},
        Case{"llama3.1", ToolCallParser::kLlama3Json, "assistant<|end_header_id|>\n\n",
             "<|eot_id|>"},
        Case{"llama3.2", ToolCallParser::kLlama3Json, "assistant<|end_header_id|>\n\n",
             "<|eot_id|>"},
        Case{"mistral-v0.3", ToolCallParser::kMistral, "[/INST]", "</s>"},
        Case{"mistral-nemo", ToolCallParser::kMistral, "[/INST]", "</s>"}}) {
    const std::string turn = RenderedCallTurn(c.template_name, c.open, c.close);
    const ParsedToolOutput parsed = ParseToolCalls(c.parser, turn);
    ASSERT_EQ(parsed.calls.size(), 1u) << c.template_name << ": " << turn;
    EXPECT_EQ(parsed.calls[0].name, "get_weather") << c.template_name;
    EXPECT_EQ(parsed.calls[0].arguments, R"({"city": "Paris", "unit": "celsius"})")
        << c.template_name;
    EXPECT_EQ(parsed.content.value_or("").find_first_not_of(" \n"), std::string::npos)
        << c.template_name << " left content " << *parsed.content;
  }
}

// Llama 3.x: JSON objects with name and parameters (or arguments), after <|python_tag|> when
// special tokens are kept, several separated by ';'. Text before the first call is content.
TEST(ToolParserTest, Llama3JsonReadsJsonCalls) {
  const auto parse = [](std::string_view text) {
    return ParseToolCalls(ToolCallParser::kLlama3Json, text);
  };
  const ParsedToolOutput two = parse(
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": {\"y\": [1, {\"z\": \"}\"}]}}}; "
      "{\"name\": \"b\", \"arguments\": {}}");
  EXPECT_FALSE(two.content.has_value());
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].arguments, R"({"x": {"y": [1, {"z": "}"}]}})")
      << "nested objects and a brace inside a string";
  EXPECT_EQ(two.calls[1].name, "b");

  const ParsedToolOutput after_text =
      parse("Let me look {that} up.\n{\"name\": \"a\", \"parameters\": {\"q\": \"x;y\"}}");
  EXPECT_EQ(after_text.content, "Let me look {that} up.\n");
  ASSERT_EQ(after_text.calls.size(), 1u);
  EXPECT_EQ(after_text.calls[0].arguments, R"({"q": "x;y"})");

  // No call: JSON that is not a call, a cut-off call, plain text.
  for (const char* text : {"{\"answer\": 42}", "{\"name\": \"a\", \"parameters\": {",
                           "It is sunny.", "<|python_tag|>print(1)"}) {
    const ParsedToolOutput none = parse(text);
    EXPECT_TRUE(none.calls.empty()) << text;
    EXPECT_EQ(none.content, std::string(text));
  }
  EXPECT_EQ(ParseToolCallParserName("llama4_json").value(), ToolCallParser::kLlama3Json);

  // A model may write anything: arguments nested 100k deep are content, not a crash.
  const std::string deep = "{\"name\": \"a\", \"parameters\": {\"x\": " + std::string(100000, '[') +
                           std::string(100000, ']') + "}}";
  for (const ToolCallParser parser : {ToolCallParser::kLlama3Json, ToolCallParser::kHermes}) {
    const std::string reply = parser == ToolCallParser::kHermes ? "<tool_call>" + deep : deep;
    const ParsedToolOutput too_deep = ParseToolCalls(parser, reply);
    EXPECT_TRUE(too_deep.calls.empty());
    EXPECT_EQ(too_deep.content, reply);
  }

  // Streaming: the text before a possible call goes out, trailing space held with it.
  const auto ready = [](std::string_view text) {
    return StreamableContent(ToolCallParser::kLlama3Json, text);
  };
  EXPECT_EQ(ready("Hello"), 5u);
  EXPECT_EQ(ready("Hello \n"), 5u);
  EXPECT_EQ(ready("Hi {\"name\""), 2u);
  EXPECT_EQ(ready("Hi <|python"), 2u);
}

// Mistral: [TOOL_CALLS] then a JSON array of {name, arguments}. The tag is a special token, so
// the HTTP front keeps special tokens in the text of such requests (as vLLM does); a reply that
// does not parse is content without the tag.
TEST(ToolParserTest, MistralReadsToolCallsArrays) {
  const ParsedToolOutput two = ParseToolCalls(
      ToolCallParser::kMistral,
      "Checking.[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"k\": \"é\"}}, {\"name\": \"b\", "
      "\"arguments\": {}}]");
  EXPECT_EQ(two.content, "Checking.");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].arguments, R"({"k": "é"})");
  EXPECT_EQ(two.calls[1].name, "b");

  const ParsedToolOutput broken =
      ParseToolCalls(ToolCallParser::kMistral, "[TOOL_CALLS] [{\"name\": \"a\"");
  EXPECT_TRUE(broken.calls.empty());
  EXPECT_EQ(broken.content, " [{\"name\": \"a\"");
  // Through the response builder, whole and streamed, the content has no tag either.
  ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + "]");
  r.tools.choice.parser = ToolCallParser::kMistral;
  ResponseBuilder whole(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  whole.Accumulate(0, LastPiece("Hi [TOOL_CALLS] [{\"name\": \"a\"", v1::FINISH_REASON_LENGTH));
  EXPECT_EQ(Json::parse(whole.Body())["choices"][0]["message"]["content"], "Hi  [{\"name\": \"a\"");
  r.stream = true;
  ResponseBuilder stream(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  std::string sse = stream.StreamEvents(0, Piece("Hi [TOOL_CALLS] [{"));
  sse += stream.StreamEvents(0, LastPiece("\"name\": \"a\"", v1::FINISH_REASON_LENGTH));
  std::string joined;
  for (const Json& delta : Deltas(sse)) joined += delta.value("content", "");
  EXPECT_EQ(joined, "Hi  [{\"name\": \"a\"");
  EXPECT_TRUE(KeepsSpecialTokens(ToolCallParser::kMistral));
  EXPECT_FALSE(KeepsSpecialTokens(ToolCallParser::kHermes));
  EXPECT_EQ(StreamableContent(ToolCallParser::kMistral, "Ok [TOOL_"), 3u);
}

// The pythonic format (vLLM's pythonic / llama4_pythonic) against Python itself: the fixture's
// replies (hand-written and mutated) labelled by ast.parse + ast.literal_eval + json.dumps
// (scripts/gen_pythonic_fixtures.py). A reply Python reads as a list of calls gives those calls,
// arguments byte for byte; any other is all content.
TEST(ToolParserTest, PythonicReadsWhatPythonReads) {
  const Json fixture = LoadFixture("tests/router/openai/fixtures/pythonic_calls.json");
  ASSERT_TRUE(fixture.contains("cases"));
  int read = 0;
  int content = 0;
  for (const Json& c : fixture["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const ParsedToolOutput parsed = ParseToolCalls(ToolCallParser::kPythonic, text);
    if (c["calls"].is_null()) {
      EXPECT_TRUE(parsed.calls.empty()) << text;
      EXPECT_EQ(parsed.content, text);
      ++content;
      continue;
    }
    ASSERT_EQ(parsed.calls.size(), c["calls"].size()) << text;
    EXPECT_FALSE(parsed.content.has_value()) << text;
    for (size_t k = 0; k < parsed.calls.size(); ++k) {
      EXPECT_EQ(parsed.calls[k].name, c["calls"][k]["name"]) << text;
      EXPECT_EQ(parsed.calls[k].arguments, c["calls"][k]["arguments"]) << text;
    }
    ++read;
  }
  EXPECT_GT(read, 60);
  EXPECT_GT(content, 300);
  EXPECT_EQ(ParseToolCallParserName("llama4_pythonic").value(), ToolCallParser::kPythonic);
}

// Streaming a pythonic reply: the whole reply is the list or it is content, so one that starts
// like a list (or like Llama 4's tag) is never content until the end; its calls stream as their
// arguments are read (pythonic_calls_test.cc). Text that does not start so streams as content at
// once.
TEST(ToolParserTest, PythonicRepliesAreHeldWhileTheyMayBeCalls) {
  const auto streamable = [](std::string_view text) {
    return StreamableContent(ToolCallParser::kPythonic, text);
  };
  EXPECT_EQ(streamable("  "), 0u);
  EXPECT_EQ(streamable(" [get_weather(ci"), 0u);
  EXPECT_EQ(streamable("<|python_st"), 0u);
  EXPECT_EQ(streamable("<b>Hi"), 5u);
  EXPECT_EQ(streamable("The answer"), 10u);
  EXPECT_TRUE(HoldsCallStart(ToolCallParser::kPythonic, "\n[f("));
  EXPECT_FALSE(HoldsCallStart(ToolCallParser::kPythonic, "<|pyth")) << "may still be text";
  EXPECT_EQ(StreamableContent(ToolCallParser::kPythonic, " [2] more", /*reply_start=*/false), 9u)
      << "after content went out, a \"[\" is content";

  ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime + "]");
  r.tools.choice.parser = ToolCallParser::kPythonic;
  r.stream = true;
  ResponseBuilder stream(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  const std::string sse = StreamInPieces(
      stream, R"([get_weather(city="Paris", unit='c'), get_time()])", 5, v1::FINISH_REASON_STOP);
  const std::vector<Json> deltas = Deltas(sse);
  const std::vector<JoinedCall> calls = JoinCalls(deltas);
  ASSERT_EQ(calls.size(), 2u) << sse;
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, R"({"city": "Paris", "unit": "c"})");
  EXPECT_EQ(calls[1].arguments, "{}");
  EXPECT_LT(calls[0].first_event + 1, deltas.size()) << "streamed before the last event";
  std::string content;
  for (const Json& delta : deltas) content += delta.value("content", "");
  EXPECT_EQ(content, "");
  EXPECT_NE(sse.find(R"("finish_reason":"tool_calls")"), std::string::npos) << sse;

  // Once some of the reply went out as content, the rest is content: a later "[" is not held.
  ResponseBuilder cited(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  const std::vector<Json> cited_deltas = Deltas(StreamInPieces(
      cited, "Sure, see [1] and [2] for the details of it.", 4, v1::FINISH_REASON_STOP));
  std::string sent_before_last;
  for (size_t e = 0; e + 1 < cited_deltas.size(); ++e) {
    sent_before_last += cited_deltas[e].value("content", "");
  }
  EXPECT_NE(sent_before_last.find("[2]"), std::string::npos) << sent_before_last;

  ResponseBuilder text(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  const std::string text_sse =
      StreamInPieces(text, "[1] is a list, not a call", 4, v1::FINISH_REASON_STOP);
  content.clear();
  for (const Json& delta : Deltas(text_sse)) content += delta.value("content", "");
  EXPECT_EQ(content, "[1] is a list, not a call");
  EXPECT_NE(text_sse.find(R"("finish_reason":"stop")"), std::string::npos) << text_sse;
}

// Mistral's template refuses a tool_call_id that is not 9 letters and digits, so an auto reply
// read by the mistral parser gets such ids (distinct per call), as vLLM gives them.
TEST(ToolParserTest, MistralCallsGetNineCharacterIds) {
  ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime + "]");
  r.tools.choice.parser = ToolCallParser::kMistral;
  ResponseBuilder whole(r, "chatcmpl-00000000000000ef", 1, "m", nullptr);
  whole.Accumulate(0, LastPiece("[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}}, "
                                "{\"name\": \"get_time\", \"arguments\": {}}]",
                                v1::FINISH_REASON_STOP));
  const Json calls = Json::parse(whole.Body())["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  for (const Json& call : calls) {
    const auto id = call["id"].get<std::string>();
    EXPECT_EQ(id.size(), 9u) << id;
    EXPECT_TRUE(std::all_of(id.begin(), id.end(), [](char ch) { return std::isalnum(ch); })) << id;
  }
  EXPECT_NE(calls[0]["id"], calls[1]["id"]);
}

}  // namespace
}  // namespace headroom::router::openai
