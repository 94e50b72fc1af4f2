// GELU(tanh)-and-mul, the activation of Gemma 2's MLP after a fused gate_up projection:
//   out[i, j] = gelu(gate_up[i, j]) * gate_up[i, inter + j],
//   gelu(g) = 0.5 * g * (1 + tanh(sqrt(2 / pi) * (g + 0.044715 * g^3)))
// (PyTorch's gelu(approximate="tanh"), transformers' "gelu_pytorch_tanh" and "gelu_new").
//
// CPU version: fp32, elementwise, memory bound.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace headroom::kernels::cpu {

// InvalidArgument for bad sizes or null pointers.
[[nodiscard]] absl::Status GeluTanhAndMul(const float* gate_up,  // [num_tokens, 2 * inter_size]
                                          int64_t num_tokens, int64_t inter_size,
                                          float* out);  // [num_tokens, inter_size]

}  // namespace headroom::kernels::cpu
