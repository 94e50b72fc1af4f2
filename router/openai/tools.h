// OpenAI function calling as vLLM serves it: `tools` reach the chat template, and tool_choice
// "required" or a named function constrains the reply with a JSON schema (structured output), so
// the reply is the call: for a named function its arguments, for "required" a JSON array of
// {"name", "parameters"} objects. "auto" (the model decides, and its free text is read for calls)
// needs the model family's tool-call parser (tool_parser.h, the router's --tool-call-parser);
// without one it is refused, as vLLM refuses it. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {

// How a model writes tool calls in free text (tool_parser.h): the router's --tool-call-parser.
enum class ToolCallParser {
  kHermes,
  kLlama3Json,
  kMistral,
  kPythonic,
  kQwen3Coder,
  kGranite,
  kPhi4MiniJson,
  kGlm45,
  kGlm47,
  kSeedOss,
};

struct ToolChoice {
  enum class Kind { kNone, kAuto, kRequired, kFunction };
  Kind kind = Kind::kNone;
  std::string function;  // kFunction: the function's name
  // parallel_tool_calls: false limits a "required" reply to one call.
  bool parallel = true;
  // kAuto: how the reply's calls are read (the HTTP front sets it from --tool-call-parser, and
  // refuses "auto" without one).
  std::optional<ToolCallParser> parser;
};

// One call of a reply: the function's name and its arguments as a JSON text.
struct ToolCall {
  std::string name;
  std::string arguments;
};

// A chat request's tools and tool_choice.
struct ToolRequest {
  // Normalized as below (ToolChoiceSchema); an empty array when the request has none.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  // The request gave a `tools` array, maybe an empty one. Chat templates then see the list, []
  // included, as vLLM passes it (Llama 3.1's or Mistral's template renders a tools header for
  // []); without one they see None.
  bool given = false;
  ToolChoice choice;
};

// Reads `tools`, `tool_choice` and `parallel_tool_calls` with vLLM's rules: tool_choice defaults
// to "auto" when tools are given and "none" otherwise; "required" with no tools is "none"; a named
// function must be one of the tools; a choice other than "none" needs tools. Errors name the
// field ("tools[1].function.name"). Whether "auto" can be served is the HTTP front's to decide.
absl::StatusOr<ToolRequest> ParseToolRequest(const nlohmann::ordered_json& request);

// An assistant message's tool_calls ([{"id", "type": "function", "function": {"name",
// "arguments": "<JSON text>"}}]) as a chat template reads them: the arguments parsed into an
// object, as vLLM hands them to templates. `path` names the field in errors.
absl::StatusOr<nlohmann::ordered_json> ParseToolCalls(const nlohmann::ordered_json& calls,
                                                      std::string_view path);

// `tools` as the request gave them, each normalized to what vLLM hands the chat template
// (pydantic's model_dump of its tool model): {"type": "function", "function": {"name",
// "description" (or null), "parameters" (or null)}}, the client's key order kept inside
// parameters.
//
// The schema the reply must follow under `choice`: kFunction the function's parameters (the
// empty object's when it has none); kRequired {"type": "array", "minItems": 1, "items": {"anyOf":
// [one {"name": <that name>, "parameters": <its schema>} object per tool]}} with the tools'
// $defs merged at the top (maxItems 1 when not parallel). Empty for kNone / kAuto.
// InvalidArgument when two tools define one $defs name differently.
absl::StatusOr<std::string> ToolChoiceSchema(const nlohmann::ordered_json& tools,
                                             const ToolChoice& choice);

// The calls a finished reply holds: kFunction one call whose arguments are the text; kRequired
// the array's calls, arguments written as Python's json.dumps writes them (what vLLM returns).
// nullopt when the text is not a whole reply (cut by max_tokens) or the choice calls nothing.
std::optional<std::vector<ToolCall>> ToolCallsFromText(const ToolChoice& choice,
                                                       std::string_view text);

// A model's JSON text as Python's json.loads reads it, as JSON the router holds: nullopt when it
// is not JSON, nests deeper than kMaxJsonNesting, or has an integer literal outside int64 (which
// json.loads reads exactly and nlohmann would make a float) or a number json.loads reads as
// infinite or NaN. A key given twice keeps its first place with its last value, as in Python.
std::optional<nlohmann::ordered_json> JsonLoads(std::string_view text);

// Python's json.dumps(value, ensure_ascii=False), what vLLM writes a call's arguments with;
// nullopt when it cannot be written (a string that is not UTF-8).
std::optional<std::string> PyJsonDumps(const nlohmann::ordered_json& value);

// A call written as a JSON object {"name": ..., <arguments_key>: ...} ("parameters" in a
// "required" reply, "arguments" in Hermes' format), its arguments re-serialized as Python's
// json.dumps writes them; nullopt when it is not one.
std::optional<ToolCall> ToolCallFromJson(const nlohmann::ordered_json& call,
                                         std::string_view arguments_key);

}  // namespace headroom::router::openai
