// Streaming tool calls as the model writes them (tool_choice "auto" with --tool-call-parser), the
// way vLLM streams them: a call's first delta carries its index, id, type and name once the name
// is read and its arguments have begun; later deltas carry pieces of the arguments. The pieces
// joined are the arguments as the whole reply's parse gives them (ParseToolCalls: Python's
// json.dumps of the model's JSON), so a client that joins them gets what a non-streaming request
// gets.
//
//   JsonDumpsStream      one JSON value, fed in pieces, rewritten as json.dumps writes it
//                        (separators ", " and ": ", no other whitespace, escapes as Python's,
//                        numbers as Python prints the parsed value), giving out only bytes that
//                        are final: a string's characters as they are read, a number once it ends.
//   ToolCallObjectStream one call object {"name": ..., "arguments": {...}} (or "parameters").
//   ToolCallStreamer     the calls of a reply after its content, framed as the parser's family
//                        writes them (hermes <tool_call> tags, llama3_json objects separated by
//                        ';', mistral's [TOOL_CALLS] array, Granite's array after its optional
//                        tags, Qwen3-Coder's XML-like tags through Qwen3CoderCallStream, GLM-4.5's
//                        and GLM-4.7's through GlmCallStream, the
//                        pythonic list through PythonicCallStream), or as
//                        tool_choice "required" has them written (a JSON array of {"name",
//                        "parameters"}).
//
// What json.dumps(json.loads(...)) does that a stream cannot: a key given twice keeps its first
// place with its last value. The whole reply's parse stays the authority (ResponseBuilder sends
// at the end what it has beyond what was streamed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_depth.h"
#include "nlohmann/json.hpp"
#include "router/openai/glm_calls.h"
#include "router/openai/pythonic_calls.h"
#include "router/openai/qwen3_coder_calls.h"
#include "router/openai/tools.h"

namespace headroom::router::openai {

class JsonDumpsStream {
 public:
  // `max_depth`: containers it may open (the whole parse's kMaxJsonNesting, less those around
  // the value).
  explicit JsonDumpsStream(int max_depth = kMaxJsonNesting) : max_depth_(max_depth) {}

  // Reads `piece`, appending to `out` (null: read and discard) the bytes it made final. Returns
  // how many bytes of `piece` it read: all of them, unless the value ended inside it (then up to
  // and including the value's last byte; a number ends at the byte after it, which is not read).
  size_t Feed(std::string_view piece, std::string* out);

  [[nodiscard]] bool done() const { return mode_ == Mode::kDone; }
  // Not JSON (or nested deeper than kMaxJsonNesting): nothing more is read or given out.
  [[nodiscard]] bool invalid() const { return mode_ == Mode::kInvalid; }

 private:
  enum class Mode : uint8_t {
    kValue,         // a value must start
    kValueOrClose,  // after '['
    kKeyOrClose,    // after '{'
    kKey,           // after ',' in an object
    kColon,         // after a key
    kAfterValue,    // ',' or the container's closer
    kString,        // inside a string (in_key_ says which)
    kNumber,
    kLiteral,
    kDone,
    kInvalid,
  };
  // Reads one byte; false when it is not the value's (a number ended before it).
  bool Byte(uint8_t byte, std::string* out);
  bool StringByte(uint8_t byte, std::string* out);
  bool StartValue(uint8_t byte, std::string* out);
  void EndValue();
  // Appends the decoded characters read so far (whole ones) as json.dumps escapes them.
  void FlushString(std::string* out);
  void AppendCodePoint(uint32_t code_point);
  bool Invalid() {
    mode_ = Mode::kInvalid;
    return true;
  }

  int max_depth_;
  Mode mode_ = Mode::kValue;
  std::string stack_;  // open containers, '{' or '['
  bool in_key_ = false;
  // kString: the escape being read (0 none, 1 after '\', 2 in \u's digits), its digits and
  // value, a high surrogate waiting for its low one (and whether its '\' and 'u' were read), the
  // characters decoded and not yet given out, and the UTF-8 bytes a character still needs.
  uint8_t escape_ = 0;
  uint8_t hex_digits_ = 0;
  uint32_t hex_ = 0;
  uint32_t high_surrogate_ = 0;
  uint8_t low_prefix_ = 0;
  std::string chars_;
  int utf8_due_ = 0;
  // kNumber: its text; kLiteral: the literal and how much of it was read.
  std::string number_;
  std::string_view literal_;
  size_t literal_read_ = 0;
};

class ToolCallObjectStream {
 public:
  // Which key holds the arguments.
  enum class ArgumentsKey : uint8_t { kArguments, kParameters, kEither };
  // `max_depth`: containers the object may open, itself included (kMaxJsonNesting less those the
  // framing puts around it).
  ToolCallObjectStream(ArgumentsKey key, int max_depth)
      : key_(key), max_depth_(max_depth), value_(max_depth - 1) {}

  // Reads `piece`; returns how many bytes it read (up to and including the closing '}').
  size_t Feed(std::string_view piece);

  [[nodiscard]] bool done() const { return mode_ == Mode::kDone; }
  [[nodiscard]] bool invalid() const { return mode_ == Mode::kInvalid; }
  // The name once read whole; the arguments as json.dumps writes them, so far, and whether they
  // have begun.
  [[nodiscard]] const std::optional<std::string>& name() const { return name_; }
  [[nodiscard]] const std::string& arguments() const { return arguments_; }
  [[nodiscard]] bool arguments_begun() const { return arguments_begun_; }

 private:
  enum class Mode : uint8_t {
    kOpen,
    kKeyOrClose,
    kKey,
    kColon,
    kValue,
    kAfterMember,
    kDone,
    kInvalid
  };
  enum class Member : uint8_t { kName, kArguments, kOther };
  // The key or value just read whole.
  void EndKey();
  void EndValue();

  const ArgumentsKey key_;
  const int max_depth_;
  Mode mode_ = Mode::kOpen;
  JsonDumpsStream value_;  // the key or value being read
  std::string text_;       // its text as json.dumps writes it (keys and the name)
  Member member_ = Member::kOther;
  std::optional<std::string> name_;
  std::string arguments_;
  bool arguments_begun_ = false;
};

class ToolCallStreamer {
 public:
  enum class Framing : uint8_t {
    kHermes,      // <tool_call>{...}</tool_call>, one per call
    kLlama3,      // [<|python_tag|>] {...}; {...}  ("arguments" or "parameters")
    kMistral,     // [TOOL_CALLS][{...}, {...}]
    kJsonArray,   // [{"name", "parameters"}, ...]: tool_choice "required"
    kQwen3Coder,  // <tool_call><function=NAME><parameter=KEY>value</parameter>...
    kSeedOss,     // <seed:tool_call><function=NAME><parameter=KEY>value</parameter>...
    kGranite,     // [<|tool_call|>][<tool_call>] [{...}, {...}]: the whole reply
    kPhi4Mini,    // functools[{...}, {...}]  ("arguments" or "parameters"), one array
    kPythonic,    // [name(key=value, ...), ...], the whole reply
    kGlm45,       // <tool_call>NAME\n<arg_key>KEY</arg_key><arg_value>value</arg_value>...
    kGlm47,       // <tool_call>NAME<arg_key>KEY</arg_key><arg_value>value</arg_value>...
  };
  static std::optional<Framing> FramingOf(ToolCallParser parser);

  // `tools`: the request's tools, which kQwen3Coder converts values by (they must outlive it).
  explicit ToolCallStreamer(Framing framing, const nlohmann::ordered_json* tools = nullptr);

  // A call whose name has been read and whose arguments have begun: its name and its arguments
  // so far.
  using Call = ToolCall;

  // Reads the reply's calls so far: `text` is everything from where the first call may begin (the
  // text StreamableContent held back) and only grows; each call reads only what is new.
  void Read(std::string_view text);
  [[nodiscard]] const std::vector<Call>& calls() const {
    if (qwen3_coder_.has_value()) return qwen3_coder_->calls();
    if (glm_.has_value()) return glm_->calls();
    return pythonic_.has_value() ? pythonic_->calls() : calls_;
  }

 private:
  enum class Frame : uint8_t { kSeek, kObject, kAfterObject, kStopped };
  // kSeek / kAfterObject: moves past what comes before the next call object; false when more text
  // is needed.
  bool Seek(std::string_view text);
  bool AfterObject(std::string_view text);
  void StartObject();

  const Framing framing_;
  Frame frame_ = Frame::kSeek;
  size_t pos_ = 0;          // bytes of the text read
  bool in_array_ = false;   // kMistral, kJsonArray, kGranite, kPhi4Mini: inside the array
  bool streaming_ = false;  // the object being read is calls_.back()
  std::optional<ToolCallObjectStream> object_;
  std::vector<Call> calls_;
  std::optional<Qwen3CoderCallStream> qwen3_coder_;  // kQwen3Coder and kSeedOss read with it
  std::optional<PythonicCallStream> pythonic_;       // kPythonic reads with it
  std::optional<GlmCallStream> glm_;                 // kGlm45 and kGlm47 read with it
};

}  // namespace headroom::router::openai
