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

#include <optional>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/openai/tools.h"

namespace headroom::router::openai {

// The calls of a pythonic reply, or nullopt when the reply is not one.
std::optional<std::vector<ToolCall>> ParsePythonicCalls(std::string_view reply);

// ast.literal_eval(text) as JSON (tuples as arrays), with the refusals above: the leading spaces
// and tabs literal_eval strips, then one expression (several separated by commas make a tuple),
// comments and blank lines around it. nullopt when Python would not read it or JSON cannot hold
// it.
std::optional<nlohmann::ordered_json> ParsePythonLiteral(std::string_view text);

}  // namespace headroom::router::openai
