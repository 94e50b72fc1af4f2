#include "kernels/cpu/gelu_tanh_and_mul.h"

#include <cmath>

#include "kernels/cpu/gated_mul_internal.h"

namespace headroom::kernels::cpu {

absl::Status GeluTanhAndMul(const float* gate_up, int64_t num_tokens, int64_t inter_size,
                            float* out) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  return internal::GatedMul("GeluTanhAndMul", gate_up, num_tokens, inter_size, out, [](float g) {
    return 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + kCubic * g * g * g)));
  });
}

}  // namespace headroom::kernels::cpu
