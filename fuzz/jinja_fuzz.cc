// libFuzzer target for the chat-template interpreter (router/jinja): the input is a template.
// It is parsed and, when it parses, rendered twice over a conversation with tools, tool calls and
// tool results (what the router hands real templates). Checks: no crash or sanitizer report, no
// hang (a small step bound, so a looping template ends), the output within its bound, and the two
// renders equal (nothing carried between renders, nothing read uninitialized).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "router/jinja/template.h"

namespace {

using headroom::router::jinja::Dict;
using headroom::router::jinja::RenderOptions;
using headroom::router::jinja::Template;
using headroom::router::jinja::Value;

Dict Context() {
  static const auto* context = new nlohmann::ordered_json(nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris? \u00e9 \ud83c\udf08"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
      {"role": "tool", "content": "{\"t\": 18}", "tool_call_id": "c1"},
      {"role": "assistant", "content": "  18 C.\n"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": null,
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]}}}],
    "documents": null, "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
    "n": 3, "f": 2.5, "big": 9223372036854775807, "neg": -9223372036854775807
  })"));
  return Value::FromJson(*context).dict();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Template> t = Template::Parse(source);
  if (!t.ok()) return 0;
  RenderOptions options;
  options.max_steps = 100'000;
  options.max_output_bytes = 1 << 20;
  std::tm fixed{};
  fixed.tm_year = 124;
  fixed.tm_mday = 1;
  options.now = fixed;
  const absl::StatusOr<std::string> first = t->Render(Context(), options);
  const absl::StatusOr<std::string> second = t->Render(Context(), options);
  if (first.ok() != second.ok()) std::abort();
  if (first.ok()) {
    // Output is checked after each statement, so one statement may add up to the 64 MiB string
    // repetition bound past it.
    if (first->size() > options.max_output_bytes + (64u << 20)) std::abort();
    if (*first != *second) std::abort();
  } else if (first.status().message() != second.status().message()) {
    std::abort();
  }
  return 0;
}
