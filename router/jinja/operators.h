// Python's operators on template values: arithmetic (+ - * / // % **), Jinja's ~, `in`,
// subscripts and slices. Type errors and division by zero are InvalidArgument with Python's
// wording ("unsupported operand type(s) for +: 'int' and 'str'").
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "router/jinja/value.h"

namespace headroom::router::jinja {

absl::StatusOr<Value> Arithmetic(std::string_view op, const Value& a, const Value& b);
absl::StatusOr<Value> Negate(const Value& v);
// `item in container`.
absl::StatusOr<bool> Contains(const Value& container, const Value& item);
// container[key]: a dict key, a list / string index (negative from the end). Missing or out of
// range is undefined, as Jinja's getitem makes it; subscripting undefined is an error.
absl::StatusOr<Value> Subscript(const Value& container, const Value& key);
// container[start:stop:step] for lists, tuples and strings.
absl::StatusOr<Value> Slice(const Value& container, std::optional<int64_t> start,
                            std::optional<int64_t> stop, std::optional<int64_t> step);

}  // namespace headroom::router::jinja
