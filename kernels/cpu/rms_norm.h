// RMSNorm as Hugging Face's LlamaRMSNorm computes it in fp32:
//   out[i, :] = x[i, :] * (1 / sqrt(mean(x[i, :]^2) + eps)) * weight
// (normalize first, then multiply by the weight), and the fused residual form each decoder layer
// uses before attention (layers > 0) and before the MLP:
//   residual[i, :] += x[i, :];  out[i, :] = RmsNorm(residual[i, :]).
//
// CPU version: the sum of squares accumulates in double (the reference the CUDA kernel's fp32
// tree reduction is checked against); the scaling is fp32. Memory bound.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace headroom::kernels::cpu {

// `out` may alias `x`. InvalidArgument for bad sizes or eps < 0.
[[nodiscard]] absl::Status RmsNorm(const float* x,       // [num_tokens, hidden_size]
                                   const float* weight,  // [hidden_size]
                                   int64_t num_tokens, int64_t hidden_size, float eps,
                                   float* out);  // [num_tokens, hidden_size]

// residual += x (in place), then out = RmsNorm(residual). `out` may alias `x` (not `residual`).
[[nodiscard]] absl::Status AddRmsNorm(float* residual,      // [num_tokens, hidden_size], in/out
                                      const float* x,       // [num_tokens, hidden_size]
                                      const float* weight,  // [hidden_size]
                                      int64_t num_tokens, int64_t hidden_size, float eps,
                                      float* out);  // [num_tokens, hidden_size]

}  // namespace headroom::kernels::cpu
