#include "worker/model/dtype.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace headroom::worker {

int64_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

absl::StatusOr<DType> ParseDType(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  if (lower == "float32" || lower == "float" || lower == "fp32") return DType::kFloat32;
  if (lower == "float16" || lower == "half" || lower == "fp16") return DType::kFloat16;
  if (lower == "bfloat16" || lower == "bf16") return DType::kBFloat16;
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported dtype \"", std::string(name),
      "\"; supported: auto, float16 (half, fp16), bfloat16 (bf16), float32 (float, fp32)"));
}

absl::StatusOr<DType> ResolveDType(std::string_view flag_value, DType auto_dtype) {
  if (absl::AsciiStrToLower(std::string(flag_value)) == "auto") return auto_dtype;
  return ParseDType(flag_value);
}

}  // namespace headroom::worker
