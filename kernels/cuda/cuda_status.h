// Converts CUDA runtime errors into absl::Status at the kernel launchers' boundary.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "absl/status/status.h"

namespace headroom::kernels::cuda {

// OK for cudaSuccess; otherwise Internal (or Unavailable when no device or driver is present)
// naming `what` and CUDA's error string.
[[nodiscard]] absl::Status CudaStatus(cudaError_t error, const char* what);

// Number of visible CUDA devices; 0 (never an error) without a driver or device.
[[nodiscard]] int VisibleDeviceCount();

}  // namespace headroom::kernels::cuda
