// Jinja's filters and tests, the Python str / dict / list methods templates call, and the globals
// transformers gives chat templates (range, dict, namespace, raise_exception; the interpreter adds
// strftime_now, whose clock RenderOptions can fix).
// Each follows the Jinja 3.1 / Python behaviour it is named after; errors are InvalidArgument with
// the filter's name and the offending type ("join: 'int' object is not iterable").
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "router/jinja/value.h"

namespace headroom::router::jinja {

bool IsKnownFilter(std::string_view name);
bool IsKnownTest(std::string_view name);

absl::StatusOr<Value> ApplyFilter(std::string_view name, const Value& operand,
                                  const CallArgs& args);
absl::StatusOr<bool> ApplyTest(std::string_view name, const Value& operand, const CallArgs& args);

// `object.name` when it names a str, dict or list method: a callable bound to `object` (Python's
// getattr, which Jinja tries before a dict key: `d.items` is the method even when d has an
// "items" key). Undefined otherwise. Mutating list/dict methods refuse when called, as the
// sandbox refuses them.
Value BoundMethod(const Value& object, std::string_view name);

// The globals every template sees: range, dict, namespace, raise_exception.
Dict Globals();

// Python iteration: a list's items, a dict's keys, a string's characters; undefined is empty.
// Other values are a TypeError naming `what`.
absl::StatusOr<List> Iterate(const Value& v, std::string_view what);

// Python len(): code points of a string, items of a list or dict; undefined is 0.
absl::StatusOr<int64_t> Length(const Value& v);

}  // namespace headroom::router::jinja
