#include "router/openai/json_fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router::openai {

absl::Status Bad(std::string_view param, std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(Sv(message));
  if (!param.empty()) status.SetPayload(kParamPayload, absl::Cord(Sv(param)));
  return status;
}

absl::StatusOr<Json> ParseObject(std::string_view body) {
  if (const int depth = JsonNestingDepth(body); depth > kMaxJsonNesting) {
    return Bad("", absl::StrCat("the request body nests arrays and objects more than ",
                                kMaxJsonNesting, " levels deep"));
  }
  Json j;
  try {
    j = Json::parse(body.begin(), body.end());
  } catch (const Json::exception& e) {
    return Bad("", absl::StrCat("invalid JSON: ", e.what()));
  }
  if (!j.is_object()) {
    return Bad("", absl::StrCat("request body must be a JSON object, got ", j.type_name()));
  }
  return j;
}

absl::Status WrongType(std::string_view param, std::string_view expected, const Json& got) {
  return Bad(param, absl::StrCat(Sv(param), " must be ", Sv(expected), ", got ", got.type_name()));
}

// The member `key`, or nullptr when it is absent or null (OpenAI treats null as "not given").
const Json* Member(const Json& obj, std::string_view key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string Path(std::string_view base, size_t index) {
  return absl::StrCat(Sv(base), "[", index, "]");
}

// An integer (or a float with no fractional part, as Python's int() validation accepts).
absl::StatusOr<int64_t> ToInt64(const Json& v, std::string_view param) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Bad(param, absl::StrCat(Sv(param), " must fit in int64, got ", u));
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^63 is exactly representable; anything below it converts without overflow.
    if (std::isfinite(d) && std::trunc(d) == d && d >= -9.2233720368547758e18 &&
        d < 9.2233720368547758e18) {
      return static_cast<int64_t>(d);
    }
    return Bad(param, absl::StrCat(Sv(param), " must be an integer, got ", d));
  }
  return WrongType(param, "an integer", v);
}

absl::StatusOr<int32_t> ToInt32(const Json& v, std::string_view param) {
  absl::StatusOr<int64_t> i = ToInt64(v, param);
  if (!i.ok()) return i.status();
  if (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max()) {
    return Bad(param, absl::StrCat(Sv(param), " must fit in int32, got ", *i));
  }
  return static_cast<int32_t>(*i);
}

namespace {

// obj[key] read by `convert`, or nullopt when the key is absent.
template <typename T>
absl::StatusOr<std::optional<T>> Optional(const Json& obj, std::string_view key,
                                          absl::StatusOr<T> (*convert)(const Json&,
                                                                       std::string_view)) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return std::optional<T>();
  absl::StatusOr<T> value = convert(*v, key);
  if (!value.ok()) return value.status();
  return std::optional<T>(*value);
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> OptInt64(const Json& obj, std::string_view key) {
  return Optional<int64_t>(obj, key, ToInt64);
}

absl::StatusOr<std::optional<int32_t>> OptInt32(const Json& obj, std::string_view key) {
  return Optional<int32_t>(obj, key, ToInt32);
}

absl::StatusOr<std::optional<double>> OptNumber(const Json& obj, std::string_view key) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number()) return WrongType(key, "a number", *v);
  return std::optional<double>(v->get<double>());
}

// A number that becomes a proto float: finite as a float.
absl::StatusOr<std::optional<float>> OptFloat(const Json& obj, std::string_view key) {
  absl::StatusOr<std::optional<double>> d = OptNumber(obj, key);
  if (!d.ok()) return d.status();
  if (!d->has_value()) return std::optional<float>();
  const double value = **d;
  if (!(std::fabs(value) <= static_cast<double>(std::numeric_limits<float>::max()))) {
    return Bad(key, absl::StrCat(Sv(key), " must be a finite number, got ", value));
  }
  return std::optional<float>(static_cast<float>(value));
}

absl::StatusOr<std::optional<bool>> OptBool(const Json& obj, std::string_view key) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return WrongType(key, "a boolean", *v);
  return std::optional<bool>(v->get<bool>());
}

absl::StatusOr<std::optional<std::string>> OptString(const Json& obj, std::string_view key) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return WrongType(key, "a string", *v);
  return std::optional<std::string>(v->get<std::string>());
}

}  // namespace headroom::router::openai
