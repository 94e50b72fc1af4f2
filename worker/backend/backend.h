// Backend: the device a worker computes on (the CPU, or one GPU), behind one small interface.
//
// The model's forward pass is written once against it. A backend owns its device memory: every
// allocation goes through Allocate(), which counts, so the engine can prove the memory contract
// (no device allocation after start: the count does not move while serving). Buffers live until
// the backend is destroyed; there is no Free, so fragmentation cannot grow.
//
// All op tensors are fp32, row-major and contiguous; pointers are device pointers (host memory
// for the CPU backend). Shapes are in the comments, as in kernels/. Ops return a status so bad
// shapes or ids are refused, never a crash; on a GPU they are enqueued and errors may surface at
// Synchronize().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/lora_view.h"
#include "kernels/moe_view.h"
#include "kernels/paged_kv.h"

namespace headroom::worker {

// The paged KV cache of one layer and the per-step batch layout attention reads are the kernels'
// own plain structs (kernels/paged_kv.h), so every backend indexes memory the same way.
using KvCacheLayer = kernels::PagedKvView;
using AttentionBatch = kernels::AttentionMetadata;
using AttentionParams = kernels::AttentionParams;
using MoeExperts = kernels::MoeExpertsView;
using LoraWeights = kernels::LoraWeightsView;
using LoraSegments = kernels::LoraSegmentsView;

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual std::string name() const = 0;

  // Device memory of `bytes` bytes (zeroed), owned by the backend until it is destroyed.
  // `what` names the buffer in errors and logs.
  [[nodiscard]] virtual absl::StatusOr<void*> Allocate(size_t bytes, const std::string& what) = 0;
  // Allocate() calls so far.
  [[nodiscard]] virtual int64_t num_allocations() const = 0;
  // Bytes allocated so far.
  [[nodiscard]] virtual int64_t allocated_bytes() const = 0;

  virtual void CopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual void CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  // Waits for all enqueued work.
  virtual void Synchronize() = 0;

  // out[i, :] = table[ids[i], :] * scale (1 but for Gemma's sqrt(hidden)); InvalidArgument for an
  // id outside [0, vocab).
  [[nodiscard]] virtual absl::Status Embedding(const float* table,  // [vocab, hidden]
                                               const int32_t* ids,  // [n]
                                               int64_t n, int64_t vocab, int64_t hidden,
                                               float scale,
                                               float* out) = 0;  // [n, hidden]
  // out = x / rms(x) * weight, row by row; out may be x (Qwen3's per-head q/k norms run in
  // place).
  [[nodiscard]] virtual absl::Status RmsNorm(const float* x,       // [n, hidden]
                                             const float* weight,  // [hidden]
                                             int64_t n, int64_t hidden, float eps,
                                             float* out) = 0;  // [n, hidden]
  // RMSNorm of rows split across a tensor-parallel group (kernels/cpu/rms_norm.h): each rank's
  // sums of squares of its part, then, with the sums all-reduced, its part scaled by the whole
  // row's rms (OLMo 2's q/k norms span every head).
  [[nodiscard]] virtual absl::Status SumSquares(const float* x,  // [n, width]
                                                int64_t n, int64_t width,
                                                float* sum_squares) = 0;              // [n]
  [[nodiscard]] virtual absl::Status RmsNormFromSumSquares(const float* x,            // [n, width]
                                                           const float* sum_squares,  // [n]
                                                           const float* weight,       // [width]
                                                           int64_t n, int64_t width,
                                                           int64_t full_width, float eps,
                                                           float* out) = 0;  // [n, width]
  // residual += x, in place (a residual add with no norm after it: OLMo 2's blocks read the
  // residual stream itself).
  [[nodiscard]] virtual absl::Status Add(float* residual,  // [count], updated in place
                                         const float* x,   // [count]
                                         int64_t count) = 0;
  // residual += x; out = RmsNorm(residual).
  [[nodiscard]] virtual absl::Status AddRmsNorm(float* residual,  // [n, hidden], updated in place
                                                const float* x,   // [n, hidden]
                                                const float* weight,  // [hidden]
                                                int64_t n, int64_t hidden, float eps,
                                                float* out) = 0;  // [n, hidden]
  // out = x @ w^T (+ bias).
  [[nodiscard]] virtual absl::Status Linear(const float* x,     // [m, k]
                                            const float* w,     // [n, k]
                                            const float* bias,  // [n] or nullptr
                                            int64_t m, int64_t n, int64_t k,
                                            float* out) = 0;  // [m, n]
  // Rotary embedding in place (HF rotate-half convention) of each head's leading rotary_dim
  // values; the rest pass through (partial rotary; rotary_dim == head_dim: the whole head).
  // cos and sin are multiplied by `scale` (LongRoPE's attention factor; 1 otherwise).
  [[nodiscard]] virtual absl::Status Rotary(float* q,  // [n, num_heads, head_dim]
                                            float* k,  // [n, num_kv_heads, head_dim]
                                            const int64_t* positions,  // [n]
                                            const float* inv_freq,     // [rotary_dim / 2]
                                            int64_t n, int64_t num_heads, int64_t num_kv_heads,
                                            int64_t head_dim, int64_t rotary_dim, float scale) = 0;
  // Writes k/v rows into their slots (slot = block * block_size + offset; negative = skip).
  [[nodiscard]] virtual absl::Status WriteKvCache(const float* k,               // [n, kv_heads, hd]
                                                  const float* v,               // [n, kv_heads, hd]
                                                  const int64_t* slot_mapping,  // [n]
                                                  int64_t n, const KvCacheLayer& cache) = 0;
  // Causal attention of each sequence's query rows over its paged context, scaled, soft-capped and
  // windowed as `params` says (kernels/cpu/paged_attention.h).
  [[nodiscard]] virtual absl::Status PagedAttention(const float* q,  // [n, num_heads, head_dim]
                                                    const KvCacheLayer& cache,
                                                    const AttentionBatch& batch, int64_t n,
                                                    int64_t num_heads,
                                                    const AttentionParams& params,
                                                    float* out) = 0;  // [n, num_heads, head_dim]
  // out = silu(gate_up[:, :inter]) * gate_up[:, inter:].
  [[nodiscard]] virtual absl::Status SiluAndMul(const float* gate_up,  // [n, 2 * inter]
                                                int64_t n, int64_t inter,
                                                float* out) = 0;  // [n, inter]
  // out = gelu_tanh(gate_up[:, :inter]) * gate_up[:, inter:] (Gemma 2's MLP,
  // kernels/cpu/gelu_tanh_and_mul.h).
  [[nodiscard]] virtual absl::Status GeluTanhAndMul(const float* gate_up,  // [n, 2 * inter]
                                                    int64_t n, int64_t inter,
                                                    float* out) = 0;  // [n, inter]
  // x = cap * tanh(x / cap) in place (Gemma 2's final logits).
  [[nodiscard]] virtual absl::Status SoftCap(float* x,  // [count]
                                             int64_t count, float cap) = 0;
  // Mixture-of-experts MLP (kernels/cpu/moe.h): each row through its top_k experts, weighted by
  // the router's probabilities.
  [[nodiscard]] virtual absl::Status MoeMlp(const float* x,  // [n, hidden]
                                            const MoeExperts& experts, int64_t n, int64_t hidden,
                                            float* out) = 0;  // [n, hidden]
  // LoRA: each segment's adapter's low-rank update added onto a projection's output,
  // out[i, :lora.out] += (x[i] A^T) B^T, rows `ld_out` apart (kernels/cpu/lora.h). `segments`
  // points at device memory.
  [[nodiscard]] virtual absl::Status LoraAdd(const float* x,  // [m, lora.in]
                                             const LoraWeights& lora, const LoraSegments& segments,
                                             int64_t m, int64_t ld_out,
                                             float* scratch,   // [m, lora.rank]
                                             float* out) = 0;  // [m, ld_out]
  // out[i, :] = x[rows[i], :] (gathers the rows whose logits are needed).
  [[nodiscard]] virtual absl::Status GatherRows(const float* x,       // [n, width]
                                                const int32_t* rows,  // [m]
                                                int64_t m, int64_t width,
                                                float* out) = 0;  // [m, width]
};

}  // namespace headroom::worker
