// The pythonic tool-call format (vLLM's `pythonic` and `llama4_pythonic` parsers: Llama 3.2,
// Llama 4, ToolACE): a reply that is a Python list of calls with keyword arguments,
//   [get_weather(city="Paris", days=3), get_time()]
// optionally between Llama 4's <|python_start|> and <|python_end|>. Read as Python reads it: each
// value a literal as ast.literal_eval takes it (strings in every quote, prefix and escape style
// and adjacent ones joined, ints in any base with underscores, floats, signs, True / False /
// None, lists, tuples and dicts), the arguments written as json.dumps writes the dict. Checked
// against Python's own ast on the fixture of scripts/gen_pythonic_fixtures.py.
//
// Refused (the reply is then content, as vLLM returns it): anything around the list, positional
// or ** arguments, a callee that is not a plain name, a value that is not a literal, bytes,
// f-strings, complex numbers, sets, non-finite floats, integers outside int64, lone surrogates,
// dict keys that are not strings, and nesting deeper than kMaxJsonNesting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/openai/tools.h"

namespace headroom::router::openai {

// The calls of a pythonic reply, or nullopt when the reply is not one.
std::optional<std::vector<ToolCall>> ParsePythonicCalls(std::string_view reply);

// A pythonic reply's calls read as the model writes them (tool_choice "auto", streamed), each
// argument whole once its value ends, as vLLM's qwen3_coder streams parameters: a call appears
// once its first keyword argument is read (or at its ')' when it has none), then each further
// argument is appended, and '}' at the ')'. The arguments so far are json.dumps's text of the dict
// being built, so a call's pieces joined are what ParsePythonicCalls gives it, but for a keyword
// given twice (the dict keeps its first place and its last value; the stream sent the first).
// Stops for good at the list's ']' and at anything the whole parse refuses there.
class PythonicCallStream {
 public:
  // `text`: the reply so far from its start; it only grows.
  void Read(std::string_view text);
  [[nodiscard]] const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  enum class Mode : uint8_t {
    kStart,      // before the list: whitespace, Llama 4's tag
    kCall,       // after '[' or a call's ',': a call's name, or ']'
    kOpen,       // after the name: '('
    kKeyword,    // after '(' or an argument's ',': a keyword, or ')'
    kEquals,     // after the keyword: '='
    kValue,      // the value, up to the ',' or ')' after it
    kAfterCall,  // after ')': ',' or ']'
    kStopped,
  };
  // Whitespace, comments and line continuations at pos_ (inside the list line breaks are
  // whitespace); false when the text ends before what follows them shows.
  bool SkipSpace();
  // The name at pos_ once it ended (pos_ moves past it); nullopt when the text ends inside it, ""
  // when none starts there or it is a Python keyword.
  std::optional<std::string_view> NameAt();
  // Scans the value from scan_ to the ',' or ')' that ends it; false when the text ends first.
  bool ScanValue();
  // The value of source_[value_start_, scan_) read, its argument appended; false when it is not
  // one Python reads.
  bool AppendArgument();
  void CloseCall();

  std::string source_;   // the reply as Python compiles it (line ends made "\n")
  size_t consumed_ = 0;  // bytes of the reply turned into source_
  Mode mode_ = Mode::kStart;
  size_t pos_ = 0;
  bool tagged_ = false;  // Llama 4's <|python_start|> was read
  std::string name_;     // the call being read
  std::string keyword_;  // the argument being read
  int arguments_ = 0;    // arguments of the call read so far
  // kValue: where the value starts, how far it was scanned, the brackets open there and the
  // string it is in (its quote, 0 for none; whether tripled; a backslash just read).
  size_t value_start_ = 0;
  size_t scan_ = 0;
  int depth_ = 0;
  char quote_ = 0;
  bool triple_ = false;
  bool escaped_ = false;
  std::vector<ToolCall> calls_;
};

// ast.literal_eval(text) as JSON (tuples as arrays), with the refusals above: the leading spaces
// and tabs literal_eval strips, then one expression (several separated by commas make a tuple),
// comments and blank lines around it. nullopt when Python would not read it or JSON cannot hold
// it.
std::optional<nlohmann::ordered_json> ParsePythonLiteral(std::string_view text);

}  // namespace headroom::router::openai
