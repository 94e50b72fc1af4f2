#include "worker/model/model_config.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/model/dtype.h"

namespace headroom::worker {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// meta-llama/Meta-Llama-3-8B config.json, as published.
constexpr std::string_view kLlama3_8BConfig = R"({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

// Qwen/Qwen2-7B config.json, as published.
constexpr std::string_view kQwen2_7BConfig = R"({
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 3584,
  "initializer_range": 0.02,
  "intermediate_size": 18944,
  "max_position_embeddings": 131072,
  "max_window_layers": 28,
  "model_type": "qwen2",
  "num_attention_heads": 28,
  "num_hidden_layers": 28,
  "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 131072,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.37.2",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 152064
})";

// Qwen/Qwen3-8B config.json, as published.
constexpr std::string_view kQwen3_8BConfig = R"({
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12288,
  "max_position_embeddings": 40960,
  "max_window_layers": 36,
  "model_type": "qwen3",
  "num_attention_heads": 32,
  "num_hidden_layers": 36,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// mistralai/Mixtral-8x7B-v0.1 config.json, as published.
constexpr std::string_view kMixtral8x7BConfig = R"({
  "architectures": [
    "MixtralForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "output_router_logits": false,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1e6,
  "router_aux_loss_coef": 0.02,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.36.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

// Qwen/Qwen3-30B-A3B config.json, as published.
constexpr std::string_view kQwen3_30B_A3BConfig = R"({
  "architectures": [
    "Qwen3MoeForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "decoder_sparse_step": 1,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 6144,
  "max_position_embeddings": 40960,
  "max_window_layers": 48,
  "mlp_only_layers": [],
  "model_type": "qwen3_moe",
  "moe_intermediate_size": 768,
  "norm_topk_prob": true,
  "num_attention_heads": 32,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 48,
  "num_key_value_heads": 4,
  "output_router_logits": false,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// A Gemma3ForCausalLM config.json in google/gemma-3-1b-it's shape (transformers 4.50's keys:
// sliding_window_pattern, rope_local_base_freq).
constexpr std::string_view kGemma3_1BConfig = R"({
  "architectures": [
    "Gemma3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "attn_logit_softcapping": null,
  "bos_token_id": 2,
  "cache_implementation": "hybrid",
  "eos_token_id": [
    1,
    106
  ],
  "final_logit_softcapping": null,
  "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 1152,
  "initializer_range": 0.02,
  "intermediate_size": 6912,
  "max_position_embeddings": 32768,
  "model_type": "gemma3_text",
  "num_attention_heads": 4,
  "num_hidden_layers": 26,
  "num_key_value_heads": 1,
  "pad_token_id": 0,
  "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_local_base_freq": 10000,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": 512,
  "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 262144
})";

// A Phi3ForCausalLM config.json in Phi-3-mini-4k-instruct's shape (fused qkv_proj / gate_up_proj
// in the checkpoint, a 2047-token sliding window).
constexpr std::string_view kPhi3MiniConfig = R"({
  "architectures": [
    "Phi3ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "embd_pdrop": 0.0,
  "eos_token_id": 32000,
  "hidden_act": "silu",
  "hidden_size": 3072,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 4096,
  "model_type": "phi3",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "original_max_position_embeddings": 4096,
  "pad_token_id": 32000,
  "resid_pdrop": 0.0,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "sliding_window": 2047,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 32064
})";

// microsoft/Phi-4-mini-instruct config.json, as published (its lists on one line): 96 of 128
// values per head rotated, LongRoPE from 4096 to 131072 positions, a 262144-token sliding window.
constexpr std::string_view kPhi4MiniConfig = R"({
  "architectures": ["Phi3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config", "AutoModelForCausalLM": "modeling_phi3.Phi3ForCausalLM", "AutoTokenizer": "Xenova/gpt-4o"},
  "bos_token_id": 199999,
  "embd_pdrop": 0.0,
  "eos_token_id": 200020,
  "full_attn_mod": 1,
  "hidden_act": "silu",
  "hidden_size": 3072,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "interpolate_factor": 1,
  "lm_head_bias": false,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "phi3",
  "num_attention_heads": 24,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "original_max_position_embeddings": 4096,
  "pad_token_id": 199999,
  "partial_rotary_factor": 0.75,
  "resid_pdrop": 0.0,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "long_factor": [1, 1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897, 1.956131817, 2.187582649, 2.446418898, 2.735880826, 3.059592084, 3.421605075, 3.826451687, 4.279200023, 4.785517845, 5.351743533, 5.984965424, 6.693110555, 7.485043894, 8.370679318, 9.36110372, 10.4687158, 11.70738129, 13.09260651, 14.64173252, 16.37415215, 18.31155283, 20.47818807, 22.90118105, 25.61086418, 28.64115884, 32.03, 32.1, 32.13, 32.23, 32.6, 32.61, 32.64, 32.66, 32.7, 32.71, 32.93, 32.97, 33.28, 33.49, 33.5, 44.16, 47.77],
    "short_factor": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    "type": "longrope"
  },
  "rope_theta": 10000.0,
  "sliding_window": 262144,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0",
  "use_cache": true,
  "vocab_size": 200064
})";

// google/gemma-2-2b config.json, as published (it has no tie_word_embeddings key: Gemma2Config
// ties by default).
constexpr std::string_view kGemma2_2BConfig = R"({
  "architectures": [
    "Gemma2ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "attn_logit_softcapping": 50.0,
  "bos_token_id": 2,
  "cache_implementation": "hybrid",
  "eos_token_id": 1,
  "final_logit_softcapping": 30.0,
  "head_dim": 256,
  "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 2304,
  "initializer_range": 0.02,
  "intermediate_size": 9216,
  "max_position_embeddings": 8192,
  "model_type": "gemma2",
  "num_attention_heads": 8,
  "num_hidden_layers": 26,
  "num_key_value_heads": 4,
  "pad_token_id": 0,
  "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "torch_dtype": "float32",
  "transformers_version": "4.44.2",
  "use_cache": true,
  "vocab_size": 256000
})";

// meta-llama/Llama-3.1-8B's rope_scaling block (the rest equals Llama-3-8B but the context).
constexpr std::string_view kLlama31RopeScaling = R"("rope_scaling": {
    "factor": 8.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  })";

// mistralai/Mistral-7B-v0.1 config.json, as published.
constexpr std::string_view kMistral7BConfig = R"({
  "architectures": ["MistralForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.34.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

// Every occurrence of `from` in `text` replaced by `to`.
std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  std::string out(text);
  for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size())) {
    out.replace(at, from.size(), to);
  }
  return out;
}

// Creates a fresh model directory per test under the test temp dir.
class ModelDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("headroom_model_config_", info->name(), "_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string WriteConfig(std::string_view json) {
    std::ofstream(dir_ / "config.json") << json;
    return dir_.string();
  }

  std::string ConfigPath() const { return (dir_ / "config.json").string(); }

  std::filesystem::path dir_;
};

// Replaces one `"field": value` line of the Llama-3-8B config.
std::string Llama3With(std::string_view from, std::string_view to) {
  const std::string json(kLlama3_8BConfig);
  const std::string replaced = ReplaceAll(json, from, to);
  EXPECT_NE(replaced, json) << "pattern not found: " << from;
  return replaced;
}

TEST_F(ModelDirTest, LoadsLlama3_8B) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kLlama3_8BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->source, dir_.string());
  EXPECT_EQ(config->architecture, "LlamaForCausalLM");
  EXPECT_EQ(config->vocab_size, 128256);
  EXPECT_EQ(config->hidden_size, 4096);
  EXPECT_EQ(config->intermediate_size, 14336);
  EXPECT_EQ(config->num_hidden_layers, 32);
  EXPECT_EQ(config->num_attention_heads, 32);
  EXPECT_EQ(config->num_key_value_heads, 8);
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_EQ(config->max_position_embeddings, 8192);
  EXPECT_FALSE(config->tie_word_embeddings);
  EXPECT_EQ(config->torch_dtype, DType::kBFloat16);
  EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(config->rope_theta, 500000.0);
  EXPECT_FALSE(config->rope_scaling.has_value());
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_FALSE(config->o_proj_bias);
  EXPECT_FALSE(config->mlp_bias);
  EXPECT_FALSE(config->sliding_window.has_value());
}

TEST_F(ModelDirTest, LoadsLlama31RopeScaling) {
  std::string json = Llama3With(R"("rope_scaling": null)", kLlama31RopeScaling);
  json = ReplaceAll(json, R"("max_position_embeddings": 8192)",
                    R"("max_position_embeddings": 131072)");
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_position_embeddings, 131072);
  ASSERT_TRUE(config->rope_scaling.has_value());
  EXPECT_DOUBLE_EQ(config->rope_scaling->factor, 8.0);
  EXPECT_DOUBLE_EQ(config->rope_scaling->low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(config->rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(config->rope_scaling->original_max_position_embeddings, 8192);
}

TEST_F(ModelDirTest, LoadsQwen2_7BWithImplicitQkvBias) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kQwen2_7BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(config->vocab_size, 152064);
  EXPECT_EQ(config->hidden_size, 3584);
  EXPECT_EQ(config->num_hidden_layers, 28);
  EXPECT_EQ(config->num_key_value_heads, 4);
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_EQ(config->max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(config->rope_theta, 1000000.0);
  EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-6);
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_FALSE(config->o_proj_bias);
  EXPECT_FALSE(config->tie_word_embeddings);
  EXPECT_FALSE(config->sliding_window.has_value());  // use_sliding_window is false.
}

TEST_F(ModelDirTest, Qwen2SlidingWindowIsRefused) {
  const std::string json = ReplaceAll(kQwen2_7BConfig, R"("use_sliding_window": false)",
                                      R"("use_sliding_window": true)");
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              AllOf(HasSubstr(ConfigPath()), HasSubstr("\"use_sliding_window\"")));
}

TEST_F(ModelDirTest, LoadsQwen3_8BWithPerHeadQkNorm) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kQwen3_8BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_EQ(config->max_position_embeddings, 40960);
  EXPECT_DOUBLE_EQ(config->rope_theta, 1000000.0);
  EXPECT_TRUE(config->qk_norm);
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_FALSE(config->o_proj_bias);
  EXPECT_FALSE(config->tie_word_embeddings);
  // The preset is this checkpoint's shape.
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:qwen3-8b");
  ASSERT_TRUE(preset.ok()) << preset.status();
  EXPECT_EQ(preset->qk_norm, config->qk_norm);
  EXPECT_EQ(preset->vocab_size, config->vocab_size);
  EXPECT_EQ(preset->intermediate_size, config->intermediate_size);
  EXPECT_EQ(preset->num_key_value_heads, config->num_key_value_heads);
  EXPECT_EQ(preset->head_dim, config->head_dim);
  EXPECT_EQ(preset->max_position_embeddings, config->max_position_embeddings);
  EXPECT_DOUBLE_EQ(preset->rms_norm_eps, config->rms_norm_eps);

  // attention_bias gives q/k/v and o biases, as Qwen3Attention's Linear layers take it.
  const absl::StatusOr<ModelConfig> biased = LoadModelConfig(WriteConfig(
      ReplaceAll(kQwen3_8BConfig, R"("attention_bias": false)", R"("attention_bias": true)")));
  ASSERT_TRUE(biased.ok()) << biased.status();
  EXPECT_TRUE(biased->qkv_bias);
  EXPECT_TRUE(biased->o_proj_bias);

  const absl::StatusOr<ModelConfig> windowed = LoadModelConfig(WriteConfig(ReplaceAll(
      kQwen3_8BConfig, R"("use_sliding_window": false)", R"("use_sliding_window": true)")));
  EXPECT_EQ(windowed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(windowed.status().message()),
      AllOf(HasSubstr(ConfigPath()), HasSubstr("\"use_sliding_window\""), HasSubstr("Qwen3")));
}

TEST_F(ModelDirTest, LoadsMixtureOfExpertsModels) {
  const absl::StatusOr<ModelConfig> mixtral = LoadModelConfig(WriteConfig(kMixtral8x7BConfig));
  ASSERT_TRUE(mixtral.ok()) << mixtral.status();
  EXPECT_EQ(mixtral->num_experts, 8);
  EXPECT_EQ(mixtral->num_experts_per_tok, 2);
  EXPECT_EQ(mixtral->intermediate_size, 14336);  // each expert's
  EXPECT_TRUE(mixtral->norm_topk_prob);          // Mixtral always renormalizes
  EXPECT_FALSE(mixtral->sliding_window.has_value());
  EXPECT_FALSE(mixtral->qk_norm);

  const absl::StatusOr<ModelConfig> qwen = LoadModelConfig(WriteConfig(kQwen3_30B_A3BConfig));
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  EXPECT_EQ(qwen->num_experts, 128);
  EXPECT_EQ(qwen->num_experts_per_tok, 8);
  EXPECT_EQ(qwen->intermediate_size, 768) << "moe_intermediate_size, not the dense 6144";
  EXPECT_TRUE(qwen->norm_topk_prob);
  EXPECT_TRUE(qwen->qk_norm);
  EXPECT_EQ(qwen->head_dim, 128);

  // The presets are these checkpoints' shapes.
  for (const auto& [preset, parsed] :
       {std::pair{"dummy:mixtral-8x7b", &*mixtral}, std::pair{"dummy:qwen3-30b-a3b", &*qwen}}) {
    const absl::StatusOr<ModelConfig> p = LoadModelConfig(preset);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->architecture, parsed->architecture) << preset;
    EXPECT_EQ(p->num_experts, parsed->num_experts) << preset;
    EXPECT_EQ(p->num_experts_per_tok, parsed->num_experts_per_tok) << preset;
    EXPECT_EQ(p->intermediate_size, parsed->intermediate_size) << preset;
    EXPECT_EQ(p->head_dim, parsed->head_dim) << preset;
    EXPECT_EQ(p->num_key_value_heads, parsed->num_key_value_heads) << preset;
    EXPECT_EQ(p->vocab_size, parsed->vocab_size) << preset;
    EXPECT_EQ(p->qk_norm, parsed->qk_norm) << preset;
    EXPECT_EQ(p->norm_topk_prob, parsed->norm_topk_prob) << preset;
    EXPECT_DOUBLE_EQ(p->rope_theta, parsed->rope_theta) << preset;
  }

  // Dense layers between the sparse ones, and more experts per token than experts, are refused
  // by name.
  for (const auto& [from, to, field] :
       {std::tuple{R"("mlp_only_layers": [])", R"("mlp_only_layers": [0, 5])", "mlp_only_layers"},
        std::tuple{R"("decoder_sparse_step": 1)", R"("decoder_sparse_step": 2)",
                   "decoder_sparse_step"},
        std::tuple{R"("num_experts_per_tok": 8)", R"("num_experts_per_tok": 129)",
                   "num_experts_per_tok"},
        std::tuple{R"("num_experts": 128)", R"("num_experts": 1000000000000)", "num_experts"}}) {
    const absl::StatusOr<ModelConfig> bad =
        LoadModelConfig(WriteConfig(ReplaceAll(kQwen3_30B_A3BConfig, from, to)));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << to;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(field)) << to;
  }
}

TEST_F(ModelDirTest, LoadsGemma2_2B) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kGemma2_2BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Gemma2ForCausalLM");
  EXPECT_EQ(config->head_dim, 256);  // not hidden / heads = 288
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->torch_dtype, DType::kFloat32);
  EXPECT_EQ(config->hidden_activation, Activation::kGeluTanh);
  EXPECT_TRUE(config->norm_weight_offset);
  EXPECT_DOUBLE_EQ(config->embedding_multiplier, 48.0);  // sqrt(2304)
  EXPECT_TRUE(config->sandwich_norms);
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_DOUBLE_EQ(config->query_pre_attn_scalar, 256.0);
  EXPECT_DOUBLE_EQ(config->attn_logit_softcapping, 50.0);
  EXPECT_DOUBLE_EQ(config->final_logit_softcapping, 30.0);
  EXPECT_EQ(config->sliding_window, 4096);
  // The window is on the even layers (transformers' Gemma2: `not bool(layer_idx % 2)`).
  for (int64_t layer = 0; layer < config->num_hidden_layers; ++layer) {
    EXPECT_EQ(LayerSlidingWindow(*config, layer), layer % 2 == 0 ? 4096 : 0) << layer;
  }
  // The preset is this checkpoint.
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:gemma-2-2b");
  ASSERT_TRUE(preset.ok()) << preset.status();
  for (const ModelConfig* c : {&*config, &*preset}) {
    EXPECT_EQ(c->num_hidden_layers, 26);
    EXPECT_EQ(c->hidden_size, 2304);
    EXPECT_EQ(c->num_key_value_heads, 4);
  }
  EXPECT_EQ(preset->head_dim, config->head_dim);
  EXPECT_EQ(preset->intermediate_size, config->intermediate_size);
  EXPECT_EQ(preset->vocab_size, config->vocab_size);
  EXPECT_EQ(preset->torch_dtype, config->torch_dtype);
  EXPECT_EQ(preset->hidden_activation, config->hidden_activation);
  EXPECT_EQ(preset->norm_weight_offset, config->norm_weight_offset);
  EXPECT_DOUBLE_EQ(preset->embedding_multiplier, config->embedding_multiplier);
  EXPECT_EQ(preset->sandwich_norms, config->sandwich_norms);
  EXPECT_DOUBLE_EQ(preset->query_pre_attn_scalar, config->query_pre_attn_scalar);
  EXPECT_DOUBLE_EQ(preset->attn_logit_softcapping, config->attn_logit_softcapping);
  EXPECT_DOUBLE_EQ(preset->final_logit_softcapping, config->final_logit_softcapping);
  EXPECT_EQ(preset->sliding_window, config->sliding_window);
  EXPECT_EQ(preset->sliding_window_pattern, config->sliding_window_pattern);
}

TEST_F(ModelDirTest, LoadsMistral7BWithSlidingWindow) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kMistral7BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "MistralForCausalLM");
  EXPECT_EQ(config->sliding_window, 4096);
  EXPECT_EQ(config->max_position_embeddings, 32768);
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_FALSE(config->qkv_bias);
}

TEST_F(ModelDirTest, MistralNullWindowMeansNoneAndAbsentMeansTheDefault) {
  std::string json =
      ReplaceAll(kMistral7BConfig, R"("sliding_window": 4096)", R"("sliding_window": null)");
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->sliding_window.has_value());

  json = ReplaceAll(kMistral7BConfig, R"("sliding_window": 4096,)", "");
  config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->sliding_window, 4096);
}

TEST_F(ModelDirTest, ExplicitHeadDimWins) {
  // Mistral-Nemo style: hidden 5120 over 32 heads would be 160, but head_dim is 128.
  std::string json =
      Llama3With(R"("hidden_size": 4096)", R"("hidden_size": 5120, "head_dim": 128)");
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->head_dim, 128);

  json = Llama3With(R"("hidden_size": 4096)", R"("hidden_size": 4096, "head_dim": null)");
  config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->head_dim, 128);
}

TEST_F(ModelDirTest, DefaultsForOptionalFields) {
  const std::string json = R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 256,
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "max_position_embeddings": 512})";
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->num_key_value_heads, 4);  // MHA when absent.
  EXPECT_EQ(config->head_dim, 16);
  EXPECT_EQ(config->torch_dtype, DType::kFloat32);  // transformers' default.
  EXPECT_DOUBLE_EQ(config->rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-6);
  EXPECT_FALSE(config->tie_word_embeddings);
}

TEST_F(ModelDirTest, NewerTransformersDtypeKeyAndRopeParameters) {
  std::string json = Llama3With(R"("torch_dtype": "bfloat16")", R"("dtype": "float16")");
  json = ReplaceAll(json, R"("rope_theta": 500000.0,)", "");
  json = ReplaceAll(json, R"("rope_scaling": null)",
                    R"("rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"})");
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->torch_dtype, DType::kFloat16);
  EXPECT_DOUBLE_EQ(config->rope_theta, 500000.0);
  EXPECT_FALSE(config->rope_scaling.has_value());
}

TEST_F(ModelDirTest, LlamaAttentionAndMlpBias) {
  std::string json =
      Llama3With(R"("attention_bias": false)", R"("attention_bias": true, "mlp_bias": true)");
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_TRUE(config->o_proj_bias);
  EXPECT_TRUE(config->mlp_bias);
}

// ---- Error paths: each names the path and the field. ----

void ExpectError(const absl::StatusOr<ModelConfig>& config, absl::StatusCode code,
                 const std::vector<std::string>& needles) {
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), code) << config.status();
  for (const std::string& needle : needles) {
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(needle));
  }
}

TEST_F(ModelDirTest, MissingDirectory) {
  const std::string missing = (dir_ / "nope").string();
  ExpectError(LoadModelConfig(missing), absl::StatusCode::kNotFound,
              {absl::StrCat("model directory \"", missing, "\" does not exist"), "dummy:<preset>",
               "llama-3-8b"});
}

// vLLM's Matryoshka fields (Qwen3-Embedding served with dimensions): is_matryoshka allows any
// size, a matryoshka_dimensions list implies it and names the sizes; a bad list is refused.
TEST_F(ModelDirTest, ReadsMatryoshkaFields) {
  const absl::StatusOr<ModelConfig> plain = LoadModelConfig(WriteConfig(kQwen3_8BConfig));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->is_matryoshka);
  EXPECT_TRUE(plain->matryoshka_dimensions.empty());
  const std::string tie = R"("tie_word_embeddings": false,)";
  const absl::StatusOr<ModelConfig> flagged = LoadModelConfig(WriteConfig(
      ReplaceAll(kQwen3_8BConfig, tie, absl::StrCat(tie, R"( "is_matryoshka": true,)"))));
  ASSERT_TRUE(flagged.ok()) << flagged.status();
  EXPECT_TRUE(flagged->is_matryoshka);
  const absl::StatusOr<ModelConfig> listed = LoadModelConfig(WriteConfig(ReplaceAll(
      kQwen3_8BConfig, tie, absl::StrCat(tie, R"( "matryoshka_dimensions": [64, 1024, 4096],)"))));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->is_matryoshka);
  EXPECT_EQ(listed->matryoshka_dimensions, (std::vector<int64_t>{64, 1024, 4096}));
  const absl::StatusOr<ModelConfig> wide = LoadModelConfig(WriteConfig(ReplaceAll(
      kQwen3_8BConfig, tie, absl::StrCat(tie, R"( "matryoshka_dimensions": [64, 8192],)"))));
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find(
                "\"matryoshka_dimensions\" must be a list of sizes in [1, hidden_size (4096)], got "
                "8192"),
            std::string::npos)
      << wide.status();
}

TEST(ModelConfigTest, HubIdGetsADownloadHint) {
  ExpectError(LoadModelConfig("meta-llama/Meta-Llama-3-8B"), absl::StatusCode::kNotFound,
              {"does not exist", "huggingface-cli download meta-llama/Meta-Llama-3-8B"});
}

TEST_F(ModelDirTest, PathIsAFile) {
  const std::string file = WriteConfig(kLlama3_8BConfig) + "/config.json";
  ExpectError(LoadModelConfig(file), absl::StatusCode::kInvalidArgument,
              {file, "is not a directory"});
}

TEST_F(ModelDirTest, MissingConfigJson) {
  ExpectError(LoadModelConfig(dir_.string()), absl::StatusCode::kNotFound,
              {ConfigPath(), "not found"});
}

TEST_F(ModelDirTest, MalformedJsonReportsThePosition) {
  ExpectError(LoadModelConfig(WriteConfig("{\n  \"vocab_size\": 32000,\n  \"hidden_size\": }\n")),
              absl::StatusCode::kInvalidArgument,
              {ConfigPath(), "malformed JSON", "line 3, column 18"});
  ExpectError(LoadModelConfig(WriteConfig("")), absl::StatusCode::kInvalidArgument,
              {ConfigPath(), "malformed JSON"});
}

TEST_F(ModelDirTest, TopLevelMustBeAnObject) {
  ExpectError(LoadModelConfig(WriteConfig("[1, 2]")), absl::StatusCode::kInvalidArgument,
              {ConfigPath(), "expected a JSON object"});
}

TEST_F(ModelDirTest, MissingRequiredFields) {
  for (const char* field : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                            "num_attention_heads", "max_position_embeddings", "architectures"}) {
    std::string json(kLlama3_8BConfig);
    const size_t at = json.find(absl::StrCat("\"", field, "\""));
    ASSERT_NE(at, std::string::npos);
    // Rename the key so the field is absent.
    json.replace(at, std::strlen(field) + 2, absl::StrCat("\"x_", field, "\""));
    ExpectError(LoadModelConfig(WriteConfig(json)), absl::StatusCode::kInvalidArgument,
                {ConfigPath(), absl::StrCat("field \"", field, "\" is required but missing")});
  }
}

TEST_F(ModelDirTest, IllTypedFields) {
  ExpectError(LoadModelConfig(
                  WriteConfig(Llama3With(R"("hidden_size": 4096)", R"("hidden_size": "4096")"))),
              absl::StatusCode::kInvalidArgument,
              {ConfigPath(), "field \"hidden_size\" must be an integer, got string \"4096\""});
  ExpectError(LoadModelConfig(
                  WriteConfig(Llama3With(R"("hidden_size": 4096)", R"("hidden_size": 4096.5)"))),
              absl::StatusCode::kInvalidArgument, {"field \"hidden_size\" must be an integer"});
  ExpectError(LoadModelConfig(WriteConfig(
                  Llama3With(R"("tie_word_embeddings": false)", R"("tie_word_embeddings": "no")"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"tie_word_embeddings\" must be true or false"});
  ExpectError(LoadModelConfig(
                  WriteConfig(Llama3With(R"("rope_theta": 500000.0)", R"("rope_theta": "big")"))),
              absl::StatusCode::kInvalidArgument, {"field \"rope_theta\" must be a number"});
  ExpectError(LoadModelConfig(
                  WriteConfig(Llama3With(R"("torch_dtype": "bfloat16")", R"("torch_dtype": 16)"))),
              absl::StatusCode::kInvalidArgument, {"field \"torch_dtype\" must be a string"});
  ExpectError(
      LoadModelConfig(WriteConfig(Llama3With(R"("rope_scaling": null)", R"("rope_scaling": 8)"))),
      absl::StatusCode::kInvalidArgument, {"field \"rope_scaling\" must be an object or null"});
  ExpectError(LoadModelConfig(WriteConfig(
                  Llama3With(R"("vocab_size": 128256)", R"("vocab_size": 18446744073709551615)"))),
              absl::StatusCode::kInvalidArgument, {"field \"vocab_size\" is out of range"});
}

TEST_F(ModelDirTest, ArchitecturesMustBeANonEmptyListOfStrings) {
  for (const char* bad : {R"("architectures": [])", R"("architectures": "LlamaForCausalLM")",
                          R"("architectures": [7])"}) {
    const std::string json =
        ReplaceAll(kLlama3_8BConfig, "\"architectures\": [\n    \"LlamaForCausalLM\"\n  ]", bad);
    ExpectError(LoadModelConfig(WriteConfig(json)), absl::StatusCode::kInvalidArgument,
                {ConfigPath(), "field \"architectures\" must be a non-empty list of strings"});
  }
}

TEST_F(ModelDirTest, NonPositiveDimensions) {
  for (const char* field : {"hidden_size", "num_hidden_layers", "vocab_size"}) {
    std::string json(kLlama3_8BConfig);
    const size_t at = json.find(absl::StrCat("\"", field, "\": "));
    const size_t value = at + std::strlen(field) + 4;
    json.replace(value, json.find_first_of(",\n", value) - value, "0");
    ExpectError(LoadModelConfig(WriteConfig(json)), absl::StatusCode::kInvalidArgument,
                {ConfigPath(), absl::StrCat("field \"", field, "\" must be positive, got 0")});
  }
  ExpectError(LoadModelConfig(WriteConfig(
                  Llama3With(R"("num_key_value_heads": 8)", R"("num_key_value_heads": -8)"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"num_key_value_heads\" must be positive, got -8"});
  ExpectError(
      LoadModelConfig(WriteConfig(Llama3With(R"("rms_norm_eps": 1e-05)", R"("rms_norm_eps": 0)"))),
      absl::StatusCode::kInvalidArgument, {"field \"rms_norm_eps\" must be positive"});
}

TEST_F(ModelDirTest, InconsistentHeads) {
  ExpectError(LoadModelConfig(WriteConfig(
                  Llama3With(R"("num_key_value_heads": 8)", R"("num_key_value_heads": 6)"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"num_key_value_heads\" (6) must divide num_attention_heads (32)"});
  ExpectError(LoadModelConfig(WriteConfig(
                  Llama3With(R"("num_attention_heads": 32)", R"("num_attention_heads": 24)"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"head_dim\" is missing and hidden_size (4096) is not a multiple of "
               "num_attention_heads (24)"});
}

TEST_F(ModelDirTest, Gemma2DefaultsNullSoftcapsAndBadValues) {
  // Absent keys take Gemma2Config's defaults; a null softcap means none.
  std::string json = ReplaceAll(kGemma2_2BConfig, R"(  "attn_logit_softcapping": 50.0,
)",
                                "");
  json = ReplaceAll(json, R"(  "query_pre_attn_scalar": 256,
)",
                    "");
  json = ReplaceAll(json, R"(  "hidden_activation": "gelu_pytorch_tanh",
)",
                    "");
  json =
      ReplaceAll(json, R"("final_logit_softcapping": 30.0)", R"("final_logit_softcapping": null)");
  json = ReplaceAll(json, R"("sliding_window": 4096)", R"("sliding_window": null)");
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_DOUBLE_EQ(config->attn_logit_softcapping, 50.0);
  EXPECT_DOUBLE_EQ(config->query_pre_attn_scalar, 224.0);
  EXPECT_EQ(config->hidden_activation, Activation::kGeluTanh);
  EXPECT_DOUBLE_EQ(config->final_logit_softcapping, 0.0);
  EXPECT_EQ(config->sliding_window, 4096);

  // Gemma 2 reads hidden_activation, not hidden_act (transformers ignores hidden_act for it).
  config = LoadModelConfig(WriteConfig(ReplaceAll(
      kGemma2_2BConfig, R"("hidden_act": "gelu_pytorch_tanh")", R"("hidden_act": "silu")")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->hidden_activation, Activation::kGeluTanh);

  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(kGemma2_2BConfig, R"("attn_logit_softcapping": 50.0)",
                                             R"("attn_logit_softcapping": -1)"))),
      absl::StatusCode::kInvalidArgument,
      {ConfigPath(), "\"attn_logit_softcapping\" must be positive or null, got -1"});
  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(kGemma2_2BConfig, R"("query_pre_attn_scalar": 256)",
                                             R"("query_pre_attn_scalar": 0)"))),
      absl::StatusCode::kInvalidArgument, {"\"query_pre_attn_scalar\" must be positive"});
  ExpectError(LoadModelConfig(WriteConfig(ReplaceAll(kGemma2_2BConfig,
                                                     R"("hidden_activation": "gelu_pytorch_tanh")",
                                                     R"("hidden_activation": "gelu")"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"hidden_activation\" names unsupported activation \"gelu\"",
               "supported: silu, gelu_pytorch_tanh, gelu_new"});
  // A tie_word_embeddings false is honoured.
  config = LoadModelConfig(
      WriteConfig(ReplaceAll(kGemma2_2BConfig, R"("use_cache": true,)",
                             R"("use_cache": true, "tie_word_embeddings": false,)")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->tie_word_embeddings);
}

TEST_F(ModelDirTest, LoadsPhi3WithFusedProjectionsAndAWindowOnEveryLayer) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kPhi3MiniConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Phi3ForCausalLM");
  EXPECT_TRUE(config->fused_qkv);
  EXPECT_TRUE(config->fused_gate_up);
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_EQ(config->hidden_activation, Activation::kSilu);
  EXPECT_EQ(config->head_dim, 96);
  EXPECT_EQ(config->sliding_window, 2047);
  for (const int64_t layer : {0, 1, 31}) EXPECT_EQ(LayerSlidingWindow(*config, layer), 2047);
  // Phi3Config's default window is none.
  const absl::StatusOr<ModelConfig> unwindowed = LoadModelConfig(WriteConfig(
      ReplaceAll(kPhi3MiniConfig, R"("sliding_window": 2047)", R"("sliding_window": null)")));
  ASSERT_TRUE(unwindowed.ok()) << unwindowed.status();
  EXPECT_FALSE(unwindowed->sliding_window.has_value());
  EXPECT_EQ(LayerSlidingWindow(*unwindowed, 0), 0);

  EXPECT_EQ(config->rotary_dim, 0) << "the whole head";
  EXPECT_EQ(RotaryDim(*config), 96);

  // Phi-4-mini rotates 0.75 of each head: int(96 x 0.75) = 72 values here (96 of 128 there), and
  // its LongRoPE factor lists are for those (36 each); whole-head lists are refused.
  auto with_partial = [](const char* factor) {
    return ReplaceAll(
        kPhi3MiniConfig, R"("resid_pdrop": 0.0,)",
        absl::StrCat(R"("resid_pdrop": 0.0, "partial_rotary_factor": )", factor, ","));
  };
  const absl::StatusOr<ModelConfig> partial = LoadModelConfig(WriteConfig(with_partial("0.75")));
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(RotaryDim(*partial), 72);
  auto longrope = [](int factors) {
    std::vector<std::string> ones(static_cast<size_t>(factors), "1.0");
    return absl::StrCat(R"("rope_scaling": {"type": "longrope", "short_factor": [)",
                        absl::StrJoin(ones, ","), R"(], "long_factor": [)",
                        absl::StrJoin(ones, ","), "]}");
  };
  const std::string partial_longrope =
      ReplaceAll(ReplaceAll(with_partial("0.75"), R"("rope_scaling": null)", longrope(36)),
                 R"("max_position_embeddings": 4096)", R"("max_position_embeddings": 131072)");
  const absl::StatusOr<ModelConfig> phi4_mini = LoadModelConfig(WriteConfig(partial_longrope));
  ASSERT_TRUE(phi4_mini.ok()) << phi4_mini.status();
  ASSERT_TRUE(phi4_mini->long_rope.has_value());
  EXPECT_EQ(phi4_mini->long_rope->long_factor.size(), 36u);
  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(partial_longrope, longrope(36), longrope(48)))),
      absl::StatusCode::kInvalidArgument, {"short_factor"});
  const absl::StatusOr<ModelConfig> whole = LoadModelConfig(WriteConfig(with_partial("1.0")));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(RotaryDim(*whole), 96);
  // int(96 x 0.52) = int(49.92) = 49 is odd; int(96 x 0.01) = 0 rotates nothing.
  ExpectError(LoadModelConfig(WriteConfig(with_partial("0.52"))),
              absl::StatusCode::kInvalidArgument,
              {"\"partial_rotary_factor\" is 0.52: int(head_dim 96 x 0.52) = 49 rotated values "
               "per head, which must be even and at least 2"});
  ExpectError(LoadModelConfig(WriteConfig(with_partial("0.01"))),
              absl::StatusCode::kInvalidArgument, {"= 0 rotated values per head"});
  ExpectError(LoadModelConfig(WriteConfig(with_partial("1.5"))), absl::StatusCode::kInvalidArgument,
              {"\"partial_rotary_factor\" must be in (0, 1], got 1.5"});
  // Llama's attention rotates whole heads: a factor there is refused, not ignored.
  ExpectError(LoadModelConfig(WriteConfig(Llama3With(R"("hidden_act": "silu",)",
                                                     R"("hidden_act": "silu", )"
                                                     R"("partial_rotary_factor": 0.5,)"))),
              absl::StatusCode::kInvalidArgument,
              {"\"partial_rotary_factor\" is 0.5; partial rotary embedding is supported for "
               "Phi3ForCausalLM, GlmForCausalLM, Glm4ForCausalLM and Glm4MoeForCausalLM only"});

  // dummy:phi-4 is Phi-4's shape with the same layout.
  const absl::StatusOr<ModelConfig> phi4 = LoadModelConfig("dummy:phi-4");
  ASSERT_TRUE(phi4.ok()) << phi4.status();
  EXPECT_EQ(phi4->architecture, "Phi3ForCausalLM");
  EXPECT_TRUE(phi4->fused_qkv);
  EXPECT_TRUE(phi4->fused_gate_up);
  EXPECT_EQ(phi4->num_key_value_heads, 10);
  EXPECT_EQ(phi4->head_dim, 128);
  EXPECT_EQ(phi4->max_position_embeddings, 16384);
  EXPECT_DOUBLE_EQ(phi4->rope_theta, 250000.0);
  EXPECT_FALSE(phi4->sliding_window.has_value());
  EXPECT_FALSE(phi4->tie_word_embeddings);
}

// A preset and the published config.json it stands for agree on every field the plan, the loader
// and the forward pass read (the rope scaling blocks are compared by the tests that have them).
void ExpectSameModel(const ModelConfig& preset, const ModelConfig& config) {
  EXPECT_EQ(preset.architecture, config.architecture);
  EXPECT_EQ(preset.num_hidden_layers, config.num_hidden_layers);
  EXPECT_EQ(preset.hidden_size, config.hidden_size);
  EXPECT_EQ(preset.intermediate_size, config.intermediate_size);
  EXPECT_EQ(preset.num_attention_heads, config.num_attention_heads);
  EXPECT_EQ(preset.num_key_value_heads, config.num_key_value_heads);
  EXPECT_EQ(preset.head_dim, config.head_dim);
  EXPECT_EQ(preset.rotary_dim, config.rotary_dim);
  EXPECT_EQ(preset.interleaved_rotary, config.interleaved_rotary);
  EXPECT_EQ(preset.vocab_size, config.vocab_size);
  EXPECT_EQ(preset.max_position_embeddings, config.max_position_embeddings);
  EXPECT_EQ(preset.tie_word_embeddings, config.tie_word_embeddings);
  EXPECT_EQ(preset.fused_qkv, config.fused_qkv);
  EXPECT_EQ(preset.fused_gate_up, config.fused_gate_up);
  EXPECT_EQ(preset.qkv_bias, config.qkv_bias);
  EXPECT_EQ(preset.o_proj_bias, config.o_proj_bias);
  EXPECT_EQ(preset.sandwich_norms, config.sandwich_norms);
  EXPECT_EQ(preset.norm_weight_offset, config.norm_weight_offset);
  EXPECT_EQ(preset.torch_dtype, config.torch_dtype);
  EXPECT_EQ(preset.hidden_activation, config.hidden_activation);
  EXPECT_EQ(preset.sliding_window, config.sliding_window);
  EXPECT_EQ(preset.qk_norm, config.qk_norm);
  EXPECT_EQ(preset.qk_norm_across_heads, config.qk_norm_across_heads);
  EXPECT_EQ(preset.pre_norms, config.pre_norms);
  EXPECT_EQ(preset.num_experts, config.num_experts);
  EXPECT_EQ(preset.num_experts_per_tok, config.num_experts_per_tok);
  EXPECT_EQ(preset.norm_topk_prob, config.norm_topk_prob);
  EXPECT_EQ(preset.shared_expert_intermediate_size, config.shared_expert_intermediate_size);
  EXPECT_EQ(preset.shared_expert_gated, config.shared_expert_gated);
  EXPECT_EQ(preset.moe_sigmoid_scores, config.moe_sigmoid_scores);
  EXPECT_EQ(preset.moe_correction_bias, config.moe_correction_bias);
  EXPECT_EQ(preset.moe_num_groups, config.moe_num_groups);
  EXPECT_EQ(preset.moe_topk_groups, config.moe_topk_groups);
  EXPECT_DOUBLE_EQ(preset.routed_scaling_factor, config.routed_scaling_factor);
  EXPECT_EQ(preset.dense_mlp_layers, config.dense_mlp_layers);
  EXPECT_EQ(preset.dense_intermediate_size, config.dense_intermediate_size);
  EXPECT_DOUBLE_EQ(preset.rms_norm_eps, config.rms_norm_eps);
  EXPECT_DOUBLE_EQ(preset.rope_theta, config.rope_theta);
}

// Qwen/Qwen1.5-MoE-A2.7B-Chat's config.json (as secondary sources quote it): routed experts of
// moe_intermediate_size, the top 4 not renormalized, and a shared expert of
// shared_expert_intermediate_size (the dense intermediate_size is unused); q/k/v biases though the
// file says nothing of them.
constexpr char kQwen15MoeA27BConfig[] = R"({
  "architectures": ["Qwen2MoeForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "decoder_sparse_step": 1,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 5632,
  "max_position_embeddings": 32768,
  "max_window_layers": 21,
  "model_type": "qwen2_moe",
  "moe_intermediate_size": 1408,
  "norm_topk_prob": false,
  "num_attention_heads": 16,
  "num_experts": 60,
  "num_experts_per_tok": 4,
  "num_hidden_layers": 24,
  "num_key_value_heads": 16,
  "output_router_logits": false,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001,
  "shared_expert_intermediate_size": 5632,
  "sliding_window": 32768,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// allenai/OLMo-2-1124-7B's config.json (as secondary sources quote it).
constexpr char kOlmo2_7BConfig[] = R"({
  "architectures": ["Olmo2ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "eos_token_id": 100257,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "olmo2",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "pad_token_id": 100277,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 500000,
  "tie_word_embeddings": false,
  "torch_dtype": "float32",
  "transformers_version": "4.47.0.dev0",
  "use_cache": true,
  "vocab_size": 100352
})";

// OLMo 2: only output norms (no input_layernorm), q/k norms across all heads.
TEST_F(ModelDirTest, LoadsOlmo2WithOutputNormsAndQkNormsAcrossHeads) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kOlmo2_7BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Olmo2ForCausalLM");
  EXPECT_TRUE(config->qk_norm);
  EXPECT_TRUE(config->qk_norm_across_heads);
  EXPECT_TRUE(config->sandwich_norms);
  EXPECT_FALSE(config->pre_norms);
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_FALSE(config->o_proj_bias);
  EXPECT_EQ(config->torch_dtype, DType::kFloat32);
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:olmo-2-7b");
  ASSERT_TRUE(preset.ok()) << preset.status();
  ExpectSameModel(*preset, *config);

  const absl::StatusOr<ModelConfig> biased = LoadModelConfig(WriteConfig(
      ReplaceAll(kOlmo2_7BConfig, R"("attention_bias": false)", R"("attention_bias": true)")));
  ASSERT_TRUE(biased.ok()) << biased.status();
  EXPECT_TRUE(biased->qkv_bias);
  EXPECT_TRUE(biased->o_proj_bias);
}

// OLMo-3-1025-7B's shape (values as secondary sources quote them; layer_types written out by
// the test where it needs them): OLMo 2's block, a 4096-token window on three layers of four,
// YaRN factor 8 over 8192 positions on the full-attention layers only.
constexpr char kOlmo3_7BConfig[] = R"({
  "architectures": ["Olmo3ForCausalLM"],
  "attention_bias": false,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 11008,
  "max_position_embeddings": 65536,
  "model_type": "olmo3",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "rms_norm_eps": 1e-06,
  "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                   "attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1},
  "rope_theta": 500000,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 100278
})";

// OLMo 3: the sliding layers (three of four by default) rotate unscaled with rope_theta; YaRN
// only on the full-attention ones.
TEST_F(ModelDirTest, LoadsOlmo3WithUnscaledRotaryOnItsSlidingLayers) {
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kOlmo3_7BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->qk_norm_across_heads);
  EXPECT_FALSE(config->pre_norms);
  EXPECT_TRUE(config->sandwich_norms);
  ASSERT_TRUE(config->rope_scaling.has_value());
  EXPECT_EQ(config->rope_scaling->type, RopeScalingType::kYarn);
  EXPECT_EQ(MaxContextLength(*config), 65536);
  EXPECT_DOUBLE_EQ(config->rope_local_theta, 500000.0);
  for (int64_t layer = 0; layer < 32; ++layer) {
    const bool full = layer % 4 == 3;  // Olmo3Config: (i + 1) % 4 == 0 attends everything
    EXPECT_EQ(LayerSlidingWindow(*config, layer), full ? 0 : 4096) << layer;
    EXPECT_EQ(LayerIsSlidingKind(*config, layer), !full) << layer;
  }
  EXPECT_EQ(KvCacheSlidingWindow(*config), 0);  // the full layers keep every block

  // layer_types, when given, decide; a null window leaves every layer unwindowed, but the
  // sliding kind still rotates unscaled (transformers' Olmo3 picks the rotary by layer type).
  std::string types = R"("layer_types": [)";
  for (int layer = 0; layer < 32; ++layer) {
    absl::StrAppend(&types, layer == 0 ? "" : ", ",
                    layer < 2 ? R"("full_attention")" : R"("sliding_attention")");
  }
  absl::StrAppend(&types, R"(], "sliding_window": null)");
  config =
      LoadModelConfig(WriteConfig(ReplaceAll(kOlmo3_7BConfig, R"("sliding_window": 4096)", types)));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->sliding_window.has_value());
  EXPECT_FALSE(LayerIsSlidingKind(*config, 1));
  EXPECT_TRUE(LayerIsSlidingKind(*config, 2));
  EXPECT_EQ(LayerSlidingWindow(*config, 2), 0);

  // Without rope scaling every layer rotates alike; an absent window is Olmo3Config's 4096.
  config = LoadModelConfig(WriteConfig(ReplaceAll(
      ReplaceAll(kOlmo3_7BConfig, R"("sliding_window": 4096,)", ""),
      R"("rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                   "attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1},)",
      "")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->rope_local_theta, 0.0);
  EXPECT_EQ(LayerSlidingWindow(*config, 0), 4096);

  // LongRoPE has no unscaled form for the sliding layers here: refused, naming the key.
  std::string ones = "[1.0";
  for (int i = 1; i < 64; ++i) absl::StrAppend(&ones, ", 1.0");
  absl::StrAppend(&ones, "]");
  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(
          kOlmo3_7BConfig,
          R"("rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                   "attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1},)",
          absl::StrCat(R"("rope_scaling": {"rope_type": "longrope", "short_factor": )", ones,
                       R"(, "long_factor": )", ones,
                       R"(, "original_max_position_embeddings": 8192},)")))),
      absl::StatusCode::kInvalidArgument,
      {ConfigPath(), R"(field "rope_scaling" is longrope; OLMo 3 supports)"});
}

// EXAONE-4.0-32B's shape (values as secondary sources quote them): output norms only, per-head
// q/k norms, a 4096-token window on three layers of four ("LLLG"), llama3 rope scaling.
constexpr char kExaone4_32BConfig[] = R"({
  "architectures": ["Exaone4ForCausalLM"],
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 5120,
  "intermediate_size": 27392,
  "max_position_embeddings": 131072,
  "model_type": "exaone4",
  "num_attention_heads": 40,
  "num_hidden_layers": 64,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 1000000,
  "sliding_window": 4096,
  "sliding_window_pattern": "LLLG",
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 102400
})";

// EXAONE 4.0: the global layers attend everything without rotary; the local ones slide with it.
TEST_F(ModelDirTest, LoadsExaone4WithNoPeGlobalLayers) {
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kExaone4_32BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->qk_norm);
  EXPECT_FALSE(config->qk_norm_across_heads);
  EXPECT_FALSE(config->pre_norms);
  EXPECT_TRUE(config->sandwich_norms);
  EXPECT_FALSE(config->qkv_bias);
  ASSERT_EQ(config->nope_layers.size(), 64u);
  for (int64_t layer = 0; layer < 64; ++layer) {
    const bool global = layer % 4 == 3;
    EXPECT_EQ(LayerSlidingWindow(*config, layer), global ? 0 : 4096) << layer;
    EXPECT_EQ(config->nope_layers[static_cast<size_t>(layer)], global) << layer;
  }
  // A period says the same as "LLLG"; so does Exaone4Config's default, 4.
  for (const std::string pattern : {R"("sliding_window_pattern": 4,)", ""}) {
    const absl::StatusOr<ModelConfig> periodic = LoadModelConfig(WriteConfig(
        ReplaceAll(kExaone4_32BConfig, R"("sliding_window_pattern": "LLLG",)", pattern)));
    ASSERT_TRUE(periodic.ok()) << periodic.status();
    EXPECT_EQ(periodic->nope_layers, config->nope_layers) << pattern;
    EXPECT_EQ(LayerSlidingWindow(*periodic, 2), 4096);
    EXPECT_EQ(LayerSlidingWindow(*periodic, 3), 0);
  }
  // "LG" alternates; a null window rotates every layer and slides none (EXAONE-4.0-1.2B).
  config = LoadModelConfig(WriteConfig(ReplaceAll(kExaone4_32BConfig, R"("LLLG")", R"("LG")")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->nope_layers[0]);
  EXPECT_TRUE(config->nope_layers[1]);
  config = LoadModelConfig(WriteConfig(
      ReplaceAll(kExaone4_32BConfig, R"("sliding_window": 4096)", R"("sliding_window": null)")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->nope_layers.empty());
  EXPECT_EQ(LayerSlidingWindow(*config, 0), 0);

  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(kExaone4_32BConfig, R"("LLLG")", R"("LLXG")"))),
      absl::StatusCode::kInvalidArgument,
      {ConfigPath(), R"(field "sliding_window_pattern" is string "LLXG"; a string pattern lists L )"
                     "(local) and G (global) only"});
  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(kExaone4_32BConfig, R"("LLLG")", "1"))),
      absl::StatusCode::kInvalidArgument,
      {ConfigPath(), R"(field "sliding_window_pattern" is 1; a period must be at least 2)"});
}

// ByteDance-Seed/Seed-OSS-36B-Instruct's shape (values as secondary sources quote them).
constexpr char kSeedOss36BConfig[] = R"({
  "architectures": ["SeedOssForCausalLM"],
  "attention_bias": true,
  "attention_out_bias": false,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 5120,
  "intermediate_size": 27648,
  "max_position_embeddings": 524288,
  "mlp_bias": false,
  "model_type": "seed_oss",
  "num_attention_heads": 80,
  "num_hidden_layers": 64,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_theta": 10000000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 155136
})";

// Seed-OSS: q/k/v biases from attention_bias (true when absent), o_proj's from attention_out_bias.
TEST_F(ModelDirTest, LoadsSeedOssWithItsTwoAttentionBiasFlags) {
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kSeedOss36BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_FALSE(config->o_proj_bias);
  EXPECT_FALSE(config->mlp_bias);
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_EQ(MaxContextLength(*config), 524288);
  config = LoadModelConfig(
      WriteConfig(ReplaceAll(ReplaceAll(kSeedOss36BConfig, R"("attention_bias": true,)", ""),
                             R"("attention_out_bias": false)", R"("attention_out_bias": true)")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_TRUE(config->o_proj_bias);
  config = LoadModelConfig(WriteConfig(
      ReplaceAll(kSeedOss36BConfig, R"("attention_bias": true)", R"("attention_bias": false)")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->qkv_bias);
}

// allenai/OLMoE-1B-7B-0924's config.json (as secondary sources quote it).
constexpr char kOlmoE_1B_7BConfig[] = R"({
  "architectures": ["OlmoeForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "clip_qkv": null,
  "eos_token_id": 50279,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 1024,
  "max_position_embeddings": 4096,
  "model_type": "olmoe",
  "norm_topk_prob": false,
  "num_attention_heads": 16,
  "num_experts": 64,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 16,
  "num_key_value_heads": 16,
  "output_router_logits": false,
  "pad_token_id": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "router_aux_loss_coef": 0.01,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 50304
})";

// OLMoE: Llama's pre-norm block, OLMo 2's q/k norms across heads, experts of intermediate_size.
TEST_F(ModelDirTest, LoadsOlmoeWithQkNormsAcrossHeadsAndItsExperts) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kOlmoE_1B_7BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "OlmoeForCausalLM");
  EXPECT_TRUE(config->qk_norm);
  EXPECT_TRUE(config->qk_norm_across_heads);
  EXPECT_TRUE(config->pre_norms);
  EXPECT_FALSE(config->sandwich_norms);
  EXPECT_EQ(config->num_experts, 64);
  EXPECT_EQ(config->num_experts_per_tok, 8);
  EXPECT_EQ(config->intermediate_size, 1024);
  EXPECT_FALSE(config->norm_topk_prob);
  EXPECT_EQ(config->shared_expert_intermediate_size, 0);
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:olmoe-1b-7b");
  ASSERT_TRUE(preset.ok()) << preset.status();
  ExpectSameModel(*preset, *config);

  const absl::StatusOr<ModelConfig> renormalized = LoadModelConfig(WriteConfig(
      ReplaceAll(kOlmoE_1B_7BConfig, R"("norm_topk_prob": false)", R"("norm_topk_prob": true)")));
  ASSERT_TRUE(renormalized.ok()) << renormalized.status();
  EXPECT_TRUE(renormalized->norm_topk_prob);
  ExpectError(
      LoadModelConfig(
          WriteConfig(ReplaceAll(kOlmoE_1B_7BConfig, R"("clip_qkv": null)", R"("clip_qkv": 8.0)"))),
      absl::StatusCode::kInvalidArgument,
      {ConfigPath(), "field \"clip_qkv\" is 8; clamping q, k and v is not supported (only null)"});
  ExpectError(LoadModelConfig(WriteConfig(
                  ReplaceAll(kOlmoE_1B_7BConfig, R"("num_experts": 64)", R"("num_experts": 0)"))),
              absl::StatusCode::kInvalidArgument, {ConfigPath(), "field \"num_experts\""});
}

// zai-org/GLM-4.5-Air's config.json (its multi-token-prediction layer, num_nextn_predict_layers,
// is not loaded).
constexpr char kGlm45AirConfig[] = R"({
  "architectures": ["Glm4MoeForCausalLM"],
  "attention_bias": true,
  "attention_dropout": 0.0,
  "pad_token_id": 151329,
  "eos_token_id": [151329, 151336, 151338],
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "partial_rotary_factor": 0.5,
  "initializer_range": 0.02,
  "intermediate_size": 10944,
  "max_position_embeddings": 131072,
  "model_type": "glm4_moe",
  "moe_intermediate_size": 1408,
  "norm_topk_prob": true,
  "num_attention_heads": 96,
  "n_group": 1,
  "topk_group": 1,
  "n_routed_experts": 128,
  "n_shared_experts": 1,
  "routed_scaling_factor": 1.0,
  "num_experts_per_tok": 8,
  "first_k_dense_replace": 1,
  "num_hidden_layers": 46,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "num_nextn_predict_layers": 1,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.54.0",
  "use_cache": true,
  "use_qk_norm": false,
  "vocab_size": 151552
})";

// GLM-4.5: sigmoid routing with a correction bias, an ungated shared expert of
// n_shared_experts x moe_intermediate_size, the first first_k_dense_replace layers dense of
// intermediate_size; half-head rotary in the rotate-half layout.
TEST_F(ModelDirTest, LoadsGlm45WithDenseFirstLayersAndSigmoidRouting) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kGlm45AirConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->num_experts, 128);
  EXPECT_EQ(config->intermediate_size, 1408);
  EXPECT_EQ(config->dense_intermediate_size, 10944);
  EXPECT_EQ(config->shared_expert_intermediate_size, 1408);
  EXPECT_FALSE(config->shared_expert_gated);
  EXPECT_TRUE(config->moe_sigmoid_scores);
  EXPECT_TRUE(config->moe_correction_bias);
  EXPECT_EQ(config->rotary_dim, 64);
  EXPECT_FALSE(config->interleaved_rotary);
  EXPECT_FALSE(config->fused_gate_up);
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_FALSE(config->o_proj_bias);
  EXPECT_FALSE(LayerHasExperts(*config, 0));
  EXPECT_TRUE(LayerHasExperts(*config, 1));
  EXPECT_TRUE(LayerHasExperts(*config, 45));
  EXPECT_EQ(NumDenseMlpLayers(*config), 1);
  const absl::StatusOr<ModelConfig> air = LoadModelConfig("dummy:glm-4.5-air");
  ASSERT_TRUE(air.ok()) << air.status();
  ExpectSameModel(*air, *config);

  // GLM-4.5 itself: per-head q/k norms, 160 experts, 3 dense layers, routed weights x 2.5.
  std::string glm45 = kGlm45AirConfig;
  for (const auto& [from, to] : std::initializer_list<std::pair<const char*, const char*>>{
           {R"("hidden_size": 4096)", R"("hidden_size": 5120)"},
           {R"("intermediate_size": 10944)", R"("intermediate_size": 12288)"},
           {R"("moe_intermediate_size": 1408)", R"("moe_intermediate_size": 1536)"},
           {R"("n_routed_experts": 128)", R"("n_routed_experts": 160)"},
           {R"("routed_scaling_factor": 1.0)", R"("routed_scaling_factor": 2.5)"},
           {R"("first_k_dense_replace": 1)", R"("first_k_dense_replace": 3)"},
           {R"("num_hidden_layers": 46)", R"("num_hidden_layers": 92)"},
           {R"("use_qk_norm": false)", R"("use_qk_norm": true)"}}) {
    glm45 = ReplaceAll(glm45, from, to);
  }
  const absl::StatusOr<ModelConfig> big = LoadModelConfig(WriteConfig(glm45));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_TRUE(big->qk_norm);
  EXPECT_FALSE(big->qk_norm_across_heads);
  EXPECT_EQ(NumDenseMlpLayers(*big), 3);
  EXPECT_FALSE(LayerHasExperts(*big, 2));
  EXPECT_TRUE(LayerHasExperts(*big, 3));
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:glm-4.5");
  ASSERT_TRUE(preset.ok()) << preset.status();
  ExpectSameModel(*preset, *big);

  // Groups: 128 experts in 8 groups, the best 4 kept.
  const absl::StatusOr<ModelConfig> grouped = LoadModelConfig(
      WriteConfig(ReplaceAll(ReplaceAll(kGlm45AirConfig, R"("n_group": 1)", R"("n_group": 8)"),
                             R"("topk_group": 1)", R"("topk_group": 4)")));
  ASSERT_TRUE(grouped.ok()) << grouped.status();
  EXPECT_EQ(grouped->moe_num_groups, 8);
  EXPECT_EQ(grouped->moe_topk_groups, 4);
}

TEST_F(ModelDirTest, Glm45TakesGlm4MoeConfigDefaultsAndRefusesBadGroups) {
  // Without its MoE keys, Glm4MoeConfig's defaults: 128 experts of 1408, top 8, one shared
  // expert, one dense layer, no groups, norm_topk_prob true, scale 1, rotary on half a head.
  const absl::StatusOr<ModelConfig> defaults = LoadModelConfig(WriteConfig(R"({
    "architectures": ["Glm4MoeForCausalLM"], "vocab_size": 1000, "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 3, "num_attention_heads": 4,
    "max_position_embeddings": 2048})"));
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->num_experts, 128);
  EXPECT_EQ(defaults->intermediate_size, 1408);
  EXPECT_EQ(defaults->num_experts_per_tok, 8);
  EXPECT_EQ(defaults->shared_expert_intermediate_size, 1408);
  EXPECT_EQ(defaults->dense_mlp_layers, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(defaults->dense_intermediate_size, 512);
  EXPECT_EQ(defaults->moe_num_groups, 1);
  EXPECT_TRUE(defaults->norm_topk_prob);
  EXPECT_DOUBLE_EQ(defaults->routed_scaling_factor, 1.0);
  EXPECT_EQ(defaults->rotary_dim, 32);
  EXPECT_FALSE(defaults->qkv_bias);
  EXPECT_FALSE(defaults->qk_norm);

  const auto with = [this](const char* from, const char* to) {
    return LoadModelConfig(WriteConfig(ReplaceAll(kGlm45AirConfig, from, to)));
  };
  ExpectError(with(R"("n_group": 1)", R"("n_group": 3)"), absl::StatusCode::kInvalidArgument,
              {ConfigPath(),
               "field \"n_group\" is 3; it must split the 128 experts into equal "
               "groups of at least 2"});
  ExpectError(with(R"("n_group": 1)", R"("n_group": 128)"), absl::StatusCode::kInvalidArgument,
              {"field \"n_group\" is 128"});
  ExpectError(with(R"("topk_group": 1)", R"("topk_group": 2)"), absl::StatusCode::kInvalidArgument,
              {"field \"topk_group\" is 2; it must be at most n_group (1)"});
  // 64 groups of 2, 3 kept: 6 experts cannot hold the top 8.
  ExpectError(LoadModelConfig(WriteConfig(
                  ReplaceAll(ReplaceAll(kGlm45AirConfig, R"("n_group": 1)", R"("n_group": 64)"),
                             R"("topk_group": 1)", R"("topk_group": 3)"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"topk_group\" is 3; it must be at most n_group (64) and its groups must "
               "hold num_experts_per_tok (8) experts of 2 each"});
  ExpectError(with(R"("first_k_dense_replace": 1)", R"("first_k_dense_replace": -1)"),
              absl::StatusCode::kInvalidArgument,
              {"field \"first_k_dense_replace\" must not be negative, got -1"});
  ExpectError(with(R"("n_shared_experts": 1)", R"("n_shared_experts": 1.5)"),
              absl::StatusCode::kInvalidArgument,
              {"field \"n_shared_experts\" must be an integer, got"});
  ExpectError(with(R"("n_routed_experts": 128)", R"("n_routed_experts": 5000)"),
              absl::StatusCode::kInvalidArgument, {"field \"n_routed_experts\" is 5000"});
}

// rednote-hilab/dots.llm1's layout: Qwen3's attention with GLM-4.5's experts; its window on the
// layers from max_window_layers on (none by default: 62 of 62), the routing's counts required.
TEST_F(ModelDirTest, LoadsDots1WithQwen3AttentionAndDeepseekExperts) {
  constexpr char kDots1Config[] = R"({
    "architectures": ["Dots1ForCausalLM"], "vocab_size": 152064, "hidden_size": 4096,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_hidden_layers": 62,
    "num_attention_heads": 32, "num_key_value_heads": 32, "n_shared_experts": 2,
    "n_routed_experts": 128, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "norm_topk_prob": true, "routed_scaling_factor": 2.5, "max_position_embeddings": 32768,
    "rope_theta": 10000000, "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16"})";
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kDots1Config));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->qk_norm);
  EXPECT_FALSE(config->qk_norm_across_heads);
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_EQ(config->rotary_dim, 0);  // whole heads
  EXPECT_EQ(config->num_experts, 128);
  EXPECT_EQ(config->num_experts_per_tok, 6);
  EXPECT_EQ(config->intermediate_size, 1408);
  EXPECT_EQ(config->shared_expert_intermediate_size, 2 * 1408);
  EXPECT_FALSE(config->shared_expert_gated);
  EXPECT_TRUE(config->moe_sigmoid_scores);
  EXPECT_TRUE(config->moe_correction_bias);
  EXPECT_DOUBLE_EQ(config->routed_scaling_factor, 2.5);
  EXPECT_EQ(NumDenseMlpLayers(*config), 1);
  EXPECT_EQ(config->dense_intermediate_size, 10944);
  EXPECT_FALSE(config->sliding_window.has_value()) << "no layer from max_window_layers 62 on";

  // From max_window_layers 60 on, the last two layers slide (sliding_window 4096 by default).
  const absl::StatusOr<ModelConfig> windowed = LoadModelConfig(
      WriteConfig(ReplaceAll(kDots1Config, R"("num_hidden_layers": 62,)",
                             R"("num_hidden_layers": 62, "max_window_layers": 60,)")));
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  EXPECT_EQ(windowed->sliding_window, 4096);
  EXPECT_FALSE(LayerIsSlidingKind(*windowed, 59));
  EXPECT_TRUE(LayerIsSlidingKind(*windowed, 60));
  EXPECT_TRUE(LayerIsSlidingKind(*windowed, 61));
  const absl::StatusOr<ModelConfig> no_window = LoadModelConfig(WriteConfig(
      ReplaceAll(kDots1Config, R"("num_hidden_layers": 62,)",
                 R"("num_hidden_layers": 62, "max_window_layers": 0, "sliding_window": null,)")));
  ASSERT_TRUE(no_window.ok()) << no_window.status();
  EXPECT_FALSE(no_window->sliding_window.has_value());

  // Dots1Config's norm_topk_prob is false by default (Glm4MoeConfig's true).
  const absl::StatusOr<ModelConfig> raw_top_k =
      LoadModelConfig(WriteConfig(ReplaceAll(kDots1Config, R"("norm_topk_prob": true,)", "")));
  ASSERT_TRUE(raw_top_k.ok()) << raw_top_k.status();
  EXPECT_FALSE(raw_top_k->norm_topk_prob);

  // Dots1Config has no defaults for the counts (transformers fails without them).
  for (const char* key : {R"("n_shared_experts": 2,)", R"("n_routed_experts": 128, )",
                          R"("num_experts_per_tok": 6, )"}) {
    std::string field(key);
    field = field.substr(0, field.find(':'));
    ExpectError(LoadModelConfig(WriteConfig(ReplaceAll(kDots1Config, key, ""))),
                absl::StatusCode::kInvalidArgument,
                {absl::StrCat("field ", field, " is required but missing")});
  }
}

TEST_F(ModelDirTest, LoadsQwen2MoeWithItsSharedExpert) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kQwen15MoeA27BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Qwen2MoeForCausalLM");
  EXPECT_EQ(config->num_experts, 60);
  EXPECT_EQ(config->num_experts_per_tok, 4);
  EXPECT_EQ(config->intermediate_size, 1408) << "moe_intermediate_size, not the dense 5632";
  EXPECT_EQ(config->shared_expert_intermediate_size, 5632);
  EXPECT_FALSE(config->norm_topk_prob);
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_FALSE(config->o_proj_bias);
  EXPECT_FALSE(config->qk_norm);
  EXPECT_FALSE(config->sliding_window.has_value()) << "use_sliding_window is false";
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:qwen1.5-moe-a2.7b");
  ASSERT_TRUE(preset.ok()) << preset.status();
  ExpectSameModel(*preset, *config);

  // Defaults of Qwen2MoeConfig for keys a file leaves out; qkv_bias read where newer files say it.
  const absl::StatusOr<ModelConfig> bare = LoadModelConfig(
      WriteConfig(ReplaceAll(kQwen15MoeA27BConfig, R"("shared_expert_intermediate_size": 5632,)",
                             R"("qkv_bias": false,)")));
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->shared_expert_intermediate_size, 5632);
  EXPECT_FALSE(bare->qkv_bias);

  // What is not served is refused by name: dense layers, a window, a shared expert of no width.
  for (const auto& [from, to, field] :
       {std::tuple{R"("decoder_sparse_step": 1)", R"("decoder_sparse_step": 2)",
                   "decoder_sparse_step"},
        std::tuple{R"("use_sliding_window": false)", R"("use_sliding_window": true)",
                   "use_sliding_window"},
        std::tuple{R"("shared_expert_intermediate_size": 5632)",
                   R"("shared_expert_intermediate_size": 0)", "shared_expert_intermediate_size"}}) {
    const absl::StatusOr<ModelConfig> bad =
        LoadModelConfig(WriteConfig(ReplaceAll(kQwen15MoeA27BConfig, from, to)));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << to;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(field)) << to;
  }
}

TEST_F(ModelDirTest, LoadsPhi4MiniAndItsPresetIsThatConfig) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kPhi4MiniConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Phi3ForCausalLM");
  EXPECT_TRUE(config->fused_qkv);
  EXPECT_TRUE(config->fused_gate_up);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_EQ(RotaryDim(*config), 96);  // int(128 x 0.75)
  ASSERT_TRUE(config->long_rope.has_value());
  ASSERT_EQ(config->long_rope->long_factor.size(), 48u);
  EXPECT_DOUBLE_EQ(config->long_rope->long_factor[1], 1.118320672);
  EXPECT_DOUBLE_EQ(config->long_rope->long_factor[47], 47.77);
  EXPECT_EQ(config->long_rope->short_factor, std::vector<double>(48, 1.0));
  EXPECT_EQ(config->long_rope->original_max_position_embeddings, 4096);
  // ln(131072 / 4096) / ln(4096) = ln(2^5) / ln(2^12) = 5 / 12.
  EXPECT_NEAR(config->long_rope->attention_factor, std::sqrt(1.0 + 5.0 / 12.0), 1e-15);
  // A 262144-token window over 131072 positions never masks a key: served as none, so the plan
  // and the KV cache have one full-attention group.
  EXPECT_FALSE(config->sliding_window.has_value());
  EXPECT_EQ(LayerSlidingWindow(*config, 0), 0);
  EXPECT_EQ(KvCacheLayerGroups(*config).windows, std::vector<int32_t>{0});
  // One token short of the positions still masks the first key at the last position: kept.
  const absl::StatusOr<ModelConfig> windowed = LoadModelConfig(WriteConfig(
      ReplaceAll(kPhi4MiniConfig, R"("sliding_window": 262144)", R"("sliding_window": 131071)")));
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  EXPECT_EQ(windowed->sliding_window, 131071);
  const absl::StatusOr<ModelConfig> exact = LoadModelConfig(WriteConfig(
      ReplaceAll(kPhi4MiniConfig, R"("sliding_window": 262144)", R"("sliding_window": 131072)")));
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_FALSE(exact->sliding_window.has_value());

  // dummy:phi-4-mini is this config, field by field.
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:phi-4-mini");
  ASSERT_TRUE(preset.ok()) << preset.status();
  ExpectSameModel(*preset, *config);
  EXPECT_FALSE(preset->rope_scaling.has_value());
  ASSERT_TRUE(preset->long_rope.has_value());
  EXPECT_EQ(preset->long_rope->short_factor, config->long_rope->short_factor);
  EXPECT_EQ(preset->long_rope->long_factor, config->long_rope->long_factor);
  EXPECT_EQ(preset->long_rope->original_max_position_embeddings,
            config->long_rope->original_max_position_embeddings);
  EXPECT_DOUBLE_EQ(preset->long_rope->attention_factor, config->long_rope->attention_factor);
}

TEST_F(ModelDirTest, LoadsGemma3_1BWithLocalRopeAndFiveSlidingLayersInSix) {
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kGemma3_1BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Gemma3ForCausalLM");
  EXPECT_TRUE(config->qk_norm);
  EXPECT_TRUE(config->norm_weight_offset);
  EXPECT_DOUBLE_EQ(config->embedding_multiplier, std::sqrt(1152.0));
  EXPECT_TRUE(config->sandwich_norms);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->hidden_activation, Activation::kGeluTanh);
  EXPECT_DOUBLE_EQ(config->attn_logit_softcapping, 0.0);
  EXPECT_DOUBLE_EQ(config->final_logit_softcapping, 0.0);
  EXPECT_DOUBLE_EQ(config->rope_theta, 1000000.0);
  EXPECT_DOUBLE_EQ(config->rope_local_theta, 10000.0);
  EXPECT_DOUBLE_EQ(config->query_pre_attn_scalar, 256.0);
  // transformers' Gemma3TextConfig: layer i slides unless (i + 1) % 6 == 0.
  for (int64_t layer = 0; layer < 26; ++layer) {
    EXPECT_EQ(LayerSlidingWindow(*config, layer), (layer + 1) % 6 == 0 ? 0 : 512) << layer;
  }
  // The preset is this shape.
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:gemma-3-1b");
  ASSERT_TRUE(preset.ok()) << preset.status();
  EXPECT_EQ(preset->architecture, config->architecture);
  EXPECT_EQ(preset->hidden_size, config->hidden_size);
  EXPECT_EQ(preset->num_key_value_heads, config->num_key_value_heads);
  EXPECT_EQ(preset->head_dim, config->head_dim);
  EXPECT_EQ(preset->vocab_size, config->vocab_size);
  EXPECT_EQ(preset->max_position_embeddings, config->max_position_embeddings);
  EXPECT_EQ(preset->qk_norm, config->qk_norm);
  EXPECT_EQ(preset->sandwich_norms, config->sandwich_norms);
  EXPECT_DOUBLE_EQ(preset->embedding_multiplier, config->embedding_multiplier);
  EXPECT_DOUBLE_EQ(preset->final_logit_softcapping, config->final_logit_softcapping);
  EXPECT_DOUBLE_EQ(preset->rope_local_theta, config->rope_local_theta);
  for (int64_t layer = 0; layer < 26; ++layer) {
    EXPECT_EQ(LayerSlidingWindow(*preset, layer), LayerSlidingWindow(*config, layer)) << layer;
  }
}

TEST_F(ModelDirTest, Gemma3NewerKeysAndRefusals) {
  // transformers 5: layer_types decides the sliding layers and rope_parameters is per layer type.
  std::string json = ReplaceAll(
      kGemma3_1BConfig, R"("sliding_window_pattern": 6,)",
      R"("layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],)");
  json = ReplaceAll(json, R"(  "rope_local_base_freq": 10000,
)",
                    "");
  json = ReplaceAll(json, R"(  "rope_theta": 1000000,
)",
                    "");
  json = ReplaceAll(
      json, R"("rope_scaling": null,)",
      R"("rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 500000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},)");
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_DOUBLE_EQ(config->rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(config->rope_local_theta, 20000.0);
  EXPECT_EQ(LayerSlidingWindow(*config, 0), 512);
  EXPECT_EQ(LayerSlidingWindow(*config, 1), 0);
  EXPECT_EQ(LayerSlidingWindow(*config, 3), 0);
  EXPECT_EQ(LayerSlidingWindow(*config, 5), 512);
  EXPECT_EQ(LayerSlidingWindow(*config, 25), 0);

  // Absent keys take Gemma3TextConfig's defaults: rope_theta 1e6, local base 10000, pattern 6.
  json = ReplaceAll(kGemma3_1BConfig, R"(  "sliding_window_pattern": 6,
)",
                    "");
  json = ReplaceAll(json, R"(  "rope_theta": 1000000,
)",
                    "");
  config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_DOUBLE_EQ(config->rope_theta, 1000000.0);
  EXPECT_EQ(LayerSlidingWindow(*config, 4), 512);
  EXPECT_EQ(LayerSlidingWindow(*config, 5), 0);

  ExpectError(LoadModelConfig(WriteConfig(
                  ReplaceAll(kGemma3_1BConfig, R"("use_cache": true,)",
                             R"("use_cache": true, "use_bidirectional_attention": true,)"))),
              absl::StatusCode::kInvalidArgument,
              {ConfigPath(), "\"use_bidirectional_attention\" is true"});
  // Gemma 3 4B+'s linear scaling of the global layers' rotary (as text-only conversions such as
  // gemma-3-12b-it-text-only keep it), from rope_scaling or transformers 5's rope_parameters.
  const absl::StatusOr<ModelConfig> linear = LoadModelConfig(
      WriteConfig(ReplaceAll(kGemma3_1BConfig, R"("rope_scaling": null)",
                             R"("rope_scaling": {"factor": 8.0, "rope_type": "linear"})")));
  ASSERT_TRUE(linear.ok()) << linear.status();
  ASSERT_TRUE(linear->rope_scaling.has_value());
  EXPECT_EQ(linear->rope_scaling->type, RopeScalingType::kLinear);
  EXPECT_DOUBLE_EQ(linear->rope_scaling->factor, 8.0);
  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(kGemma3_1BConfig, R"("rope_scaling": null)",
                                             R"("rope_scaling": {"rope_type": "linear"})"))),
      absl::StatusCode::kInvalidArgument,
      {"\"rope_scaling.factor\" is required for linear rope scaling"});
  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(kGemma3_1BConfig, R"("sliding_window_pattern": 6,)",
                                             R"("layer_types": ["sliding_attention"],)"))),
      absl::StatusCode::kInvalidArgument, {"\"layer_types\" must list one type per layer (26)"});
}

// google/gemma-3-4b-it's config.json (the vision settings cut): Gemma3ForConditionalGeneration
// with a sparse text_config; the rest are Gemma3TextConfig's defaults.
TEST_F(ModelDirTest, LoadsGemma3_4BLanguageModelFromItsMultimodalConfig) {
  constexpr std::string_view kGemma3_4B = R"({
  "architectures": ["Gemma3ForConditionalGeneration"],
  "boi_token_index": 255999,
  "eoi_token_index": 256000,
  "eos_token_id": [1, 106],
  "image_token_index": 262144,
  "initializer_range": 0.02,
  "mm_tokens_per_image": 256,
  "model_type": "gemma3",
  "text_config": {
    "hidden_size": 2560,
    "intermediate_size": 10240,
    "model_type": "gemma3_text",
    "num_hidden_layers": 34,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024
  },
  "torch_dtype": "bfloat16",
  "transformers_version": "4.50.0.dev0",
  "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model"}
})";
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kGemma3_4B));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Gemma3ForConditionalGeneration");
  EXPECT_TRUE(config->language_model_of_multimodal);
  EXPECT_EQ(config->hidden_size, 2560);
  EXPECT_EQ(config->intermediate_size, 10240);
  EXPECT_EQ(config->num_hidden_layers, 34);
  EXPECT_EQ(config->num_attention_heads, 8);
  EXPECT_EQ(config->num_key_value_heads, 4);
  EXPECT_EQ(config->head_dim, 256);
  EXPECT_EQ(config->vocab_size, 262208);
  EXPECT_EQ(config->max_position_embeddings, 131072);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_TRUE(config->qk_norm);
  EXPECT_DOUBLE_EQ(config->rope_theta, 1000000.0);
  EXPECT_DOUBLE_EQ(config->rope_local_theta, 10000.0);
  EXPECT_DOUBLE_EQ(config->query_pre_attn_scalar, 256.0);
  EXPECT_EQ(config->sliding_window, 1024);
  EXPECT_EQ(LayerSlidingWindow(*config, 4), 1024);
  EXPECT_EQ(LayerSlidingWindow(*config, 5), 0);
  ASSERT_TRUE(config->rope_scaling.has_value());
  EXPECT_EQ(config->rope_scaling->type, RopeScalingType::kLinear);
  EXPECT_DOUBLE_EQ(config->rope_scaling->factor, 8.0);
  // Gemma 3's 131072 already counts the factor: vLLM does not multiply it again.
  EXPECT_EQ(MaxContextLength(*config), 131072);
  EXPECT_EQ(MaxContextSource(*config), "");
  EXPECT_EQ(config->torch_dtype, DType::kBFloat16);

  ExpectError(LoadModelConfig(
                  WriteConfig(ReplaceAll(kGemma3_4B, R"("text_config")", R"("language_config")"))),
              absl::StatusCode::kInvalidArgument, {"field \"text_config\" must be an object"});

  // --hf-overrides changes text_config key by key, as vLLM updates a nested config: the window
  // is the override's and the rest of text_config stays.
  const absl::StatusOr<ModelConfig> overridden =
      LoadModelConfig(WriteConfig(kGemma3_4B), R"({"text_config": {"sliding_window": 512}})");
  ASSERT_TRUE(overridden.ok()) << overridden.status();
  EXPECT_EQ(overridden->sliding_window, 512);
  EXPECT_EQ(overridden->num_hidden_layers, 34);
  EXPECT_EQ(overridden->hidden_size, 2560);
  ASSERT_TRUE(overridden->rope_scaling.has_value());
  EXPECT_EQ(overridden->rope_scaling->type, RopeScalingType::kLinear);
}

// Phi-3.5-mini-instruct's LongRoPE: 48 factors per list (head_dim 96), pretrained at 4096,
// extended to 131072; its attention factor is sqrt(1 + ln(131072 / 4096) / ln(4096)).
TEST_F(ModelDirTest, LoadsPhi35LongRope) {
  std::string shorts;
  std::string longs;
  for (int i = 0; i < 48; ++i) {
    absl::StrAppend(&shorts, i > 0 ? ", " : "", 1.0 + 0.01 * i);
    absl::StrAppend(&longs, i > 0 ? ", " : "", 1.0 + 1.3 * i);
  }
  const std::string longrope =
      absl::StrCat(R"("rope_scaling": {"type": "longrope", "short_factor": [)", shorts,
                   R"(], "long_factor": [)", longs, "]}");
  const std::string phi35 =
      ReplaceAll(ReplaceAll(kPhi3MiniConfig, R"("max_position_embeddings": 4096)",
                            R"("max_position_embeddings": 131072)"),
                 R"("rope_scaling": null)", longrope);
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(phi35));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->long_rope.has_value());
  EXPECT_FALSE(config->rope_scaling.has_value());
  EXPECT_EQ(config->long_rope->original_max_position_embeddings, 4096);
  ASSERT_EQ(config->long_rope->short_factor.size(), 48u);
  EXPECT_DOUBLE_EQ(config->long_rope->short_factor[47], 1.47);
  EXPECT_DOUBLE_EQ(config->long_rope->long_factor[47], 1.0 + 1.3 * 47);
  EXPECT_NEAR(config->long_rope->attention_factor, 1.1902380714238083, 1e-15);
  // The old name "su" is the same scaling; an explicit attention_factor wins.
  const absl::StatusOr<ModelConfig> su = LoadModelConfig(
      WriteConfig(ReplaceAll(ReplaceAll(phi35, R"("type": "longrope")", R"("type": "su")"),
                             R"("short_factor")", R"("attention_factor": 1.5, "short_factor")")));
  ASSERT_TRUE(su.ok()) << su.status();
  EXPECT_DOUBLE_EQ(su->long_rope->attention_factor, 1.5);
  // No extension (max_position_embeddings = the original): no attention factor.
  const absl::StatusOr<ModelConfig> unextended = LoadModelConfig(
      WriteConfig(ReplaceAll(kPhi3MiniConfig, R"("rope_scaling": null)", longrope)));
  ASSERT_TRUE(unextended.ok()) << unextended.status();
  EXPECT_DOUBLE_EQ(unextended->long_rope->attention_factor, 1.0);

  ExpectError(
      LoadModelConfig(WriteConfig(ReplaceAll(phi35, absl::StrCat("[", shorts, "]"), "[1.0, 2.0]"))),
      absl::StatusCode::kInvalidArgument,
      {"\"rope_scaling.short_factor\" must be a list of 48 numbers"});
  ExpectError(LoadModelConfig(WriteConfig(ReplaceAll(phi35, "[1, ", "[0, "))),
              absl::StatusCode::kInvalidArgument, {"must hold positive numbers, got 0"});
  ExpectError(LoadModelConfig(WriteConfig(ReplaceAll(phi35, R"("short_factor")",
                                                     R"("short_mscale": 1.1, "short_factor")"))),
              absl::StatusCode::kInvalidArgument,
              {"\"rope_scaling.short_mscale\" is not supported"});
  ExpectError(LoadModelConfig(WriteConfig(
                  ReplaceAll(phi35, R"("original_max_position_embeddings": 4096,)", ""))),
              absl::StatusCode::kInvalidArgument,
              {"\"original_max_position_embeddings\" is required by longrope scaling"});
}

TEST_F(ModelDirTest, LoadsGraniteMultipliers) {
  // A GraniteForCausalLM config.json with Granite 3.x's muP multipliers.
  const std::string json = ReplaceAll(
      ReplaceAll(kLlama3_8BConfig, R"("LlamaForCausalLM")", R"("GraniteForCausalLM")"),
      R"("hidden_act": "silu",)",
      R"("hidden_act": "silu", "embedding_multiplier": 12.0, "attention_multiplier": 0.0078125, "residual_multiplier": 0.22, "logits_scaling": 16.0,)");
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "GraniteForCausalLM");
  EXPECT_DOUBLE_EQ(config->embedding_multiplier, 12.0);
  EXPECT_DOUBLE_EQ(config->attention_multiplier, 0.0078125);
  EXPECT_DOUBLE_EQ(config->residual_multiplier, 0.22);
  EXPECT_DOUBLE_EQ(config->logits_scaling, 16.0);
  // GraniteConfig's defaults are all 1; a Llama config keeps them at 1 (and no attention
  // multiplier, so head_dim^-0.5).
  config = LoadModelConfig(WriteConfig(
      ReplaceAll(kLlama3_8BConfig, R"("LlamaForCausalLM")", R"("GraniteForCausalLM")")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_DOUBLE_EQ(config->embedding_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(config->attention_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(config->residual_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(config->logits_scaling, 1.0);
  config = LoadModelConfig(WriteConfig(kLlama3_8BConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_DOUBLE_EQ(config->embedding_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(config->attention_multiplier, 0.0);
  ExpectError(LoadModelConfig(WriteConfig(
                  ReplaceAll(json, R"("logits_scaling": 16.0)", R"("logits_scaling": 0)"))),
              absl::StatusCode::kInvalidArgument, {"\"logits_scaling\" must be positive, got 0"});
}

TEST_F(ModelDirTest, UnsupportedArchitectureListsTheSupportedOnes) {
  ExpectError(
      LoadModelConfig(WriteConfig(Llama3With("\"LlamaForCausalLM\"", "\"GPT2LMHeadModel\""))),
      absl::StatusCode::kInvalidArgument,
      {ConfigPath(), "unsupported architecture \"GPT2LMHeadModel\"",
       "supported: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, "
       "Qwen2MoeForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, GemmaForCausalLM, "
       "Gemma2ForCausalLM, "
       "Gemma3ForCausalLM, Phi3ForCausalLM, GraniteForCausalLM, GraniteMoeForCausalLM, "
       "SmolLM3ForCausalLM, GlmForCausalLM, Glm4ForCausalLM, Olmo2ForCausalLM, "
       "Olmo3ForCausalLM, OlmoeForCausalLM, Exaone4ForCausalLM, SeedOssForCausalLM, "
       "Glm4MoeForCausalLM, Dots1ForCausalLM, Gemma3ForConditionalGeneration, and "
       "the ForSequenceClassification form of each but Gemma 3's"});
}

TEST_F(ModelDirTest, UnsupportedActivationDtypeAndRopeScaling) {
  ExpectError(LoadModelConfig(
                  WriteConfig(Llama3With(R"("hidden_act": "silu")", R"("hidden_act": "gelu")"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"hidden_act\" names unsupported activation \"gelu\"; supported: silu, "
               "gelu_pytorch_tanh, gelu_new"});
  ExpectError(LoadModelConfig(WriteConfig(
                  Llama3With(R"("torch_dtype": "bfloat16")", R"("torch_dtype": "float8_e4m3fn")"))),
              absl::StatusCode::kInvalidArgument,
              {"field \"torch_dtype\"", "unsupported dtype \"float8_e4m3fn\""});
  ExpectError(
      LoadModelConfig(WriteConfig(Llama3With(
          R"("rope_scaling": null)", R"("rope_scaling": {"type": "dynamic", "factor": 4.0})"))),
      absl::StatusCode::kInvalidArgument,
      {"field \"rope_scaling.rope_type\" names unsupported rope scaling \"dynamic\"",
       "supported: default, linear, llama3, longrope, yarn"});
  ExpectError(
      LoadModelConfig(WriteConfig(Llama3With(
          R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})"))),
      absl::StatusCode::kInvalidArgument,
      {"field \"rope_scaling.original_max_position_embeddings\" is required"});
}

// A position-interpolation fine-tune of Llama 2 (lmsys/vicuna-7b-v1.5-16k: 4096 positions,
// "rope_scaling": {"factor": 4.0, "type": "linear"}) serves 16384 tokens, as vLLM derives its
// max_model_len; Gemma 3, whose max_position_embeddings already counts its factor, is the
// exception (LoadsGemma3_4BLanguageModelFromItsMultimodalConfig).
TEST_F(ModelDirTest, LinearRopeScalingStretchesTheContextByItsFactor) {
  std::string json =
      Llama3With(R"("max_position_embeddings": 8192)", R"("max_position_embeddings": 4096)");
  json = ReplaceAll(json, R"("rope_scaling": null)",
                    R"("rope_scaling": {"factor": 4.0, "type": "linear"})");
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_position_embeddings, 4096);
  EXPECT_EQ(MaxContextLength(*config), 16384);
  EXPECT_EQ(MaxContextSource(*config),
            "rope_scaling linear: max_position_embeddings 4096 x factor 4");
  // vLLM truncates a fractional product: int(4096 x 1.5001) = 6144.
  json = ReplaceAll(json, R"("factor": 4.0)", R"("factor": 1.5001)");
  const absl::StatusOr<ModelConfig> fractional = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(fractional.ok()) << fractional.status();
  EXPECT_EQ(MaxContextLength(*fractional), 6144);
}

// Qwen3-8B with the yarn block its model card gives for contexts past 32768 (vLLM's reading:
// the factor as given, the ramp over the pretrained 32768, the context 32768 x 4 = 131072 though
// config.json's max_position_embeddings says 40960).
TEST_F(ModelDirTest, LoadsQwen3YarnAsItsModelCardGivesIt) {
  const std::string json = ReplaceAll(kQwen3_8BConfig, R"("rope_scaling": null)",
                                      R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                          "original_max_position_embeddings": 32768})");
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->rope_scaling.has_value());
  const RopeScaling& yarn = *config->rope_scaling;
  EXPECT_EQ(yarn.type, RopeScalingType::kYarn);
  EXPECT_DOUBLE_EQ(yarn.factor, 4.0);
  EXPECT_EQ(yarn.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(yarn.beta_fast, 32.0);
  EXPECT_DOUBLE_EQ(yarn.beta_slow, 1.0);
  EXPECT_NEAR(yarn.attention_factor, 1.1386294361119891, 1e-15);  // 0.1 ln 4 + 1
  EXPECT_EQ(config->max_position_embeddings, 40960);
  EXPECT_EQ(MaxContextLength(*config), 131072);
  EXPECT_EQ(MaxContextSource(*config),
            "rope_scaling yarn: original_max_position_embeddings 32768 x factor 4");
  // Without the scaling, the context is max_position_embeddings and the source empty.
  const absl::StatusOr<ModelConfig> plain = LoadModelConfig(WriteConfig(kQwen3_8BConfig));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(MaxContextLength(*plain), 40960);
  EXPECT_EQ(MaxContextSource(*plain), "");
}

// Qwen2.5's block spells the type "type"; without original_max_position_embeddings the
// pretrained length is max_position_embeddings (transformers' reading). transformers 5's
// rope_parameters carries the same block; betas of 0 or null take transformers' defaults.
TEST_F(ModelDirTest, YarnDefaultsAndTheRopeParametersForm) {
  std::string json = ReplaceAll(kQwen3_8BConfig, R"("max_position_embeddings": 40960)",
                                R"("max_position_embeddings": 32768)");
  const absl::StatusOr<ModelConfig> qwen25 = LoadModelConfig(WriteConfig(ReplaceAll(
      json, R"("rope_scaling": null)", R"("rope_scaling": {"type": "yarn", "factor": 2})")));
  ASSERT_TRUE(qwen25.ok()) << qwen25.status();
  EXPECT_EQ(qwen25->rope_scaling->original_max_position_embeddings, 32768);
  EXPECT_EQ(MaxContextLength(*qwen25), 65536);
  EXPECT_NEAR(qwen25->rope_scaling->attention_factor, 1.0693147180559945, 1e-15);  // 0.1 ln 2 + 1

  json = ReplaceAll(json, R"("rope_theta": 1000000,)", "");
  json = ReplaceAll(json, R"("rope_scaling": null)",
                    R"("rope_parameters": {"rope_type": "yarn", "rope_theta": 500000.0,
                        "factor": 8.0, "original_max_position_embeddings": 4096,
                        "beta_fast": 0, "beta_slow": null, "attention_factor": 0.8})");
  const absl::StatusOr<ModelConfig> v5 = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(v5.ok()) << v5.status();
  EXPECT_DOUBLE_EQ(v5->rope_theta, 500000.0);
  EXPECT_EQ(v5->rope_scaling->type, RopeScalingType::kYarn);
  EXPECT_DOUBLE_EQ(v5->rope_scaling->beta_fast, 32.0);
  EXPECT_DOUBLE_EQ(v5->rope_scaling->beta_slow, 1.0);
  EXPECT_DOUBLE_EQ(v5->rope_scaling->attention_factor, 0.8);
  EXPECT_EQ(MaxContextLength(*v5), 32768);
}

// What would change YaRN's numbers from transformers' and vLLM's is refused, naming the key.
TEST_F(ModelDirTest, YarnKeysHeadroomCannotHonourAreRefused) {
  const auto with = [](std::string_view block) {
    return ReplaceAll(
        kQwen3_8BConfig, R"("rope_scaling": null)",
        absl::StrCat(R"("rope_scaling": {"rope_type": "yarn", )", std::string(block), "}"));
  };
  const struct {
    std::string_view block;
    std::vector<std::string> needles;
  } cases[] = {
      {R"("original_max_position_embeddings": 32768)",
       {"\"rope_scaling.factor\" is required for yarn rope scaling"}},
      {R"("factor": 0.5)", {"\"rope_scaling.factor\" must be at least 1 for yarn, got 0.5"}},
      {R"("factor": 1e300, "original_max_position_embeddings": 32768)",
       {"\"rope_scaling.factor\" is 1e+300: 32768 x 1e+300 positions exceed the largest context "
        "headroom serves (134217728)"}},
      {R"("factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0)",
       {"\"rope_scaling.mscale\" is not supported (DeepSeek's YaRN variant)"}},
      {R"("factor": 32, "truncate": false)",
       {"\"rope_scaling.truncate\" is false; only the truncated ramp is supported"}},
      {R"("factor": 4, "beta_fast": 1, "beta_slow": 32)",
       {"\"rope_scaling.beta_fast\" must be at least beta_slow (32), got 1"}},
      {R"("factor": 4, "beta_slow": -1)", {"\"rope_scaling.beta_slow\" must be positive, got -1"}},
      {R"("factor": 4, "attn_factor": 2)",
       {"\"rope_scaling.attn_factor\" is 2; only 1 is supported"}},
      {R"("factor": 4, "attention_factor": 0)",
       {"\"rope_scaling.attention_factor\" must be positive, got 0"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.block);
    ExpectError(LoadModelConfig(WriteConfig(with(c.block))), absl::StatusCode::kInvalidArgument,
                c.needles);
  }
  // vLLM's own keys at their neutral value are accepted.
  EXPECT_TRUE(LoadModelConfig(
                  WriteConfig(with(R"("factor": 4, "attn_factor": 1, "extrapolation_factor": 1)")))
                  .ok());
}

// vLLM's --hf-overrides, as Qwen's docs use it to turn YaRN on: the object's keys replace
// config.json's (a whole rope_scaling block), errors name the file "with --hf-overrides", and
// what is not an object of keys is refused before the file is read.
TEST_F(ModelDirTest, HfOverridesReplaceConfigKeysBeforeTheConfigIsRead) {
  const std::string dir = WriteConfig(Llama3With(R"("rope_scaling": null)", kLlama31RopeScaling));
  const absl::StatusOr<ModelConfig> yarn = LoadModelConfig(
      dir, R"({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}, "rope_theta": 1e6})");
  ASSERT_TRUE(yarn.ok()) << yarn.status();
  EXPECT_EQ(yarn->rope_scaling->type, RopeScalingType::kYarn);
  EXPECT_EQ(yarn->rope_scaling->original_max_position_embeddings, 8192)
      << "the whole block is replaced: llama3's original_max_position_embeddings is gone";
  EXPECT_DOUBLE_EQ(yarn->rope_theta, 1e6);
  EXPECT_EQ(MaxContextLength(*yarn), 16384);
  EXPECT_EQ(yarn->source, dir + " (with --hf-overrides)");
  // null removes the block, as setting the attribute to None does in vLLM.
  const absl::StatusOr<ModelConfig> none = LoadModelConfig(dir, R"({"rope_scaling": null})");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->rope_scaling.has_value());
  // An empty flag is no override.
  const absl::StatusOr<ModelConfig> plain = LoadModelConfig(dir, "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->rope_scaling->type, RopeScalingType::kLlama3);
  EXPECT_EQ(plain->source, dir);

  ExpectError(
      LoadModelConfig(dir, R"({"rope_scaling": {"rope_type": "yarn", "factor": 0.5}})"),
      absl::StatusCode::kInvalidArgument,
      {ConfigPath() + " with --hf-overrides: field \"rope_scaling.factor\" must be at least 1"});
  ExpectError(
      LoadModelConfig(dir, R"([{"rope_theta": 1e6}])"), absl::StatusCode::kInvalidArgument,
      {"--hf-overrides must be a JSON object of config.json keys (vLLM's dict), got array"});
  ExpectError(LoadModelConfig(dir, R"({"rope_theta": )"), absl::StatusCode::kInvalidArgument,
              {"--hf-overrides: malformed JSON: parse error at line 1"});
  ExpectError(LoadModelConfig("dummy:tiny", "{}"), absl::StatusCode::kInvalidArgument,
              {"--hf-overrides changes a model directory's config.json, and dummy:tiny has none"});
}

// ---- Presets. ----

TEST(ModelConfigTest, PresetsHaveThePublishedShapes) {
  struct Expected {
    const char* name;
    const char* architecture;
    int64_t layers, hidden, heads, kv_heads, intermediate, vocab, max_positions;
    bool qkv_bias, tied;
    DType dtype;
  };
  for (const Expected& e : {
           Expected{"tiny", "LlamaForCausalLM", 2, 64, 4, 2, 128, 256, 2048, false, true,
                    DType::kFloat32},
           Expected{"small", "LlamaForCausalLM", 12, 768, 12, 4, 2048, 32000, 4096, false, false,
                    DType::kFloat32},
           Expected{"llama-2-7b", "LlamaForCausalLM", 32, 4096, 32, 32, 11008, 32000, 4096, false,
                    false, DType::kFloat16},
           Expected{"llama-3-8b", "LlamaForCausalLM", 32, 4096, 32, 8, 14336, 128256, 8192, false,
                    false, DType::kBFloat16},
           Expected{"llama-3.1-8b", "LlamaForCausalLM", 32, 4096, 32, 8, 14336, 128256, 131072,
                    false, false, DType::kBFloat16},
           Expected{"llama-3-70b", "LlamaForCausalLM", 80, 8192, 64, 8, 28672, 128256, 8192, false,
                    false, DType::kBFloat16},
           Expected{"mistral-7b", "MistralForCausalLM", 32, 4096, 32, 8, 14336, 32000, 32768, false,
                    false, DType::kBFloat16},
           Expected{"qwen2-7b", "Qwen2ForCausalLM", 28, 3584, 28, 4, 18944, 152064, 131072, true,
                    false, DType::kBFloat16},
           Expected{"qwen3-8b", "Qwen3ForCausalLM", 36, 4096, 32, 8, 12288, 151936, 40960, false,
                    false, DType::kBFloat16},
       }) {
    const absl::StatusOr<ModelConfig> config = LoadModelConfig(absl::StrCat("dummy:", e.name));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->source, absl::StrCat("dummy:", e.name));
    EXPECT_EQ(config->architecture, e.architecture) << e.name;
    EXPECT_EQ(config->num_hidden_layers, e.layers) << e.name;
    EXPECT_EQ(config->hidden_size, e.hidden) << e.name;
    EXPECT_EQ(config->num_attention_heads, e.heads) << e.name;
    EXPECT_EQ(config->num_key_value_heads, e.kv_heads) << e.name;
    EXPECT_EQ(config->head_dim, e.hidden / e.heads) << e.name;
    EXPECT_EQ(config->intermediate_size, e.intermediate) << e.name;
    EXPECT_EQ(config->vocab_size, e.vocab) << e.name;
    EXPECT_EQ(config->max_position_embeddings, e.max_positions) << e.name;
    EXPECT_EQ(config->qkv_bias, e.qkv_bias) << e.name;
    EXPECT_EQ(config->tie_word_embeddings, e.tied) << e.name;
    EXPECT_EQ(config->torch_dtype, e.dtype) << e.name;
  }
}

TEST(ModelConfigTest, PresetRopeSettings) {
  EXPECT_DOUBLE_EQ(LoadModelConfig("dummy:llama-3-8b")->rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(LoadModelConfig("dummy:llama-2-7b")->rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(LoadModelConfig("dummy:qwen2-7b")->rope_theta, 1000000.0);
  EXPECT_EQ(LoadModelConfig("dummy:mistral-7b")->sliding_window, 4096);
  const absl::StatusOr<ModelConfig> llama31 = LoadModelConfig("dummy:llama-3.1-8b");
  ASSERT_TRUE(llama31->rope_scaling.has_value());
  EXPECT_DOUBLE_EQ(llama31->rope_scaling->factor, 8.0);
  EXPECT_EQ(llama31->rope_scaling->original_max_position_embeddings, 8192);
}

TEST(ModelConfigTest, PresetMatchesItsPublishedConfigJson) {
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:llama-3-8b");
  const absl::StatusOr<ModelConfig> parsed = ParseModelConfigJson(kLlama3_8BConfig, "x");
  ASSERT_TRUE(preset.ok() && parsed.ok());
  EXPECT_EQ(preset->num_key_value_heads, parsed->num_key_value_heads);
  EXPECT_DOUBLE_EQ(preset->rms_norm_eps, parsed->rms_norm_eps);
  const absl::StatusOr<ModelConfig> qwen = LoadModelConfig("dummy:qwen2-7b");
  const absl::StatusOr<ModelConfig> qwen_parsed = ParseModelConfigJson(kQwen2_7BConfig, "x");
  ASSERT_TRUE(qwen.ok() && qwen_parsed.ok());
  EXPECT_EQ(qwen->qkv_bias, qwen_parsed->qkv_bias);
  EXPECT_DOUBLE_EQ(qwen->rms_norm_eps, qwen_parsed->rms_norm_eps);
  EXPECT_EQ(qwen->max_position_embeddings, qwen_parsed->max_position_embeddings);
}

TEST(ModelConfigTest, UnknownPresetListsThePresets) {
  ExpectError(
      LoadModelConfig("dummy:llama-4"), absl::StatusCode::kNotFound,
      {"unknown preset \"dummy:llama-4\"",
       "presets: gemma-2-2b, gemma-3-1b, glm-4-9b, glm-4.5, glm-4.5-air, llama-2-7b, llama-3-70b, "
       "llama-3-8b, "
       "llama-3.1-8b, mistral-7b, "
       "mixtral-8x7b, olmo-2-7b, olmoe-1b-7b, phi-4, phi-4-mini, qwen1.5-moe-a2.7b, qwen2-7b, "
       "qwen3-30b-a3b, qwen3-8b, small, tiny"});
  ExpectError(LoadModelConfig("dummy:"), absl::StatusCode::kNotFound, {"unknown preset"});
}

// ---- DType. ----

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeBytes(DType::kFloat32), 4);
  EXPECT_EQ(DTypeBytes(DType::kFloat16), 2);
  EXPECT_EQ(DTypeBytes(DType::kBFloat16), 2);
  EXPECT_EQ(DTypeName(DType::kFloat32), "float32");
  EXPECT_EQ(DTypeName(DType::kFloat16), "float16");
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bfloat16");
}

TEST(DTypeTest, ParsesEveryAlias) {
  for (std::string_view name : {"float32", "float", "fp32", "FLOAT32"}) {
    EXPECT_EQ(ParseDType(name).value(), DType::kFloat32) << name;
  }
  for (std::string_view name : {"float16", "half", "fp16", "Half"}) {
    EXPECT_EQ(ParseDType(name).value(), DType::kFloat16) << name;
  }
  for (std::string_view name : {"bfloat16", "bf16", "BF16"}) {
    EXPECT_EQ(ParseDType(name).value(), DType::kBFloat16) << name;
  }
}

TEST(DTypeTest, AutoResolvesToTheGivenDtype) {
  EXPECT_EQ(ResolveDType("auto", DType::kBFloat16).value(), DType::kBFloat16);
  EXPECT_EQ(ResolveDType("auto", DType::kFloat32).value(), DType::kFloat32);
  EXPECT_EQ(ResolveDType("half", DType::kBFloat16).value(), DType::kFloat16);
}

// vLLM's --dtype auto on a GPU of compute capability 8.0+ (vllm/config's _resolve_auto_dtype):
// a 16-bit checkpoint keeps its dtype; a float32 one is served in bfloat16, or float16 for a
// pooling model; Gemma 2/3 and GLM-4 never run in float16.
TEST(DTypeTest, AutoServesAFloat32CheckpointIn16BitsAsVllm) {
  ModelConfig config = PresetModelConfig("llama-3-8b").value();
  for (DType checkpoint : {DType::kBFloat16, DType::kFloat16}) {
    config.torch_dtype = checkpoint;
    EXPECT_EQ(ResolveModelDType(config, "auto").value(), checkpoint);
  }
  config.torch_dtype = DType::kFloat32;
  EXPECT_EQ(ResolveModelDType(config, "auto").value(), DType::kBFloat16);
  EXPECT_EQ(ResolveModelDType(config, "AUTO").value(), DType::kBFloat16);
  // Asked for, float32 stays.
  EXPECT_EQ(ResolveModelDType(config, "float32").value(), DType::kFloat32);
  EXPECT_EQ(ResolveModelDType(config, "half").value(), DType::kFloat16);

  config.classifier.emplace();
  config.classifier->architecture = "LlamaForSequenceClassification";
  EXPECT_EQ(ResolveModelDType(config, "auto").value(), DType::kFloat16);
  config.torch_dtype = DType::kBFloat16;
  EXPECT_EQ(ResolveModelDType(config, "auto").value(), DType::kBFloat16);

  // OLMo-2-1124-7B ships float32.
  const ModelConfig olmo2 = PresetModelConfig("olmo-2-7b").value();
  ASSERT_EQ(olmo2.torch_dtype, DType::kFloat32);
  EXPECT_EQ(ResolveModelDType(olmo2, "auto").value(), DType::kBFloat16);
}

TEST(DTypeTest, GemmaAndGlm4RefuseFloat16) {
  ModelConfig gemma2 = PresetModelConfig("gemma-2-2b").value();
  ASSERT_EQ(gemma2.torch_dtype, DType::kFloat32);
  EXPECT_EQ(ResolveModelDType(gemma2, "auto").value(), DType::kBFloat16);
  // A classifier would prefer float16, which Gemma 2 refuses.
  gemma2.classifier.emplace();
  gemma2.classifier->architecture = "Gemma2ForSequenceClassification";
  EXPECT_EQ(ResolveModelDType(gemma2, "auto").value(), DType::kBFloat16);
  gemma2.torch_dtype = DType::kFloat16;
  EXPECT_EQ(ResolveModelDType(gemma2, "auto").value(), DType::kBFloat16);

  ModelConfig config = PresetModelConfig("llama-3-8b").value();
  for (const char* architecture : {"Gemma2ForCausalLM", "Gemma3ForCausalLM",
                                   "Gemma3ForConditionalGeneration", "Glm4ForCausalLM"}) {
    config.architecture = architecture;
    for (const char* half : {"float16", "fp16", "half"}) {
      const absl::StatusOr<DType> dtype = ResolveModelDType(config, half);
      ASSERT_FALSE(dtype.ok()) << architecture;
      EXPECT_EQ(dtype.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(dtype.status().message(),
                absl::StrCat(architecture,
                             " does not support float16 (numerical instability, as vLLM refuses "
                             "it); use bfloat16 or float32"));
    }
    EXPECT_EQ(ResolveModelDType(config, "bfloat16").value(), DType::kBFloat16);
  }
  // GLM-4-9B-0414's predecessor architecture runs in float16.
  config.architecture = "GlmForCausalLM";
  EXPECT_EQ(ResolveModelDType(config, "float16").value(), DType::kFloat16);
  EXPECT_THAT(std::string(ResolveModelDType(config, "fp8").status().message()),
              HasSubstr("unsupported dtype \"fp8\""));
}

TEST(DTypeTest, UnknownDtypeListsTheSupportedOnes) {
  for (const char* bad : {"fp8", "", "int8", "autox"}) {
    const absl::StatusOr<DType> dtype = ResolveDType(bad, DType::kFloat16);
    ASSERT_FALSE(dtype.ok()) << bad;
    EXPECT_EQ(dtype.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(dtype.status().message()),
                AllOf(HasSubstr(absl::StrCat("unsupported dtype \"", bad, "\"")),
                      HasSubstr("auto, float16 (half, fp16), bfloat16 (bf16), float32")));
  }
}

// HuggingFaceTB/SmolLM3-3B's shape: a NoPE layer every 4th (no_rope_layers 1,1,1,0 x 9), tied
// embeddings, no window.
std::string SmolLM3Config(std::string_view extra) {
  std::vector<std::string> rope;
  for (int i = 0; i < 36; ++i) rope.push_back(i % 4 == 3 ? "0" : "1");
  return absl::StrCat(R"({"architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3",
      "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
      "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 128256,
      "max_position_embeddings": 65536, "rope_theta": 5000000.0, "rms_norm_eps": 1e-06,
      "hidden_act": "silu", "use_sliding_window": false, "sliding_window": null,
      "torch_dtype": "bfloat16")",
                      extra.empty() ? R"(, "no_rope_layers": [)" + absl::StrJoin(rope, ",") + "]"
                                    : std::string(extra),
                      "}");
}

// SmolLM3 (SmolLM3Config's rules): no_rope_layers' zeros attend without rotary; without the list,
// every no_rope_layer_interval-th layer (4 by default); the embeddings tied unless told
// otherwise; a window only with use_sliding_window, on layer_types' sliding layers or else the
// NoPE ones.
TEST_F(ModelDirTest, LoadsSmolLM3WithNoPeLayers) {
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(SmolLM3Config("")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "SmolLM3ForCausalLM");
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_TRUE(config->tie_word_embeddings) << "SmolLM3Config's default";
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_FALSE(config->sliding_window.has_value());
  ASSERT_EQ(config->nope_layers.size(), 36u);
  for (size_t i = 0; i < 36; ++i) EXPECT_EQ(config->nope_layers[i], i % 4 == 3) << i;

  // Without the list: every 4th layer, or every no_rope_layer_interval-th.
  for (const auto& [extra, interval] :
       {std::pair{std::string(R"(, "tie_word_embeddings": false)"), 4},
        std::pair{std::string(R"(, "no_rope_layer_interval": 3)"), 3}}) {
    config = LoadModelConfig(WriteConfig(SmolLM3Config(extra)));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->tie_word_embeddings, interval != 4) << "an explicit false wins";
    ASSERT_EQ(config->nope_layers.size(), 36u);
    for (size_t i = 0; i < 36; ++i) {
      EXPECT_EQ(config->nope_layers[i], (i + 1) % static_cast<size_t>(interval) == 0) << i;
    }
  }
  EXPECT_FALSE(config->sliding_window.has_value());

  // use_sliding_window: the NoPE layers slide, or layer_types' sliding ones.
  std::string json = ReplaceAll(SmolLM3Config(R"(, "no_rope_layer_interval": 2)"),
                                R"("use_sliding_window": false, "sliding_window": null)",
                                R"("use_sliding_window": true, "sliding_window": 4096)");
  config = LoadModelConfig(WriteConfig(json));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(LayerSlidingWindow(*config, 0), 0);
  EXPECT_EQ(LayerSlidingWindow(*config, 1), 4096);
  EXPECT_EQ(LayerSlidingWindow(*config, 35), 4096);
  std::vector<std::string> types(36, "\"full_attention\"");
  types[0] = "\"sliding_attention\"";
  config = LoadModelConfig(WriteConfig(ReplaceAll(
      json, R"("torch_dtype")",
      absl::StrCat(R"("layer_types": [)", absl::StrJoin(types, ","), R"(], "torch_dtype")"))));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(LayerSlidingWindow(*config, 0), 4096);
  EXPECT_EQ(LayerSlidingWindow(*config, 1), 0);
  EXPECT_TRUE(config->nope_layers[1]) << "the window does not change which layers rotate";

  ExpectError(LoadModelConfig(WriteConfig(SmolLM3Config(R"(, "no_rope_layers": [1, 0])"))),
              absl::StatusCode::kInvalidArgument,
              {ConfigPath(), "\"no_rope_layers\" must list 0 or 1 for each of the 36 layers"});
  ExpectError(LoadModelConfig(WriteConfig(SmolLM3Config(
                  absl::StrCat(R"(, "no_rope_layers": [)",
                               absl::StrJoin(std::vector<std::string>(36, "2"), ","), "]")))),
              absl::StatusCode::kInvalidArgument,
              {"\"no_rope_layers\" has number 2 at layer 0; each entry is 0 (NoPE) or 1"});
}

// google/gemma-7b's config.json as first published: "hidden_act": "gelu" and no
// hidden_activation, head_dim 256 x 16 heads wider than the 3072 residual, tied embeddings left
// out of the file (GemmaConfig's default).
constexpr char kGemma7bConfig[] = R"({"architectures": ["GemmaForCausalLM"], "model_type": "gemma",
    "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
    "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "vocab_size": 256000,
    "max_position_embeddings": 8192, "rope_theta": 10000.0, "rms_norm_eps": 1e-06,
    "hidden_act": "gelu", "torch_dtype": "bfloat16", "bos_token_id": 2, "eos_token_id": 1})";

// Gemma 1 (GemmaConfig's rules, and vLLM's): (1 + w) norms, embeddings times sqrt(hidden), tied
// unless told otherwise, the tanh GELU whatever hidden_act says unless hidden_activation names
// another, attention scaled by head_dim^-0.5 (no softcaps, no window, two norms per layer).
TEST_F(ModelDirTest, LoadsGemmaWithItsTanhGelu) {
  absl::StatusOr<ModelConfig> config = LoadModelConfig(WriteConfig(kGemma7bConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "GemmaForCausalLM");
  EXPECT_EQ(config->head_dim, 256);
  EXPECT_EQ(config->hidden_activation, Activation::kGeluTanh) << "hidden_act is not read";
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_TRUE(config->norm_weight_offset);
  EXPECT_DOUBLE_EQ(config->embedding_multiplier, std::sqrt(3072.0));
  EXPECT_FALSE(config->sandwich_norms);
  EXPECT_FALSE(config->sliding_window.has_value());
  EXPECT_EQ(config->query_pre_attn_scalar, 0.0);
  EXPECT_EQ(config->attn_logit_softcapping, 0.0);
  EXPECT_EQ(config->final_logit_softcapping, 0.0);
  EXPECT_FALSE(config->qkv_bias);

  config = LoadModelConfig(WriteConfig(
      ReplaceAll(kGemma7bConfig, R"("hidden_act": "gelu")",
                 R"("hidden_act": "gelu", "attention_bias": true, "tie_word_embeddings": false)")));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_TRUE(config->o_proj_bias) << "GemmaAttention's o_proj takes attention_bias too";
  EXPECT_FALSE(config->tie_word_embeddings);
  // Exact GELU named where it is read is refused, not served as the tanh one.
  ExpectError(LoadModelConfig(WriteConfig(ReplaceAll(kGemma7bConfig, R"("hidden_act": "gelu")",
                                                     R"("hidden_activation": "gelu")"))),
              absl::StatusCode::kInvalidArgument,
              {"\"hidden_activation\" names unsupported activation \"gelu\""});
}

// THUDM/GLM-4-9B-0414's shape (Glm4ForCausalLM): 2 KV heads of 128, half of each head rotated.
std::string Glm4Config(const std::string& architecture, const std::string& extra) {
  return absl::StrCat(R"({"architectures": [")", architecture, R"("],
      "hidden_size": 4096, "intermediate_size": 13696, "num_hidden_layers": 40,
      "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 151552,
      "max_position_embeddings": 32768, "rope_theta": 10000.0, "rms_norm_eps": 1e-05,
      "hidden_act": "silu", "tie_word_embeddings": false, "torch_dtype": "bfloat16")",
                      extra, "}");
}

// GLM (GlmConfig's and Glm4Config's rules): q/k/v biases unless attention_bias is false, no
// o_proj bias, gate and up fused, rotary over interleaved pairs of the leading
// partial_rotary_factor (0.5 by default) of each head; GLM-4 adds its four norms per layer.
TEST_F(ModelDirTest, LoadsGlmWithInterleavedPartialRotary) {
  for (const char* architecture : {"Glm4ForCausalLM", "GlmForCausalLM"}) {
    SCOPED_TRACE(architecture);
    absl::StatusOr<ModelConfig> config =
        LoadModelConfig(WriteConfig(Glm4Config(architecture, R"(, "partial_rotary_factor": 0.5)")));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->architecture, architecture);
    EXPECT_EQ(RotaryDim(*config), 64);
    EXPECT_TRUE(config->interleaved_rotary);
    EXPECT_TRUE(config->qkv_bias) << "Glm4Config's attention_bias defaults to true";
    EXPECT_FALSE(config->o_proj_bias);
    EXPECT_TRUE(config->fused_gate_up);
    EXPECT_FALSE(config->fused_qkv);
    EXPECT_FALSE(config->tie_word_embeddings);
    const bool glm4 = std::string_view(architecture) == "Glm4ForCausalLM";
    EXPECT_EQ(config->sandwich_norms, glm4);
    EXPECT_FALSE(config->norm_weight_offset);
    EXPECT_EQ(config->embedding_multiplier, 1.0);

    // Without the keys: the config classes' defaults (half the head, biases).
    config = LoadModelConfig(WriteConfig(Glm4Config(architecture, "")));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(RotaryDim(*config), 64);
    EXPECT_TRUE(config->qkv_bias);
    config = LoadModelConfig(WriteConfig(
        Glm4Config(architecture, R"(, "attention_bias": false, "partial_rotary_factor": 0.25)")));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_FALSE(config->qkv_bias);
    EXPECT_EQ(RotaryDim(*config), 32);
  }
  // dummy:glm-4-9b is GLM-4-9B-0414's config, field by field.
  const absl::StatusOr<ModelConfig> config = LoadModelConfig(
      WriteConfig(Glm4Config("Glm4ForCausalLM", R"(, "partial_rotary_factor": 0.5)")));
  const absl::StatusOr<ModelConfig> preset = LoadModelConfig("dummy:glm-4-9b");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(preset.ok()) << preset.status();
  ExpectSameModel(*preset, *config);

  ExpectError(LoadModelConfig(WriteConfig(
                  Glm4Config("Glm4ForCausalLM", R"(, "partial_rotary_factor": 0.004)"))),
              absl::StatusCode::kInvalidArgument,
              {"int(head_dim 128 x 0.004) = 0 rotated values per head"});
}

}  // namespace
}  // namespace headroom::worker
