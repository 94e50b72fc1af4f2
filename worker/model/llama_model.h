// LlamaModel: the decoder-only forward pass of the Llama family (Llama 2/3/3.1, Mistral, Qwen2,
// Qwen3, Gemma 2, Phi-3 / Phi-4, and the mixtures of experts Mixtral and Qwen3-MoE), written once
// against the Backend interface.
//
//   x = embed(tokens)
//   for each layer:  h = norm1(x);  x += o_proj(attention(rope(q(h)), rope(k(h)), v(h)))
//                    h = norm2(x);  x += down(silu(gate(h)) * up(h))
//   logits = lm_head(norm(x))      only for the rows that sample
// Qwen3 normalizes each head of q(h) and k(h) (RMSNorm over head_dim, q_norm / k_norm) before
// rope. Mixtral and Qwen3-MoE run each token's MLP through its top-k experts (Backend::MoeMlp).
// Gemma 2 scales the embeddings by sqrt(hidden), normalizes the attention and MLP outputs before
// adding them (x += norm(attention(...)), x += norm(mlp(...))), uses gelu_tanh for silu, (1 + w)
// norm weights, query_pre_attn_scalar^-0.5 as the score scale, soft-capped scores and logits, and
// a sliding window on its even layers. Gemma 3 adds Qwen3's per-head q/k norms (with (1 + w)) and
// gives its sliding layers a rotary base of their own (ModelConfig says which model does what).
//
// Every device buffer (weights, KV cache, activation arena sized for max_num_batched_tokens and
// max_num_seqs) is allocated in Create(); Forward() never allocates device memory (the CPU
// backend's mixture-of-experts kernel keeps host scratch of its own).
//
// LoRA adapters (vLLM's multi-LoRA serving, worker/model/lora_adapter.h): every adapter the model
// is created with has a slot, uploaded in Create() stacked per projection (kernels/lora_view.h),
// beside any slots reserved for adapters loaded later (ModelLimits::lora_slots, LoadLoraSlot);
// each sequence of a step names its slot (ForwardInput::lora_slots) and its projections add that
// adapter's update, so one step mixes the base model and any adapters.
//
// Tensor parallelism (docs/tensor_parallel.md): with a communicator of N ranks the model holds
// the rank's shard (LoadWeights with a ShardSpec) and its share of the KV heads. The embedding is
// vocab-parallel (an id outside the rank's slice reads a zero row, then an all-reduce sums the
// slices), the attention-out and MLP-down results are all-reduced, and the LM head's slices are
// all-gathered, so every rank returns the full logits. Every rank runs the same Forward calls in
// the same order.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kvcache/tensor_parallel.h"
#include "worker/backend/backend.h"
#include "worker/comm/communicator.h"
#include "worker/model/checkpoint.h"
#include "worker/model/forward_input.h"
#include "worker/model/lora_adapter.h"
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
  // LoRA slots reserved for adapters loaded after Create (LoadLoraSlot), at rank lora_rank on
  // every target; the adapters given to Create take the first ones. 0: just the adapters given,
  // padded to the largest rank, on the targets they change.
  int32_t lora_slots = 0;
  int64_t lora_rank = 0;
};

class LlamaModel {
 public:
  // Copies `weights` (this rank's shard: LoadWeights with a ShardSpec; the whole model without
  // `comm`) to the device and allocates the KV cache and the activation arena. `comm` (null: a
  // group of one) must outlive the model. `adapters` (this rank's shards, LoadLoraAdapter) get
  // slots 0, 1, ... in their order.
  static absl::StatusOr<std::unique_ptr<LlamaModel>> Create(
      const ModelConfig& config, const ModelWeights& weights, const ModelLimits& limits,
      Backend* backend, Communicator* comm = nullptr, absl::Span<const LoraAdapter> adapters = {});

  LlamaModel(const LlamaModel&) = delete;
  LlamaModel& operator=(const LlamaModel&) = delete;

  // Receives the logits of input.prompt_logits_rows [first, first + count), [count, vocab] on
  // the host; an error fails the step.
  using PromptLogitsSink =
      std::function<absl::Status(size_t first, int64_t count, const float* logits)>;
  // Receives the final-normed hidden states of input.pooled_rows [first, first + count),
  // [count, hidden] on the host; an error fails the step.
  using PooledRowsSink =
      std::function<absl::Status(size_t first, int64_t count, const float* hidden)>;

  // Runs one step and writes the logits of input.logits_rows to `logits` ([rows, vocab], host).
  // Then the logits of input.prompt_logits_rows go to `prompt_sink` in slices of at most
  // max_num_seqs rows, through the same buffers, so prompt logprobs need no memory of their own.
  // Every rank runs the slices (the LM head is collective); followers pass no sink.
  // With `hidden_states`, the final-normed hidden states of input.logits_rows (what the LM head
  // reads, and what last-token pooling embeds) also go there, [rows, hidden] on the host; every
  // rank holds them whole, so only the leader asks.
  // The final-normed hidden states of input.pooled_rows go to `pooled_sink` the same way,
  // [count, hidden] per slice on the host (every rank holds them whole; the leader asks).
  // InvalidArgument when the input exceeds the limits (never a crash).
  [[nodiscard]] absl::Status Forward(const ForwardInput& input, std::vector<float>* logits,
                                     const PromptLogitsSink& prompt_sink = nullptr,
                                     std::vector<float>* hidden_states = nullptr,
                                     const PooledRowsSink& pooled_sink = nullptr);

  [[nodiscard]] const ModelConfig& config() const { return config_; }
  [[nodiscard]] const ModelLimits& limits() const { return limits_; }
  [[nodiscard]] int32_t max_blocks_per_seq() const { return max_blocks_per_seq_; }
  // LoRA adapter slots: ForwardInput::lora_slots entries lie in [-1, num_lora_slots()).
  [[nodiscard]] int32_t num_lora_slots() const { return num_lora_slots_; }
  // Writes `adapter` (this rank's shard) into `slot`, over whatever it held, into the buffers
  // Create allocated: no device allocation. Not while a step runs. InvalidArgument for a slot out
  // of range, a rank above the slots' or a target the slots do not hold.
  [[nodiscard]] absl::Status LoadLoraSlot(int32_t slot, const LoraAdapter& adapter);
  // The KV cache's layer groups (one block table each); the pool holds group_size layers' KV
  // tensors, each of limits().num_kv_blocks blocks.
  [[nodiscard]] const kvcache::LayerGroups& kv_groups() const { return kv_groups_; }

 private:
  struct DeviceLayer {
    const float* input_norm = nullptr;  // [hidden], or null: no input norm (OLMo 2)
    // Shapes per rank: heads, kv_heads and intermediate are the rank's shard (kvcache::ShardOf).
    const float* q_proj = nullptr;  // [heads * head_dim, hidden]
    const float* k_proj = nullptr;  // [kv_heads * head_dim, hidden]
    const float* v_proj = nullptr;  // [kv_heads * head_dim, hidden]
    const float* q_bias = nullptr;  // [heads * head_dim] or null
    const float* k_bias = nullptr;  // [kv_heads * head_dim] or null
    const float* v_bias = nullptr;  // [kv_heads * head_dim] or null
    // [head_dim] or null (Qwen3's per-head norms); [heads * head_dim] across heads (OLMo 2).
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;         // [head_dim] or null; [kv_heads * head_dim] across heads
    const float* o_proj = nullptr;         // [hidden, heads * head_dim]
    const float* o_bias = nullptr;         // [hidden] or null (rank 0 only)
    const float* post_norm = nullptr;      // [hidden]: the MLP's input norm (null: none, OLMo 2)
    const float* attn_out_norm = nullptr;  // [hidden] or null: the attention output's (Gemma 2)
    const float* mlp_out_norm = nullptr;   // [hidden] or null: the MLP output's (Gemma 2)
    const float* gate_up = nullptr;        // [2 * intermediate, hidden]: gate rows, then up rows
    const float* gate_up_bias = nullptr;   // [2 * intermediate] or null
    const float* down_proj = nullptr;      // [hidden, intermediate]
    const float* down_bias = nullptr;      // [hidden] or null (rank 0 only)
    // A mixture of experts in place of gate_up / down (moe.num_experts > 0): the router
    // [experts, hidden], each expert's gate_up [experts, 2 * intermediate, hidden] and down
    // [experts, hidden, intermediate].
    MoeExperts moe;
    KvCacheLayer kv;            // the pool tensor at this layer's slot in its group
    int32_t kv_group = 0;       // whose block tables and slot mapping address it
    AttentionParams attention;  // score scale, softcap and this layer's sliding window
    // [rotary_dim / 2]: the model's, or the sliding layers' own; null: no rotary (NoPE).
    const float* inv_freq = nullptr;
    // Multiplies cos and sin: the model's attention factor, 1 on the sliding layers' own rotary.
    float rotary_scale = 1.0f;
    // Every adapter slot's factors per projection (LoraTarget order); `a` null where no adapter
    // changes the projection in this layer.
    std::array<LoraWeights, kNumLoraTargets> lora{};
  };

  // The activation arena and per-step metadata, sized by ModelLimits.
  struct Arena {
    int32_t* token_ids = nullptr;     // [T]
    int64_t* positions = nullptr;     // [T]
    int64_t* slot_mapping = nullptr;  // [groups, T]
    int32_t* query_start = nullptr;   // [S + 1]
    int32_t* context_lens = nullptr;  // [S]
    int32_t* block_tables = nullptr;  // [groups, S, max_blocks_per_seq]
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
    float* logits = nullptr;          // [S, vocab_rows]: this rank's vocabulary slice
    float* gathered = nullptr;        // [tp, S, vocab_rows]: every rank's slice (tp > 1 only)
    // With LoRA adapters only: the step's adapter segments and the shrunk rows.
    int32_t* lora_starts = nullptr;  // [S + 1]
    int32_t* lora_slots = nullptr;   // [S]
    float* lora_scratch = nullptr;   // [T, lora rank]
    // With q/k norms across heads split over ranks (OLMo 2, tp > 1): each token's sums of squares
    // of q, then of k.
    float* norm_sums = nullptr;  // [2, T]
  };

  LlamaModel(const ModelConfig& config, const ModelLimits& limits, Backend* backend,
             Communicator* comm);

  absl::Status Upload(const ModelWeights& weights);
  absl::Status AllocateArena();
  // A mixture-of-experts layer's router and experts, fused for Backend::MoeMlp.
  absl::Status UploadExperts(const LayerWeights& lw, const std::string& prefix, MoeExperts& moe);
  // Every adapter's factors of every layer, stacked per projection into DeviceLayer::lora.
  absl::Status UploadLora(absl::Span<const LoraAdapter> adapters);
  // The step's adapter segments (ForwardInput::lora_slots) to the device.
  absl::Status CopyLoraSegments(const ForwardInput& input);
  // Adds the step's adapters' updates for projection `target` of `layer` onto out ([n, ld_out]).
  absl::Status AddLora(const DeviceLayer& layer, LoraTarget target, const float* x, int64_t n,
                       int64_t ld_out, float* out);
  absl::StatusOr<float*> AllocateFloats(int64_t count, const std::string& what);
  absl::StatusOr<const float*> UploadTensor(const std::vector<float>& host,
                                            const std::string& what);
  // An RMSNorm weight as the kernels multiply by it: 1 + w where the checkpoint stores offsets
  // from 1 (Gemma), w otherwise; times `factor`.
  absl::StatusOr<const float*> UploadNorm(const std::vector<float>& host, const std::string& what,
                                          double factor = 1.0);
  // `host` times `factor` (Granite's multipliers folded into weights).
  absl::StatusOr<const float*> UploadScaled(const std::vector<float>& host, double factor,
                                            const std::string& what);
  // Rows of q's or k's outputs (a projection's [rows, row_width], a bias's [rows]), reordered
  // into the rotate-half layout where the checkpoint rotates interleaved pairs (GLM;
  // rotary_layout.h).
  absl::StatusOr<const float*> UploadQueryKeyRows(const std::vector<float>& host, int64_t row_width,
                                                  const std::string& what);
  // The [n, hidden] result in arena_.proj RMS-normalized in place by `norm` (null: left as is).
  absl::Status NormalizeOutput(const float* norm, int64_t n);
  absl::Status CheckShard(const ModelWeights& weights) const;
  absl::Status CopyInput(const ForwardInput& input);
  // `in` is the block's input: norm1(x) in arena_.hidden, or x itself (arena_.residual) where the
  // model has no input norms (OLMo 2). `slot_mapping` and `batch` are those of the layer's KV
  // group.
  absl::Status Layer(const DeviceLayer& layer, const float* in, int64_t n,
                     const int64_t* slot_mapping, const AttentionBatch& batch);
  // residual += arena_.proj, then the next block's input: `norm`(residual) in arena_.hidden, or,
  // with no norm (OLMo 2), the residual stream itself.
  absl::StatusOr<const float*> AddResidual(const float* norm, int64_t n);
  // q_norm / k_norm of arena_.q and arena_.k in place: per head (Qwen3), or across every head
  // (OLMo 2), whose heads are spread over the ranks: their sums of squares are all-reduced.
  absl::Status NormalizeQueryKey(const DeviceLayer& layer, int64_t n);
  // Sums a [n, hidden] partial result over the ranks (nothing to do with one rank).
  absl::Status AllReduce(float* data, int64_t n);
  // The LM head over `rows` gathered rows, and the full [rows, vocab] logits on the host.
  absl::Status Logits(int64_t rows, std::vector<float>* logits);
  // For each slice of at most max_num_seqs of `rows` (rows of the step's final-normed hidden
  // states): gathers them into arena_.last_hidden, then calls `fn(first, count)`.
  absl::Status ForEachRowSlice(const std::vector<int32_t>& rows,
                               const std::function<absl::Status(size_t first, int64_t count)>& fn);

  const ModelConfig config_;
  const ModelLimits limits_;
  Backend* const backend_;
  SingleRankCommunicator single_rank_;
  Communicator* const comm_;  // single_rank_ without a group
  const int64_t tp_;
  const kvcache::TensorParallelShard shard_;
  const kvcache::ShardOffsets offsets_;
  const int32_t max_blocks_per_seq_;
  const kvcache::LayerGroups kv_groups_;
  // [vocab_rows + 1, hidden] with tp > 1: the rank's slice, then a zero row that ids of other
  // slices read; [vocab, hidden] otherwise.
  const float* embed_tokens_ = nullptr;
  const float* final_norm_ = nullptr;  // [hidden]
  const float* lm_head_ = nullptr;     // [vocab_rows, hidden] (the embedding when tied)
  // [rotary_dim / 2]: rope_theta's (every layer but Gemma 3's and OLMo 3's sliding ones).
  const float* inv_freq_ = nullptr;
  float embed_scale_ = 1.0f;  // ModelConfig::embedding_multiplier
  std::vector<DeviceLayer> layers_;
  Arena arena_;
  std::vector<int32_t> local_ids_;       // [T] host: token ids as rows of embed_tokens_ (tp > 1)
  std::vector<float> gathered_host_;     // [tp, S, vocab_rows] host (tp > 1)
  std::vector<AttentionBatch> batches_;  // per KV layer group, rebuilt each step
  std::vector<float> prompt_logits_;     // [<= S, vocab] host: one slice of prompt logits
  std::vector<float> pooled_hidden_;     // [<= S, hidden] host: one slice of pooled rows
  int32_t num_lora_slots_ = 0;
  int64_t lora_rank_ = 0;  // the largest adapter rank: every slot is padded to it
  // This step's segments (counts on the host, rows and slots in the arena); count 0 when no
  // sequence of the step has an adapter.
  LoraSegments lora_segments_{};
  std::vector<int32_t> lora_starts_host_;  // [<= S + 1]
  std::vector<int32_t> lora_slots_host_;   // [<= S]
};

}  // namespace headroom::worker
