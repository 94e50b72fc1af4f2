// The Qwen3-Coder tool-call format (vLLM's `qwen3_coder` parser): XML-like tags, each
// parameter's value written as bare text,
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   </function>
//   </tool_call>
// Read as vLLM reads it (its regular expressions' lazy matches decide where a call or a value
// ends; a value loses one leading and one trailing line break), each value converted by the
// type the request's tool gives the parameter:
//   "null" in any case          null
//   not in the tool's schema     the text (so too for a function the tools do not name)
//   string, str, text, varchar, char, enum, or no type    the text
//   int*, uint*, long*, short*, unsigned*    Python's int() of the text, else the text
//   num*, float*                 float(); an integral value as an integer, a NaN the text, an
//                                infinite one makes the whole reply content (vLLM's int(inf)
//                                raises there)
//   boolean, bool, binary        true when the text is "true" in any case, else false
//   object, array, arr, dict*, list*, anyOf    json.loads, else ast.literal_eval, else the text
//   anything else (a list of types, "null", ...)    ast.literal_eval, else the text
// The arguments are json.dumps of the parameters (a repeated name keeps its first place and its
// last value). Checked against the algorithm run by Python's own re, int, float, json and ast on
// the fixture of scripts/gen_qwen3_coder_fixtures.py, which also states the differences (a value
// json.loads or literal_eval makes that JSON with int64 cannot hold stays text, where integer and
// number types write any size, as Python does; no call read leaves the whole reply content).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/openai/tool_parser.h"
#include "router/openai/tools.h"

namespace headroom::router::openai {

// Which family writes the calls.
//   kQwen3Coder  as above.
//   kSeedOss     Seed-OSS (vLLM's `seed_oss` parser, adapted from qwen3_coder's): the same
//                functions inside <seed:tool_call> tags; a value ends only at </parameter> or the
//                function's end; a parameter without a "type" (an anyOf too) is a string; array
//                and list types go to ast.literal_eval alone (object and dict types try
//                json.loads first); a function without '>' makes the whole reply content.
enum class XmlCallFormat : uint8_t { kQwen3Coder, kSeedOss };

// The reply's calls and the content before them; a reply in which no call is read is content
// whole. `tools`: the request's tools as ParseToolRequest normalizes them (null: none, so every
// value is text).
ParsedToolOutput ParseXmlCalls(std::string_view text, const nlohmann::ordered_json* tools,
                               XmlCallFormat format);

// The calls of a Qwen3-Coder reply as it is written, for streaming (tool_call_stream.h): from the
// first <tool_call> (where StreamableContent stops the content), a call once its first parameter
// has ended (a value is converted whole) or the function ended, then each further parameter once
// its end shows, then "}" when the function ends. What goes out is the start of what the whole
// reply's parse returns, but where a name is repeated (it goes out twice: a JSON reader makes of
// the text the value the whole parse has, in another key order) or a later value raises (the
// reply is then content). A reply that does not start with <tool_call> is read whole at the end.
class Qwen3CoderCallStream {
 public:
  Qwen3CoderCallStream(const nlohmann::ordered_json* tools, XmlCallFormat format)
      : tools_(tools), format_(format) {}

  // `text` is the held-back reply from its first tag on; it only grows.
  void Read(std::string_view text);
  [[nodiscard]] const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  enum class Stage : uint8_t {
    kBlock,      // seeking the next <tool_call>
    kFunction,   // inside a block, seeking <function= (or the block's end)
    kName,       // after <function=, seeking the name's '>'
    kParameter,  // inside a function, seeking <parameter= or its end
    kValue,      // after <parameter=, seeking the value's end
    kStopped,    // nothing more streams
  };
  // One step over `text` from pos_; false when more text is needed.
  bool Step(std::string_view text);

  // The first of `tags` in `text` from pos_ (searches that found nothing are not repeated over
  // the same bytes); npos when none is there yet.
  size_t Find(std::string_view text, std::string_view tag);
  void MoveTo(size_t pos, Stage stage);
  // The current function's call, which starts (goes out) with its first parameter or its end.
  ToolCall& Current();

  const nlohmann::ordered_json* tools_;
  const XmlCallFormat format_;
  Stage stage_ = Stage::kBlock;
  size_t pos_ = 0;
  size_t searched_ = 0;  // where the current stage's next search starts
  // The current function: its name, its parameters' types, how many of its parameters went out,
  // and whether its call has started.
  std::string name_;
  nlohmann::ordered_json config_;
  size_t parameters_ = 0;
  bool call_started_ = false;
  std::vector<ToolCall> calls_;
};

}  // namespace headroom::router::openai
