// Splits a template into text and the tokens inside {{ }} and {% %} tags, with the whitespace
// rules transformers renders chat templates under: trim_blocks (the newline after a block or
// comment tag is dropped), lstrip_blocks (spaces and tabs between a line's start and a block or
// comment tag are dropped; `{%+` keeps them), `-` on a tag strips all whitespace on that side,
// newlines normalized to \n and one trailing newline of the source dropped (Jinja's defaults).
// Comments vanish and {% raw %} bodies become text here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::router::jinja {

struct Token {
  enum class Kind : uint8_t {
    kText,
    kPrintBegin,  // {{
    kPrintEnd,    // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,  // text holds the unescaped value
    kInt,
    kFloat,
    kOp,  // text holds the operator: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
    kEnd,
  };
  Kind kind = Kind::kEnd;
  std::string text = {};
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// InvalidArgument naming the line for an unterminated tag, comment or string, or a character
// that starts no token.
absl::StatusOr<std::vector<Token>> Lex(std::string_view source);

}  // namespace headroom::router::jinja
