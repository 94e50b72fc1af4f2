// CpuBackend: the Backend on the host CPU, fp32, ops from kernels/cpu (GEMMs through OpenBLAS,
// attention and the rest on kernels/cpu/threads.h). "Device" memory is host memory it owns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker/backend/backend.h"

namespace headroom::worker {

class CpuBackend final : public Backend {
 public:
  // `num_threads` <= 0 uses every hardware thread.
  explicit CpuBackend(int num_threads = 0);

  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] absl::StatusOr<void*> Allocate(size_t bytes, const std::string& what) override;
  [[nodiscard]] int64_t num_allocations() const override {
    return static_cast<int64_t>(buffers_.size());
  }
  [[nodiscard]] int64_t allocated_bytes() const override { return allocated_bytes_; }
  void CopyToDevice(void* dst, const void* src, size_t bytes) override;
  void CopyToHost(void* dst, const void* src, size_t bytes) override;
  void Synchronize() override {}

  [[nodiscard]] absl::Status Embedding(const float* table, const int32_t* ids, int64_t n,
                                       int64_t vocab, int64_t hidden, float scale,
                                       float* out) override;
  [[nodiscard]] absl::Status RmsNorm(const float* x, const float* weight, int64_t n, int64_t hidden,
                                     float eps, float* out) override;
  [[nodiscard]] absl::Status SumSquares(const float* x, int64_t n, int64_t width,
                                        float* sum_squares) override;
  [[nodiscard]] absl::Status RmsNormFromSumSquares(const float* x, const float* sum_squares,
                                                   const float* weight, int64_t n, int64_t width,
                                                   int64_t full_width, float eps,
                                                   float* out) override;
  [[nodiscard]] absl::Status Add(float* residual, const float* x, int64_t count) override;
  [[nodiscard]] absl::Status AddRmsNorm(float* residual, const float* x, const float* weight,
                                        int64_t n, int64_t hidden, float eps, float* out) override;
  [[nodiscard]] absl::Status Linear(const float* x, const float* w, const float* bias, int64_t m,
                                    int64_t n, int64_t k, float* out) override;
  [[nodiscard]] absl::Status Rotary(float* q, float* k, const int64_t* positions,
                                    const float* inv_freq, int64_t n, int64_t num_heads,
                                    int64_t num_kv_heads, int64_t head_dim, int64_t rotary_dim,
                                    float scale) override;
  [[nodiscard]] absl::Status WriteKvCache(const float* k, const float* v,
                                          const int64_t* slot_mapping, int64_t n,
                                          const KvCacheLayer& cache) override;
  [[nodiscard]] absl::Status PagedAttention(const float* q, const KvCacheLayer& cache,
                                            const AttentionBatch& batch, int64_t n,
                                            int64_t num_heads, const AttentionParams& params,
                                            float* out) override;
  [[nodiscard]] absl::Status SiluAndMul(const float* gate_up, int64_t n, int64_t inter,
                                        float* out) override;
  [[nodiscard]] absl::Status GeluTanhAndMul(const float* gate_up, int64_t n, int64_t inter,
                                            float* out) override;
  [[nodiscard]] absl::Status SoftCap(float* x, int64_t count, float cap) override;
  [[nodiscard]] absl::Status MoeMlp(const float* x, const MoeExperts& experts, int64_t n,
                                    int64_t hidden, float* out) override;
  [[nodiscard]] absl::Status LoraAdd(const float* x, const LoraWeights& lora,
                                     const LoraSegments& segments, int64_t m, int64_t ld_out,
                                     float* scratch, float* out) override;
  [[nodiscard]] absl::Status GatherRows(const float* x, const int32_t* rows, int64_t m,
                                        int64_t width, float* out) override;

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::vector<std::unique_ptr<void, Free>> buffers_;
  int64_t allocated_bytes_ = 0;
};

}  // namespace headroom::worker
