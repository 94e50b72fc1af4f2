// DType: the floating-point types headroom stores weights, activations and KV cache in.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace headroom::worker {

enum class DType { kFloat32, kFloat16, kBFloat16 };

// Bytes per element: 4, 2, 2.
[[nodiscard]] int64_t DTypeBytes(DType dtype);

// The canonical (PyTorch) name: "float32", "float16", "bfloat16".
[[nodiscard]] std::string_view DTypeName(DType dtype);

// Parses a dtype name as written in config.json's torch_dtype or on a command line:
// "float32"/"float"/"fp32", "float16"/"half"/"fp16", "bfloat16"/"bf16" (case-insensitive).
// "auto" is not a dtype; see ResolveDType.
[[nodiscard]] absl::StatusOr<DType> ParseDType(std::string_view name);

// Resolves a --kv-cache-dtype value: "auto" means `auto_dtype` (the resolved --dtype); anything
// else is parsed. --dtype itself depends on the model: ResolveModelDType (model_config.h).
[[nodiscard]] absl::StatusOr<DType> ResolveDType(std::string_view flag_value, DType auto_dtype);

}  // namespace headroom::worker
