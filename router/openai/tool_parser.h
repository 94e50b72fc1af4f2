// Reading tool calls out of a model's free text, for tool_choice "auto" (the model decides):
// each model family writes calls its own way, so a router started with --tool-call-parser NAME
// parses that way, as vLLM's --tool-call-parser does. Supported, each the format the family's
// chat template writes a call in (tests read the real templates' renders):
//   hermes       Hermes 2 Pro / 3, Qwen2.5, Qwen3:
//                `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>` per call.
//   llama3_json  Llama 3.1 / 3.2 / 3.3 (also llama4_json): a JSON object `{"name": ...,
//                "parameters": {...}}` ("arguments" also read), after `<|python_tag|>` when the
//                special token is kept; several separated by ";". Text before the first call is
//                content; what follows the calls is dropped (as vLLM drops it).
//   mistral      Mistral 7B v0.3, Nemo: `[TOOL_CALLS]` then a JSON array of {"name",
//                "arguments"}. [TOOL_CALLS] is a special token, so the HTTP front keeps special
//                tokens in such a reply's text (KeepsSpecialTokens), and the calls get 9-character
//                ids, which Mistral's template requires of a tool_call_id.
//   pythonic     Llama 3.2, Llama 4, ToolACE (also llama4_pythonic): the whole reply a Python
//                list of calls, `[get_weather(city="Paris")]`, between Llama 4's <|python_start|>
//                and <|python_end|> or not (pythonic_calls.h).
//   qwen3_coder  Qwen3-Coder: `<tool_call>\n<function=NAME>\n<parameter=KEY>\nvalue\n</parameter>
//                \n</function>\n</tool_call>`, values converted by the parameters' types in the
//                request's tools (qwen3_coder_calls.h).
//   granite      Granite 3.x: the whole reply a JSON array of {"name", "arguments"}, after
//                <|tool_call|> (3.0's special token, when kept) and/or <tool_call> (3.1+); a
//                reply that is anything else is content whole, as vLLM reads it.
//   phi4_mini_json  Phi-4-mini: `functools[` then the rest of a JSON array of {"name",
//                "arguments"} ("parameters" also read); the text before it is content, what
//                follows the array is dropped (vLLM drops it too).
//   glm45        GLM-4.5 / 4.6: `<tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>value
//                </arg_value>\n</tool_call>` per call, values converted by the parameters' types
//                in the request's tools (glm_calls.h).
//   glm47        GLM-4.7: the same tags with nothing between them,
//                `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>value</arg_value></tool_call>`.
//   seed_oss     Seed-OSS: qwen3_coder's functions inside <seed:tool_call> tags, read with vLLM's
//                seed_oss variations (qwen3_coder_calls.h). qwen3_xml names qwen3_coder.
// Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "router/openai/tools.h"

namespace headroom::router::openai {

// The names --tool-call-parser takes.
inline constexpr char kToolCallParserNames[] =
    "hermes, llama3_json, llama4_json, mistral, pythonic, llama4_pythonic, qwen3_coder, granite, "
    "phi4_mini_json, glm45, glm47, seed_oss";

// "hermes" -> kHermes, ...; InvalidArgument naming the supported parsers otherwise.
absl::StatusOr<ToolCallParser> ParseToolCallParserName(std::string_view name);

// A finished reply read for tool calls.
struct ParsedToolOutput {
  // The text before the first call (nullopt when that is empty), or the whole text when it holds
  // no call or a call that does not parse (the reply is then ordinary content, as vLLM returns
  // it).
  std::optional<std::string> content;
  std::vector<ToolCall> calls;  // arguments as Python's json.dumps writes them
};
// `tools`: the request's tools (ToolRequest::tools), which qwen3_coder reads its values' types
// from (null: none).
ParsedToolOutput ParseToolCalls(ToolCallParser parser, std::string_view text,
                                const nlohmann::ordered_json* tools = nullptr);

// While streaming: how many bytes of `text` (the reply's text not yet sent; `reply_start`: it is
// the reply's beginning, nothing was sent before it) are content for sure, i.e. before anything
// that is, or may still become, the start of a call. The rest is held back until the reply shows
// whether it is a call.
size_t StreamableContent(ToolCallParser parser, std::string_view text, bool reply_start = true);

// `held` (what StreamableContent held back) holds the start of a call, not just text that may
// still become one: nothing after it can be content before the reply ends.
bool HoldsCallStart(ToolCallParser parser, std::string_view held);

// The reply's text must keep special tokens for `parser` to see its calls (mistral's
// [TOOL_CALLS]; GLM's and Seed-OSS's tags, should a tokenizer make them special; vLLM's
// adjust_request sets skip_special_tokens false for mistral and GLM).
bool KeepsSpecialTokens(ToolCallParser parser);

// Nine letters and digits derived from `seed` (a response id, choice and call index): the
// tool-call id Mistral's chat template accepts back in a tool message.
std::string MistralToolCallId(std::string_view seed);

}  // namespace headroom::router::openai
