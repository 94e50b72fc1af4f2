#include "kernels/cpu/softcap.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {

absl::Status SoftCap(float* x, int64_t count, float cap) {
  constexpr absl::string_view kOp = "SoftCap";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "count", count));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "x", x, count));
  if (!(cap > 0) || !std::isfinite(cap)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SoftCap: cap must be positive and finite, got ", cap));
  }
  for (int64_t i = 0; i < count; ++i) x[i] = cap * std::tanh(x[i] / cap);
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
