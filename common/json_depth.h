// JsonNestingDepth: how deep arrays and objects nest in a JSON text, read without parsing (the
// insides of strings skipped). Text from clients and from models is checked against
// kMaxJsonNesting before anything recursive walks it (nlohmann's dump, jinja::Value::FromJson, the
// schema compiler): a 400 KB body of '[' overflowed a router thread's stack.
#pragma once

#include <string_view>

namespace headroom {

// Deepest nesting accepted in a request body, a schema, or a model's tool call.
inline constexpr int kMaxJsonNesting = 128;

// The greatest number of arrays and objects open at once in `text` (which need not be valid
// JSON); counting stops once it passes `stop_above`.
inline int JsonNestingDepth(std::string_view text, int stop_above = kMaxJsonNesting) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stop_above) return deepest;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace headroom
