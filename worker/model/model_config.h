// ModelConfig: the shape of a decoder-only transformer, parsed from a Hugging Face config.json
// (SupportedArchitectures(): Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, Gemma, Gemma 2,
// Gemma 3, Phi-3, Granite, Granite-MoE, SmolLM3, GLM, GLM-4, GLM-4.5 and more) or taken from a
// built-in preset
// (`dummy:<preset>`, the real shapes of published checkpoints, for plans, demos and benchmarks).
//
// Errors name the path and the field: NotFoundError for a missing directory or config.json,
// InvalidArgumentError for malformed JSON (with the parser's position), a missing or ill-typed
// field, a non-positive dimension, an unsupported architecture/activation/rope scaling, or an
// unknown preset (the supported values are listed).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kvcache/layer_groups.h"
#include "worker/model/classifier.h"
#include "worker/model/dtype.h"

namespace headroom::worker {

// Rope scaling of the rotary frequencies (Gemma 3's sliding layers are never scaled):
//   kLlama3 (`"rope_type": "llama3"`, Llama-3.1): frequencies below a band are divided by
//     `factor`, above it kept, in between interpolated;
//   kLinear (`"rope_type": "linear"`, Gemma 3 4B+, position-interpolation fine-tunes): every
//     frequency divided by `factor`; the other fields are unused. The context becomes
//     max_position_embeddings x factor but for Gemma 3 (MaxContextLength).
//   kYarn (`"rope_type": "yarn"`, Qwen2.5 / Qwen3 beyond 32k): YaRN's blend of the unscaled and
//     the divided frequencies over a ramp set by beta_fast / beta_slow (kernels/cpu/rotary.h),
//     with cos and sin multiplied by attention_factor; the model's context becomes
//     original_max_position_embeddings x factor (MaxContextLength).
enum class RopeScalingType : uint8_t { kLlama3, kLinear, kYarn };
struct RopeScaling {
  RopeScalingType type = RopeScalingType::kLlama3;
  double factor = 1.0;            // Divisor for low frequencies (8.0 for Llama-3.1).
  double low_freq_factor = 1.0;   // Band edge: wavelengths above orig/low scale fully.
  double high_freq_factor = 1.0;  // Band edge: wavelengths below orig/high untouched.
  int64_t original_max_position_embeddings = 0;  // Context the model was pretrained at (8192).
  // kYarn only: the ramp's rotation counts (transformers' defaults 32 and 1), and the factor on
  // cos and sin (rope_scaling's attention_factor, else YarnAttentionFactor(factor)).
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double attention_factor = 1.0;
};

// YaRN's default attention factor, as transformers and vLLM compute it: 0.1 ln(factor) + 1, and 1
// for a factor of at most 1 (1.1386 for Qwen's factor 4).
[[nodiscard]] inline double YarnAttentionFactor(double factor) {
  return factor <= 1.0 ? 1.0 : 0.1 * std::log(factor) + 1.0;
}

// Phi-3's LongRoPE (`"type": "longrope"`, formerly "su"): the rotary frequencies are divided per
// dimension by one factor list within the pretrained context and by another beyond it, and cos
// and sin are multiplied by a constant attention factor.
struct LongRope {
  std::vector<double> short_factor;  // [rotary_dim / 2], for contexts up to the original length.
  std::vector<double> long_factor;   // [rotary_dim / 2], beyond it.
  int64_t original_max_position_embeddings = 0;  // Context the model was pretrained at (4096).
  // rope_scaling's attention_factor, or LongRopeAttentionFactor's default.
  double attention_factor = 1.0;
};

// Phi3Config's default LongRoPE attention factor: sqrt(1 + ln(max_position / original) /
// ln(original)), 1 when max_position_embeddings does not exceed the original (1.19 for 131072
// over 4096).
[[nodiscard]] inline double LongRopeAttentionFactor(int64_t max_position_embeddings,
                                                    int64_t original_max_position_embeddings) {
  const double scale = static_cast<double>(max_position_embeddings) /
                       static_cast<double>(original_max_position_embeddings);
  if (scale <= 1.0) return 1.0;
  return std::sqrt(1.0 + std::log(scale) /
                             std::log(static_cast<double>(original_max_position_embeddings)));
}

// The gate activation of the MLP: out = act(gate) * up.
enum class Activation : uint8_t {
  kSilu,      // "silu" (Llama, Mistral, Qwen)
  kGeluTanh,  // "gelu_pytorch_tanh" / "gelu_new": GELU's tanh approximation (Gemma 2)
};

struct ModelConfig {
  std::string source;        // What was loaded: a directory path or "dummy:<preset>".
  std::string architecture;  // architectures[0], e.g. "LlamaForCausalLM".
  int64_t vocab_size = 0;    // Rows of the embedding and LM head.
  int64_t hidden_size = 0;   // Residual stream width.
  // MLP width (gate/up output, down input); of each expert in a mixture-of-experts model (Mixtral's
  // intermediate_size, Qwen3-MoE's moe_intermediate_size).
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;    // Decoder layers.
  int64_t num_attention_heads = 0;  // Query heads.
  int64_t num_key_value_heads = 0;  // KV heads (GQA); equals num_attention_heads for MHA.
  int64_t head_dim = 0;             // Per-head width; hidden_size / num_attention_heads if absent.
  // Leading values of each q/k head that rotary turns, the rest passing through:
  // int(head_dim x partial_rotary_factor) (Phi-4-mini: 0.75 of 128 = 96), even; 0: the whole
  // head (read it through RotaryDim).
  int64_t rotary_dim = 0;
  int64_t max_position_embeddings = 0;  // Longest context the checkpoint supports.
  bool tie_word_embeddings = false;     // LM head shares the embedding matrix.
  // Matryoshka embeddings (vLLM's is_matryoshka / matryoshka_dimensions in config.json): an
  // embedding request may keep only the first `dimensions` values of its vector. With a list,
  // only its sizes; with is_matryoshka alone, any size in [1, hidden_size].
  bool is_matryoshka = false;
  std::vector<int64_t> matryoshka_dimensions;
  DType torch_dtype = DType::kFloat32;      // Checkpoint dtype; float32 when config.json omits it.
  double rms_norm_eps = 1e-6;               // RMSNorm epsilon.
  double rope_theta = 10000.0;              // Rotary base.
  std::optional<RopeScaling> rope_scaling;  // Set for "llama3", "linear" and "yarn" scaling.
  std::optional<LongRope> long_rope;        // Set only for "longrope" scaling (Phi-3.5).
  bool qkv_bias = false;     // q/k/v projections have a bias (Qwen2; Llama's attention_bias).
  bool o_proj_bias = false;  // Output projection has a bias (Llama's attention_bias only).
  bool mlp_bias = false;     // gate/up/down have biases (Llama's mlp_bias).
  // q and k are RMS-normalized per head (weights [head_dim], q_norm / k_norm) after their
  // projections and before rotary (Qwen3).
  bool qk_norm = false;
  // With qk_norm: the norms span the whole q and k projections, every head at once (weights
  // [heads x head_dim] and [kv_heads x head_dim]: OLMo 2), not each head.
  bool qk_norm_across_heads = false;
  // Mixture of experts (Mixtral, Qwen3-MoE, Qwen2-MoE, GLM-4.5): every layer's MLP (but the
  // dense_mlp_layers) is num_experts SwiGLU experts and a router; each token takes the top
  // num_experts_per_tok, weighted by the router's softmax (renormalized over those when
  // norm_topk_prob). 0 experts: a dense MLP.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  bool norm_topk_prob = true;
  // GLM-4.5's routing (kernels/cpu/moe.h): each logit's sigmoid in place of the softmax; a
  // per-expert correction bias (the checkpoint's mlp.gate.e_score_correction_bias) added to the
  // scores to choose experts, not to weight them; the choice limited to the experts of the
  // moe_topk_groups best of moe_num_groups groups (n_group, topk_group); and the kept weights
  // multiplied by routed_scaling_factor.
  bool moe_sigmoid_scores = false;
  bool moe_correction_bias = false;
  int64_t moe_num_groups = 1;
  int64_t moe_topk_groups = 1;
  double routed_scaling_factor = 1.0;
  // A shared expert: one more SwiGLU MLP of this width that every token runs, added to the routed
  // experts' output; 0: none. Qwen2-MoE's is scaled by sigmoid(shared_expert_gate . x)
  // (shared_expert_gated); GLM-4.5's n_shared_experts x moe_intermediate_size is not.
  int64_t shared_expert_intermediate_size = 0;
  bool shared_expert_gated = true;
  // Layers of a mixture-of-experts model whose MLP is one dense SwiGLU MLP of
  // dense_intermediate_size in place of the experts (GLM-4.5's first first_k_dense_replace
  // layers); empty: none. Read through LayerHasExperts.
  std::vector<bool> dense_mlp_layers;
  int64_t dense_intermediate_size = 0;
  // Sliding-window attention width when the checkpoint uses one (Mistral-7B-v0.1: 4096; Gemma 2:
  // 4096 on its even layers). A query attends its own position and the window - 1 before it. The
  // memory plan does not exploit it: KV is provisioned for the full context.
  std::optional<int64_t> sliding_window;
  // Which layers use the window: 0, every layer (Mistral); N >= 2, layer i when (i + 1) % N != 0
  // (Gemma 2's 2: the even layers; Gemma 3's 6: five of every six). A config.json's layer_types
  // list (newer transformers) fills sliding_layers instead, which then decides.
  int64_t sliding_window_pattern = 0;
  std::vector<bool> sliding_layers;
  // Layers that attend without rotary (NoPE: SmolLM3's no_rope_layers zeros, EXAONE 4.0's global
  // layers); empty: none.
  std::vector<bool> nope_layers;
  // Rotary base of the sliding-window layers, which then rotate unscaled (no rope_scaling, no
  // attention factor on cos and sin): Gemma 3's rope_local_base_freq (10000 against 1e6); OLMo
  // 3's rope_theta when its full-attention layers scale with YaRN. 0: every layer rotates alike.
  double rope_local_theta = 0;

  Activation hidden_activation = Activation::kSilu;
  // Gemma: each RMSNorm multiplies by (1 + weight); the checkpoint stores the offset from 1.
  bool norm_weight_offset = false;
  // The embedding rows are multiplied by this on the way in (not the LM head): Gemma's
  // sqrt(hidden_size), Granite's embedding_multiplier.
  double embedding_multiplier = 1.0;
  // Gemma 2: the attention output and the MLP output are RMS-normalized too, before each is added
  // to the residual (post_attention_layernorm, post_feedforward_layernorm), and the MLP's input
  // norm is pre_feedforward_layernorm.
  bool sandwich_norms = false;
  // Each block's input is RMS-normalized (input_layernorm, and the MLP's input norm). False for
  // OLMo 2, which has only the sandwich's output norms: its blocks read the residual stream itself.
  bool pre_norms = true;
  // Attention scores are q . k * query_pre_attn_scalar^-0.5 (Gemma 2); 0: head_dim^-0.5.
  double query_pre_attn_scalar = 0;
  // Granite: the attention scores' scale itself (attention_multiplier); 0: as above.
  double attention_multiplier = 0;
  // Granite: the attention and MLP outputs are multiplied by this before each residual add.
  double residual_multiplier = 1.0;
  // Granite: the logits are divided by this.
  double logits_scaling = 1.0;
  // 0: none. Otherwise soft-capped, cap * tanh(x / cap): the attention scores (Gemma 2's
  // attn_logit_softcapping) and the final logits (final_logit_softcapping).
  double attn_logit_softcapping = 0;
  double final_logit_softcapping = 0;
  // The checkpoint stores q, k and v as one qkv_proj [q + 2 kv, hidden] (Phi-3 / Phi-4), and gate
  // and up as one gate_up_proj [2 intermediate, hidden] (Phi-3 / Phi-4, GLM); the loader reads
  // each part's rows.
  bool fused_qkv = false;
  bool fused_gate_up = false;
  // GLM: rotary turns the pairs (2i, 2i + 1) of each head's leading rotary_dim values (GPT-J's
  // interleaved layout) instead of (i, i + rotary_dim / 2). The model reorders q_proj's and
  // k_proj's rows (their biases, and LoRA B's rows) into the rotate-half order as it loads them
  // (rotary_layout.h), so the kernels know one layout; q . k is unchanged, since q and k are
  // reordered alike.
  bool interleaved_rotary = false;
  // Gemma3ForConditionalGeneration (Gemma 3 4B+): the settings came from config.json's
  // text_config and the checkpoint keeps the language model's tensors under a prefix
  // ("language_model.model.*", or "model.language_model.*" since transformers 4.52); the vision
  // tower is not loaded (text-only serving).
  bool language_model_of_multimodal = false;
  // A *ForSequenceClassification checkpoint (classifier.h): `architecture` is its decoder's
  // *ForCausalLM, tie_word_embeddings is set (it has no LM head; an embedding request's one
  // sampler pass reads the embedding matrix), and the engine answers classification requests
  // only.
  std::optional<Classifier> classifier;
};

// Whether layer `layer`'s MLP is the mixture of experts (not a dense MLP).
[[nodiscard]] inline bool LayerHasExperts(const ModelConfig& config, int64_t layer) {
  if (config.num_experts == 0) return false;
  const auto i = static_cast<size_t>(layer);
  return i >= config.dense_mlp_layers.size() || !config.dense_mlp_layers[i];
}
// The width of the dense layers' MLP: intermediate_size, or dense_intermediate_size in a
// mixture-of-experts model.
[[nodiscard]] inline int64_t DenseMlpWidth(const ModelConfig& config) {
  return config.num_experts > 0 ? config.dense_intermediate_size : config.intermediate_size;
}
// The layers of a mixture-of-experts model whose MLP is dense (0 without experts).
[[nodiscard]] int64_t NumDenseMlpLayers(const ModelConfig& config);

// The leading values of each q/k head that rotary turns (rotary_dim, or head_dim when 0).
[[nodiscard]] inline int64_t RotaryDim(const ModelConfig& config) {
  return config.rotary_dim > 0 ? config.rotary_dim : config.head_dim;
}
// The longest context the model supports, as vLLM derives it: max_position_embeddings; with YaRN
// rope scaling original_max_position_embeddings x factor (Qwen2.5-7B and Qwen3-8B with their
// model cards' factor 4 over 32768: 131072); with linear scaling max_position_embeddings x factor
// (Vicuna-7B-v1.5-16k: 4096 x 4), except for Gemma 3, whose 131072 already counts its factor 8.
[[nodiscard]] int64_t MaxContextLength(const ModelConfig& config);
// Where MaxContextLength comes from when it is not max_position_embeddings, for messages
// ("rope_scaling yarn: original_max_position_embeddings 32768 x factor 4", "rope_scaling linear:
// max_position_embeddings 4096 x factor 4"); empty otherwise.
[[nodiscard]] std::string MaxContextSource(const ModelConfig& config);
// The sliding window of decoder layer `layer` (0: the layer attends the whole context).
[[nodiscard]] int64_t LayerSlidingWindow(const ModelConfig& config, int64_t layer);
// Whether decoder layer `layer` is of the sliding-window kind (layer_types, or the pattern),
// whether or not the config sets a window: such layers rotate with rope_local_theta when it is
// set (OLMo 3 with a null sliding_window still rotates them unscaled).
[[nodiscard]] bool LayerIsSlidingKind(const ModelConfig& config, int64_t layer);
// The window behind which the KV cache may release blocks: the largest layer window when every
// layer has one (Mistral-7B-v0.1, Phi-3-mini), else 0 (a layer reads the whole context).
[[nodiscard]] int64_t KvCacheSlidingWindow(const ModelConfig& config);
// How the KV cache groups the layers by window (kvcache/layer_groups.h): one group of every layer
// when they all attend the same window (or none); Gemma 2/3: full-attention and windowed groups.
[[nodiscard]] kvcache::LayerGroups KvCacheLayerGroups(const ModelConfig& config);

// The dtype a GPU worker stores weights and computes in for `--dtype flag_value`, as vLLM resolves
// it on a GPU of compute capability 8.0 or later (A100, H100, H200): "auto" keeps a 16-bit
// checkpoint's torch_dtype and downcasts a float32 one to bfloat16, or to float16 for a
// classifier (vLLM's pooling models prefer float16). Gemma 2, Gemma 3 and GLM-4 refuse float16
// (vLLM: numerical instability): asked for it, InvalidArgument naming the alternatives; a float16
// checkpoint of theirs resolves to bfloat16. The CPU backend computes in float32 whatever this
// says.
[[nodiscard]] absl::StatusOr<DType> ResolveModelDType(const ModelConfig& config,
                                                      std::string_view flag_value);

// Architectures LoadModelConfig accepts, in the order error messages list them.
[[nodiscard]] const std::vector<std::string>& SupportedArchitectures();

// Parses config.json text. `path` is only used in error messages.
[[nodiscard]] absl::StatusOr<ModelConfig> ParseModelConfigJson(std::string_view json_text,
                                                               std::string_view path);

// Loads `model`: "dummy:<preset>" or a Hugging Face model directory containing config.json.
// `hf_overrides` (vLLM's --hf-overrides), when not empty, is a JSON object whose keys replace
// config.json's before it is read (a sub-config such as text_config is overridden key by key);
// errors then name the file "with --hf-overrides". A preset has no config.json to override.
[[nodiscard]] absl::StatusOr<ModelConfig> LoadModelConfig(std::string_view model,
                                                          std::string_view hf_overrides = {});

// Preset names accepted after "dummy:", sorted.
[[nodiscard]] std::vector<std::string> PresetNames();

// The preset's config (source "dummy:<name>"); NotFoundError listing the presets otherwise.
[[nodiscard]] absl::StatusOr<ModelConfig> PresetModelConfig(std::string_view name);

}  // namespace headroom::worker
