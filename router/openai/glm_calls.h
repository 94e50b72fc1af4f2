// GLM-4.5 / 4.6's tool-call format (vLLM's `glm45` parser): the function's name on the line
// after <tool_call>, then each argument as a key tag and a value tag, the value bare text,
//   <tool_call>get_weather
//   <arg_key>city</arg_key>
//   <arg_value>Paris</arg_value>
//   </tool_call>
// (what GLM-4.5's chat template writes for an assistant's call). Read as vLLM reads it:
//   - each block is the text from <tool_call> to the first </tool_call> after it (a block
//     without its end is no call); a block without a line break is skipped;
//   - the name is the block's first line, stripped (an empty one: no call, headroom's rule);
//   - the pairs are the matches of `<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>` in
//     the rest: a key may run past a </arg_key> that no <arg_value> follows;
//   - the key is stripped; a value whose parameter the request's tool types "string" is kept as
//     written, any other is stripped and read by json.loads, else ast.literal_eval, else kept as
//     text (a value JSON cannot hold as the router holds it stays text);
//   - the arguments are json.dumps of the pairs (a key given twice keeps its first place and its
//     last value); the content is the text before the first <tool_call>, none when it is only
//     whitespace (the line break GLM writes after </think>); a reply without a call is content
//     whole.
// GLM-4.7 writes the same tags with nothing between them,
//   <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>
// which vLLM's `glm47` parser reads with two changes: the name is the block's text up to its
// first <arg_key> (no line break needed), and a key and its value may also be separated by
// literal backslash-n pairs (`(?:\\n|\s)*`).
// Checked against those algorithms run by Python's own re, json and ast on the fixtures of
// scripts/gen_glm_fixtures.py, which states the differences from vLLM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/openai/tool_parser.h"
#include "router/openai/tools.h"

namespace headroom::router::openai {

// Which of the two GLM call formats (the pattern ending a name, the gap before a value).
enum class GlmFormat : uint8_t { kGlm45, kGlm47 };

// The reply's calls and the content before them. `tools`: the request's tools as
// ParseToolRequest normalizes them (null: none, so every value is read as JSON or a literal).
ParsedToolOutput ParseGlmCalls(std::string_view text, const nlohmann::ordered_json* tools,
                               GlmFormat format);

// The calls of a GLM-4.5 reply as it is written, for streaming (tool_call_stream.h): from the
// first <tool_call> (where StreamableContent stops the content), a call once its name has ended
// (its line, or for glm47 at its first <arg_key>) and its first pair has ended (a value is
// converted whole), or its block ended; then each further pair once its </arg_value> shows, then
// "}" when the block ends. What goes out is the start of what the whole reply's parse returns, but
// where a key is repeated (it goes out twice: a JSON reader makes of the text the value the whole
// parse has) or the reply is cut inside its last block (the whole parse leaves that block out; its
// call stays as streamed).
class GlmCallStream {
 public:
  GlmCallStream(const nlohmann::ordered_json* tools, GlmFormat format)
      : tools_(tools), format_(format) {}

  // `text` is the held-back reply from its first tag on; it only grows.
  void Read(std::string_view text);
  [[nodiscard]] const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  enum class Stage : uint8_t {
    kBlock,     // seeking the next <tool_call>
    kName,      // after <tool_call>, seeking the line break (glm47: <arg_key>) ending the name
    kSkip,      // in a block that is no call, seeking its end
    kPair,      // in a call, seeking <arg_key> (or the block's end)
    kKeyEnd,    // after <arg_key>, seeking a </arg_key>
    kAfterKey,  // after that </arg_key>: whitespace, then <arg_value> or not
    kValue,     // after <arg_value>, seeking </arg_value>
    kStopped,   // nothing more streams
  };
  // One step over `text` from pos_; false when more text is needed.
  bool Step(std::string_view text);
  // `tag` in `text` from pos_ (searches that found nothing are not repeated over the same bytes),
  // within the block when its end is known; npos when it is not there (yet).
  size_t Find(std::string_view text, std::string_view tag) const;
  void MoveTo(size_t pos, Stage stage);
  // The current call's end: its block ended. Starts the call ("{}") if no pair did.
  void EndCall();

  const nlohmann::ordered_json* tools_;
  const GlmFormat format_;
  Stage stage_ = Stage::kBlock;
  size_t pos_ = 0;
  size_t searched_ = 0;  // where the current stage's next search starts
  // The current block: where its </tool_call> is (npos while unseen) and where to look for it.
  size_t block_end_ = std::string_view::npos;
  size_t end_searched_ = 0;
  // The current call: its name, whether it has started (gone out), and the pair being read (its
  // key's first byte and end).
  std::string name_;
  bool call_started_ = false;
  size_t key_begin_ = 0;
  size_t key_end_ = 0;
  std::vector<ToolCall> calls_;
};

}  // namespace headroom::router::openai
