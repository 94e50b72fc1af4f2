// Fill: a grid-stride loop writing one value; memory bound (one 4-byte store per element).
#include "kernels/cuda/fill.h"

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"

namespace headroom::kernels::cuda {
namespace {

__global__ void FillKernel(float* __restrict__ out,  // [n]
                           int64_t n, float value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = value;
  }
}

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

}  // namespace

absl::Status Fill(float* out, int64_t n, float value, cudaStream_t stream) {
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("fill: negative size ", n));
  if (n == 0) return absl::OkStatus();
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  FillKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(out, n, value);
  return CudaStatus(cudaGetLastError(), "fill kernel launch");
}

}  // namespace headroom::kernels::cuda
