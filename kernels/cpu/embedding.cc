#include "kernels/cpu/embedding.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {

absl::Status Embedding(const int32_t* ids, int64_t num_tokens, const float* table,
                       int64_t vocab_size, int64_t hidden_size, float scale, float* out) {
  constexpr absl::string_view kOp = "Embedding";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "vocab_size", vocab_size));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "hidden_size", hidden_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "ids", ids, num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "table", table, vocab_size * hidden_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "out", out, num_tokens * hidden_size));
  if (!std::isfinite(scale)) {
    return absl::InvalidArgumentError(absl::StrCat("Embedding: scale must be finite, got ", scale));
  }
  for (int64_t i = 0; i < num_tokens; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("Embedding: token id ", ids[i], " at index ",
                                                     i, " is outside [0, ", vocab_size, ")"));
    }
  }
  const size_t row_bytes = static_cast<size_t>(hidden_size) * sizeof(float);
  for (int64_t i = 0; i < num_tokens; ++i) {
    float* row = out + i * hidden_size;
    std::memcpy(row, table + int64_t{ids[i]} * hidden_size, row_bytes);
    if (scale != 1.0f) {
      for (int64_t d = 0; d < hidden_size; ++d) row[d] *= scale;
    }
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
