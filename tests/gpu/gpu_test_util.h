// Shared helpers of the device tests.
#pragma once

#include <gtest/gtest.h>

#include "kernels/cuda/cuda_status.h"

// Skips the current test when no CUDA device is visible (no driver, or no GPU).
#define HR_REQUIRE_GPU()                                                  \
  do {                                                                    \
    if (::headroom::kernels::cuda::VisibleDeviceCount() == 0) {           \
      GTEST_SKIP() << "no CUDA device visible";                           \
    }                                                                     \
  } while (false)
