#include "router/openai/tool_parser.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "nlohmann/json.hpp"
#include "router/jinja/text.h"
#include "router/openai/glm_calls.h"
#include "router/openai/pythonic_calls.h"
#include "router/openai/qwen3_coder_calls.h"
#include "router/openai/tool_call_tags.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

// A model's JSON, or a discarded value when it is not JSON or nests too deep to walk.
Json ParseJson(std::string_view text) {
  if (JsonNestingDepth(text) > kMaxJsonNesting) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// The content before a reply's calls: nullopt when it is empty.
std::optional<std::string> ContentBefore(std::string_view text, size_t end) {
  if (end == 0) return std::nullopt;
  return std::string(text.substr(0, end));
}

// Llama's: nullopt when it is only whitespace (the line break before the JSON).
std::optional<std::string> TextBefore(std::string_view text, size_t end) {
  if (absl::StripAsciiWhitespace(Sv(text.substr(0, end))).empty()) return std::nullopt;
  return std::string(text.substr(0, end));
}

// Not a call after all: the whole reply is content.
ParsedToolOutput PlainContent(std::string_view text) { return {std::string(text), {}}; }

ParsedToolOutput ParseHermes(std::string_view text) {
  const size_t first = text.find(kHermesStart);
  if (first == std::string_view::npos) return PlainContent(text);
  ParsedToolOutput out;
  // Each <tool_call>...</tool_call>; the last may be cut off before its end tag.
  for (size_t at = first; at != std::string_view::npos; at = text.find(kHermesStart, at)) {
    const size_t body = at + kHermesStart.size();
    const size_t end = text.find(kHermesEnd, body);
    std::optional<ToolCall> call = ToolCallFromJson(
        ParseJson(
            text.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body)),
        "arguments");
    if (!call.has_value()) return PlainContent(text);
    out.calls.push_back(*std::move(call));
    if (end == std::string_view::npos) break;
    at = end + kHermesEnd.size();
  }
  out.content = ContentBefore(text, first);
  return out;
}

// The end (one past the closing brace) of the JSON object opening at text[at] == '{', found by
// balancing brackets outside strings; npos when it does not close.
size_t ObjectEnd(std::string_view text, size_t at) {
  int depth = 0;
  const size_t close = ForEachJsonBracket(text, at, [&](size_t i) {
    depth += text[i] == '{' || text[i] == '[' ? 1 : -1;
    return depth > 0;
  });
  return close < text.size() ? close + 1 : std::string_view::npos;
}

size_t SkipSpaces(std::string_view text, size_t at) {
  while (at < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[at]))) ++at;
  return at;
}

// A Llama call object: {"name": ..., "arguments": {...}} or "parameters" in place of
// "arguments" (Llama 3.1's template asks for "parameters").
std::optional<ToolCall> CallWithEitherKey(const Json& call) {
  if (!call.is_object()) return std::nullopt;
  // Whichever of the two comes first (an object with both is read as it streams).
  for (auto it = call.begin(); it != call.end(); ++it) {
    if (it.key() == "arguments" || it.key() == "parameters")
      return ToolCallFromJson(call, it.key());
  }
  return std::nullopt;
}
std::optional<ToolCall> LlamaCall(std::string_view object) {
  return CallWithEitherKey(ParseJson(object));
}

// Calls written one after another from text[at] ('{'), separated by ';' (Llama 3.1/3.2's
// parallel calls); stops at the first object that is not a call.
std::vector<ToolCall> LlamaCallsFrom(std::string_view text, size_t at) {
  std::vector<ToolCall> calls;
  while (at < text.size() && text[at] == '{') {
    const size_t end = ObjectEnd(text, at);
    if (end == std::string_view::npos) break;
    std::optional<ToolCall> call = LlamaCall(text.substr(at, end - at));
    if (!call.has_value()) break;
    calls.push_back(*std::move(call));
    at = SkipSpaces(text, end);
    if (at >= text.size() || text[at] != ';') break;
    at = SkipSpaces(text, at + 1);
  }
  return calls;
}

ParsedToolOutput ParseLlama3Json(std::string_view text) {
  // After <|python_tag|> (when special tokens are kept), or at the first top-level '{' that
  // starts a call: each '{' that is not one moves the search past its whole object.
  if (const size_t tag = text.find(kPythonTag); tag != std::string_view::npos) {
    std::vector<ToolCall> calls = LlamaCallsFrom(text, SkipSpaces(text, tag + kPythonTag.size()));
    if (calls.empty()) return PlainContent(text);
    return {TextBefore(text, tag), std::move(calls)};
  }
  for (size_t at = text.find('{'); at != std::string_view::npos; at = text.find('{', at)) {
    std::vector<ToolCall> calls = LlamaCallsFrom(text, at);
    if (!calls.empty()) return {TextBefore(text, at), std::move(calls)};
    const size_t end = ObjectEnd(text, at);
    if (end == std::string_view::npos) break;
    at = end;
  }
  return PlainContent(text);
}

// A Mistral reply that is not calls after all: its content without the [TOOL_CALLS] tags (the
// special token the front kept in the text to find them), as vLLM returns it.
ParsedToolOutput WithoutTags(std::string_view text) {
  std::string content;
  for (size_t at = 0; at < text.size();) {
    const size_t tag = std::min(text.find(kMistralStart, at), text.size());
    content.append(text.substr(at, tag - at));
    at = tag + kMistralStart.size();
  }
  return {std::move(content), {}};
}

// [TOOL_CALLS] then a JSON array of {"name", "arguments"} (Mistral 7B v0.3, Nemo); several
// [TOOL_CALLS] arrays are read one after another.
ParsedToolOutput ParseMistral(std::string_view text) {
  const size_t first = text.find(kMistralStart);
  if (first == std::string_view::npos) return PlainContent(text);
  ParsedToolOutput out;
  for (size_t at = first; at != std::string_view::npos;) {
    const size_t body = at + kMistralStart.size();
    const size_t next = text.find(kMistralStart, body);
    const std::string_view array =
        text.substr(body, next == std::string_view::npos ? std::string_view::npos : next - body);
    const Json calls = ParseJson(array);
    if (!calls.is_array() || calls.empty()) return WithoutTags(text);
    for (const Json& call : calls) {
      std::optional<ToolCall> one = ToolCallFromJson(call, "arguments");
      if (!one.has_value()) return WithoutTags(text);
      out.calls.push_back(*std::move(one));
    }
    at = next;
  }
  out.content = ContentBefore(text, first);
  return out;
}

// Granite's reply start as vLLM reads it (Python's str.lstrip, then <|tool_call|> and <tool_call>
// removed as prefixes in that order, with nothing between them, then lstrip again): where the
// array must begin, kNotCalls when the reply cannot be one, nullopt when `text` ends before that
// is known (in the whitespace or inside a prefix).
constexpr size_t kNotCalls = std::string_view::npos;
std::optional<size_t> GraniteArrayStart(std::string_view text) {
  size_t at = text.size() - jinja::text::LStrip(text, nullptr).size();
  for (const std::string_view prefix : {kGraniteToken, kHermesStart}) {
    const std::string_view rest = text.substr(at);
    if (rest.size() < prefix.size() && prefix.starts_with(rest)) return std::nullopt;
    if (rest.starts_with(prefix)) at += prefix.size();
  }
  at = text.size() - jinja::text::LStrip(text.substr(at), nullptr).size();
  if (at == text.size()) return std::nullopt;
  // A character cut at the end (a streamed piece can end inside one) may still be whitespace.
  if (at + utf8::CharLength(static_cast<unsigned char>(text[at])) > text.size()) {
    return std::nullopt;
  }
  return text[at] == '[' ? at : kNotCalls;
}

// The whole reply (stripped) is the array of calls, or the reply is content (vLLM's rule; an
// empty array, which vLLM answers with nothing at all, is content here).
ParsedToolOutput ParseGranite(std::string_view text) {
  const std::string_view stripped = jinja::text::Strip(text, nullptr);
  const std::optional<size_t> start = GraniteArrayStart(stripped);
  if (!start.has_value() || *start == kNotCalls) return PlainContent(text);
  const std::optional<Json> calls = JsonLoads(stripped.substr(*start));
  if (!calls.has_value() || !calls->is_array() || calls->empty()) return PlainContent(text);
  ParsedToolOutput out;
  for (const Json& call : *calls) {
    std::optional<ToolCall> one = ToolCallFromJson(call, "arguments");
    if (!one.has_value()) return PlainContent(text);
    out.calls.push_back(*std::move(one));
  }
  return out;
}

// Phi-4-mini: `functools[` opens a JSON array of calls; the text before it is content and what
// follows the array is dropped. vLLM reads up to the first ']' (a call whose arguments hold an
// array does not parse there); the array is read whole here.
ParsedToolOutput ParsePhi4Mini(std::string_view text) {
  const size_t tag = text.find(kPhi4MiniStart);
  if (tag == std::string_view::npos) return PlainContent(text);
  const size_t open = tag + kPhi4MiniStart.size() - 1;
  const size_t end = ObjectEnd(text, open);
  if (end == std::string_view::npos) return PlainContent(text);
  const std::optional<Json> calls = JsonLoads(text.substr(open, end - open));
  if (!calls.has_value() || !calls->is_array() || calls->empty()) return PlainContent(text);
  ParsedToolOutput out;
  for (const Json& call : *calls) {
    std::optional<ToolCall> one = CallWithEitherKey(call);
    if (!one.has_value()) return PlainContent(text);
    out.calls.push_back(*std::move(one));
  }
  out.content = ContentBefore(text, tag);
  return out;
}

// How many bytes of `text` are content for sure when a call starts with `tag`: everything
// before the tag, or before a tail that may still become it.
size_t BeforeTag(std::string_view text, std::string_view tag) {
  if (const size_t at = text.find(tag); at != std::string_view::npos) return at;
  return text.size() - PartialAtEnd(text, tag);
}

// A pythonic reply so far: only whitespace, or it starts (after whitespace) with '[' or with
// <|python_start|> or a beginning of it.
bool PythonicMayBeCalls(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\n\r\v\f");
  if (first == std::string_view::npos) return true;
  const std::string_view rest = text.substr(first);
  if (rest.front() == '[') return true;
  const size_t n = std::min(rest.size(), kPythonStart.size());
  return rest.substr(0, n) == kPythonStart.substr(0, n);
}

}  // namespace

absl::StatusOr<ToolCallParser> ParseToolCallParserName(std::string_view name) {
  if (name == "hermes") return ToolCallParser::kHermes;
  if (name == "llama3_json" || name == "llama4_json") return ToolCallParser::kLlama3Json;
  if (name == "mistral") return ToolCallParser::kMistral;
  if (name == "pythonic" || name == "llama4_pythonic") return ToolCallParser::kPythonic;
  // qwen3_xml: vLLM's other parser for the same format.
  if (name == "qwen3_coder" || name == "qwen3_xml") return ToolCallParser::kQwen3Coder;
  if (name == "seed_oss") return ToolCallParser::kSeedOss;
  if (name == "granite") return ToolCallParser::kGranite;
  if (name == "phi4_mini_json") return ToolCallParser::kPhi4MiniJson;
  if (name == "glm45") return ToolCallParser::kGlm45;
  if (name == "glm47") return ToolCallParser::kGlm47;
  return absl::InvalidArgumentError(absl::StrCat("unknown tool-call parser \"", Sv(name),
                                                 "\" (supported: ", kToolCallParserNames, ")"));
}

ParsedToolOutput ParseToolCalls(ToolCallParser parser, std::string_view text, const Json* tools) {
  switch (parser) {
    case ToolCallParser::kHermes:
      return ParseHermes(text);
    case ToolCallParser::kLlama3Json:
      return ParseLlama3Json(text);
    case ToolCallParser::kMistral:
      return ParseMistral(text);
    case ToolCallParser::kPythonic: {
      // The whole reply is the list, or it is content (vLLM's rule).
      std::optional<std::vector<ToolCall>> calls = ParsePythonicCalls(text);
      if (!calls.has_value()) return PlainContent(text);
      return {std::nullopt, *std::move(calls)};
    }
    case ToolCallParser::kQwen3Coder:
      return ParseXmlCalls(text, tools, XmlCallFormat::kQwen3Coder);
    case ToolCallParser::kSeedOss:
      return ParseXmlCalls(text, tools, XmlCallFormat::kSeedOss);
    case ToolCallParser::kGranite:
      return ParseGranite(text);
    case ToolCallParser::kPhi4MiniJson:
      return ParsePhi4Mini(text);
    case ToolCallParser::kGlm45:
      return ParseGlmCalls(text, tools, GlmFormat::kGlm45);
    case ToolCallParser::kGlm47:
      return ParseGlmCalls(text, tools, GlmFormat::kGlm47);
  }
  return PlainContent(text);
}

size_t StreamableContent(ToolCallParser parser, std::string_view text, bool reply_start) {
  switch (parser) {
    case ToolCallParser::kHermes:
      return BeforeTag(text, kHermesStart);
    case ToolCallParser::kMistral:
      return BeforeTag(text, kMistralStart);
    case ToolCallParser::kPhi4MiniJson:
      return BeforeTag(text, kPhi4MiniStart);
    case ToolCallParser::kLlama3Json: {
      // A call may start at any '{' (or the tag): the text before the first one is content, but
      // for the whitespace just before it (TextBefore drops a reply's lone line break).
      size_t ready = std::min(BeforeTag(text, kPythonTag), std::min(text.find('{'), text.size()));
      while (ready > 0 && absl::ascii_isspace(static_cast<unsigned char>(text[ready - 1]))) --ready;
      return ready;
    }
    case ToolCallParser::kPythonic:
      // A reply that is (or may still become) a list of calls is held whole: none of it is
      // content until the end shows whether it parses. Once some of it went out as content, the
      // rest is content too (a later "[1]" is not a call's start).
      return reply_start && PythonicMayBeCalls(text) ? 0 : text.size();
    case ToolCallParser::kQwen3Coder:
      // The content ends at the first <tool_call>, or at <function= when that comes first.
      return std::min(BeforeTag(text, kHermesStart), BeforeTag(text, kQwenFunctionStart));
    case ToolCallParser::kSeedOss:
      return std::min(BeforeTag(text, kSeedToolCallStart), BeforeTag(text, kQwenFunctionStart));
    case ToolCallParser::kGranite:
      // As pythonic: a reply that is (or may still become) the array is held whole.
      return reply_start && GraniteArrayStart(text) != kNotCalls ? 0 : text.size();
    case ToolCallParser::kGlm45:
    case ToolCallParser::kGlm47: {
      // Up to the first <tool_call>, but for the whitespace just before it: content that is only
      // whitespace is none (GLM writes a line break before its calls).
      const size_t ready = BeforeTag(text, kHermesStart);
      return jinja::text::RStrip(text.substr(0, ready), nullptr).size();
    }
  }
  return text.size();
}

bool HoldsCallStart(ToolCallParser parser, std::string_view held) {
  switch (parser) {
    case ToolCallParser::kHermes:
      return held.find(kHermesStart) != std::string_view::npos;
    case ToolCallParser::kMistral:
      return held.find(kMistralStart) != std::string_view::npos;
    case ToolCallParser::kPhi4MiniJson:
      return held.find(kPhi4MiniStart) != std::string_view::npos;
    case ToolCallParser::kLlama3Json:
      return held.find('{') != std::string_view::npos ||
             held.find(kPythonTag) != std::string_view::npos;
    case ToolCallParser::kPythonic: {
      // The list or Llama 4's tag has begun (not just whitespace or a beginning of the tag).
      const size_t first = held.find_first_not_of(" \t\n\r\v\f");
      if (first == std::string_view::npos) return false;
      const std::string_view rest = held.substr(first);
      return rest.front() == '[' || rest.substr(0, kPythonStart.size()) == kPythonStart;
    }
    case ToolCallParser::kQwen3Coder:
      return held.find(kHermesStart) != std::string_view::npos ||
             held.find(kQwenFunctionStart) != std::string_view::npos;
    case ToolCallParser::kSeedOss:
      return held.find(kSeedToolCallStart) != std::string_view::npos ||
             held.find(kQwenFunctionStart) != std::string_view::npos;
    case ToolCallParser::kGranite: {
      const std::optional<size_t> start = GraniteArrayStart(held);
      return start.has_value() && *start != kNotCalls;
    }
    case ToolCallParser::kGlm45:
    case ToolCallParser::kGlm47:
      return held.find(kHermesStart) != std::string_view::npos;
  }
  return false;
}

bool KeepsSpecialTokens(ToolCallParser parser) {
  return parser == ToolCallParser::kMistral || parser == ToolCallParser::kGlm45 ||
         parser == ToolCallParser::kGlm47 || parser == ToolCallParser::kSeedOss;
}

std::string MistralToolCallId(std::string_view seed) {
  // Nine base-62 digits of the seed's 64-bit FNV-1a hash.
  uint64_t hash = 14695981039346656037u;
  for (const char c : seed) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211u;
  constexpr std::string_view kAlphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id;
  for (int i = 0; i < 9; ++i) {
    id.push_back(kAlphabet[hash % kAlphabet.size()]);
    hash /= kAlphabet.size();
  }
  return id;
}

}  // namespace headroom::router::openai
