// Built-in `dummy:<preset>` shapes. Each is the published config.json of the checkpoint named in
// its comment (same dims, dtype, rope and norm settings), so a plan for `dummy:llama-3-8b` is the
// plan for meta-llama/Meta-Llama-3-8B. `tiny` is headroom's own: a 2-layer Llama with a 256-entry
// byte-level vocabulary for CPU demos and tests; `small` (~125M parameters) is for CPU benchmarks.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "worker/model/model_config.h"

namespace headroom::worker {
namespace {

struct Preset {
  std::string_view name;
  ModelConfig config;
};

ModelConfig Llama(int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
                  int64_t intermediate, int64_t vocab, int64_t max_positions) {
  ModelConfig config;
  config.architecture = "LlamaForCausalLM";
  config.num_hidden_layers = layers;
  config.hidden_size = hidden;
  config.num_attention_heads = heads;
  config.num_key_value_heads = kv_heads;
  config.head_dim = hidden / heads;
  config.intermediate_size = intermediate;
  config.vocab_size = vocab;
  config.max_position_embeddings = max_positions;
  config.rms_norm_eps = 1e-5;
  config.torch_dtype = DType::kBFloat16;
  return config;
}

std::vector<Preset> MakePresets() {
  std::vector<Preset> presets;

  // headroom's CPU demo model: head_dim 16, GQA 2:1, tied embeddings, float32 for the CPU path.
  ModelConfig tiny = Llama(/*layers=*/2, /*hidden=*/64, /*heads=*/4, /*kv_heads=*/2,
                           /*intermediate=*/128, /*vocab=*/256, /*max_positions=*/2048);
  tiny.tie_word_embeddings = true;
  tiny.torch_dtype = DType::kFloat32;
  presets.push_back({"tiny", tiny});

  // headroom's own `small`: a 12-layer GQA Llama of ~125M parameters (0.5 GB in fp32), the
  // largest shape that benchmarks comfortably on a CPU worker.
  ModelConfig small = Llama(/*layers=*/12, /*hidden=*/768, /*heads=*/12, /*kv_heads=*/4,
                            /*intermediate=*/2048, /*vocab=*/32000, /*max_positions=*/4096);
  small.torch_dtype = DType::kFloat32;
  presets.push_back({"small", small});

  // meta-llama/Llama-2-7b-hf: MHA (32 kv heads), float16 checkpoint.
  ModelConfig llama2_7b = Llama(32, 4096, 32, 32, 11008, 32000, 4096);
  llama2_7b.torch_dtype = DType::kFloat16;
  presets.push_back({"llama-2-7b", llama2_7b});

  // meta-llama/Meta-Llama-3-8B.
  ModelConfig llama3_8b = Llama(32, 4096, 32, 8, 14336, 128256, 8192);
  llama3_8b.rope_theta = 500000.0;
  presets.push_back({"llama-3-8b", llama3_8b});

  // meta-llama/Llama-3.1-8B: Llama-3-8B dims, 128k context through "llama3" rope scaling.
  ModelConfig llama31_8b = llama3_8b;
  llama31_8b.max_position_embeddings = 131072;
  llama31_8b.rope_scaling = RopeScaling{.factor = 8.0,
                                        .low_freq_factor = 1.0,
                                        .high_freq_factor = 4.0,
                                        .original_max_position_embeddings = 8192};
  presets.push_back({"llama-3.1-8b", llama31_8b});

  // meta-llama/Meta-Llama-3-70B.
  ModelConfig llama3_70b = Llama(80, 8192, 64, 8, 28672, 128256, 8192);
  llama3_70b.rope_theta = 500000.0;
  presets.push_back({"llama-3-70b", llama3_70b});

  // mistralai/Mistral-7B-v0.1: 4096-token sliding window, 32k positions.
  ModelConfig mistral_7b = Llama(32, 4096, 32, 8, 14336, 32000, 32768);
  mistral_7b.architecture = "MistralForCausalLM";
  mistral_7b.sliding_window = 4096;
  presets.push_back({"mistral-7b", mistral_7b});

  // Qwen/Qwen2-7B (base): q/k/v bias, untied LM head, 131072 positions, rope_theta 1e6.
  ModelConfig qwen2_7b = Llama(28, 3584, 28, 4, 18944, 152064, 131072);
  qwen2_7b.architecture = "Qwen2ForCausalLM";
  qwen2_7b.qkv_bias = true;
  qwen2_7b.rms_norm_eps = 1e-6;
  qwen2_7b.rope_theta = 1000000.0;
  presets.push_back({"qwen2-7b", qwen2_7b});

  // Qwen/Qwen3-8B: per-head q/k RMSNorm, no biases, head_dim 128, untied LM head, 40960
  // positions, rope_theta 1e6.
  ModelConfig qwen3_8b = Llama(36, 4096, 32, 8, 12288, 151936, 40960);
  qwen3_8b.architecture = "Qwen3ForCausalLM";
  qwen3_8b.qk_norm = true;
  qwen3_8b.rms_norm_eps = 1e-6;
  qwen3_8b.rope_theta = 1000000.0;
  presets.push_back({"qwen3-8b", qwen3_8b});

  // mistralai/Mixtral-8x7B-v0.1: 8 experts of 14336, the top 2 per token; no sliding window.
  ModelConfig mixtral = Llama(32, 4096, 32, 8, 14336, 32000, 32768);
  mixtral.architecture = "MixtralForCausalLM";
  mixtral.num_experts = 8;
  mixtral.num_experts_per_tok = 2;
  mixtral.rope_theta = 1000000.0;
  presets.push_back({"mixtral-8x7b", mixtral});

  // Qwen/Qwen3-30B-A3B: 128 experts of 768, the top 8 (renormalized), per-head q/k norms,
  // head_dim 128 (not hidden / heads).
  ModelConfig qwen3_moe = Llama(48, 2048, 32, 4, 768, 151936, 40960);
  qwen3_moe.architecture = "Qwen3MoeForCausalLM";
  qwen3_moe.head_dim = 128;
  qwen3_moe.qk_norm = true;
  qwen3_moe.num_experts = 128;
  qwen3_moe.num_experts_per_tok = 8;
  qwen3_moe.norm_topk_prob = true;
  qwen3_moe.rms_norm_eps = 1e-6;
  qwen3_moe.rope_theta = 1000000.0;
  presets.push_back({"qwen3-30b-a3b", qwen3_moe});

  // Qwen/Qwen1.5-MoE-A2.7B-Chat: 60 experts of 1408, the top 4 (not renormalized), and a shared
  // expert of 5632 behind a sigmoid gate; q/k/v biases, 16 KV heads (MHA), 32768 positions.
  ModelConfig qwen2_moe = Llama(24, 2048, 16, 16, 1408, 151936, 32768);
  qwen2_moe.architecture = "Qwen2MoeForCausalLM";
  qwen2_moe.qkv_bias = true;
  qwen2_moe.num_experts = 60;
  qwen2_moe.num_experts_per_tok = 4;
  qwen2_moe.norm_topk_prob = false;
  qwen2_moe.shared_expert_intermediate_size = 5632;
  qwen2_moe.rms_norm_eps = 1e-6;
  qwen2_moe.rope_theta = 1000000.0;
  presets.push_back({"qwen1.5-moe-a2.7b", qwen2_moe});

  // allenai/OLMo-2-1124-7B: no input norms, the attention and MLP outputs normalized before each
  // residual add, q/k norms over all 32 heads, MHA, float32 checkpoint, 4096 positions.
  ModelConfig olmo2 = Llama(32, 4096, 32, 32, 11008, 100352, 4096);
  olmo2.architecture = "Olmo2ForCausalLM";
  olmo2.qk_norm = true;
  olmo2.qk_norm_across_heads = true;
  olmo2.sandwich_norms = true;
  olmo2.pre_norms = false;
  olmo2.torch_dtype = DType::kFloat32;
  olmo2.rms_norm_eps = 1e-6;
  olmo2.rope_theta = 500000.0;
  presets.push_back({"olmo-2-7b", olmo2});

  // allenai/OLMoE-1B-7B-0924: 64 experts of 1024, the top 8 (not renormalized), q/k norms over
  // all 16 heads, MHA, 4096 positions; 6,919,161,856 parameters (6.92B, as published).
  ModelConfig olmoe = Llama(16, 2048, 16, 16, 1024, 50304, 4096);
  olmoe.architecture = "OlmoeForCausalLM";
  olmoe.qk_norm = true;
  olmoe.qk_norm_across_heads = true;
  olmoe.num_experts = 64;
  olmoe.num_experts_per_tok = 8;
  olmoe.norm_topk_prob = false;
  olmoe.rope_theta = 10000.0;
  presets.push_back({"olmoe-1b-7b", olmoe});

  // google/gemma-2-2b: head_dim 256, 4 KV heads, tied 256000-row vocabulary, float32 checkpoint,
  // a 4096-token sliding window on the even layers, soft-capped attention scores (50) and logits
  // (30), query_pre_attn_scalar 256, 8192 positions.
  ModelConfig gemma2_2b = Llama(26, 2304, 8, 4, 9216, 256000, 8192);
  gemma2_2b.architecture = "Gemma2ForCausalLM";
  gemma2_2b.head_dim = 256;
  gemma2_2b.tie_word_embeddings = true;
  gemma2_2b.torch_dtype = DType::kFloat32;
  gemma2_2b.rms_norm_eps = 1e-6;
  gemma2_2b.hidden_activation = Activation::kGeluTanh;
  gemma2_2b.norm_weight_offset = true;
  gemma2_2b.embedding_multiplier = std::sqrt(2304.0);
  gemma2_2b.sandwich_norms = true;
  gemma2_2b.query_pre_attn_scalar = 256;
  gemma2_2b.attn_logit_softcapping = 50.0;
  gemma2_2b.final_logit_softcapping = 30.0;
  gemma2_2b.sliding_window = 4096;
  gemma2_2b.sliding_window_pattern = 2;
  presets.push_back({"gemma-2-2b", gemma2_2b});

  // google/gemma-3-1b-it: Gemma3ForCausalLM, 1 KV head, head_dim 256, tied 262144-row vocabulary,
  // a 512-token window on five layers of every six with rotary base 10000 (the global layers'
  // 1e6), no softcaps, 32768 positions.
  ModelConfig gemma3_1b = gemma2_2b;
  gemma3_1b.architecture = "Gemma3ForCausalLM";
  gemma3_1b.num_hidden_layers = 26;
  gemma3_1b.hidden_size = 1152;
  gemma3_1b.embedding_multiplier = std::sqrt(1152.0);
  gemma3_1b.num_attention_heads = 4;
  gemma3_1b.num_key_value_heads = 1;
  gemma3_1b.intermediate_size = 6912;
  gemma3_1b.vocab_size = 262144;
  gemma3_1b.max_position_embeddings = 32768;
  gemma3_1b.torch_dtype = DType::kBFloat16;
  gemma3_1b.qk_norm = true;
  gemma3_1b.attn_logit_softcapping = 0;
  gemma3_1b.final_logit_softcapping = 0;
  gemma3_1b.sliding_window = 512;
  gemma3_1b.sliding_window_pattern = 6;
  gemma3_1b.rope_theta = 1000000.0;
  gemma3_1b.rope_local_theta = 10000.0;
  presets.push_back({"gemma-3-1b", gemma3_1b});

  // microsoft/phi-4: Phi3ForCausalLM with fused qkv_proj / gate_up_proj, 10 KV heads, untied
  // 100352-row vocabulary, rope_theta 250000, 16384 positions, no sliding window.
  ModelConfig phi4 = Llama(40, 5120, 40, 10, 17920, 100352, 16384);
  phi4.architecture = "Phi3ForCausalLM";
  phi4.rope_theta = 250000.0;
  phi4.fused_qkv = true;
  phi4.fused_gate_up = true;
  presets.push_back({"phi-4", phi4});

  // microsoft/Phi-4-mini-instruct: 24 heads over 8 KV heads of 128, 96 of them rotated
  // (partial_rotary_factor 0.75), tied 200064-row vocabulary, LongRoPE from 4096 pretrained
  // positions to 131072 (its sliding_window 262144 never masks a key: none).
  ModelConfig phi4_mini = Llama(32, 3072, 24, 8, 8192, 200064, 131072);
  phi4_mini.architecture = "Phi3ForCausalLM";
  phi4_mini.fused_qkv = true;
  phi4_mini.fused_gate_up = true;
  phi4_mini.tie_word_embeddings = true;
  phi4_mini.rotary_dim = 96;
  phi4_mini.long_rope = LongRope{
      .short_factor = std::vector<double>(48, 1.0),
      .long_factor = {1.0,         1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897,
                      1.956131817, 2.187582649, 2.446418898, 2.735880826, 3.059592084, 3.421605075,
                      3.826451687, 4.279200023, 4.785517845, 5.351743533, 5.984965424, 6.693110555,
                      7.485043894, 8.370679318, 9.36110372,  10.4687158,  11.70738129, 13.09260651,
                      14.64173252, 16.37415215, 18.31155283, 20.47818807, 22.90118105, 25.61086418,
                      28.64115884, 32.03,       32.1,        32.13,       32.23,       32.6,
                      32.61,       32.64,       32.66,       32.7,        32.71,       32.93,
                      32.97,       33.28,       33.49,       33.5,        44.16,       47.77},
      .original_max_position_embeddings = 4096,
      .attention_factor = LongRopeAttentionFactor(131072, 4096)};
  presets.push_back({"phi-4-mini", phi4_mini});

  // THUDM/GLM-4-9B-0414: Glm4ForCausalLM, 2 KV heads of 128, rotary over interleaved pairs of
  // half of each head, q/k/v biases, gate_up_proj fused, four norms per layer, untied
  // 151552-row vocabulary, 32768 positions.
  ModelConfig glm4_9b = Llama(40, 4096, 32, 2, 13696, 151552, 32768);
  glm4_9b.architecture = "Glm4ForCausalLM";
  glm4_9b.rotary_dim = 64;
  glm4_9b.interleaved_rotary = true;
  glm4_9b.qkv_bias = true;
  glm4_9b.fused_gate_up = true;
  glm4_9b.sandwich_norms = true;
  presets.push_back({"glm-4-9b", glm4_9b});

  // zai-org/GLM-4.5-Air and GLM-4.5: Glm4MoeForCausalLM, 96 query heads of 128 (wider than the
  // hidden size) and 8 KV heads, q/k/v biases, rotary over half of each head (rotate-half),
  // sigmoid-routed experts with a correction bias and one ungated shared expert, the first layers
  // dense, untied 151552-row vocabulary, 131072 positions, rope_theta 1e6. The checkpoints' extra
  // multi-token-prediction layer (num_nextn_predict_layers) is not loaded, as vLLM loads it only
  // for speculative decoding: 106.85B parameters for Air (its model card's "106B"), 352.80B for
  // GLM-4.5.
  const auto glm45 = [](int64_t layers, int64_t hidden, int64_t dense_intermediate, int64_t experts,
                        int64_t expert_intermediate, int64_t dense_layers) {
    ModelConfig config = Llama(layers, hidden, 96, 8, expert_intermediate, 151552, 131072);
    config.architecture = "Glm4MoeForCausalLM";
    config.head_dim = 128;
    config.rotary_dim = 64;
    config.qkv_bias = true;
    config.rope_theta = 1000000.0;
    config.num_experts = experts;
    config.num_experts_per_tok = 8;
    config.moe_sigmoid_scores = true;
    config.moe_correction_bias = true;
    config.shared_expert_intermediate_size = expert_intermediate;
    config.shared_expert_gated = false;
    config.dense_intermediate_size = dense_intermediate;
    for (int64_t layer = 0; layer < layers; ++layer) {
      config.dense_mlp_layers.push_back(layer < dense_layers);
    }
    return config;
  };
  presets.push_back({"glm-4.5-air", glm45(46, 4096, 10944, 128, 1408, 1)});
  ModelConfig glm4_5 = glm45(92, 5120, 12288, 160, 1536, 3);
  glm4_5.qk_norm = true;
  glm4_5.routed_scaling_factor = 2.5;
  presets.push_back({"glm-4.5", glm4_5});

  for (Preset& preset : presets)
    preset.config.source = absl::StrCat("dummy:", std::string(preset.name));
  std::sort(presets.begin(), presets.end(),
            [](const Preset& a, const Preset& b) { return a.name < b.name; });
  return presets;
}

const std::vector<Preset>& Presets() {
  static const std::vector<Preset>* const kPresets = new std::vector<Preset>(MakePresets());
  return *kPresets;
}

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const Preset& preset : Presets()) names.emplace_back(preset.name);
  return names;
}

absl::StatusOr<ModelConfig> PresetModelConfig(std::string_view name) {
  for (const Preset& preset : Presets()) {
    if (preset.name == name) return preset.config;
  }
  return absl::NotFoundError(absl::StrCat("unknown preset \"dummy:", std::string(name),
                                          "\"; presets: ", absl::StrJoin(PresetNames(), ", ")));
}

}  // namespace headroom::worker
