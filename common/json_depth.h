// JsonNestingDepth: how deep arrays and objects nest in a JSON text, read without parsing (the
// insides of strings skipped). Text from clients and from models is checked against
// kMaxJsonNesting before anything recursive walks it (nlohmann's dump, jinja::Value::FromJson, the
// schema compiler): a 400 KB body of '[' overflowed a router thread's stack.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace headroom {

// Deepest nesting accepted in a request body, a schema, or a model's tool call.
inline constexpr int kMaxJsonNesting = 128;

// One past the '"' that closes the JSON string opening at text[at] == '"' (escapes skipped);
// text.size() when it does not close.
inline size_t JsonStringEnd(std::string_view text, size_t at) {
  for (size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return text.size();
}

// Calls `visit(i)` at each '[', ']', '{' and '}' of `text` from `from` on that is not inside a
// string, until it returns false; returns where it stopped (text.size() when it never did).
template <typename Visit>
size_t ForEachJsonBracket(std::string_view text, size_t from, Visit visit) {
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      i = JsonStringEnd(text, i) - 1;
    } else if ((c == '[' || c == '{' || c == ']' || c == '}') && !visit(i)) {
      return i;
    }
  }
  return text.size();
}

// The greatest number of arrays and objects open at once in `text` (which need not be valid
// JSON); counting stops once it passes `stop_above`.
inline int JsonNestingDepth(std::string_view text, int stop_above = kMaxJsonNesting) {
  int depth = 0;
  int deepest = 0;
  ForEachJsonBracket(text, 0, [&](size_t i) {
    if (text[i] == ']' || text[i] == '}') {
      --depth;
      return true;
    }
    deepest = std::max(deepest, ++depth);
    return deepest <= stop_above;
  });
  return deepest;
}

}  // namespace headroom
