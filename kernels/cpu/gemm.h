// Linear layer: out = x @ w^T + bias, with w in Hugging Face layout [out_features, in_features].
//
// CPU version: OpenBLAS. m == 1 (a decode step of one sequence) goes to cblas_sgemv, which is
// memory bound on w; m > 1 to cblas_sgemm. `out` is first set to the bias (or zeros) and the product
// accumulated onto it (beta = 1). OpenBLAS's thread count follows kernels/cpu/threads.h.
// On the 2-core dev VM (2026-11-22): m = 1, 4096 x 4096: 2.5 ms (24 GB/s of weights);
// m = 256: 99 ms (87 GFLOP/s).
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace headroom::kernels::cpu {

// InvalidArgument for sizes < 0 (m) or <= 0 (n, k), sizes over INT32_MAX (BLAS uses int), or null
// pointers. `bias` may be null (no bias). `out` must not alias `x` or `w`.
[[nodiscard]] absl::Status Linear(const float* x,     // [m, k]
                                  const float* w,     // [n, k]
                                  const float* bias,  // [n] or nullptr
                                  int64_t m, int64_t n, int64_t k,
                                  float* out);  // [m, n]

}  // namespace headroom::kernels::cpu
