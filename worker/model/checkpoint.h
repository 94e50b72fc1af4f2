// Model weights on the host in float32: loaded from a Hugging Face checkpoint directory, or seeded
// random ones for `dummy:<preset>`.
//
// LoadWeights reads `model.safetensors`, or the shards named by `model.safetensors.index.json`
// (its weight_map: tensor name -> shard file), converts F32/F16/BF16 to float32 and checks every
// shape against the ModelConfig. Phi-3's fused qkv_proj and gate_up_proj (GLM's gate_up_proj) are
// read as their parts (LayerWeights' q/k/v_proj, gate/up_proj), each rank reading only its rows
// of each part. Tensors
// the model does not use (rotary_emb.inv_freq, lm_head.weight of a tied model) are ignored. Errors:
//   NotFoundError         the directory, or both model.safetensors and the index, or a shard file
//                         the index names, does not exist;
//   InvalidArgumentError  malformed safetensors or index.json, a tensor missing (naming the tensor
//                         and the file(s) searched), a wrong shape (expected vs actual), an
//                         unsupported dtype (naming tensor and dtype), a weight_map entry pointing
//                         at a shard that lacks the tensor, or a config whose dims are not
//                         positive.
//
// Layout follows the Hugging Face modules (and nn.Linear): a projection weight is
// [out_features, in_features], row-major, so y = x W^T (+ b).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/model/model_config.h"
#include "worker/model/shard_weights.h"

namespace headroom::worker {

// A dense row-major float32 tensor in host memory. Empty (no shape, no data) means "absent".
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // product(shape) values.

  [[nodiscard]] bool empty() const { return shape.empty() && data.empty(); }
  [[nodiscard]] int64_t num_elements() const { return static_cast<int64_t>(data.size()); }
};

// One expert of a mixture-of-experts layer (Mixtral's w1 / w3 / w2).
struct ExpertWeights {
  HostTensor gate_proj;  // [I, H]
  HostTensor up_proj;    // [I, H]
  HostTensor down_proj;  // [H, I]
};

// One decoder layer. Shapes with H = hidden_size, Q = num_attention_heads * head_dim,
// KV = num_key_value_heads * head_dim, I = the dense MLP's width (DenseMlpWidth: intermediate_size,
// or dense_intermediate_size for a mixture of experts' dense layers).
struct LayerWeights {
  HostTensor input_layernorm;  // [H]  RMSNorm weight before attention; empty without pre norms.
  HostTensor q_proj;           // [Q, H]
  HostTensor k_proj;           // [KV, H]
  HostTensor v_proj;           // [KV, H]
  HostTensor o_proj;           // [H, Q]
  HostTensor q_proj_bias;      // [Q]   only when config.qkv_bias, else empty.
  HostTensor k_proj_bias;      // [KV]  only when config.qkv_bias, else empty.
  HostTensor v_proj_bias;      // [KV]  only when config.qkv_bias, else empty.
  HostTensor q_norm;  // [head_dim] (or [Q] across heads) only when config.qk_norm, else empty.
  HostTensor k_norm;  // [head_dim] (or [KV] across heads) only when config.qk_norm, else empty.
  HostTensor o_proj_bias;  // [H]   only when config.o_proj_bias, else empty.
  // [H] RMSNorm weight before the MLP; with config.sandwich_norms (Gemma 2) the norm of the
  // attention output instead, and pre_feedforward_layernorm is the MLP's input norm.
  HostTensor post_attention_layernorm;
  HostTensor pre_feedforward_layernorm;   // [H] only with sandwich norms and pre norms.
  HostTensor post_feedforward_layernorm;  // [H] only when config.sandwich_norms: the MLP output's.
  HostTensor gate_proj;                   // [I, H]
  HostTensor up_proj;                     // [I, H]
  HostTensor down_proj;                   // [H, I]
  HostTensor gate_proj_bias;              // [I]   only when config.mlp_bias, else empty.
  HostTensor up_proj_bias;                // [I]   only when config.mlp_bias, else empty.
  HostTensor down_proj_bias;              // [H]   only when config.mlp_bias, else empty.
  // A mixture of experts (config.num_experts > 0) in place of gate/up/down_proj: the router and
  // each expert's MLP.
  // Layers of a mixture-of-experts model listed in config.dense_mlp_layers (GLM-4.5's first ones)
  // have the dense MLP above (of config.dense_intermediate_size) instead, and these empty.
  HostTensor moe_router;               // [num_experts, H]
  HostTensor moe_correction_bias;      // [num_experts] only with config.moe_correction_bias.
  std::vector<ExpertWeights> experts;  // num_experts entries
  // A shared expert beside them (config.shared_expert_intermediate_size S > 0: Qwen2-MoE's
  // mlp.shared_expert, GLM-4.5's and dots.llm1's mlp.shared_experts), and Qwen2-MoE's gate, whose
  // sigmoid scales the shared expert's output (config.shared_expert_gated); else empty.
  HostTensor shared_gate_proj;    // [S, H]
  HostTensor shared_up_proj;      // [S, H]
  HostTensor shared_down_proj;    // [H, S]
  HostTensor shared_expert_gate;  // [1, H]
};

struct ModelWeights {
  HostTensor embed_tokens;           // [vocab, H]
  std::vector<LayerWeights> layers;  // num_hidden_layers entries.
  HostTensor norm;                   // [H]  final RMSNorm weight.
  HostTensor lm_head;                // [vocab, H]; empty when config.tie_word_embeddings.
  // A classifier's head (config.classifier; "score.weight"), [num_labels, H]; else empty. Every
  // rank holds all of it; the model never uploads it (the engine applies it on the host).
  HostTensor score;
  // How the checkpoint names its experts: Mixtral's block_sparse_moe.experts.E.w1, Qwen3-MoE's
  // mlp.experts.E.gate_proj, or Granite-MoE's stacked block_sparse_moe.input_linear [E, 2I, H]
  // (gate rows, then up rows, per expert) and output_linear [E, H, I], whose parts ListWeights
  // names "...input_linear.weight[E].gate" / "[E].up" / "output_linear.weight[E]". DeepSeek-V3's
  // (kDeepseek: GLM-4.5, dots.llm1) are Qwen's, with mlp.gate.e_score_correction_bias beside the
  // router and the shared experts under mlp.shared_experts.
  enum class ExpertLayout : uint8_t { kMixtral, kQwen, kStacked, kDeepseek };
  ExpertLayout expert_layout = ExpertLayout::kQwen;
  // How the checkpoint names the sandwich norms (config.sandwich_norms): Gemma's
  // post_attention_layernorm (attention output), pre_feedforward_layernorm (MLP input) and
  // post_feedforward_layernorm (MLP output), or GLM-4's post_self_attn_layernorm,
  // post_attention_layernorm and post_mlp_layernorm for the same three (Glm4ForCausalLM).
  enum class NormNames : uint8_t { kGemma, kGlm4 };
  NormNames norm_names = NormNames::kGemma;

  // The LM head to multiply with: lm_head, or embed_tokens when the embeddings are tied.
  [[nodiscard]] const HostTensor& output_embedding() const {
    return lm_head.empty() ? embed_tokens : lm_head;
  }
};

// A weight with its Hugging Face tensor name, e.g. "model.layers.0.self_attn.q_proj.weight".
struct NamedWeight {
  std::string name;
  const HostTensor* tensor = nullptr;
};

// Every tensor `config` has, in checkpoint order (embed, layers in order, norm, lm_head, score),
// with the shape it must have. Biases appear only when the config has them; lm_head only when
// untied; a fused tensor (Phi-3's qkv_proj, gate_up_proj) once, with its fused shape.
struct WeightSpec {
  std::string name;            // Hugging Face tensor name.
  std::vector<int64_t> shape;  // Expected shape.
};
[[nodiscard]] absl::StatusOr<std::vector<WeightSpec>> ExpectedWeights(const ModelConfig& config);

// The non-empty tensors of `weights` with their Hugging Face names, in ExpectedWeights order.
// The pointers point into `weights`. The parts of a fused tensor are listed as the unfused
// checkpoints name them (q_proj, k_proj, v_proj, gate_proj, up_proj).
[[nodiscard]] std::vector<NamedWeight> ListWeights(const ModelWeights& weights);

// Loads the checkpoint in directory `dir` for `config` (normally LoadModelConfig(dir)): the whole
// model, or with `shard` only that rank's part of each tensor (shard_weights.h), read straight
// from the memory-mapped files, so a rank's host memory holds its shard and never the whole
// model. Every rank still checks every tensor's presence, shape and dtype.
[[nodiscard]] absl::StatusOr<ModelWeights> LoadWeights(const ModelConfig& config,
                                                       std::string_view dir, ShardSpec shard = {});

// Seeded random weights for `dummy:<preset>` demos and benchmarks: projections and embeddings
// drawn from a bell-shaped distribution with mean 0 and standard deviation 0.02 (Hugging Face's
// init; the sum of four uniforms, bounded at +-0.0693), norms 1 (as the model reads them: 0 where
// the config stores norm weights as offsets from 1), biases 0. The values depend only
// on (seed, tensor name, element index), computed with integer hashing and one rounding, so they
// are identical across runs, compilers and machines, and any slice of a tensor can be reproduced
// on its own: `shard` generates only that rank's part, the same values as the slice of the whole.
// Needs 4 bytes of host memory per parameter held; refused when that cannot fit.
[[nodiscard]] absl::StatusOr<ModelWeights> DummyWeights(const ModelConfig& config, uint64_t seed,
                                                        ShardSpec shard = {});

// Where a worker's weights come from (vLLM's --load-format).
enum class LoadFormat {
  kAuto,         // dummy:<preset> -> DummyWeights; a directory -> its safetensors
  kSafetensors,  // the directory's safetensors (refused for dummy:<preset>)
  kDummy,        // seeded random weights with the model's real shapes (its config.json)
};

// Parses "auto", "safetensors" or "dummy"; InvalidArgument naming the value and the choices.
[[nodiscard]] absl::StatusOr<LoadFormat> ParseLoadFormat(std::string_view name);

// `shard`'s weights of `model` (a directory or dummy:<preset>, whose config is `config`) in
// `format`: DummyWeights(config, seed, shard) or LoadWeights(config, model, shard).
[[nodiscard]] absl::StatusOr<ModelWeights> LoadModelWeights(const ModelConfig& config,
                                                            std::string_view model,
                                                            LoadFormat format, uint64_t seed,
                                                            ShardSpec shard = {});

}  // namespace headroom::worker
