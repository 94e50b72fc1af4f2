// libFuzzer target for the tool-call parsers (router/openai/tool_parser.h), which read model
// output: any text. Input: a model reply. For each parser, besides crashes, hangs and sanitizer
// reports, it checks:
//   - no call found: the reply is all content (mistral's without its [TOOL_CALLS] tags);
//   - calls found: their arguments are JSON, and the content is a prefix of the reply;
//   - streaming never sends what turns out to be part of a call: for every prefix of the reply,
//     StreamableContent stops within the content the whole reply's parse gives;
//   - a mistral id is 9 letters and digits;
//   - streaming calls (ToolCallStreamer, fed a byte at a time) never crashes or runs past the
//     text; for qwen3_coder, seed_oss, glm45 and glm47 (values converted by the tools' types below)
//     and pythonic each call it finished reads as the same JSON value as the whole reply's call
//     (the GLM streams may have started one more, in a block the reply's end cuts), and
//     JsonDumpsStream,
//     wherever a value may start, gives out only JSON that reads as the same value as the text it
//     read (json.loads of either is equal).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "router/openai/tool_call_stream.h"
#include "router/openai/tool_parser.h"

namespace {

using headroom::router::openai::JsonDumpsStream;
using headroom::router::openai::ParsedToolOutput;
using headroom::router::openai::ToolCallParser;
using headroom::router::openai::ToolCallStreamer;

void Fail(const char* what, ToolCallParser parser, std::string_view text) {
  std::fprintf(stderr, "tool_parser_fuzz: property violated (parser %d): %s for %.*s\n",
               static_cast<int>(parser), what, static_cast<int>(text.size()), text.data());
  std::abort();
}

// Tools whose parameters take each of qwen3_coder's conversions.
const nlohmann::ordered_json& Tools() {
  static const auto* tools = new nlohmann::ordered_json(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "f", "description": null, "parameters": {
      "type": "object", "properties": {"s": {"type": "string"}, "i": {"type": "integer"},
      "n": {"type": "number"}, "b": {"type": "boolean"}, "a": {"type": "array"},
      "o": {"type": "object"}, "u": {"type": ["integer", "null"]}, "e": {"anyOf": []}}}}},
    {"type": "function", "function": {"name": "g", "description": null,
      "parameters": {"x": {"type": "dict"}, "y": {"type": "float"}}}}])"));
  return *tools;
}

// Calls streamed a byte at a time from byte `from` of the reply (where `framing`'s calls may
// begin): each call the stream finished (all but a last one still open) reads as the same JSON
// value as the whole reply's call, when that has calls (a reply that does not parse is content,
// and what went out stays).
void CheckStreamedCalls(ToolCallParser parser, ToolCallStreamer::Framing framing, size_t from,
                        std::string_view text, const ParsedToolOutput& parsed) {
  // The GLM parsers read a block only once it ends; their streams start a call before.
  const bool open_block = (parser == ToolCallParser::kGlm45 || parser == ToolCallParser::kGlm47) &&
                          text.rfind("<tool_call>") + 1 > text.rfind("</tool_call>") + 1;
  if (from == std::string_view::npos) return;
  ToolCallStreamer streamer(framing, &Tools());
  for (size_t n = from; n <= text.size(); ++n) streamer.Read(text.substr(from, n - from));
  if (parsed.calls.empty()) return;
  const auto& calls = streamer.calls();
  if (calls.size() > parsed.calls.size() + (open_block ? 1 : 0)) {
    Fail("more calls streamed than the reply has", parser, text);
  }
  for (size_t k = 0; k < std::min(calls.size(), parsed.calls.size()); ++k) {
    if (calls[k].name != parsed.calls[k].name) {
      Fail("a streamed call's name differs", parser, text);
    }
    const auto streamed = nlohmann::ordered_json::parse(calls[k].arguments, nullptr, false);
    if (streamed.is_discarded() && k + 1 == calls.size()) continue;  // still open
    if (streamed != nlohmann::ordered_json::parse(parsed.calls[k].arguments)) {
      Fail("a streamed call's arguments differ", parser, text);
    }
  }
}

std::string WithoutMistralTags(std::string_view text) {
  std::string out(text);
  for (size_t at = out.find("[TOOL_CALLS]"); at != std::string::npos;
       at = out.find("[TOOL_CALLS]", at)) {
    out.erase(at, 12);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), std::min<size_t>(size, 2048));
  for (const ToolCallParser parser :
       {ToolCallParser::kHermes, ToolCallParser::kLlama3Json, ToolCallParser::kMistral,
        ToolCallParser::kPythonic, ToolCallParser::kQwen3Coder, ToolCallParser::kGranite,
        ToolCallParser::kPhi4MiniJson, ToolCallParser::kGlm45, ToolCallParser::kGlm47,
        ToolCallParser::kSeedOss}) {
    const ParsedToolOutput parsed =
        headroom::router::openai::ParseToolCalls(parser, text, &Tools());
    if (parser == ToolCallParser::kQwen3Coder) {
      CheckStreamedCalls(parser, ToolCallStreamer::Framing::kQwen3Coder,
                         std::min(text.find("<tool_call>"), text.find("<function=")), text, parsed);
    }
    if (parser == ToolCallParser::kGlm45 || parser == ToolCallParser::kGlm47) {
      CheckStreamedCalls(parser,
                         parser == ToolCallParser::kGlm45 ? ToolCallStreamer::Framing::kGlm45
                                                          : ToolCallStreamer::Framing::kGlm47,
                         text.find("<tool_call>"), text, parsed);
    }
    if (parser == ToolCallParser::kSeedOss) {
      CheckStreamedCalls(parser, ToolCallStreamer::Framing::kSeedOss,
                         std::min(text.find("<seed:tool_call>"), text.find("<function=")), text,
                         parsed);
    }
    if (parser == ToolCallParser::kPythonic) {
      CheckStreamedCalls(parser, ToolCallStreamer::Framing::kPythonic, 0, text, parsed);
    }
    size_t content_end = text.size();
    if (parsed.calls.empty()) {
      const std::string all =
          parser == ToolCallParser::kMistral ? WithoutMistralTags(text) : std::string(text);
      if (parsed.content != all) Fail("a reply without calls is not all content", parser, text);
    } else {
      const std::string content = parsed.content.value_or("");
      if (text.substr(0, content.size()) != content) {
        Fail("the content is not a prefix of the reply", parser, text);
      }
      content_end = content.size();
      for (const auto& call : parsed.calls) {
        if (nlohmann::json::parse(call.arguments, nullptr, false).is_discarded()) {
          Fail("arguments that are not JSON", parser, text);
        }
      }
    }
    for (size_t n = 0; n <= text.size(); ++n) {
      const size_t ready = headroom::router::openai::StreamableContent(parser, text.substr(0, n));
      if (ready > n) Fail("more streamable content than text", parser, text);
      if (ready > content_end) Fail("streamed text that is part of a call", parser, text);
    }
  }
  for (const ToolCallStreamer::Framing framing :
       {ToolCallStreamer::Framing::kHermes, ToolCallStreamer::Framing::kLlama3,
        ToolCallStreamer::Framing::kMistral, ToolCallStreamer::Framing::kJsonArray,
        ToolCallStreamer::Framing::kGranite, ToolCallStreamer::Framing::kPhi4Mini}) {
    ToolCallStreamer streamer(framing);
    for (size_t n = 0; n <= text.size(); ++n) streamer.Read(text.substr(0, n));
  }
  // JsonDumpsStream from the first few places a value may start, fed 3 bytes at a time.
  size_t starts = 0;
  for (size_t at = text.find_first_of("{[\"-0123456789tfn");
       at != std::string_view::npos && starts < 4;
       at = text.find_first_of("{[\"-0123456789tfn", at + 1), ++starts) {
    JsonDumpsStream stream;
    std::string out;
    size_t read = at;
    while (read < text.size() && !stream.done() && !stream.invalid()) {
      const std::string_view piece = text.substr(read, 3);
      const size_t n = stream.Feed(piece, &out);
      if (n > piece.size())
        Fail("JsonDumpsStream read past its piece", ToolCallParser::kHermes, text);
      read += n;
      if (n < piece.size() && !stream.done() && !stream.invalid()) {
        Fail("JsonDumpsStream stopped before the end of a piece", ToolCallParser::kHermes, text);
      }
    }
    if (!stream.done() || stream.invalid()) continue;
    const auto value = nlohmann::json::parse(text.substr(at, read - at), nullptr, false);
    const auto written = nlohmann::json::parse(out, nullptr, false);
    if (value.is_discarded() || written.is_discarded() || value != written) {
      Fail("JsonDumpsStream wrote another value", ToolCallParser::kHermes, text);
    }
  }
  const std::string id = headroom::router::openai::MistralToolCallId(text);
  if (id.size() != 9) Fail("a mistral id not 9 long", ToolCallParser::kMistral, text);
  for (const char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      Fail("a mistral id with a character not a letter or digit", ToolCallParser::kMistral, text);
    }
  }
  return 0;
}
