#include "worker/backend/cpu_backend.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gelu_tanh_and_mul.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kv_cache_write.h"
#include "kernels/cpu/lora.h"
#include "kernels/cpu/moe.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rotary.h"
#include "kernels/cpu/silu_and_mul.h"
#include "kernels/cpu/softcap.h"
#include "kernels/cpu/threads.h"

namespace headroom::worker {
namespace {
// Buffers are aligned for vector loads of any width the CPU has.
constexpr size_t kAlignment = 64;
}  // namespace

void CpuBackend::Free::operator()(void* p) const { std::free(p); }

CpuBackend::CpuBackend(int num_threads) {
  if (num_threads > 0) kernels::cpu::SetNumThreads(num_threads);
}

absl::StatusOr<void*> CpuBackend::Allocate(size_t bytes, const std::string& what) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of host memory for ", what));
  }
  std::memset(p, 0, rounded);
  buffers_.emplace_back(p);
  allocated_bytes_ += static_cast<int64_t>(rounded);
  return p;
}

void CpuBackend::CopyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void CpuBackend::CopyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

absl::Status CpuBackend::Embedding(const float* table, const int32_t* ids, int64_t n, int64_t vocab,
                                   int64_t hidden, float scale, float* out) {
  return kernels::cpu::Embedding(ids, n, table, vocab, hidden, scale, out);
}

absl::Status CpuBackend::RmsNorm(const float* x, const float* weight, int64_t n, int64_t hidden,
                                 float eps, float* out) {
  return kernels::cpu::RmsNorm(x, weight, n, hidden, eps, out);
}

absl::Status CpuBackend::SumSquares(const float* x, int64_t n, int64_t width, float* sum_squares) {
  return kernels::cpu::SumSquares(x, n, width, sum_squares);
}

absl::Status CpuBackend::RmsNormFromSumSquares(const float* x, const float* sum_squares,
                                               const float* weight, int64_t n, int64_t width,
                                               int64_t full_width, float eps, float* out) {
  return kernels::cpu::RmsNormFromSumSquares(x, sum_squares, weight, n, width, full_width, eps,
                                             out);
}

absl::Status CpuBackend::Add(float* residual, const float* x, int64_t count) {
  if (count < 0 || (count > 0 && (residual == nullptr || x == nullptr))) {
    return absl::InvalidArgumentError(
        absl::StrCat("Add: null pointer or negative count (", count, ")"));
  }
  for (int64_t i = 0; i < count; ++i) residual[i] += x[i];
  return absl::OkStatus();
}

absl::Status CpuBackend::AddRmsNorm(float* residual, const float* x, const float* weight, int64_t n,
                                    int64_t hidden, float eps, float* out) {
  return kernels::cpu::AddRmsNorm(residual, x, weight, n, hidden, eps, out);
}

absl::Status CpuBackend::Linear(const float* x, const float* w, const float* bias, int64_t m,
                                int64_t n, int64_t k, float* out) {
  return kernels::cpu::Linear(x, w, bias, m, n, k, out);
}

absl::Status CpuBackend::Rotary(float* q, float* k, const int64_t* positions, const float* inv_freq,
                                int64_t n, int64_t num_heads, int64_t num_kv_heads,
                                int64_t head_dim, int64_t rotary_dim, float scale) {
  return kernels::cpu::Rotary(positions, n, q, num_heads, k, num_kv_heads, head_dim, rotary_dim,
                              inv_freq, scale);
}

absl::Status CpuBackend::WriteKvCache(const float* k, const float* v, const int64_t* slot_mapping,
                                      int64_t n, const KvCacheLayer& cache) {
  return kernels::cpu::KvCacheWrite(k, v, slot_mapping, n, cache);
}

absl::Status CpuBackend::PagedAttention(const float* q, const KvCacheLayer& cache,
                                        const AttentionBatch& batch, int64_t n, int64_t num_heads,
                                        const AttentionParams& params, float* out) {
  return kernels::cpu::PagedAttention(q, n, num_heads, cache, batch, params, out);
}

absl::Status CpuBackend::SiluAndMul(const float* gate_up, int64_t n, int64_t inter, float* out) {
  return kernels::cpu::SiluAndMul(gate_up, n, inter, out);
}

absl::Status CpuBackend::GeluTanhAndMul(const float* gate_up, int64_t n, int64_t inter,
                                        float* out) {
  return kernels::cpu::GeluTanhAndMul(gate_up, n, inter, out);
}

absl::Status CpuBackend::SoftCap(float* x, int64_t count, float cap) {
  return kernels::cpu::SoftCap(x, count, cap);
}

absl::Status CpuBackend::LoraAdd(const float* x, const LoraWeights& lora,
                                 const LoraSegments& segments, int64_t m, int64_t ld_out,
                                 float* scratch, float* out) {
  return kernels::cpu::LoraAdd(x, lora, segments, m, ld_out, scratch, out);
}

absl::Status CpuBackend::MoeMlp(const float* x, const MoeExperts& experts, int64_t n,
                                int64_t hidden, float* out) {
  return kernels::cpu::MoeMlp(x, experts, n, hidden, out);
}

absl::Status CpuBackend::GatherRows(const float* x, const int32_t* rows, int64_t m, int64_t width,
                                    float* out) {
  for (int64_t i = 0; i < m; ++i) {
    std::memcpy(out + i * width, x + int64_t{rows[i]} * width,
                static_cast<size_t>(width) * sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace headroom::worker
