#include "kernels/cpu/gelu_tanh_and_mul.h"

#include <cmath>

#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {

absl::Status GeluTanhAndMul(const float* gate_up, int64_t num_tokens, int64_t inter_size,
                            float* out) {
  constexpr absl::string_view kOp = "GeluTanhAndMul";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "inter_size", inter_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "gate_up", gate_up, 2 * num_tokens * inter_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "out", out, num_tokens * inter_size));
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  for (int64_t i = 0; i < num_tokens; ++i) {
    const float* gate = gate_up + i * 2 * inter_size;  // [inter_size]
    const float* up = gate + inter_size;               // [inter_size]
    float* out_row = out + i * inter_size;             // [inter_size]
    for (int64_t j = 0; j < inter_size; ++j) {
      const float g = gate[j];
      const float inner = kSqrt2OverPi * (g + kCubic * g * g * g);
      out_row[j] = 0.5f * g * (1.0f + std::tanh(inner)) * up[j];
    }
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
