// Reading tool calls out of a model's free text, for tool_choice "auto" (the model decides):
// each model family writes calls its own way, so a router started with --tool-call-parser NAME
// parses that way, as vLLM's --tool-call-parser does. Supported: "hermes" (Hermes 2 Pro / 3,
// Qwen2.5, Qwen3: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, what their chat
// templates tell the model to write). Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/openai/tools.h"

namespace headroom::router::openai {

// "hermes" -> kHermes; InvalidArgument naming the supported parsers otherwise.
absl::StatusOr<ToolCallParser> ParseToolCallParserName(std::string_view name);

// A finished reply read for tool calls.
struct ParsedToolOutput {
  // The text before the first call (nullopt when that is empty), or the whole text when it holds
  // no call or a call that does not parse (the reply is then ordinary content, as vLLM returns
  // it).
  std::optional<std::string> content;
  std::vector<ToolCall> calls;  // arguments as Python's json.dumps writes them
};
ParsedToolOutput ParseToolCalls(ToolCallParser parser, std::string_view text);

// While streaming: how many bytes of `text` (the reply so far) are content for sure, i.e. before
// anything that is, or may still become, the start of a call. The rest is held back until the
// reply shows whether it is a call.
size_t StreamableContent(ToolCallParser parser, std::string_view text);

}  // namespace headroom::router::openai
