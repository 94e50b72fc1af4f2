#include "router/tokenizer/json_util.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router::json_util {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return buffer.str();
}

absl::StatusOr<Json> Parse(std::string_view text, std::string_view source) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const size_t byte = e.byte > 0 ? static_cast<size_t>(e.byte) - 1 : 0;
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": JSON parse error at byte ", byte,
                                                   " (line ", line, ", column ", column,
                                                   "): ", e.what()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": JSON parse error: ", e.what()));
  }
}

std::string Child(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(Sv(path), ".", Sv(key));
}

std::string Index(std::string_view path, size_t index) {
  return absl::StrCat(Sv(path), "[", index, "]");
}

absl::Status Expected(std::string_view path, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(Sv(path), ": expected ", Sv(what)));
}

const Json* Find(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

absl::StatusOr<std::string> GetString(const Json& obj, std::string_view key,
                                      std::string_view path) {
  const Json* v = Find(obj, key);
  if (v == nullptr || !v->is_string()) return Expected(Child(path, key), "a string");
  return v->get_ref<const std::string&>();
}

absl::StatusOr<std::optional<std::string>> GetOptionalString(const Json& obj, std::string_view key,
                                                             std::string_view path) {
  const Json* v = Find(obj, key);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) return Expected(Child(path, key), "a string or null");
  return std::optional<std::string>(v->get_ref<const std::string&>());
}

absl::StatusOr<bool> GetBool(const Json& obj, std::string_view key, std::string_view path,
                             bool fallback) {
  const Json* v = Find(obj, key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_boolean()) return Expected(Child(path, key), "true or false");
  return v->get<bool>();
}

absl::StatusOr<int64_t> GetInt(const Json& obj, std::string_view key, std::string_view path,
                               int64_t fallback) {
  const Json* v = Find(obj, key);
  if (v == nullptr || v->is_null()) return fallback;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Expected(Child(path, key), "an integer below 2^63");
    }
    return static_cast<int64_t>(u);
  }
  if (!v->is_number_integer()) return Expected(Child(path, key), "an integer");
  return v->get<int64_t>();
}

absl::StatusOr<int32_t> ToTokenId(const Json& value, std::string_view path) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return static_cast<int32_t>(u);
    }
  } else if (value.is_number_integer()) {
    const int64_t i = value.get<int64_t>();
    if (i >= 0 && i <= std::numeric_limits<int32_t>::max()) return static_cast<int32_t>(i);
  }
  return Expected(path, "a token id (an integer in [0, 2^31))");
}

}  // namespace headroom::router::json_util
