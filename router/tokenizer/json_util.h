// Non-throwing access to nlohmann::json for the tokenizer loaders. Every error names the JSON path
// of the offending value ("model.merges[12]"); parse errors name the byte offset, line and column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace headroom::router::json_util {

using Json = nlohmann::json;

// Reads a whole file; NotFound names the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Parses `text`; a syntax error says where: "<source>: JSON parse error at byte B (line L,
// column C): ...".
absl::StatusOr<Json> Parse(std::string_view text, std::string_view source);

// "a.b" from "a" and "b" (just "b" when `path` is empty).
std::string Child(std::string_view path, std::string_view key);
// "a[3]".
std::string Index(std::string_view path, size_t index);

// InvalidArgument "<path>: expected <what>".
absl::Status Expected(std::string_view path, std::string_view what);

// The member `key` of `obj`, or nullptr when `obj` is not an object or has no such member.
const Json* Find(const Json& obj, std::string_view key);

// Required string member.
absl::StatusOr<std::string> GetString(const Json& obj, std::string_view key, std::string_view path);
// Optional string member: missing or null gives nullopt.
absl::StatusOr<std::optional<std::string>> GetOptionalString(const Json& obj, std::string_view key,
                                                             std::string_view path);
// Optional bool member: missing or null gives `fallback`.
absl::StatusOr<bool> GetBool(const Json& obj, std::string_view key, std::string_view path,
                             bool fallback);
// Optional integer member: missing or null gives `fallback`.
absl::StatusOr<int64_t> GetInt(const Json& obj, std::string_view key, std::string_view path,
                               int64_t fallback);
// A token id: an integer in [0, 2^31).
absl::StatusOr<int32_t> ToTokenId(const Json& value, std::string_view path);

}  // namespace headroom::router::json_util
