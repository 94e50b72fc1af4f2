#include "router/openai/responses_api.h"

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "router/openai/json_fields.h"

namespace headroom::router::openai {
namespace {

// Chat request keys a Responses request may also carry (vLLM's sampling extras and the OpenAI
// keys both APIs spell alike), copied as they are; the chat parser checks them.
constexpr const char* kPassedThrough[] = {"model",
                                          "temperature",
                                          "top_p",
                                          "top_k",
                                          "min_p",
                                          "repetition_penalty",
                                          "frequency_penalty",
                                          "presence_penalty",
                                          "seed",
                                          "stop",
                                          "stop_token_ids",
                                          "logit_bias",
                                          "ignore_eos",
                                          "min_tokens",
                                          "skip_special_tokens",
                                          "include_stop_str_in_output",
                                          "parallel_tool_calls",
                                          "user",
                                          "chat_template_kwargs",
                                          "priority",
                                          "cache_salt",
                                          "structured_outputs"};

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A string member that must be there.
absl::StatusOr<std::string> RequiredString(const Json& obj, const std::string& path,
                                           const char* key) {
  const std::string param = absl::StrCat(path, ".", key);
  const Json* value = Member(obj, key);
  if (value == nullptr) return Bad(param, absl::StrCat(param, " is required"));
  if (!value->is_string()) return WrongType(param, "a string", *value);
  return value->get<std::string>();
}

// An input message's content: a string, or text parts (input_text, output_text) as chat text
// parts.
absl::StatusOr<Json> MessageContent(const Json& content, const std::string& path) {
  if (content.is_string()) return content;
  if (!content.is_array()) return WrongType(path, "a string or an array of content parts", content);
  Json parts = Json::array();
  for (size_t j = 0; j < content.size(); ++j) {
    const Json& part = content[j];
    const std::string part_path = Path(path, j);
    if (!part.is_object()) return WrongType(part_path, "an object", part);
    HEADROOM_OPENAI_ASSIGN(type, RequiredString(part, part_path, "type"));
    if (type != "input_text" && type != "output_text" && type != "text") {
      return Bad(absl::StrCat(part_path, ".type"),
                 absl::StrCat(part_path, ".type \"", type,
                              "\" is not supported (input_text and output_text only)"));
    }
    HEADROOM_OPENAI_ASSIGN(text, RequiredString(part, part_path, "text"));
    parts.push_back(Json{{"type", "text"}, {"text", std::move(text)}});
  }
  return parts;
}

// The assistant message that items the model produced in one turn (its reasoning, its text, its
// calls) join: the last message when it is the assistant's and `key` is still free there, else a
// new one. Contiguous items become one message, as vLLM merges them (vllm#42189): templates expect
// a turn's reasoning, content and tool calls on one message.
Json& AssistantTurn(Json& messages, const char* key) {
  if (messages.empty() || messages.back()["role"] != "assistant" ||
      (messages.back().contains(key) && !messages.back()[key].is_null())) {
    messages.push_back(Json{{"role", "assistant"}, {"content", nullptr}});
  }
  return messages.back();
}

// A reasoning item's text: its `content` (reasoning_text parts), else its `summary`
// (summary_text parts, joined as paragraphs), as vLLM reads them. Encrypted reasoning is
// another server's; headroom issues none and cannot read it.
absl::StatusOr<std::string> ReasoningText(const Json& item, const std::string& path) {
  if (const Json* encrypted = Member(item, "encrypted_content");
      encrypted != nullptr && !encrypted->is_null()) {
    return Bad(absl::StrCat(path, ".encrypted_content"),
               absl::StrCat(path,
                            ".encrypted_content is not supported: headroom encrypts no reasoning; "
                            "send its text as content"));
  }
  std::string text;
  for (const auto& [key, part_type, separator] : {std::tuple{"content", "reasoning_text", ""},
                                                  std::tuple{"summary", "summary_text", "\n\n"}}) {
    const std::string list_path = absl::StrCat(path, ".", key);
    const Json* parts = Member(item, key);
    if (parts == nullptr || parts->is_null()) continue;
    if (!parts->is_array()) return WrongType(list_path, "an array", *parts);
    for (size_t j = 0; j < parts->size(); ++j) {
      const Json& part = (*parts)[j];
      const std::string part_path = Path(list_path, j);
      if (!part.is_object()) return WrongType(part_path, "an object", part);
      HEADROOM_OPENAI_ASSIGN(type, RequiredString(part, part_path, "type"));
      if (type != part_type) {
        return Bad(absl::StrCat(part_path, ".type"),
                   absl::StrCat(part_path, ".type \"", type, "\" is not supported (", part_type,
                                " only)"));
      }
      HEADROOM_OPENAI_ASSIGN(part_text, RequiredString(part, part_path, "text"));
      absl::StrAppend(&text, j == 0 ? "" : separator, part_text);
    }
    if (!text.empty()) return text;
  }
  return text;
}

// One input item (a message, the model's reasoning, a function call it made, a function's
// output) appended to the chat messages.
absl::Status AppendItem(const Json& item, size_t index, Json& messages) {
  const std::string path = Path("input", index);
  if (!item.is_object()) return WrongType(path, "an object", item);
  std::string type = "message";
  if (const Json* t = Member(item, "type"); t != nullptr) {
    if (!t->is_string()) return WrongType(absl::StrCat(path, ".type"), "a string", *t);
    type = t->get<std::string>();
  }
  if (type == "message") {
    HEADROOM_OPENAI_ASSIGN(role, RequiredString(item, path, "role"));
    if (role != "user" && role != "system" && role != "developer" && role != "assistant") {
      return Bad(absl::StrCat(path, ".role"),
                 absl::StrCat(path, ".role \"", role,
                              "\" is not supported (user, system, developer or assistant)"));
    }
    const std::string content_path = absl::StrCat(path, ".content");
    const Json* content = Member(item, "content");
    if (content == nullptr) return Bad(content_path, absl::StrCat(content_path, " is required"));
    HEADROOM_OPENAI_ASSIGN(chat_content, MessageContent(*content, content_path));
    if (role == "assistant") {
      AssistantTurn(messages, "content")["content"] = std::move(chat_content);
      return absl::OkStatus();
    }
    // Chat templates know no developer role; its instructions are the system's.
    messages.push_back(Json{{"role", role == "developer" ? "system" : role},
                            {"content", std::move(chat_content)}});
    return absl::OkStatus();
  }
  if (type == "reasoning") {
    HEADROOM_OPENAI_ASSIGN(text, ReasoningText(item, path));
    // An item with no text carries nothing a template could render.
    if (!text.empty()) AssistantTurn(messages, "reasoning")["reasoning"] = std::move(text);
    return absl::OkStatus();
  }
  if (type == "function_call") {
    HEADROOM_OPENAI_ASSIGN(call_id, RequiredString(item, path, "call_id"));
    HEADROOM_OPENAI_ASSIGN(name, RequiredString(item, path, "name"));
    HEADROOM_OPENAI_ASSIGN(arguments, RequiredString(item, path, "arguments"));
    Json call = {{"id", std::move(call_id)},
                 {"type", "function"},
                 {"function", {{"name", std::move(name)}, {"arguments", std::move(arguments)}}}};
    // Every call of a turn joins its assistant message, however many there are.
    if (messages.empty() || messages.back()["role"] != "assistant") {
      messages.push_back(Json{{"role", "assistant"}, {"content", nullptr}});
    }
    messages.back()["tool_calls"].push_back(std::move(call));
    return absl::OkStatus();
  }
  if (type == "function_call_output") {
    HEADROOM_OPENAI_ASSIGN(call_id, RequiredString(item, path, "call_id"));
    const std::string output_path = absl::StrCat(path, ".output");
    const Json* output = Member(item, "output");
    if (output == nullptr) return Bad(output_path, absl::StrCat(output_path, " is required"));
    HEADROOM_OPENAI_ASSIGN(content, MessageContent(*output, output_path));
    messages.push_back(Json{
        {"role", "tool"}, {"tool_call_id", std::move(call_id)}, {"content", std::move(content)}});
    return absl::OkStatus();
  }
  return Bad(absl::StrCat(path, ".type"),
             absl::StrCat(path, ".type \"", type,
                          "\" is not supported (message, function_call, function_call_output or "
                          "reasoning)"));
}

absl::StatusOr<Json> ChatMessages(const Json& obj) {
  Json messages = Json::array();
  HEADROOM_OPENAI_ASSIGN(instructions, OptString(obj, "instructions"));
  if (instructions.has_value()) {
    messages.push_back(Json{{"role", "system"}, {"content", *instructions}});
  }
  const Json* input = Member(obj, "input");
  if (input == nullptr) return Bad("input", "input is required");
  if (input->is_string()) {
    messages.push_back(Json{{"role", "user"}, {"content", *input}});
  } else if (input->is_array()) {
    for (size_t i = 0; i < input->size(); ++i) {
      if (absl::Status st = AppendItem((*input)[i], i, messages); !st.ok()) return st;
    }
  } else {
    return WrongType("input", "a string or an array of items", *input);
  }
  return messages;
}

// Responses' flat function tools ({"type": "function", "name", "parameters", ...}) as chat tools.
absl::StatusOr<Json> ChatTools(const Json& tools) {
  if (!tools.is_array()) return WrongType("tools", "an array", tools);
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string path = Path("tools", i);
    const Json& tool = tools[i];
    if (!tool.is_object()) return WrongType(path, "an object", tool);
    HEADROOM_OPENAI_ASSIGN(type, RequiredString(tool, path, "type"));
    if (type != "function") {
      return Bad(absl::StrCat(path, ".type"),
                 absl::StrCat(path, ".type \"", type,
                              "\" is not supported: headroom runs no built-in tools, only "
                              "functions the client calls"));
    }
    HEADROOM_OPENAI_ASSIGN(name, RequiredString(tool, path, "name"));
    Json function = {{"name", std::move(name)}};
    for (const char* key : {"description", "parameters", "strict"}) {
      if (const Json* value = Member(tool, key); value != nullptr) function[key] = *value;
    }
    out.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

absl::StatusOr<Json> ChatToolChoice(const Json& choice) {
  if (choice.is_string()) return choice;
  if (!choice.is_object()) return WrongType("tool_choice", "a string or an object", choice);
  const Json* type = Member(choice, "type");
  if (type == nullptr || *type != "function") {
    return Bad("tool_choice",
               "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
               "\"name\": ...}");
  }
  HEADROOM_OPENAI_ASSIGN(name, RequiredString(choice, "tool_choice", "name"));
  return Json{{"type", "function"}, {"function", {{"name", std::move(name)}}}};
}

// text.format as a chat response_format; nullopt for plain text.
absl::StatusOr<std::optional<Json>> ChatResponseFormat(const Json& text) {
  if (!text.is_object()) return WrongType("text", "an object", text);
  const Json* format = Member(text, "format");
  if (format == nullptr) return std::nullopt;
  if (!format->is_object()) return WrongType("text.format", "an object", *format);
  HEADROOM_OPENAI_ASSIGN(type, RequiredString(*format, "text.format", "type"));
  if (type == "text") return std::nullopt;
  if (type == "json_object") return Json{{"type", "json_object"}};
  if (type != "json_schema") {
    return Bad("text.format.type",
               absl::StrCat("text.format.type \"", type,
                            "\" is not supported (text, json_object or json_schema)"));
  }
  HEADROOM_OPENAI_ASSIGN(name, RequiredString(*format, "text.format", "name"));
  Json schema = {{"name", std::move(name)}};
  for (const char* key : {"description", "schema", "strict"}) {
    if (const Json* value = Member(*format, key); value != nullptr) schema[key] = *value;
  }
  return Json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
}

// The output items' ids: "<prefix>_<the response id's hex>_<output index>".
std::string ItemId(const char* prefix, const std::string& response_id, size_t index) {
  const size_t underscore = response_id.find('_');
  return absl::StrCat(
      prefix, "_",
      underscore == std::string::npos ? response_id : response_id.substr(underscore + 1), "_",
      index);
}

Json Usage(const Json& chat_usage) {
  if (!chat_usage.is_object()) return nullptr;
  const int64_t input = chat_usage.value("prompt_tokens", int64_t{0});
  const int64_t output = chat_usage.value("completion_tokens", int64_t{0});
  int64_t cached = 0;
  if (const Json* details = Member(chat_usage, "prompt_tokens_details"); details != nullptr) {
    cached = details->value("cached_tokens", int64_t{0});
  }
  return Json{{"input_tokens", input},
              {"input_tokens_details", {{"cached_tokens", cached}}},
              {"output_tokens", output},
              {"output_tokens_details", {{"reasoning_tokens", 0}}},
              {"total_tokens", input + output}};
}

// A reply cut by max_output_tokens is "incomplete"; any other end "completed".
std::string StatusOf(const std::string& finish_reason) {
  return finish_reason == "length" ? "incomplete" : "completed";
}

// The Response object around `output`: its status, the model and the request's settings.
Json MakeResponse(const Json& echo, const std::string& id, int64_t created_at,
                  const std::string& model, const std::string& status, Json output, Json usage) {
  Json r = {{"id", id},
            {"object", "response"},
            {"created_at", created_at},
            {"status", status},
            {"error", nullptr},
            {"incomplete_details",
             status == "incomplete" ? Json{{"reason", "max_output_tokens"}} : Json(nullptr)},
            {"model", model},
            {"output", std::move(output)},
            {"usage", std::move(usage)}};
  for (const auto& [key, value] : echo.items()) r[key] = value;
  return r;
}

Json MessageItem(const std::string& id, const std::string& text, Json logprobs,
                 const char* status) {
  return Json{{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"status", status},
              {"content",
               {{{"type", "output_text"},
                 {"text", text},
                 {"annotations", Json::array()},
                 {"logprobs", std::move(logprobs)}}}}};
}

Json ReasoningItem(const std::string& id, const std::string& text, const char* status) {
  return Json{{"id", id},
              {"type", "reasoning"},
              {"summary", Json::array()},
              {"content", {{{"type", "reasoning_text"}, {"text", text}}}},
              {"status", status}};
}

Json FunctionCallItem(const std::string& id, const Json& call, const std::string& arguments,
                      const char* status) {
  const Json* function = Member(call, "function");
  return Json{{"id", id},
              {"type", "function_call"},
              {"call_id", call.value("id", "")},
              {"name", function != nullptr ? function->value("name", "") : ""},
              {"arguments", arguments},
              {"status", status}};
}

std::string StringOr(const Json& object, const char* key) {
  const Json* value = object.is_object() ? Member(object, key) : nullptr;
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

}  // namespace

absl::StatusOr<ResponsesRequest> ParseResponsesRequest(std::string_view body) {
  HEADROOM_OPENAI_ASSIGN(obj, ParseObject(body));
  HEADROOM_OPENAI_ASSIGN(previous, OptString(obj, "previous_response_id"));
  if (previous.has_value()) {
    absl::Status st = absl::NotFoundError(absl::StrCat(
        "Response with id '", *previous,
        "' not found: headroom does not store responses (as vLLM by default), so continue a "
        "conversation by sending its earlier items in input"));
    st.SetPayload(kParamPayload, absl::Cord("previous_response_id"));
    return st;
  }
  ResponsesRequest out;
  HEADROOM_OPENAI_ASSIGN(messages, ChatMessages(obj));
  out.chat["messages"] = std::move(messages);
  for (const char* key : kPassedThrough) {
    if (const Json* value = Member(obj, key); value != nullptr) out.chat[key] = *value;
  }
  HEADROOM_OPENAI_ASSIGN(max_output, OptInt64(obj, "max_output_tokens"));
  if (max_output.has_value()) {
    if (*max_output < 1) {
      return Bad("max_output_tokens",
                 absl::StrCat("max_output_tokens must be at least 1, got ", *max_output));
    }
    out.chat["max_completion_tokens"] = *max_output;
  }
  HEADROOM_OPENAI_ASSIGN(top_logprobs, OptInt32(obj, "top_logprobs"));
  if (top_logprobs.has_value()) {
    out.chat["logprobs"] = true;
    out.chat["top_logprobs"] = *top_logprobs;
  }
  if (const Json* tools = Member(obj, "tools"); tools != nullptr) {
    HEADROOM_OPENAI_ASSIGN(chat_tools, ChatTools(*tools));
    if (!chat_tools.empty()) out.chat["tools"] = std::move(chat_tools);
  }
  if (const Json* choice = Member(obj, "tool_choice"); choice != nullptr) {
    HEADROOM_OPENAI_ASSIGN(chat_choice, ChatToolChoice(*choice));
    out.chat["tool_choice"] = std::move(chat_choice);
  }
  if (const Json* text = Member(obj, "text"); text != nullptr) {
    HEADROOM_OPENAI_ASSIGN(format, ChatResponseFormat(*text));
    if (format.has_value()) out.chat["response_format"] = std::move(*format);
  }
  HEADROOM_OPENAI_ASSIGN(stream, OptBool(obj, "stream"));
  out.stream = stream.value_or(false);
  if (out.stream) {
    out.chat["stream"] = true;
    out.chat["stream_options"] = {{"include_usage", true}};
  }
  HEADROOM_OPENAI_ASSIGN(background, OptBool(obj, "background"));
  if (background.value_or(false)) {
    return Bad("background",
               "background mode needs stored responses, which headroom does not keep (as vLLM by "
               "default); send the request without background");
  }
  HEADROOM_OPENAI_ASSIGN(truncation, OptString(obj, "truncation"));
  if (truncation.has_value() && *truncation != "disabled" && *truncation != "auto") {
    return Bad("truncation", absl::StrCat("truncation must be \"disabled\" or \"auto\", got \"",
                                          *truncation, "\""));
  }
  if (const Json* reasoning = Member(obj, "reasoning");
      reasoning != nullptr && !reasoning->is_object()) {
    return WrongType("reasoning", "an object", *reasoning);
  }
  const auto given = [&obj](const char* key, Json otherwise) {
    const Json* value = Member(obj, key);
    return value != nullptr ? *value : otherwise;
  };
  out.echo = {{"background", false},
              {"instructions", given("instructions", nullptr)},
              {"max_output_tokens", given("max_output_tokens", nullptr)},
              {"metadata", given("metadata", Json::object())},
              {"parallel_tool_calls", given("parallel_tool_calls", true)},
              {"previous_response_id", nullptr},
              {"reasoning", given("reasoning", Json{{"effort", nullptr}, {"summary", nullptr}})},
              {"service_tier", "auto"},
              {"store", false},
              {"temperature", given("temperature", nullptr)},
              {"text", given("text", Json{{"format", {{"type", "text"}}}})},
              {"tool_choice", given("tool_choice", "auto")},
              {"tools", given("tools", Json::array())},
              {"top_logprobs", given("top_logprobs", 0)},
              {"top_p", given("top_p", nullptr)},
              {"truncation", truncation.value_or("disabled")},
              {"user", given("user", nullptr)}};
  return out;
}

std::string ResponsesBody(const Json& echo, const Json& chat, const std::string& id,
                          int64_t created_at) {
  const Json& choices = chat.value("choices", Json::array());
  const Json choice = choices.empty() ? Json::object() : choices[0];
  const Json message = choice.value("message", Json::object());
  Json output = Json::array();
  if (const std::string reasoning = StringOr(message, "reasoning_content"); !reasoning.empty()) {
    output.push_back(ReasoningItem(ItemId("rs", id, output.size()), reasoning, "completed"));
  }
  const Json calls = message.value("tool_calls", Json::array());
  const std::string content = StringOr(message, "content");
  if (!content.empty() || calls.empty()) {
    Json logprobs = Json::array();
    if (const Json* lp = Member(choice, "logprobs"); lp != nullptr && lp->contains("content")) {
      logprobs = (*lp)["content"];
    }
    output.push_back(
        MessageItem(ItemId("msg", id, output.size()), content, std::move(logprobs), "completed"));
  }
  for (const Json& call : calls) {
    const Json* function = Member(call, "function");
    output.push_back(FunctionCallItem(ItemId("fc", id, output.size()), call,
                                      function != nullptr ? StringOr(*function, "arguments") : "",
                                      "completed"));
  }
  return Dump(MakeResponse(echo, id, created_at, StringOr(chat, "model"),
                           StatusOf(StringOr(choice, "finish_reason")), std::move(output),
                           Usage(chat.value("usage", Json(nullptr)))));
}

ResponsesStream::ResponsesStream(Json echo, std::string id, int64_t created_at)
    : echo_(std::move(echo)), id_(std::move(id)), created_at_(created_at) {}

std::string ResponsesStream::Translate(std::string_view sse) {
  constexpr std::string_view kData = "data: ";
  std::string out;
  while (!sse.empty()) {
    const size_t end = sse.find("\n\n");
    std::string_view event = sse.substr(0, end);
    sse.remove_prefix(end == std::string_view::npos ? sse.size() : end + 2);
    if (!event.starts_with(kData)) continue;
    event.remove_prefix(kData.size());
    if (event == "[DONE]") {
      out += OnDone();
      continue;
    }
    const Json chunk = Json::parse(event, nullptr, false);
    if (chunk.is_object()) out += OnChunk(chunk);
  }
  return out;
}

std::string ResponsesStream::Event(const std::string& type, Json fields) {
  Json event = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : fields.items()) event[key] = std::move(value);
  return absl::StrCat("event: ", type, "\ndata: ", Dump(event), "\n\n");
}

Json ResponsesStream::ResponseObject(const std::string& status) const {
  const bool done = status != "in_progress";
  return MakeResponse(echo_, id_, created_at_, model_, status, done ? output_ : Json::array(),
                      done ? usage_ : Json(nullptr));
}

std::string ResponsesStream::OnChunk(const Json& chunk) {
  if (ended_) return "";
  std::string out;
  if (!started_) {
    started_ = true;
    model_ = StringOr(chunk, "model");
    out += Event("response.created", {{"response", ResponseObject("in_progress")}});
    out += Event("response.in_progress", {{"response", ResponseObject("in_progress")}});
  }
  if (const Json* error = Member(chunk, "error"); error != nullptr) {
    ended_ = true;
    return out + Event("error", {{"code", error->value("code", Json(nullptr))},
                                 {"message", error->value("message", "")},
                                 {"param", error->value("param", Json(nullptr))}});
  }
  if (const Json* usage = Member(chunk, "usage"); usage != nullptr && usage->is_object()) {
    usage_ = Usage(*usage);
  }
  const Json& choices = chunk.value("choices", Json::array());
  if (choices.empty()) return out;
  const Json& choice = choices[0];
  const Json delta = choice.value("delta", Json::object());
  if (const std::string reasoning = StringOr(delta, "reasoning_content"); !reasoning.empty()) {
    out += Open(ItemKind::kReasoning);
    text_ += reasoning;
    out += Event("response.reasoning_text.delta", {{"item_id", output_.back()["id"]},
                                                   {"output_index", output_.size() - 1},
                                                   {"content_index", 0},
                                                   {"delta", reasoning}});
  }
  if (const std::string content = StringOr(delta, "content"); !content.empty()) {
    out += Open(ItemKind::kMessage);
    text_ += content;
    Json logprobs = Json::array();
    if (const Json* lp = Member(choice, "logprobs"); lp != nullptr && lp->contains("content")) {
      logprobs = (*lp)["content"];
      for (const Json& entry : logprobs) logprobs_.push_back(entry);
    }
    out += Event("response.output_text.delta", {{"item_id", output_.back()["id"]},
                                                {"output_index", output_.size() - 1},
                                                {"content_index", 0},
                                                {"delta", content},
                                                {"logprobs", std::move(logprobs)}});
  }
  for (const Json& call : delta.value("tool_calls", Json::array())) {
    out += Open(ItemKind::kFunctionCall, call);
    const Json* function = Member(call, "function");
    const std::string arguments = function != nullptr ? StringOr(*function, "arguments") : "";
    if (arguments.empty()) continue;
    text_ += arguments;
    out += Event("response.function_call_arguments.delta", {{"item_id", output_.back()["id"]},
                                                            {"output_index", output_.size() - 1},
                                                            {"delta", arguments}});
  }
  if (const std::string finish = StringOr(choice, "finish_reason"); !finish.empty()) {
    finish_reason_ = finish;
  }
  return out;
}

std::string ResponsesStream::Open(ItemKind kind, const Json& call) {
  const int64_t call_index = call.is_object() ? call.value("index", int64_t{0}) : -1;
  if (kind == kind_ && (kind != ItemKind::kFunctionCall || call_index == call_index_)) return "";
  std::string out = CloseCurrent();
  const size_t index = output_.size();
  Json item;
  Json part = nullptr;
  switch (kind) {
    case ItemKind::kReasoning:
      item = ReasoningItem(ItemId("rs", id_, index), "", "in_progress");
      item["content"] = Json::array();
      part = {{"type", "reasoning_text"}, {"text", ""}};
      break;
    case ItemKind::kMessage:
      item = MessageItem(ItemId("msg", id_, index), "", Json::array(), "in_progress");
      part = item["content"][0];
      item["content"] = Json::array();
      break;
    case ItemKind::kFunctionCall:
    case ItemKind::kNone:
      item = FunctionCallItem(ItemId("fc", id_, index), call, "", "in_progress");
      break;
  }
  out += Event("response.output_item.added", {{"output_index", index}, {"item", item}});
  if (!part.is_null()) {
    out += Event("response.content_part.added", {{"item_id", item["id"]},
                                                 {"output_index", index},
                                                 {"content_index", 0},
                                                 {"part", std::move(part)}});
  }
  output_.push_back(std::move(item));
  kind_ = kind;
  text_.clear();
  logprobs_ = Json::array();
  call_index_ = call_index;
  return out;
}

std::string ResponsesStream::CloseCurrent() {
  if (kind_ == ItemKind::kNone) return "";
  const size_t index = output_.size() - 1;
  Json& item = output_.back();
  const Json item_id = item["id"];
  std::string out;
  if (kind_ == ItemKind::kFunctionCall) {
    out += Event("response.function_call_arguments.done", {{"item_id", item_id},
                                                           {"output_index", index},
                                                           {"name", item["name"]},
                                                           {"arguments", text_}});
    item["arguments"] = text_;
  } else {
    const bool reasoning = kind_ == ItemKind::kReasoning;
    Json done = {
        {"item_id", item_id}, {"output_index", index}, {"content_index", 0}, {"text", text_}};
    if (!reasoning) done["logprobs"] = logprobs_;
    out += Event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                 std::move(done));
    const Json whole = reasoning ? ReasoningItem(item_id, text_, "completed")
                                 : MessageItem(item_id, text_, logprobs_, "completed");
    out += Event("response.content_part.done", {{"item_id", item_id},
                                                {"output_index", index},
                                                {"content_index", 0},
                                                {"part", whole["content"][0]}});
    item["content"] = whole["content"];
  }
  item["status"] = "completed";
  out += Event("response.output_item.done", {{"output_index", index}, {"item", item}});
  kind_ = ItemKind::kNone;
  return out;
}

std::string ResponsesStream::OnDone() {
  if (ended_ || !started_) return "";
  ended_ = true;
  // A reply with no text at all is still one (empty) message, as the whole answer's is.
  std::string out = output_.empty() ? Open(ItemKind::kMessage) : "";
  out += CloseCurrent();
  // Always response.completed, its response's status saying "incomplete" when cut, as vLLM
  // sends it: the official client's stream helper ends only at response.completed.
  return out +
         Event("response.completed", {{"response", ResponseObject(StatusOf(finish_reason_))}});
}

}  // namespace headroom::router::openai
