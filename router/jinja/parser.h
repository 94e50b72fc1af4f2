// Turns Lex's tokens into statements: Jinja's statement set as chat templates use it (if / elif /
// else, for with loop filters and else, set / set blocks / namespace attributes, macro, call,
// filter blocks, break / continue, transformers' {% generation %}) and Jinja's expression
// grammar and operator precedence. Unknown filters and tests are refused here, as Jinja refuses
// them when compiling; include / extends / import / block are refused: a chat template is one
// file.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "router/jinja/ast.h"

namespace headroom::router::jinja {

// InvalidArgument "line N: ..." on a syntax error.
absl::StatusOr<Body> Parse(std::string_view source);

}  // namespace headroom::router::jinja
