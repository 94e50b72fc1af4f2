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

// RMSNorm over rows split across the ranks of a tensor-parallel group (OLMo 2's q_norm / k_norm
// span every head, and each rank holds some heads): each rank sums the squares of its part of
// each row, the sums are all-reduced, and each rank scales its part by the whole row's rms.
//   sum_squares[i] = sum_j x[i, j]^2
[[nodiscard]] absl::Status SumSquares(const float* x,  // [num_tokens, width]
                                      int64_t num_tokens, int64_t width,
                                      float* sum_squares);  // [num_tokens]
//   out[i, :] = x[i, :] * (1 / sqrt(sum_squares[i] / full_width + eps)) * weight
// `out` may alias `x`. InvalidArgument for bad sizes, full_width < width, or eps < 0.
[[nodiscard]] absl::Status RmsNormFromSumSquares(const float* x,            // [num_tokens, width]
                                                 const float* sum_squares,  // [num_tokens]
                                                 const float* weight,       // [width]
                                                 int64_t num_tokens, int64_t width,
                                                 int64_t full_width, float eps,
                                                 float* out);  // [num_tokens, width]

// residual += x (in place), then out = RmsNorm(residual). `out` may alias `x` (not `residual`).
[[nodiscard]] absl::Status AddRmsNorm(float* residual,      // [num_tokens, hidden_size], in/out
                                      const float* x,       // [num_tokens, hidden_size]
                                      const float* weight,  // [hidden_size]
                                      int64_t num_tokens, int64_t hidden_size, float eps,
                                      float* out);  // [num_tokens, hidden_size]

}  // namespace headroom::kernels::cpu
