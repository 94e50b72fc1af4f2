// JSON field helpers of the OpenAI request parsers (openai_protocol.cc, tool_request.cc): typed
// access to a request's members with InvalidArgument errors that name the field ("max_tokens
// must be an integer, got string") and carry it as a payload (ErrorParam reads it). Used by
// router/openai and the HTTP front's rewriting of request bodies (the chat form of embeddings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {

// Requests are read keeping the client's key order (a tool's parameters reach the chat template
// as sent, as in vLLM).
using Json = nlohmann::ordered_json;

// Status payload key carrying the offending field name.
inline constexpr char kParamPayload[] = "type.headroom/openai.param";

// InvalidArgument(message) carrying `param` as the payload.
absl::Status Bad(std::string_view param, std::string_view message);
// "<param> must be <expected>, got <JSON type>".
absl::Status WrongType(std::string_view param, std::string_view expected, const Json& got);
// A request body parsed as a JSON object; a 400 for invalid JSON, another type, or nesting past
// kMaxJsonNesting (checked before parsing, which recurses).
absl::StatusOr<Json> ParseObject(std::string_view body);
// The member `key`, or nullptr when it is absent or null (OpenAI treats null as "not given").
const Json* Member(const Json& obj, std::string_view key);
// "base[index]".
std::string Path(std::string_view base, size_t index);

// An integer (or a float with no fractional part, as Python's int() validation accepts).
absl::StatusOr<int64_t> ToInt64(const Json& v, std::string_view param);
absl::StatusOr<int32_t> ToInt32(const Json& v, std::string_view param);

// Optional members: nullopt when absent or null, an error naming `key` for the wrong type.
absl::StatusOr<std::optional<int64_t>> OptInt64(const Json& obj, std::string_view key);
absl::StatusOr<std::optional<int32_t>> OptInt32(const Json& obj, std::string_view key);
absl::StatusOr<std::optional<double>> OptNumber(const Json& obj, std::string_view key);
// A number that becomes a proto float: finite as a float.
absl::StatusOr<std::optional<float>> OptFloat(const Json& obj, std::string_view key);
absl::StatusOr<std::optional<bool>> OptBool(const Json& obj, std::string_view key);
absl::StatusOr<std::optional<std::string>> OptString(const Json& obj, std::string_view key);

// Early-return helper: `ASSIGN_OR_RETURN` without a macro library.
#define HEADROOM_OPENAI_ASSIGN(lhs, expr)       \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *std::move(lhs##_or)

}  // namespace headroom::router::openai
