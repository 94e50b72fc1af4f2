#include "router/openai/tool_parser.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "router/tokenizer/string_util.h"

namespace headroom::router::openai {
namespace {

constexpr std::string_view kCallStart = "<tool_call>";
constexpr std::string_view kCallEnd = "</tool_call>";

// One call's JSON ({"name": ..., "arguments": {...}}), or nullopt when it is not one.
std::optional<ToolCall> HermesCall(std::string_view body) {
  return ToolCallFromJson(nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false),
                          "arguments");
}

ParsedToolOutput ParseHermes(std::string_view text) {
  const size_t first = text.find(kCallStart);
  if (first == std::string_view::npos) return {std::string(text), {}};
  ParsedToolOutput out;
  // Each <tool_call>...</tool_call>; the last may be cut off before its end tag.
  for (size_t at = first; at != std::string_view::npos; at = text.find(kCallStart, at)) {
    const size_t body = at + kCallStart.size();
    const size_t end = text.find(kCallEnd, body);
    std::optional<ToolCall> call = HermesCall(
        text.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body));
    if (!call.has_value()) return {std::string(text), {}};  // not a call after all: content
    out.calls.push_back(*std::move(call));
    if (end == std::string_view::npos) break;
    at = end + kCallEnd.size();
  }
  if (first > 0) out.content = std::string(text.substr(0, first));
  return out;
}

}  // namespace

absl::StatusOr<ToolCallParser> ParseToolCallParserName(std::string_view name) {
  if (name == "hermes") return ToolCallParser::kHermes;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown tool-call parser \"", Sv(name), "\" (supported: hermes)"));
}

ParsedToolOutput ParseToolCalls(ToolCallParser parser, std::string_view text) {
  switch (parser) {
    case ToolCallParser::kHermes:
      return ParseHermes(text);
  }
  return {std::string(text), {}};
}

size_t StreamableContent(ToolCallParser parser, std::string_view text) {
  (void)parser;  // one format so far: everything before a (possible) "<tool_call>"
  if (const size_t at = text.find(kCallStart); at != std::string_view::npos) return at;
  for (size_t keep = std::min(text.size(), kCallStart.size() - 1); keep > 0; --keep) {
    if (text.substr(text.size() - keep) == kCallStart.substr(0, keep)) return text.size() - keep;
  }
  return text.size();
}

}  // namespace headroom::router::openai
