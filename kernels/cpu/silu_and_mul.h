// SiLU-and-mul, the activation of the Llama MLP after a fused gate_up projection:
//   out[i, j] = silu(gate_up[i, j]) * gate_up[i, inter + j],  silu(g) = g / (1 + exp(-g)).
//
// CPU version: fp32, elementwise, memory bound.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace headroom::kernels::cpu {

[[nodiscard]] absl::Status SiluAndMul(const float* gate_up,  // [num_tokens, 2 * inter_size]
                                      int64_t num_tokens, int64_t inter_size,
                                      float* out);  // [num_tokens, inter_size]

}  // namespace headroom::kernels::cpu
