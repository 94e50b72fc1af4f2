#include "kernels/cpu/silu_and_mul.h"

#include <cmath>

#include "kernels/cpu/gated_mul_internal.h"

namespace headroom::kernels::cpu {

absl::Status SiluAndMul(const float* gate_up, int64_t num_tokens, int64_t inter_size, float* out) {
  return internal::GatedMul("SiluAndMul", gate_up, num_tokens, inter_size, out,
                            [](float g) { return g / (1.0f + std::exp(-g)); });
}

}  // namespace headroom::kernels::cpu
