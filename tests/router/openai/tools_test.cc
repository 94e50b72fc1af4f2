// Function calling: a request's tools / tool_choice / tool messages as vLLM reads them, the schema
// a named or "required" call follows (checked by the worker's own schema matcher, which the
// generation obeys), and the calls read back from a finished reply.
#include "router/openai/tools.h"

#include <string>

#include "gtest/gtest.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
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
  EXPECT_EQ(r->messages[1].content, "");
  EXPECT_EQ(r->messages[1].fields.dump(),
            R"({"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather",)"
            R"("arguments":{"unit":"c","city":"Paris"}}}]})");
  EXPECT_EQ(r->messages[2].role, "tool");
  EXPECT_EQ(r->messages[2].fields.dump(), R"({"tool_call_id":"call_1","name":"get_weather"})");
}

v1::GenerateResponse Piece(const std::string& text) {
  v1::GenerateResponse m;
  m.set_text(text);
  return m;
}

v1::GenerateResponse LastPiece(const std::string& text, v1::FinishReason reason) {
  v1::GenerateResponse m = Piece(text);
  m.set_finish_reason(reason);
  m.mutable_usage()->set_prompt_tokens(9);
  m.mutable_usage()->set_completion_tokens(5);
  return m;
}

// The delta of each "data: {...}" event (the [DONE] line skipped).
std::vector<Json> Deltas(const std::string& sse) {
  std::vector<Json> out;
  for (size_t pos = 0; (pos = sse.find("data: {", pos)) != std::string::npos; ++pos) {
    const Json chunk = Json::parse(sse.substr(pos + 6, sse.find("\n\n", pos) - pos - 6));
    if (!chunk["choices"].empty()) out.push_back(chunk["choices"][0]["delta"]);
  }
  return out;
}

TEST(ToolsTest, ANamedCallIsTheReplysToolCall) {
  const ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather +
                               R"(], "tool_choice": {"type": "function", "function": )"
                               R"({"name": "get_weather"}})");
  ResponseBuilder whole(r, "chatcmpl-00000000000000ab", 1, "m", nullptr);
  whole.Accumulate(0, Piece(R"({"city": )"));
  whole.Accumulate(0, LastPiece(R"("Paris"})", v1::FINISH_REASON_STOP));
  const Json message = Json::parse(whole.Body())["choices"][0]["message"];
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

TEST(ToolsTest, RequiredCallsComeWholeAtTheEnd) {
  const ParsedRequest r = Chat(std::string(R"("tools": [)") + kWeather + ", " + kTime +
                               R"(], "tool_choice": "required", "stream": true)");
  ResponseBuilder stream(r, "chatcmpl-00000000000000cd", 1, "m", nullptr);
  std::string sse = stream.StreamEvents(0, Piece(R"([{"name": "get_time", "parameters": {}}, )"));
  sse += stream.StreamEvents(
      0, LastPiece(R"({"name": "get_weather", "parameters": {"city": "Oslo"}}])",
                   v1::FINISH_REASON_STOP));
  const std::vector<Json> deltas = Deltas(sse);
  ASSERT_EQ(deltas.size(), 2u) << sse;  // the role, then both calls (no partial JSON)
  EXPECT_EQ(deltas[0]["role"], "assistant");
  ASSERT_EQ(deltas[1]["tool_calls"].size(), 2u);
  EXPECT_EQ(deltas[1]["tool_calls"][1]["index"], 1);
  EXPECT_EQ(deltas[1]["tool_calls"][1]["function"]["name"], "get_weather");
  EXPECT_EQ(deltas[1]["tool_calls"][1]["function"]["arguments"], R"({"city": "Oslo"})");
  EXPECT_NE(deltas[1]["tool_calls"][0]["id"], deltas[1]["tool_calls"][1]["id"]);

  // Cut by max_tokens before a whole call: the text is the content, and no call is claimed.
  ParsedRequest whole_request = r;
  whole_request.stream = false;
  ResponseBuilder whole(whole_request, "chatcmpl-00000000000000cd", 1, "m", nullptr);
  whole.Accumulate(0, LastPiece(R"([{"name": "get_ti)", v1::FINISH_REASON_LENGTH));
  const Json choice = Json::parse(whole.Body())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["message"]["content"], R"([{"name": "get_ti)");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
}

}  // namespace
}  // namespace headroom::router::openai
