// The Responses API over chat: what a Responses request becomes as a chat request, and how a chat
// answer, whole or streamed, becomes a Response. The shapes are OpenAI's API reference
// (https://platform.openai.com/docs/api-reference/responses); tests/e2e/openai_client_check.py
// also reads real answers with the official client's typed models and stream accumulator.
#include "router/openai/responses_api.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/openai/openai_protocol.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

ResponsesRequest Parse(const std::string& body) {
  absl::StatusOr<ResponsesRequest> r = ParseResponsesRequest(body);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : ResponsesRequest{};
}

TEST(ResponsesApiTest, ItemsBecomeTheChatTheyDescribe) {
  const ResponsesRequest r = Parse(R"({
    "model": "m", "instructions": "Be brief.", "max_output_tokens": 40, "temperature": 0,
    "top_logprobs": 2,
    "input": [
      {"role": "developer", "content": "Use tools."},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Time?"},
                                                      {"type": "input_text", "text": "In UTC."}]},
      {"type": "reasoning", "id": "rs_1", "summary": []},
      {"type": "function_call", "call_id": "c1", "name": "get_time", "arguments": "{}"},
      {"type": "function_call", "call_id": "c2", "name": "get_date", "arguments": "{\"tz\":1}"},
      {"type": "function_call_output", "call_id": "c1", "output": "12:00"},
      {"role": "assistant", "content": [{"type": "output_text", "text": "Noon."}]}
    ],
    "tools": [{"type": "function", "name": "get_time", "description": "Clock",
               "parameters": {"type": "object"}, "strict": true}],
    "tool_choice": {"type": "function", "name": "get_time"},
    "text": {"format": {"type": "json_schema", "name": "t", "schema": {"type": "object"}}}})");
  const Json expected_messages = Json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "system", "content": "Use tools."},
    {"role": "user", "content": [{"type": "text", "text": "Time?"},
                                 {"type": "text", "text": "In UTC."}]},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
      {"id": "c2", "type": "function", "function": {"name": "get_date", "arguments": "{\"tz\":1}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "12:00"},
    {"role": "assistant", "content": [{"type": "text", "text": "Noon."}]}])");
  EXPECT_EQ(r.chat["messages"], expected_messages);
  EXPECT_EQ(r.chat["model"], "m");
  EXPECT_EQ(r.chat["max_completion_tokens"], 40);
  EXPECT_EQ(r.chat["temperature"], 0);
  EXPECT_EQ(r.chat["logprobs"], true);
  EXPECT_EQ(r.chat["top_logprobs"], 2);
  EXPECT_EQ(r.chat["tools"], Json::parse(R"([{"type": "function", "function": {
      "name": "get_time", "description": "Clock", "parameters": {"type": "object"},
      "strict": true}}])"));
  EXPECT_EQ(r.chat["tool_choice"],
            Json::parse(R"({"type": "function", "function": {"name": "get_time"}})"));
  EXPECT_EQ(r.chat["response_format"], Json::parse(R"({"type": "json_schema", "json_schema":
      {"name": "t", "schema": {"type": "object"}}})"));
  EXPECT_FALSE(r.chat.contains("stream"));
  EXPECT_FALSE(r.stream);
  // The translated chat request is one the chat parser takes (but for the named call together
  // with a format, which it refuses as it would from a chat client).
  Json chat_body = r.chat;
  chat_body.erase("response_format");
  const absl::StatusOr<ParsedRequest> chat = ParseChatRequest(chat_body.dump());
  EXPECT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(r.echo["instructions"], "Be brief.");
  EXPECT_EQ(r.echo["store"], false);

  // A string input is the user's message; a stream asks chat for its usage.
  const ResponsesRequest plain = Parse(R"({"input": "Hi", "stream": true})");
  EXPECT_EQ(plain.chat["messages"], Json::parse(R"([{"role": "user", "content": "Hi"}])"));
  EXPECT_TRUE(plain.stream);
  EXPECT_EQ(plain.chat["stream_options"], Json::parse(R"({"include_usage": true})"));
  EXPECT_EQ(Parse(R"({"input": "x", "text": {"format": {"type": "json_object"}}})")
                .chat["response_format"],
            Json::parse(R"({"type": "json_object"})"));
}

// Reasoning items join the assistant turn they belong to (vLLM's merge): the item's content, or
// its summary's paragraphs, goes on the last message when it is the assistant's and has no
// reasoning yet, as text goes on one with no text; otherwise a new assistant message starts. An
// item with no text adds nothing.
TEST(ResponsesApiTest, ReasoningItemsJoinTheirTurn) {
  const ResponsesRequest r = Parse(R"({"input": [
      {"role": "user", "content": "Hi"},
      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "One."},
                                        {"type": "summary_text", "text": "Two."}]},
      {"type": "reasoning", "content": [], "summary": []},
      {"role": "assistant", "content": "Hello."},
      {"role": "assistant", "content": "Again."},
      {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "Three."}],
       "summary": [{"type": "summary_text", "text": "unused"}]},
      {"type": "reasoning", "content": null, "summary": [{"type": "summary_text", "text": "Four."}],
       "encrypted_content": null},
      {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]})");
  EXPECT_EQ(r.chat["messages"], Json::parse(R"([
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello.", "reasoning": "One.\n\nTwo."},
    {"role": "assistant", "content": "Again.", "reasoning": "Three."},
    {"role": "assistant", "content": null, "reasoning": "Four.", "tool_calls": [
      {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}])"));
}

TEST(ResponsesApiTest, BadRequestsNameTheField) {
  const struct {
    const char* body;
    const char* param;
    const char* message;
  } cases[] = {
      {R"({"model": "m"})", "input", "input is required"},
      {R"({"input": 5})", "input", "input must be a string or an array of items, got number"},
      {R"({"input": [{"type": "input_image"}]})", "input[0].type",
       "input[0].type \"input_image\" is not supported"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})",
       "input[0].content[0].type", "\"input_image\" is not supported (input_text and output_text"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", "input[0].role",
       "input[0].role \"tool\" is not supported"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]})",
       "input[0].arguments", "input[0].arguments is required"},
      {R"({"input": [{"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}]})",
       "input[0].encrypted_content", "encrypted_content is not supported"},
      {R"({"input": [{"type": "reasoning", "content": [{"type": "output_text", "text": "t"}]}]})",
       "input[0].content[0].type", "\"output_text\" is not supported (reasoning_text only)"},
      {R"({"input": [{"type": "reasoning", "summary": [{"type": "summary_text"}]}]})",
       "input[0].summary[0].text", "input[0].summary[0].text is required"},
      {R"({"input": "x", "tools": [{"type": "web_search_preview"}]})", "tools[0].type",
       "headroom runs no built-in tools"},
      {R"({"input": "x", "tool_choice": {"type": "file_search"}})", "tool_choice",
       "tool_choice must be"},
      {R"({"input": "x", "text": {"format": {"type": "xml"}}})", "text.format.type",
       "\"xml\" is not supported"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens",
       "max_output_tokens must be at least 1, got 0"},
      {R"({"input": "x", "background": true})", "background", "background mode needs"},
      {R"({"input": "x", "truncation": "middle"})", "truncation", "got \"middle\""},
  };
  for (const auto& c : cases) {
    const absl::StatusOr<ResponsesRequest> r = ParseResponsesRequest(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(ErrorParam(r.status()), c.param) << c.body;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status();
  }
  const absl::StatusOr<ResponsesRequest> previous =
      ParseResponsesRequest(R"({"input": "x", "previous_response_id": "resp_9"})");
  EXPECT_EQ(previous.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(previous.status().message().find("'resp_9' not found"), std::string::npos);
  EXPECT_EQ(ErrorParam(previous.status()), "previous_response_id");
}

// A chat answer with reasoning, content and two calls, whole, as the chat endpoint answers it.
Json WholeChat(const std::string& finish_reason) {
  Json chat = Json::parse(R"({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "qwen",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Checking.",
      "reasoning_content": "Need the time.",
      "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
        {"id": "call_b", "type": "function",
         "function": {"name": "get_date", "arguments": "{\"tz\": 1}"}}]},
      "logprobs": null, "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}})");
  chat["choices"][0]["finish_reason"] = finish_reason;
  return chat;
}

TEST(ResponsesApiTest, WholeChatAnswerIsOneResponse) {
  const ResponsesRequest request = Parse(R"({"input": "Time?", "max_output_tokens": 9})");
  const Json r = Json::parse(ResponsesBody(request.echo, WholeChat("tool_calls"), "resp_ab", 42));
  EXPECT_EQ(r["id"], "resp_ab");
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["created_at"], 42);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["incomplete_details"].is_null());
  EXPECT_EQ(r["model"], "qwen");
  EXPECT_EQ(r["max_output_tokens"], 9);
  EXPECT_EQ(r["usage"], Json::parse(R"({"input_tokens": 7,
      "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 12})"));
  const Json& output = r["output"];
  ASSERT_EQ(output.size(), 4u) << r.dump();
  EXPECT_EQ(output[0]["type"], "reasoning");
  EXPECT_EQ(output[0]["content"][0], Json::parse(R"({"type": "reasoning_text",
      "text": "Need the time."})"));
  EXPECT_EQ(output[1]["type"], "message");
  EXPECT_EQ(output[1]["role"], "assistant");
  EXPECT_EQ(output[1]["content"][0]["type"], "output_text");
  EXPECT_EQ(output[1]["content"][0]["text"], "Checking.");
  EXPECT_EQ(output[2]["type"], "function_call");
  EXPECT_EQ(output[2]["call_id"], "call_a");
  EXPECT_EQ(output[2]["name"], "get_time");
  EXPECT_EQ(output[3]["arguments"], "{\"tz\": 1}");
  for (const Json& item : output) {
    EXPECT_EQ(item["status"], "completed");
    EXPECT_EQ(item["id"].get<std::string>().find("_ab_"), item["id"].get<std::string>().find('_'))
        << item["id"];
  }
  EXPECT_NE(output[0]["id"], output[1]["id"]);

  // Cut by max_output_tokens: incomplete, with the reason.
  const Json cut = Json::parse(ResponsesBody(request.echo, WholeChat("length"), "resp_ab", 42));
  EXPECT_EQ(cut["status"], "incomplete");
  EXPECT_EQ(cut["incomplete_details"], Json::parse(R"({"reason": "max_output_tokens"})"));
}

// The chat SSE of WholeChat's answer, in pieces.
std::vector<std::string> ChatEvents() {
  const auto data = [](const std::string& json) { return "data: " + json + "\n\n"; };
  const std::string head = R"({"id": "chatcmpl-1", "object": "chat.completion.chunk",
      "created": 1, "model": "qwen", "choices": [{"index": 0, "delta": )";
  const auto chunk = [&](const std::string& delta, const std::string& finish = "null") {
    return data(head + delta + R"(, "logprobs": null, "finish_reason": )" + finish + "}]}");
  };
  return {
      chunk(R"({"role": "assistant", "content": ""})"),
      chunk(R"({"reasoning_content": "Need "})") + chunk(R"({"reasoning_content": "the time."})"),
      chunk(R"({"content": "Check"})"),
      chunk(R"({"content": "ing."})"),
      chunk(R"({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
          "function": {"name": "get_time", "arguments": ""}}]})"),
      chunk(R"({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})"),
      chunk(R"({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
          "function": {"name": "get_date", "arguments": "{\"tz\""}}]})"),
      chunk(R"({"tool_calls": [{"index": 1, "function": {"arguments": ": 1}"}}]})"),
      chunk("{}", R"("tool_calls")"),
      data(R"({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
          "model": "qwen", "choices": [], "usage": {"prompt_tokens": 7,
          "completion_tokens": 5, "total_tokens": 12}})"),
      data("[DONE]")};
}

struct Event {
  std::string type;
  Json data;
};

std::vector<Event> ReadEvents(const std::string& sse) {
  std::vector<Event> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    const std::string event = sse.substr(pos, end - pos);
    pos = end + 2;
    const size_t newline = event.find('\n');
    EXPECT_EQ(event.rfind("event: ", 0), 0u) << event;
    EXPECT_EQ(event.compare(newline + 1, 6, "data: "), 0) << event;
    out.push_back({event.substr(7, newline - 7), Json::parse(event.substr(newline + 7))});
    EXPECT_EQ(out.back().data["type"], out.back().type);
  }
  return out;
}

TEST(ResponsesApiTest, ChatStreamBecomesTheResponsesEventsOfTheSameResponse) {
  const ResponsesRequest request = Parse(R"({"input": "Time?", "stream": true})");
  ResponsesStream stream(request.echo, "resp_ab", 42);
  std::string sse;
  for (const std::string& piece : ChatEvents()) sse += stream.Translate(piece);
  const std::vector<Event> events = ReadEvents(sse);
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    types.push_back(events[i].type);
    EXPECT_EQ(events[i].data["sequence_number"], i);
  }
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",  // reasoning
                                             "response.content_part.added",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",  // message
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",  // call_a
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.output_item.added",  // call_b
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.completed"};
  EXPECT_EQ(types, expected);
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  EXPECT_TRUE(events[0].data["response"]["output"].empty());
  EXPECT_EQ(events[13].data["text"], "Checking.");
  EXPECT_EQ(events[23].data["arguments"], "{\"tz\": 1}");
  // The streamed Response is the one the whole chat answer gives.
  const Json whole =
      Json::parse(ResponsesBody(request.echo, WholeChat("tool_calls"), "resp_ab", 42));
  EXPECT_EQ(events.back().data["response"], whole);
  // Each item's done event carries the item as the Response lists it.
  EXPECT_EQ(events[8].data["item"], whole["output"][0]);
  EXPECT_EQ(events[15].data["item"], whole["output"][1]);
  EXPECT_EQ(events[24].data["item"], whole["output"][3]);
}

TEST(ResponsesApiTest, StreamEndsIncompleteOrWithTheChatError) {
  const ResponsesRequest request = Parse(R"({"input": "x", "stream": true})");
  ResponsesStream cut(request.echo, "resp_1", 1);
  const std::vector<Event> events = ReadEvents(
      cut.Translate(R"(data: {"model": "m", "choices": [{"index": 0, "delta": {"content": "ab"}, )"
                    R"("finish_reason": "length"}]})"
                    "\n\ndata: [DONE]\n\n"));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "response.completed");
  EXPECT_EQ(events.back().data["response"]["status"], "incomplete");
  EXPECT_EQ(events.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");

  ResponsesStream failed(request.echo, "resp_2", 1);
  const std::vector<Event> error = ReadEvents(failed.Translate(
      "data: {\"error\": {\"message\": \"queue full\", \"type\": \"rate_limit_error\", "
      "\"param\": null, \"code\": \"rate_limit_exceeded\"}}\n\ndata: [DONE]\n\n"));
  ASSERT_EQ(error.size(), 3u);  // created, in_progress, error; nothing after it
  EXPECT_EQ(error[2].type, "error");
  EXPECT_EQ(error[2].data["message"], "queue full");
  EXPECT_EQ(error[2].data["code"], "rate_limit_exceeded");

  // A reply with no text is one empty message, as the whole answer's.
  ResponsesStream empty(request.echo, "resp_3", 1);
  const std::vector<Event> quiet = ReadEvents(
      empty.Translate(R"(data: {"model": "m", "choices": [{"index": 0, "delta": {"content": ""}, )"
                      R"("finish_reason": "stop"}]})"
                      "\n\ndata: [DONE]\n\n"));
  ASSERT_FALSE(quiet.empty());
  EXPECT_EQ(quiet.back().type, "response.completed");
  const Json whole = Json::parse(ResponsesBody(
      request.echo, Json::parse(R"({"model": "m", "choices": [{"message": {"content": ""},
                      "finish_reason": "stop"}]})"),
      "resp_3", 1));
  EXPECT_EQ(quiet.back().data["response"]["output"], whole["output"]);
}

}  // namespace
}  // namespace headroom::router::openai
