// LoadWeights on the committed fixtures (cross-checked with numbers torch recorded in
// weights_probe.json), its errors on damaged copies in a temp dir, and DummyWeights.
#include "worker/model/checkpoint.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/worker/fixture_model.h"
#include "tests/worker/fixtures.h"
#include "worker/model/float16.h"
#include "worker/model/model_config.h"
#include "worker/model/safetensors.h"

namespace headroom::worker {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

ModelConfig FixtureConfig(std::string_view name) {
  absl::StatusOr<ModelConfig> config = LoadModelConfig(testdata::FixtureDir(name).string());
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : ModelConfig{};
}

// A tensor as stored: enough to write a safetensors file back.
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::vector<RawTensor> ReadRaw(const fs::path& path) {
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path.string());
  EXPECT_TRUE(file.ok()) << file.status();
  std::vector<RawTensor> tensors;
  if (!file.ok()) return tensors;
  for (const auto& [name, tensor] : file->tensors()) {
    const absl::Span<const uint8_t> bytes = file->RawBytes(tensor);
    tensors.push_back({name, tensor.dtype, tensor.shape,
                       std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())});
  }
  return tensors;
}

void WriteRaw(const fs::path& path, const std::vector<RawTensor>& tensors) {
  Json header = Json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const RawTensor& tensor : tensors) {
    header[tensor.name] = {{"dtype", tensor.dtype},
                           {"shape", tensor.shape},
                           {"data_offsets", {data.size(), data.size() + tensor.bytes.size()}}};
    data += tensor.bytes;
  }
  const std::string text = header.dump();
  const uint64_t length = text.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Rewrites one safetensors file through `edit`.
template <typename Edit>
void EditFile(const fs::path& path, Edit edit) {
  std::vector<RawTensor> tensors = ReadRaw(path);
  edit(tensors);
  WriteRaw(path, tensors);
}

RawTensor* FindRaw(std::vector<RawTensor>& tensors, std::string_view name) {
  for (RawTensor& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  ADD_FAILURE() << "no tensor " << name;
  return nullptr;
}

// A private copy of a fixture directory, removed afterwards.
class FixtureCopy {
 public:
  explicit FixtureCopy(std::string_view name)
      : dir_(fs::path(::testing::TempDir()) /
             absl::StrCat("checkpoint_test_", std::string(name), "_",
                          ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(dir_);
    fs::copy(testdata::FixtureDir(name), dir_, fs::copy_options::recursive);
  }
  ~FixtureCopy() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  FixtureCopy(const FixtureCopy&) = delete;
  FixtureCopy& operator=(const FixtureCopy&) = delete;

  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

absl::Status LoadStatus(const ModelConfig& config, const fs::path& dir) {
  return LoadWeights(config, dir.string()).status();
}

// `data` (a loaded tensor, or the loaded parts of a fused or stacked one joined in order) is the
// tensor torch recorded in weights_probe.json as `entry`: its size, first and last elements
// exactly, and its sums.
void ExpectMatchesProbe(const Json& entry, const std::vector<float>& data) {
  int64_t elements = 1;
  for (const int64_t dim : entry.at("shape").get<std::vector<int64_t>>()) elements *= dim;
  ASSERT_EQ(static_cast<int64_t>(data.size()), elements);
  const std::vector<double> first = entry.at("first").get<std::vector<double>>();
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(static_cast<double>(data[i]), first[i]) << "element " << i;
  }
  EXPECT_EQ(static_cast<double>(data.back()), entry.at("last").get<double>());
  double sum = 0;
  double sum_squares = 0;
  for (const float v : data) {
    sum += static_cast<double>(v);
    sum_squares += static_cast<double>(v) * static_cast<double>(v);
  }
  const double want_squares = entry.at("sum_squares").get<double>();
  EXPECT_NEAR(sum, entry.at("sum").get<double>(), 1e-9 * (1 + want_squares));
  EXPECT_NEAR(sum_squares, want_squares, 1e-9 * (1 + want_squares));
}

// ---------------------------------------------------------------------------------------------
// The fixtures load, and every tensor matches what torch recorded.

class FixtureLoadTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureLoadTest, EveryTensorMatchesTorch) {
  const std::string name = GetParam();
  const ModelConfig config = FixtureConfig(name);
  absl::StatusOr<ModelWeights> weights = LoadWeights(config, testdata::FixtureDir(name).string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  ASSERT_EQ(static_cast<int64_t>(weights->layers.size()), config.num_hidden_layers);
  ASSERT_GE(weights->layers.size(), 2u);

  const Json probe = ReadJson(testdata::FixtureDir(name) / "weights_probe.json");
  const Json& tensors = probe.at("tensors");
  const std::vector<NamedWeight> named = ListWeights(*weights);
  std::set<std::string> loaded;
  for (const NamedWeight& weight : named) loaded.insert(weight.name);
  std::set<std::string> recorded;
  for (const auto& [tensor_name, entry] : tensors.items()) recorded.insert(tensor_name);
  EXPECT_EQ(loaded, recorded);  // Nothing missing, nothing extra (biases, lm_head included).

  for (const NamedWeight& weight : named) {
    SCOPED_TRACE(weight.name);
    if (!tensors.contains(weight.name)) continue;
    const Json& entry = tensors.at(weight.name);
    const HostTensor& tensor = *weight.tensor;
    EXPECT_EQ(tensor.shape, entry.at("shape").get<std::vector<int64_t>>());
    ASSERT_EQ(static_cast<size_t>(tensor.num_elements()), tensor.data.size());
    ExpectMatchesProbe(entry, tensor.data);
    if (entry.contains("first_bits")) {
      const std::vector<uint32_t> bits = entry.at("first_bits").get<std::vector<uint32_t>>();
      const bool bf16 = entry.at("dtype") == "BF16";
      for (size_t i = 0; i < bits.size(); ++i) {
        const auto pattern = static_cast<uint16_t>(bits[i]);
        EXPECT_EQ(tensor.data[i], bf16 ? Bf16ToFloat(pattern) : Fp16ToFloat(pattern));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureLoadTest,
                         ::testing::Values("llama-gqa", "qwen2-bias", "llama-tied", "qwen3-qknorm",
                                           "mixtral-moe", "qwen3-moe", "gemma2-softcap",
                                           "gemma3-local-rope", "granite-mup", "smollm3-nope",
                                           "gemma-mqa", "qwen2-moe", "olmo2-postnorm", "olmoe",
                                           "olmo3-hybrid", "exaone4-hybrid", "seed-oss-bias",
                                           "glm4-moe", "dots1-moe"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string test_name = param_info.param;
                           for (char& c : test_name) c = c == '-' ? '_' : c;
                           return test_name;
                         });

TEST(CheckpointTest, ShardedGqaLlamaWithRopeScaling) {
  const ModelConfig config = FixtureConfig("llama-gqa");
  EXPECT_EQ(config.head_dim, 16);
  EXPECT_EQ(config.num_key_value_heads, 2);
  ASSERT_TRUE(config.rope_scaling.has_value());
  EXPECT_EQ(config.rope_scaling->factor, 8.0);
  EXPECT_EQ(config.rope_scaling->original_max_position_embeddings, 64);
  EXPECT_EQ(config.torch_dtype, DType::kBFloat16);
  EXPECT_TRUE(fs::exists(testdata::FixtureDir("llama-gqa") / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(testdata::FixtureDir("llama-gqa") / "model.safetensors"));

  absl::StatusOr<ModelWeights> weights =
      LoadWeights(config, testdata::FixtureDir("llama-gqa").string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_THAT(weights->embed_tokens.shape, ElementsAre(256, 64));
  EXPECT_THAT(weights->lm_head.shape, ElementsAre(256, 64));
  EXPECT_EQ(&weights->output_embedding(), &weights->lm_head);
  const LayerWeights& layer = weights->layers[1];
  EXPECT_THAT(layer.q_proj.shape, ElementsAre(64, 64));
  EXPECT_THAT(layer.k_proj.shape, ElementsAre(32, 64));
  EXPECT_THAT(layer.v_proj.shape, ElementsAre(32, 64));
  EXPECT_THAT(layer.o_proj.shape, ElementsAre(64, 64));
  EXPECT_THAT(layer.gate_proj.shape, ElementsAre(128, 64));
  EXPECT_THAT(layer.up_proj.shape, ElementsAre(128, 64));
  EXPECT_THAT(layer.down_proj.shape, ElementsAre(64, 128));
  EXPECT_THAT(layer.input_layernorm.shape, ElementsAre(64));
  EXPECT_TRUE(layer.q_proj_bias.empty());
  EXPECT_TRUE(layer.o_proj_bias.empty());
  EXPECT_TRUE(layer.gate_proj_bias.empty());
}

TEST(CheckpointTest, Qwen2HasQkvBiases) {
  const ModelConfig config = FixtureConfig("qwen2-bias");
  EXPECT_TRUE(config.qkv_bias);
  EXPECT_FALSE(config.o_proj_bias);
  EXPECT_EQ(config.rope_theta, 1e6);
  absl::StatusOr<ModelWeights> weights =
      LoadWeights(config, testdata::FixtureDir("qwen2-bias").string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  for (const LayerWeights& layer : weights->layers) {
    EXPECT_THAT(layer.q_proj_bias.shape, ElementsAre(64));
    EXPECT_THAT(layer.k_proj_bias.shape, ElementsAre(32));
    EXPECT_THAT(layer.v_proj_bias.shape, ElementsAre(32));
    EXPECT_TRUE(layer.o_proj_bias.empty());
    // The generator randomizes biases so a forward pass that drops them cannot match.
    EXPECT_NE(layer.q_proj_bias.data[0], 0.0f);
  }
  EXPECT_FALSE(weights->lm_head.empty());
}

TEST(CheckpointTest, Qwen3HasPerHeadQkNormsAndNoBiases) {
  const ModelConfig config = FixtureConfig("qwen3-qknorm");
  EXPECT_EQ(config.architecture, "Qwen3ForCausalLM");
  EXPECT_TRUE(config.qk_norm);
  EXPECT_FALSE(config.qkv_bias);
  EXPECT_TRUE(config.tie_word_embeddings);
  absl::StatusOr<ModelWeights> weights =
      LoadWeights(config, testdata::FixtureDir("qwen3-qknorm").string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  for (const LayerWeights& layer : weights->layers) {
    EXPECT_THAT(layer.q_norm.shape, ElementsAre(16));  // head_dim
    EXPECT_THAT(layer.k_norm.shape, ElementsAre(16));
    EXPECT_TRUE(layer.q_proj_bias.empty());
    // The generator randomizes the norms so a forward pass that drops them cannot match.
    EXPECT_NE(layer.q_norm.data[0], 1.0f);
    EXPECT_NE(layer.q_norm.data, layer.k_norm.data);
  }
  // A checkpoint without the norms is refused, naming the tensor.
  ModelConfig qwen2 = FixtureConfig("qwen2-bias");
  qwen2.qk_norm = true;
  const absl::StatusOr<ModelWeights> missing =
      LoadWeights(qwen2, testdata::FixtureDir("qwen2-bias").string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("missing tensor \"model.layers.0.self_attn.q_norm.weight\""));
}

// Phi-3's fused qkv_proj and gate_up_proj load as their parts: torch's record of each fused
// tensor (its first and last elements, its sums) is the parts' joined in order.
TEST(CheckpointTest, Phi3FusedProjectionsLoadAsTheirParts) {
  const ModelConfig config = FixtureConfig("phi3-fused");
  EXPECT_EQ(config.architecture, "Phi3ForCausalLM");
  EXPECT_TRUE(config.fused_qkv);
  EXPECT_TRUE(config.fused_gate_up);
  EXPECT_EQ(config.sliding_window, 12);
  absl::StatusOr<ModelWeights> weights =
      LoadWeights(config, testdata::FixtureDir("phi3-fused").string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  const Json probe = ReadJson(testdata::FixtureDir("phi3-fused") / "weights_probe.json");
  const Json& tensors = probe.at("tensors");
  for (size_t i = 0; i < weights->layers.size(); ++i) {
    const LayerWeights& layer = weights->layers[i];
    EXPECT_THAT(layer.q_proj.shape, ElementsAre(64, 64));
    EXPECT_THAT(layer.k_proj.shape, ElementsAre(32, 64));
    EXPECT_THAT(layer.v_proj.shape, ElementsAre(32, 64));
    EXPECT_THAT(layer.gate_proj.shape, ElementsAre(96, 64));
    EXPECT_THAT(layer.up_proj.shape, ElementsAre(96, 64));
    for (const auto& [fused, parts] :
         {std::pair{"self_attn.qkv_proj.weight",
                    std::vector<const HostTensor*>{&layer.q_proj, &layer.k_proj, &layer.v_proj}},
          std::pair{"mlp.gate_up_proj.weight",
                    std::vector<const HostTensor*>{&layer.gate_proj, &layer.up_proj}}}) {
      const std::string name = absl::StrCat("model.layers.", i, ".", fused);
      SCOPED_TRACE(name);
      std::vector<float> joined;
      for (const HostTensor* part : parts) {
        joined.insert(joined.end(), part->data.begin(), part->data.end());
      }
      ExpectMatchesProbe(tensors.at(name), joined);
    }
  }
  // The checkpoint's tensor list names the fused tensors once, with their fused shapes.
  const absl::StatusOr<std::vector<WeightSpec>> specs = ExpectedWeights(config);
  ASSERT_TRUE(specs.ok()) << specs.status();
  std::set<std::string> expected;
  for (const WeightSpec& spec : *specs) {
    expected.insert(spec.name);
    if (spec.name == "model.layers.1.self_attn.qkv_proj.weight") {
      EXPECT_THAT(spec.shape, ElementsAre(128, 64));
    }
    if (spec.name == "model.layers.1.mlp.gate_up_proj.weight") {
      EXPECT_THAT(spec.shape, ElementsAre(192, 64));
    }
  }
  std::set<std::string> recorded;
  for (const auto& [tensor_name, entry] : tensors.items()) recorded.insert(tensor_name);
  EXPECT_EQ(expected, recorded);

  // A fused tensor of the wrong shape is refused by its own name.
  ModelConfig wider = config;
  wider.intermediate_size = 128;
  const absl::Status status =
      LoadWeights(wider, testdata::FixtureDir("phi3-fused").string()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("\"model.layers.0.mlp.gate_up_proj.weight\""),
                    HasSubstr("has shape [192, 64], expected [256, 64]")));
}

// GLM's checkpoints load tensor by tensor as torch recorded them: gate_up_proj as its gate and up
// parts (q/k/v stay separate, with biases; o_proj has none), and GLM-4's four norms per layer by
// their own names (post_self_attn_layernorm, post_attention_layernorm, post_mlp_layernorm).
TEST(CheckpointTest, GlmLoadsItsNormsAndFusedGateUp) {
  for (const char* name : {"glm4-sandwich", "glm-interleaved"}) {
    SCOPED_TRACE(name);
    const ModelConfig config = FixtureConfig(name);
    EXPECT_TRUE(config.fused_gate_up);
    EXPECT_FALSE(config.fused_qkv);
    EXPECT_TRUE(config.qkv_bias);
    EXPECT_FALSE(config.o_proj_bias);
    absl::StatusOr<ModelWeights> weights = LoadWeights(config, testdata::FixtureDir(name).string());
    ASSERT_TRUE(weights.ok()) << weights.status();
    const Json probe = ReadJson(testdata::FixtureDir(name) / "weights_probe.json");
    const Json& tensors = probe.at("tensors");
    std::set<std::string> recorded;
    for (const auto& [tensor_name, entry] : tensors.items()) recorded.insert(tensor_name);

    // Every tensor but the fused one's parts under its torch name.
    std::set<std::string> matched;
    for (const NamedWeight& weight : ListWeights(*weights)) {
      if (!tensors.contains(weight.name)) continue;
      SCOPED_TRACE(weight.name);
      ExpectMatchesProbe(tensors.at(weight.name), weight.tensor->data);
      matched.insert(weight.name);
    }
    for (size_t i = 0; i < weights->layers.size(); ++i) {
      const LayerWeights& layer = weights->layers[i];
      const std::string fused = absl::StrCat("model.layers.", i, ".mlp.gate_up_proj.weight");
      SCOPED_TRACE(fused);
      std::vector<float> joined = layer.gate_proj.data;
      joined.insert(joined.end(), layer.up_proj.data.begin(), layer.up_proj.data.end());
      ExpectMatchesProbe(tensors.at(fused), joined);
      matched.insert(fused);
      // The sandwich norms are GLM-4's alone.
      EXPECT_EQ(layer.pre_feedforward_layernorm.empty(), config.architecture == "GlmForCausalLM");
    }
    EXPECT_EQ(matched, recorded);

    std::set<std::string> expected;
    const absl::StatusOr<std::vector<WeightSpec>> specs = ExpectedWeights(config);
    ASSERT_TRUE(specs.ok()) << specs.status();
    for (const WeightSpec& spec : *specs) expected.insert(spec.name);
    EXPECT_EQ(expected, recorded);
  }
}

// Granite-MoE's experts are stacked, input_linear [E, 2I, H] (each expert's gate rows, then its
// up rows) and output_linear [E, H, I]: torch's record of each stacked tensor is the experts'
// parts joined in that order.
TEST(CheckpointTest, GraniteMoeStackedExpertsLoadAsEachExpertsParts) {
  const ModelConfig config = FixtureConfig("granite-moe");
  EXPECT_EQ(config.architecture, "GraniteMoeForCausalLM");
  EXPECT_EQ(config.num_experts, 4);
  EXPECT_EQ(config.num_experts_per_tok, 2);
  EXPECT_TRUE(config.norm_topk_prob);
  EXPECT_DOUBLE_EQ(config.residual_multiplier, 0.22);
  absl::StatusOr<ModelWeights> weights =
      LoadWeights(config, testdata::FixtureDir("granite-moe").string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  const Json probe = ReadJson(testdata::FixtureDir("granite-moe") / "weights_probe.json");
  const Json& tensors = probe.at("tensors");
  const auto expect_joined = [&](const std::string& name, const std::vector<float>& joined) {
    SCOPED_TRACE(name);
    ExpectMatchesProbe(tensors.at(name), joined);
  };
  for (size_t i = 0; i < weights->layers.size(); ++i) {
    const LayerWeights& layer = weights->layers[i];
    ASSERT_EQ(layer.experts.size(), 4u);
    std::vector<float> gate_up;
    std::vector<float> down;
    for (const ExpertWeights& expert : layer.experts) {
      EXPECT_THAT(expert.gate_proj.shape, ElementsAre(48, 64));
      EXPECT_THAT(expert.down_proj.shape, ElementsAre(64, 48));
      gate_up.insert(gate_up.end(), expert.gate_proj.data.begin(), expert.gate_proj.data.end());
      gate_up.insert(gate_up.end(), expert.up_proj.data.begin(), expert.up_proj.data.end());
      down.insert(down.end(), expert.down_proj.data.begin(), expert.down_proj.data.end());
    }
    const std::string prefix = absl::StrCat("model.layers.", i, ".block_sparse_moe.");
    expect_joined(prefix + "input_linear.weight", gate_up);
    expect_joined(prefix + "output_linear.weight", down);
    expect_joined(prefix + "router.layer.weight", layer.moe_router.data);
  }
  // The checkpoint's tensor list names each stacked tensor once, with its 3-D shape.
  const absl::StatusOr<std::vector<WeightSpec>> specs = ExpectedWeights(config);
  ASSERT_TRUE(specs.ok()) << specs.status();
  std::set<std::string> expected;
  for (const WeightSpec& spec : *specs) {
    expected.insert(spec.name);
    if (spec.name == "model.layers.1.block_sparse_moe.input_linear.weight") {
      EXPECT_THAT(spec.shape, ElementsAre(4, 96, 64));
    }
  }
  std::set<std::string> recorded;
  for (const auto& [tensor_name, entry] : tensors.items()) recorded.insert(tensor_name);
  EXPECT_EQ(expected, recorded);
}

// Mixtral's, Qwen3-MoE's and Qwen2-MoE's experts load under their own names, in place of a dense
// MLP; Qwen2-MoE's shared expert and its gate beside them.
TEST(CheckpointTest, MixtureOfExpertsLayersHoldTheRouterAndEachExpert) {
  for (const auto& [name, experts, inter, renormalize, shared] :
       {std::tuple{"mixtral-moe", 4, 48, true, 0}, std::tuple{"qwen3-moe", 8, 32, true, 0},
        std::tuple{"qwen2-moe", 8, 32, false, 48}}) {
    SCOPED_TRACE(name);
    const ModelConfig config = FixtureConfig(name);
    EXPECT_EQ(config.num_experts, experts);
    EXPECT_EQ(config.num_experts_per_tok, 2);
    EXPECT_EQ(config.intermediate_size, inter);
    EXPECT_EQ(config.norm_topk_prob, renormalize);
    EXPECT_EQ(config.shared_expert_intermediate_size, shared);
    absl::StatusOr<ModelWeights> weights = LoadWeights(config, testdata::FixtureDir(name).string());
    ASSERT_TRUE(weights.ok()) << weights.status();
    for (const LayerWeights& layer : weights->layers) {
      EXPECT_TRUE(layer.gate_proj.empty()) << "no dense MLP";
      EXPECT_THAT(layer.moe_router.shape, ElementsAre(experts, 64));
      ASSERT_EQ(layer.experts.size(), static_cast<size_t>(experts));
      EXPECT_THAT(layer.experts[1].gate_proj.shape, ElementsAre(inter, 64));
      EXPECT_THAT(layer.experts[1].up_proj.shape, ElementsAre(inter, 64));
      EXPECT_THAT(layer.experts[1].down_proj.shape, ElementsAre(64, inter));
      EXPECT_NE(layer.experts[0].gate_proj.data, layer.experts[1].gate_proj.data);
      if (shared == 0) {
        EXPECT_TRUE(layer.shared_expert_gate.empty());
        continue;
      }
      EXPECT_THAT(layer.shared_gate_proj.shape, ElementsAre(shared, 64));
      EXPECT_THAT(layer.shared_up_proj.shape, ElementsAre(shared, 64));
      EXPECT_THAT(layer.shared_down_proj.shape, ElementsAre(64, shared));
      EXPECT_THAT(layer.shared_expert_gate.shape, ElementsAre(1, 64));
      EXPECT_NE(layer.shared_gate_proj.data, layer.shared_up_proj.data);
    }
    // Every tensor of the checkpoint is one the config calls for, and the other way round.
    std::vector<std::string> listed;
    for (const NamedWeight& w : ListWeights(*weights)) listed.push_back(w.name);
    std::vector<std::string> expected;
    const absl::StatusOr<std::vector<WeightSpec>> specs = ExpectedWeights(config);
    ASSERT_TRUE(specs.ok()) << specs.status();
    for (const WeightSpec& spec : *specs) expected.push_back(spec.name);
    EXPECT_EQ(listed, expected);
    const Json probe = ReadJson(testdata::FixtureDir(name) / "weights_probe.json");
    EXPECT_EQ(probe.at("tensors").size(), expected.size());
    for (const std::string& tensor : expected)
      EXPECT_TRUE(probe.at("tensors").contains(tensor)) << tensor;
  }
}

TEST(CheckpointTest, TiedEmbeddingsWithExplicitHeadDim) {
  const ModelConfig config = FixtureConfig("llama-tied");
  EXPECT_TRUE(config.tie_word_embeddings);
  EXPECT_EQ(config.head_dim, 32);  // != hidden 64 / 4 heads.
  absl::StatusOr<ModelWeights> weights =
      LoadWeights(config, testdata::FixtureDir("llama-tied").string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_TRUE(weights->lm_head.empty());
  EXPECT_EQ(&weights->output_embedding(), &weights->embed_tokens);
  EXPECT_THAT(weights->layers[0].q_proj.shape, ElementsAre(128, 64));
  EXPECT_THAT(weights->layers[0].k_proj.shape, ElementsAre(128, 64));
  EXPECT_THAT(weights->layers[0].o_proj.shape, ElementsAre(64, 128));
}

TEST(CheckpointTest, ExpectedWeightsFollowsTheConfig) {
  const ModelConfig config = FixtureConfig("qwen2-bias");
  absl::StatusOr<std::vector<WeightSpec>> specs = ExpectedWeights(config);
  ASSERT_TRUE(specs.ok()) << specs.status();
  // embed + 2 x (2 norms + 4 attn + 3 qkv biases + 3 mlp) + norm + lm_head.
  ASSERT_EQ(specs->size(), 1u + 2u * 12u + 2u);
  EXPECT_EQ(specs->front().name, "model.embed_tokens.weight");
  EXPECT_EQ((*specs)[3].name, "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(specs->back().name, "lm_head.weight");

  ModelConfig bad = config;
  bad.head_dim = 0;
  EXPECT_EQ(ExpectedWeights(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

// Gemma 3 4B+'s multimodal checkpoint: the language model's tensors are found under
// "language_model." (transformers < 4.52, the published checkpoints) or, renamed as later
// versions save them, "model.language_model."; the vision tensors are left alone. Both forms load
// the same weights; a checkpoint with neither names the first form.
TEST(CheckpointTest, MultimodalCheckpointsKeepTheLanguageModelUnderEitherPrefix) {
  const ModelConfig config = FixtureConfig("gemma3-mm-text");
  ASSERT_TRUE(config.language_model_of_multimodal);
  const absl::StatusOr<ModelWeights> published =
      LoadWeights(config, testdata::FixtureDir("gemma3-mm-text").string());
  ASSERT_TRUE(published.ok()) << published.status();

  FixtureCopy renamed("gemma3-mm-text");
  EditFile(renamed.dir() / "model.safetensors", [](std::vector<RawTensor>& tensors) {
    for (RawTensor& tensor : tensors) {
      if (tensor.name.starts_with("language_model.model.")) {
        tensor.name = "model.language_model." + tensor.name.substr(21);
      }
    }
  });
  const absl::StatusOr<ModelWeights> newer = LoadWeights(config, renamed.dir().string());
  ASSERT_TRUE(newer.ok()) << newer.status();
  EXPECT_EQ(newer->embed_tokens.data, published->embed_tokens.data);
  EXPECT_EQ(newer->layers[5].q_proj.data, published->layers[5].q_proj.data);
  EXPECT_EQ(newer->norm.data, published->norm.data);

  FixtureCopy stripped("gemma3-mm-text");
  EditFile(stripped.dir() / "model.safetensors", [](std::vector<RawTensor>& tensors) {
    for (RawTensor& tensor : tensors) {
      if (tensor.name.starts_with("language_model.")) tensor.name = tensor.name.substr(15);
    }
  });
  EXPECT_THAT(std::string(LoadStatus(config, stripped.dir()).message()),
              HasSubstr("missing tensor \"language_model.model."));
}

// The fixtures' reference outputs are well-formed (the forward-pass tests rely on them).
TEST(CheckpointTest, ExpectedJsonIsWellFormed) {
  for (const char* name : {"llama-gqa",      "qwen2-bias",
                           "llama-tied",     "qwen3-qknorm",
                           "mixtral-moe",    "qwen3-moe",
                           "gemma2-softcap", "gemma3-local-rope",
                           "granite-mup",    "phi3-fused",
                           "granite-moe",    "phi3-longrope",
                           "gemma3-mm-text", "phi4-partial-rotary",
                           "qwen2-yarn",     "smollm3-nope",
                           "glm4-sandwich",  "glm-interleaved",
                           "gemma-mqa",      "qwen2-moe",
                           "olmo2-postnorm", "olmoe",
                           "olmo3-hybrid",   "exaone4-hybrid",
                           "seed-oss-bias",  "glm4-moe",
                           "dots1-moe"}) {
    SCOPED_TRACE(name);
    const Json expected = ReadJson(testdata::FixtureDir(name) / "expected.json");
    ASSERT_EQ(expected.at("prompts").size(), 4u);
    int with_logits = 0;
    for (const Json& prompt : expected.at("prompts")) {
      const size_t length = prompt.at("ids").size();
      if (prompt.contains("logits")) {
        ++with_logits;
        ASSERT_EQ(prompt.at("logits").size(), length);
        EXPECT_EQ(prompt.at("logits")[0].size(), 256u);
      }
      ASSERT_EQ(prompt.at("greedy").size(), 32u);
      ASSERT_EQ(prompt.at("top5").size(), 32u);
      for (size_t step = 0; step < 32; ++step) {
        EXPECT_EQ(prompt.at("top5")[step][0][0], prompt.at("greedy")[step]);
        EXPECT_GT(prompt.at("margins")[step].get<double>(), 0.0);
      }
    }
    EXPECT_EQ(with_logits, 2);
    EXPECT_GT(expected.at("min_margin").get<double>(), 1e-3);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors on damaged copies.

TEST(CheckpointErrorsTest, MissingDirectoryOrWeights) {
  const ModelConfig config = FixtureConfig("llama-tied");
  const absl::Status no_dir = LoadStatus(config, "/nonexistent/model");
  EXPECT_EQ(no_dir.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(no_dir.message()), HasSubstr("/nonexistent/model"));

  FixtureCopy copy("llama-tied");
  fs::remove(copy.dir() / "model.safetensors");
  const absl::Status no_weights = LoadStatus(config, copy.dir());
  EXPECT_EQ(no_weights.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(no_weights.message()),
              AllOf(HasSubstr("model.safetensors"), HasSubstr("model.safetensors.index.json")));

  std::ofstream(copy.dir() / "pytorch_model.bin") << "x";
  EXPECT_THAT(std::string(LoadStatus(config, copy.dir()).message()), HasSubstr("convert"));
}

TEST(CheckpointErrorsTest, MissingTensorInASingleFile) {
  const ModelConfig config = FixtureConfig("qwen2-bias");
  FixtureCopy copy("qwen2-bias");
  EditFile(copy.dir() / "model.safetensors", [](std::vector<RawTensor>& tensors) {
    std::erase_if(tensors, [](const RawTensor& t) {
      return t.name == "model.layers.1.self_attn.k_proj.bias";
    });
  });
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("missing tensor \"model.layers.1.self_attn.k_proj.bias\""),
                    HasSubstr((copy.dir() / "model.safetensors").string())));
}

TEST(CheckpointErrorsTest, MissingTensorInTheIndex) {
  const ModelConfig config = FixtureConfig("llama-gqa");
  FixtureCopy copy("llama-gqa");
  const fs::path index_path = copy.dir() / "model.safetensors.index.json";
  Json index = ReadJson(index_path);
  index["weight_map"].erase("model.norm.weight");
  std::ofstream(index_path) << index.dump();
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("missing tensor \"model.norm.weight\""), HasSubstr("weight_map"),
                    HasSubstr("model-00001-of-00002.safetensors"),
                    HasSubstr("model-00002-of-00002.safetensors")));
}

TEST(CheckpointErrorsTest, MissingShardFile) {
  const ModelConfig config = FixtureConfig("llama-gqa");
  FixtureCopy copy("llama-gqa");
  fs::remove(copy.dir() / "model-00002-of-00002.safetensors");
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("shard file model-00002-of-00002.safetensors is missing"),
                    HasSubstr("model.safetensors.index.json")));
}

TEST(CheckpointErrorsTest, IndexPointsAtTheWrongShard) {
  const ModelConfig config = FixtureConfig("llama-gqa");
  FixtureCopy copy("llama-gqa");
  const fs::path index_path = copy.dir() / "model.safetensors.index.json";
  Json index = ReadJson(index_path);
  std::string& shard = index["weight_map"]["lm_head.weight"].get_ref<std::string&>();
  shard = shard == "model-00001-of-00002.safetensors" ? "model-00002-of-00002.safetensors"
                                                      : "model-00001-of-00002.safetensors";
  std::ofstream(index_path) << index.dump();
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("\"lm_head.weight\""), HasSubstr("does not contain it")));
}

TEST(CheckpointErrorsTest, MalformedIndex) {
  const ModelConfig config = FixtureConfig("llama-gqa");
  FixtureCopy copy("llama-gqa");
  const fs::path index_path = copy.dir() / "model.safetensors.index.json";
  const Json original = ReadJson(index_path);

  std::ofstream(index_path) << "{\"weight_map\": ";
  EXPECT_THAT(std::string(LoadStatus(config, copy.dir()).message()), HasSubstr("not valid JSON"));

  std::ofstream(index_path) << R"({"metadata": {}})";
  EXPECT_THAT(std::string(LoadStatus(config, copy.dir()).message()), HasSubstr("weight_map"));

  Json escaping = original;
  escaping["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  std::ofstream(index_path) << escaping.dump();
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("not inside the checkpoint directory"));
}

TEST(CheckpointErrorsTest, WrongShape) {
  const ModelConfig config = FixtureConfig("llama-gqa");
  FixtureCopy copy("llama-gqa");
  // Find the shard that holds layer 0's k_proj and give it a transposed shape (same bytes).
  const Json index = ReadJson(copy.dir() / "model.safetensors.index.json");
  const std::string name = "model.layers.0.self_attn.k_proj.weight";
  const fs::path shard = copy.dir() / index["weight_map"][name].get<std::string>();
  EditFile(shard, [&name](std::vector<RawTensor>& tensors) {
    if (RawTensor* t = FindRaw(tensors, name)) t->shape = {64, 32};
  });
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr(name), HasSubstr("has shape [64, 32], expected [32, 64]"),
                    HasSubstr(shard.string())));
}

TEST(CheckpointErrorsTest, ConfigThatDoesNotMatchTheCheckpoint) {
  ModelConfig config = FixtureConfig("llama-tied");
  config.intermediate_size = 96;
  const absl::Status status = LoadStatus(config, testdata::FixtureDir("llama-tied"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("model.layers.0.mlp.gate_proj.weight"),
                    HasSubstr("has shape [128, 64], expected [96, 64]")));

  config = FixtureConfig("llama-tied");
  config.num_hidden_layers = 3;
  EXPECT_THAT(std::string(LoadStatus(config, testdata::FixtureDir("llama-tied")).message()),
              HasSubstr("missing tensor \"model.layers.2.input_layernorm.weight\""));

  // An untied config on a checkpoint without lm_head.weight says why it needs one.
  config = FixtureConfig("llama-tied");
  config.tie_word_embeddings = false;
  EXPECT_THAT(std::string(LoadStatus(config, testdata::FixtureDir("llama-tied")).message()),
              AllOf(HasSubstr("missing tensor \"lm_head.weight\""),
                    HasSubstr("tie_word_embeddings=false")));
}

TEST(CheckpointErrorsTest, UnsupportedDtype) {
  const ModelConfig config = FixtureConfig("qwen2-bias");
  FixtureCopy copy("qwen2-bias");
  const std::string name = "model.layers.0.mlp.up_proj.weight";
  EditFile(copy.dir() / "model.safetensors", [&name](std::vector<RawTensor>& tensors) {
    if (RawTensor* t = FindRaw(tensors, name)) t->dtype = "I16";  // Same size as F16.
  });
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), AllOf(HasSubstr(name), HasSubstr("dtype I16")));
}

TEST(CheckpointErrorsTest, CorruptSafetensorsFile) {
  const ModelConfig config = FixtureConfig("qwen2-bias");
  FixtureCopy copy("qwen2-bias");
  fs::resize_file(copy.dir() / "model.safetensors", 1000);
  const absl::Status status = LoadStatus(config, copy.dir());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("model.safetensors"));
}

TEST(CheckpointTest, TiedConfigIgnoresAPresentLmHead) {
  const ModelConfig config = FixtureConfig("llama-tied");
  FixtureCopy copy("llama-tied");
  EditFile(copy.dir() / "model.safetensors", [](std::vector<RawTensor>& tensors) {
    RawTensor head = *FindRaw(tensors, "model.embed_tokens.weight");
    head.name = "lm_head.weight";
    tensors.push_back(head);
    // Older checkpoints also carry rotary buffers; they are ignored.
    tensors.push_back(
        {"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {16}, std::string(64, '\0')});
  });
  absl::StatusOr<ModelWeights> weights = LoadWeights(config, copy.dir().string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_TRUE(weights->lm_head.empty());
}

TEST(CheckpointTest, MixedDtypesAndSingleFileBeatsIndex) {
  // Re-save the sharded bf16 checkpoint as one file with one tensor in F32: values must not move.
  const ModelConfig config = FixtureConfig("llama-gqa");
  absl::StatusOr<ModelWeights> reference =
      LoadWeights(config, testdata::FixtureDir("llama-gqa").string());
  ASSERT_TRUE(reference.ok()) << reference.status();

  FixtureCopy copy("llama-gqa");
  std::vector<RawTensor> all;
  for (const char* shard :
       {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    for (RawTensor& t : ReadRaw(copy.dir() / shard)) all.push_back(std::move(t));
  }
  RawTensor* norm = FindRaw(all, "model.norm.weight");
  ASSERT_NE(norm, nullptr);
  std::vector<float> values(norm->bytes.size() / 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = 0;
    std::memcpy(&bits, norm->bytes.data() + 2 * i, 2);
    values[i] = Bf16ToFloat(bits);
  }
  norm->dtype = "F32";
  norm->bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  WriteRaw(copy.dir() / "model.safetensors", all);
  // Break the shards: the single file must be the one read (transformers' order).
  fs::remove(copy.dir() / "model-00001-of-00002.safetensors");

  absl::StatusOr<ModelWeights> weights = LoadWeights(config, copy.dir().string());
  ASSERT_TRUE(weights.ok()) << weights.status();
  const std::vector<NamedWeight> got = ListWeights(*weights);
  const std::vector<NamedWeight> want = ListWeights(*reference);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].tensor->data, want[i].tensor->data) << got[i].name;
  }
}

// ---------------------------------------------------------------------------------------------
// LoadModelWeights (--load-format).

TEST(LoadModelWeightsTest, DummyFormatGivesARealConfigRandomWeightsWithoutReadingTheFiles) {
  const std::string dir = testdata::FixtureDir("llama-gqa").string();
  absl::StatusOr<ModelConfig> config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  // The checkpoint's own weights under auto and safetensors.
  absl::StatusOr<ModelWeights> real = LoadWeights(*config, dir);
  ASSERT_TRUE(real.ok()) << real.status();
  for (const char* name : {"auto", "safetensors"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<ModelWeights> got = LoadModelWeights(*config, dir, *ParseLoadFormat(name), 5);
    ASSERT_TRUE(got.ok()) << got.status();
    testdata::ExpectSameWeights(*got, *real);
  }
  // dummy: the seeded random weights of the same shapes, even with the files gone.
  FixtureCopy copy("llama-gqa");
  for (const auto& entry : fs::directory_iterator(copy.dir())) {
    if (entry.path().extension() == ".safetensors") fs::remove(entry.path());
  }
  absl::StatusOr<ModelWeights> dummy =
      LoadModelWeights(*config, copy.dir().string(), LoadFormat::kDummy, 5);
  ASSERT_TRUE(dummy.ok()) << dummy.status();
  absl::StatusOr<ModelWeights> seeded = DummyWeights(*config, 5);
  ASSERT_TRUE(seeded.ok());
  testdata::ExpectSameWeights(*dummy, *seeded);
  EXPECT_NE(dummy->layers[0].q_proj.data, real->layers[0].q_proj.data);
  // A shard of them, as a tensor-parallel rank loads it.
  absl::StatusOr<ModelWeights> half =
      LoadModelWeights(*config, copy.dir().string(), LoadFormat::kDummy, 5, {2, 1});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->layers[0].q_proj.shape[0], real->layers[0].q_proj.shape[0] / 2);
}

TEST(LoadModelWeightsTest, BadFormatsAreRefusedNamingTheChoices) {
  const absl::StatusOr<LoadFormat> bad = ParseLoadFormat("pt");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              AllOf(HasSubstr("--load-format pt"), HasSubstr("auto, safetensors, dummy")));
  absl::StatusOr<ModelConfig> config = PresetModelConfig("tiny");
  ASSERT_TRUE(config.ok());
  const absl::Status preset =
      LoadModelWeights(*config, "dummy:tiny", LoadFormat::kSafetensors, 0).status();
  EXPECT_EQ(preset.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(preset.message()), HasSubstr("needs a checkpoint directory"));
}

// ---------------------------------------------------------------------------------------------
// DummyWeights.

TEST(DummyWeightsTest, DeterministicShapedAndScaled) {
  absl::StatusOr<ModelConfig> config = PresetModelConfig("tiny");
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<ModelWeights> a = DummyWeights(*config, 42);
  absl::StatusOr<ModelWeights> b = DummyWeights(*config, 42);
  absl::StatusOr<ModelWeights> c = DummyWeights(*config, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());

  absl::StatusOr<std::vector<WeightSpec>> specs = ExpectedWeights(*config);
  ASSERT_TRUE(specs.ok());
  const std::vector<NamedWeight> wa = ListWeights(*a);
  const std::vector<NamedWeight> wb = ListWeights(*b);
  const std::vector<NamedWeight> wc = ListWeights(*c);
  ASSERT_EQ(wa.size(), specs->size());
  for (size_t i = 0; i < wa.size(); ++i) {
    SCOPED_TRACE(wa[i].name);
    EXPECT_EQ(wa[i].name, (*specs)[i].name);
    EXPECT_EQ(wa[i].tensor->shape, (*specs)[i].shape);
    EXPECT_EQ(wa[i].tensor->data, wb[i].tensor->data);
    const bool is_norm = wa[i].name.find("norm") != std::string::npos;
    if (is_norm) {
      EXPECT_THAT(wa[i].tensor->data, ::testing::Each(1.0f));
      continue;
    }
    EXPECT_NE(wa[i].tensor->data, wc[i].tensor->data);  // The seed matters.
    double sum = 0;
    double sum_squares = 0;
    float max_abs = 0;
    for (const float v : wa[i].tensor->data) {
      sum += static_cast<double>(v);
      sum_squares += static_cast<double>(v) * static_cast<double>(v);
      max_abs = std::max(max_abs, std::abs(v));
    }
    const double n = static_cast<double>(wa[i].tensor->data.size());
    EXPECT_NEAR(sum / n, 0.0, 0.002);
    EXPECT_NEAR(std::sqrt(sum_squares / n), 0.02, 0.001);
    EXPECT_LE(max_abs, 0.0693f);
  }
  // Different tensors of one model get different streams.
  EXPECT_NE(a->layers[0].q_proj.data, a->layers[1].q_proj.data);
  EXPECT_TRUE(a->lm_head.empty());  // tiny ties its embeddings.
}

// Pinned values: the generator must give the same numbers on every machine and compiler. They were
// cross-checked with an independent Python transcription of the documented scheme (FNV-1a of the
// name, SplitMix64 counter stream, sum of four 16-bit lanes, one scale, one rounding to float).
TEST(DummyWeightsTest, PinnedValues) {
  absl::StatusOr<ModelConfig> config = PresetModelConfig("tiny");
  ASSERT_TRUE(config.ok());
  absl::StatusOr<ModelWeights> weights = DummyWeights(*config, 0);
  ASSERT_TRUE(weights.ok());
  const std::vector<float>& embed = weights->embed_tokens.data;
  const std::vector<float>& down = weights->layers[1].down_proj.data;
  const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
  EXPECT_THAT(
      (std::vector<uint32_t>{bits(embed[0]), bits(embed[1]), bits(embed[2]), bits(embed.back())}),
      ElementsAre(3134478708u, 1007888304u, 1012679065u, 3157957181u));
  EXPECT_THAT((std::vector<uint32_t>{bits(down[0]), bits(down[1]), bits(down.back())}),
              ElementsAre(3148822234u, 3099721052u, 3149523736u));
}

TEST(DummyWeightsTest, BiasesAreZeroAndPresentWhenTheConfigHasThem) {
  ModelConfig config = FixtureConfig("qwen2-bias");
  config.mlp_bias = true;
  config.o_proj_bias = true;
  absl::StatusOr<ModelWeights> weights = DummyWeights(config, 1);
  ASSERT_TRUE(weights.ok()) << weights.status();
  for (const LayerWeights& layer : weights->layers) {
    for (const HostTensor* bias :
         {&layer.q_proj_bias, &layer.k_proj_bias, &layer.v_proj_bias, &layer.o_proj_bias,
          &layer.gate_proj_bias, &layer.up_proj_bias, &layer.down_proj_bias}) {
      ASSERT_FALSE(bias->empty());
      EXPECT_THAT(bias->data, ::testing::Each(0.0f));
    }
    EXPECT_THAT(layer.down_proj_bias.shape, ElementsAre(64));
    EXPECT_THAT(layer.up_proj_bias.shape, ElementsAre(128));
  }
}

TEST(DummyWeightsTest, RefusesWhatCannotFitInHostMemory) {
  absl::StatusOr<ModelConfig> config = PresetModelConfig("llama-3-70b");
  ASSERT_TRUE(config.ok()) << config.status();
  config->vocab_size = int64_t{1} << 31;  // 2^31 x 8192 x 4 bytes = 64 TiB of embeddings.
  const absl::Status status = DummyWeights(*config, 0).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()), HasSubstr("GiB"));
}

}  // namespace
}  // namespace headroom::worker
