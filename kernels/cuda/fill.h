// Fill on the device: the CUDA twin of kernels/cpu/fill.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace headroom::kernels::cuda {

// Enqueues the fill on `stream`; InvalidArgument for n < 0, Internal for a launch failure.
[[nodiscard]] absl::Status Fill(float* out,  // [n], device memory
                                int64_t n, float value, cudaStream_t stream);

}  // namespace headroom::kernels::cuda
