// LlamaModel: the decoder-only forward pass of the Llama family (Llama 2/3/3.1, Mistral, Qwen2),
// written once against the Backend interface.
//
//   x = embed(tokens)
//   for each layer:  h = norm1(x);  x += o_proj(attention(rope(q(h)), rope(k(h)), v(h)))
//                    h = norm2(x);  x += down(silu(gate(h)) * up(h))
//   logits = lm_head(norm(x))      only for the rows that sample
//
// Every device buffer (weights, KV cache, activation arena sized for max_num_batched_tokens and
// max_num_seqs) is allocated in Create(); Forward() never allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/backend/backend.h"
#include "worker/model/checkpoint.h"
#include "worker/model/forward_input.h"
#include "worker/model/model_config.h"

namespace headroom::worker {

// The sizes the model's buffers are allocated for.
struct ModelLimits {
  // Tokens per step at most (rows of the activation arena).
  int32_t max_num_batched_tokens = 0;
  // Sequences per step at most (rows of logits and attention metadata).
  int32_t max_num_seqs = 0;
  // Tokens per sequence at most (sets the block-table width).
  int32_t max_model_len = 0;
  // KV blocks per layer, the null block included.
  int32_t num_kv_blocks = 0;
  int32_t block_size = 16;
};

class LlamaModel {
 public:
  // Copies `weights` to the device and allocates the KV cache and the activation arena.
  static absl::StatusOr<std::unique_ptr<LlamaModel>> Create(const ModelConfig& config,
                                                            const ModelWeights& weights,
                                                            const ModelLimits& limits,
                                                            Backend* backend);

  LlamaModel(const LlamaModel&) = delete;
  LlamaModel& operator=(const LlamaModel&) = delete;

  // Runs one step and writes the logits of input.logits_rows to `logits` ([rows, vocab], host).
  // InvalidArgument when the input exceeds the limits (never a crash).
  [[nodiscard]] absl::Status Forward(const ForwardInput& input, std::vector<float>* logits);

  [[nodiscard]] const ModelConfig& config() const { return config_; }
  [[nodiscard]] const ModelLimits& limits() const { return limits_; }
  [[nodiscard]] int32_t max_blocks_per_seq() const { return max_blocks_per_seq_; }

 private:
  struct DeviceLayer {
    const float* input_norm = nullptr;    // [hidden]
    const float* q_proj = nullptr;        // [heads * head_dim, hidden]
    const float* k_proj = nullptr;        // [kv_heads * head_dim, hidden]
    const float* v_proj = nullptr;        // [kv_heads * head_dim, hidden]
    const float* q_bias = nullptr;        // [heads * head_dim] or null
    const float* k_bias = nullptr;        // [kv_heads * head_dim] or null
    const float* v_bias = nullptr;        // [kv_heads * head_dim] or null
    const float* o_proj = nullptr;        // [hidden, heads * head_dim]
    const float* o_bias = nullptr;        // [hidden] or null
    const float* post_norm = nullptr;     // [hidden]
    const float* gate_up = nullptr;       // [2 * intermediate, hidden]: gate rows, then up rows
    const float* gate_up_bias = nullptr;  // [2 * intermediate] or null
    const float* down_proj = nullptr;     // [hidden, intermediate]
    const float* down_bias = nullptr;     // [hidden] or null
    KvCacheLayer kv;
  };

  // The activation arena and per-step metadata, sized by ModelLimits.
  struct Arena {
    int32_t* token_ids = nullptr;     // [T]
    int64_t* positions = nullptr;     // [T]
    int64_t* slot_mapping = nullptr;  // [T]
    int32_t* query_start = nullptr;   // [S + 1]
    int32_t* context_lens = nullptr;  // [S]
    int32_t* block_tables = nullptr;  // [S, max_blocks_per_seq]
    int32_t* logits_rows = nullptr;   // [S]
    float* residual = nullptr;        // [T, hidden]
    float* hidden = nullptr;          // [T, hidden]
    float* q = nullptr;               // [T, heads * head_dim]
    float* k = nullptr;               // [T, kv_heads * head_dim]
    float* v = nullptr;               // [T, kv_heads * head_dim]
    float* attn = nullptr;            // [T, heads * head_dim]
    float* proj = nullptr;            // [T, hidden]: attention-out / MLP-down result
    float* gate_up = nullptr;         // [T, 2 * intermediate]
    float* act = nullptr;             // [T, intermediate]
    float* last_hidden = nullptr;     // [S, hidden]
    float* logits = nullptr;          // [S, vocab]
  };

  LlamaModel(const ModelConfig& config, const ModelLimits& limits, Backend* backend);

  absl::Status Upload(const ModelWeights& weights);
  absl::Status AllocateArena();
  absl::StatusOr<float*> AllocateFloats(int64_t count, const std::string& what);
  absl::StatusOr<const float*> UploadTensor(const std::vector<float>& host,
                                            const std::string& what);
  absl::Status CopyInput(const ForwardInput& input);
  absl::Status Layer(const DeviceLayer& layer, int64_t n, const AttentionBatch& batch);

  const ModelConfig config_;
  const ModelLimits limits_;
  Backend* const backend_;
  const int32_t max_blocks_per_seq_;
  const float* embed_tokens_ = nullptr;  // [vocab, hidden]
  const float* final_norm_ = nullptr;    // [hidden]
  const float* lm_head_ = nullptr;       // [vocab, hidden] (the embedding when tied)
  const float* inv_freq_ = nullptr;      // [head_dim / 2]
  std::vector<DeviceLayer> layers_;
  Arena arena_;
};

}  // namespace headroom::worker
