#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cpu/fill.h"
#include "kernels/cuda/fill.h"

namespace headroom::kernels {
namespace {

TEST(GpuFillTest, MatchesCpuOnOddSizes) {
  HR_REQUIRE_GPU();
  for (int64_t n : {1, 3, 255, 257, 1000003}) {
    std::vector<float> expected(static_cast<size_t>(n));
    cpu::Fill(absl::MakeSpan(expected), 1.5f);
    void* raw = nullptr;
    ASSERT_EQ(cudaMalloc(&raw, static_cast<size_t>(n) * sizeof(float)), cudaSuccess);
    float* device = static_cast<float*>(raw);
    // Poison: 0xFF bytes are NaN, so an unwritten element cannot compare equal.
    ASSERT_EQ(cudaMemset(device, 0xFF, static_cast<size_t>(n) * sizeof(float)), cudaSuccess);
    ASSERT_TRUE(cuda::Fill(device, n, 1.5f, nullptr).ok());
    std::vector<float> got(static_cast<size_t>(n));
    ASSERT_EQ(cudaMemcpy(got.data(), device, got.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    cudaFree(device);
    EXPECT_EQ(got, expected) << "n=" << n;
  }
}

TEST(GpuFillTest, RejectsNegativeSize) {
  // Validation happens before any device call, so it holds with or without a GPU.
  EXPECT_EQ(cuda::Fill(nullptr, -1, 0.0f, nullptr).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels
