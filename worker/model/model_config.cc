#include "worker/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "kvcache/memory_planner_constants.h"
#include "nlohmann/json.hpp"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

inline constexpr std::string_view kLlama = "LlamaForCausalLM";
inline constexpr std::string_view kMistral = "MistralForCausalLM";
inline constexpr std::string_view kQwen2 = "Qwen2ForCausalLM";
inline constexpr std::string_view kQwen3 = "Qwen3ForCausalLM";
inline constexpr std::string_view kMixtral = "MixtralForCausalLM";
inline constexpr std::string_view kQwen3Moe = "Qwen3MoeForCausalLM";
inline constexpr std::string_view kQwen2Moe = "Qwen2MoeForCausalLM";
inline constexpr std::string_view kGemma = "GemmaForCausalLM";
inline constexpr std::string_view kGemma2 = "Gemma2ForCausalLM";
inline constexpr std::string_view kGemma3 = "Gemma3ForCausalLM";
inline constexpr std::string_view kGemma3Multimodal = "Gemma3ForConditionalGeneration";
inline constexpr std::string_view kPhi3 = "Phi3ForCausalLM";
inline constexpr std::string_view kGranite = "GraniteForCausalLM";
inline constexpr std::string_view kGraniteMoe = "GraniteMoeForCausalLM";
inline constexpr std::string_view kSmolLM3 = "SmolLM3ForCausalLM";
inline constexpr std::string_view kGlm = "GlmForCausalLM";
inline constexpr std::string_view kGlm4 = "Glm4ForCausalLM";
inline constexpr std::string_view kGlm4Moe = "Glm4MoeForCausalLM";
inline constexpr std::string_view kDots1 = "Dots1ForCausalLM";
inline constexpr std::string_view kOlmo2 = "Olmo2ForCausalLM";
inline constexpr std::string_view kOlmo3 = "Olmo3ForCausalLM";
inline constexpr std::string_view kOlmoe = "OlmoeForCausalLM";
inline constexpr std::string_view kExaone4 = "Exaone4ForCausalLM";
inline constexpr std::string_view kSeedOss = "SeedOssForCausalLM";
inline constexpr std::string_view kDummyPrefix = "dummy:";

// Qwen2MoeConfig's default shared expert width (Qwen1.5-MoE-A2.7B's).
inline constexpr int64_t kQwen2MoeDefaultSharedExpertIntermediateSize = 5632;

// MistralConfig's default when config.json has no sliding_window key (transformers behaviour).
inline constexpr int64_t kMistralDefaultSlidingWindow = 4096;

// Gemma3TextConfig's defaults for keys config.json may leave out.
inline constexpr int64_t kGemma3DefaultSlidingWindow = 4096;
inline constexpr int64_t kOlmo3DefaultSlidingWindow = 4096;
inline constexpr int64_t kOlmo3DefaultPattern = 4;  // three sliding layers, then a full one
inline constexpr int64_t kExaone4DefaultSlidingWindow = 4096;
inline constexpr int64_t kExaone4DefaultPattern = 4;
inline constexpr int64_t kGemma3DefaultPattern = 6;
inline constexpr double kGemma3DefaultQueryPreAttnScalar = 256;
inline constexpr double kGemma3DefaultLocalRopeTheta = 10000.0;
inline constexpr double kGemma3DefaultRopeTheta = 1000000.0;

// Gemma2Config's defaults for keys config.json may leave out (transformers 4.46).
inline constexpr int64_t kGemma2DefaultSlidingWindow = 4096;
inline constexpr double kGemma2DefaultQueryPreAttnScalar = 224;
inline constexpr double kGemma2DefaultAttnSoftcap = 50.0;
inline constexpr double kGemma2DefaultFinalSoftcap = 30.0;

// SmolLM3Config's default: without a no_rope_layers list, every 4th layer has no rotary.
inline constexpr int64_t kSmolLM3DefaultNoRopeInterval = 4;

// GlmConfig's and Glm4Config's defaults for keys config.json may leave out.
inline constexpr double kGlmDefaultPartialRotaryFactor = 0.5;
inline constexpr bool kGlmDefaultAttentionBias = true;

// The defaults of a DeepSeek-V3-style mixture of experts' keys (nullopt: the key is required).
struct DeepseekMoeDefaults {
  std::optional<int64_t> experts;            // n_routed_experts
  std::optional<int64_t> experts_per_token;  // num_experts_per_tok
  int64_t expert_width = 0;                  // moe_intermediate_size
  std::optional<int64_t> shared_experts;     // n_shared_experts
  int64_t dense_layers = 0;                  // first_k_dense_replace
  bool norm_topk_prob = false;
};
// Glm4MoeConfig's (GLM-4-100B-A10B's) and Dots1Config's (which leaves the counts to config.json).
inline constexpr DeepseekMoeDefaults kGlm4MoeDefaults = {.experts = 128,
                                                         .experts_per_token = 8,
                                                         .expert_width = 1408,
                                                         .shared_experts = 1,
                                                         .dense_layers = 1,
                                                         .norm_topk_prob = true};
inline constexpr DeepseekMoeDefaults kDots1Defaults = {.experts = std::nullopt,
                                                       .experts_per_token = std::nullopt,
                                                       .expert_width = 1408,
                                                       .shared_experts = std::nullopt,
                                                       .dense_layers = 0,
                                                       .norm_topk_prob = false};
// Dots1Config's window and its first sliding layer (max_window_layers: none of dots.llm1's 62).
inline constexpr int64_t kDots1DefaultSlidingWindow = 4096;
inline constexpr int64_t kDots1DefaultMaxWindowLayers = 62;

std::string Describe(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = absl::StrCat(text.substr(0, 37), "...");
  return absl::StrCat(value.type_name(), " ", text);
}

// JSON text, or InvalidArgument "<what>: malformed JSON: <the parser's position and reason>".
absl::StatusOr<Json> ParseJson(std::string_view text, std::string_view what) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string_view reason = e.what();
    if (const size_t bracket = reason.find("] ");
        reason.starts_with("[") && bracket != std::string_view::npos) {
      reason.remove_prefix(bracket + 2);
    }
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": malformed JSON: ", std::string(reason)));
  }
}

// vLLM's --hf-overrides on config.json: each key replaces the config's, except a sub-config
// (`text_config`, `vision_config`, ...: an object under a key ending in "_config" other than
// quantization_config), whose keys are overridden one by one, as vLLM updates a nested
// PretrainedConfig.
void ApplyHfOverrides(Json& config, const Json& overrides) {
  for (const auto& [key, value] : overrides.items()) {
    const auto existing = config.find(key);
    if (value.is_object() && existing != config.end() && existing->is_object() &&
        key.ends_with("_config") && key != "quantization_config") {
      ApplyHfOverrides(*existing, value);
    } else {
      config[key] = value;
    }
  }
}

// Typed field access on one JSON object; every error names the file and the field.
class FieldReader {
 public:
  FieldReader(const Json& object, std::string_view path, std::string_view prefix = "")
      : object_(object), path_(path), prefix_(prefix) {}

  // True when the key is present, even as null.
  [[nodiscard]] bool Has(std::string_view field) const { return object_.contains(field); }

  // Absent and null both read as "not given".
  [[nodiscard]] const Json* Find(std::string_view field) const {
    const auto it = object_.find(field);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  [[nodiscard]] absl::Status Error(std::string_view field, std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": field \"", prefix_, std::string(field), "\" ", std::string(what)));
  }

  [[nodiscard]] absl::StatusOr<std::optional<int64_t>> OptionalInt(std::string_view field) const {
    const Json* value = Find(field);
    if (value == nullptr) return std::optional<int64_t>();
    if (!value->is_number_integer()) {
      return Error(field, absl::StrCat("must be an integer, got ", Describe(*value)));
    }
    if (value->is_number_unsigned() &&
        value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(field, absl::StrCat("is out of range: ", value->dump()));
    }
    return std::optional<int64_t>(value->get<int64_t>());
  }

  // A required integer dimension: present and > 0.
  [[nodiscard]] absl::StatusOr<int64_t> PositiveInt(std::string_view field) const {
    HR_ASSIGN_OR_RETURN(const std::optional<int64_t> value, OptionalInt(field));
    if (!value) return Error(field, "is required but missing");
    if (*value <= 0) return Error(field, absl::StrCat("must be positive, got ", *value));
    return *value;
  }

  [[nodiscard]] absl::StatusOr<std::optional<int64_t>> OptionalPositiveInt(
      std::string_view field) const {
    HR_ASSIGN_OR_RETURN(const std::optional<int64_t> value, OptionalInt(field));
    if (value && *value <= 0) {
      return Error(field, absl::StrCat("must be positive, got ", *value));
    }
    return value;
  }

  [[nodiscard]] absl::StatusOr<std::optional<double>> OptionalNumber(std::string_view field) const {
    const Json* value = Find(field);
    if (value == nullptr) return std::optional<double>();
    if (!value->is_number()) {
      return Error(field, absl::StrCat("must be a number, got ", Describe(*value)));
    }
    return std::optional<double>(value->get<double>());
  }

  [[nodiscard]] absl::StatusOr<double> PositiveNumber(std::string_view field,
                                                      double default_value) const {
    HR_ASSIGN_OR_RETURN(const std::optional<double> value, OptionalNumber(field));
    if (!value) return default_value;
    if (!(*value > 0)) return Error(field, absl::StrCat("must be positive, got ", *value));
    return *value;
  }

  // A required list of `size` positive numbers.
  [[nodiscard]] absl::StatusOr<std::vector<double>> PositiveNumbers(std::string_view field,
                                                                    size_t size) const {
    const Json* value = Find(field);
    if (value == nullptr) return Error(field, "is required but missing");
    if (!value->is_array() || value->size() != size) {
      return Error(field,
                   absl::StrCat("must be a list of ", size, " numbers, got ", Describe(*value)));
    }
    std::vector<double> numbers;
    for (const Json& item : *value) {
      if (!item.is_number() || !(item.get<double>() > 0)) {
        return Error(field, absl::StrCat("must hold positive numbers, got ", item.dump()));
      }
      numbers.push_back(item.get<double>());
    }
    return numbers;
  }

  [[nodiscard]] absl::StatusOr<bool> Bool(std::string_view field, bool default_value) const {
    const Json* value = Find(field);
    if (value == nullptr) return default_value;
    if (!value->is_boolean()) {
      return Error(field, absl::StrCat("must be true or false, got ", Describe(*value)));
    }
    return value->get<bool>();
  }

  [[nodiscard]] absl::StatusOr<std::optional<std::string>> OptionalString(
      std::string_view field) const {
    const Json* value = Find(field);
    if (value == nullptr) return std::optional<std::string>();
    if (!value->is_string()) {
      return Error(field, absl::StrCat("must be a string, got ", Describe(*value)));
    }
    return std::optional<std::string>(value->get<std::string>());
  }

 private:
  const Json& object_;
  std::string path_;    // config.json path, for messages.
  std::string prefix_;  // "rope_scaling." for nested objects.
};

absl::StatusOr<std::string> ReadArchitecture(const FieldReader& reader, const Json& root) {
  const Json* architectures = reader.Find("architectures");
  if (architectures == nullptr) return reader.Error("architectures", "is required but missing");
  if (!architectures->is_array() || architectures->empty() || !(*architectures)[0].is_string()) {
    return reader.Error("architectures", absl::StrCat("must be a non-empty list of strings, got ",
                                                      Describe(root.at("architectures"))));
  }
  std::string architecture = (*architectures)[0].get<std::string>();
  // A classifier's decoder: any text architecture but Gemma 3's (whose
  // Gemma3ForSequenceClassification is the multimodal model's).
  const std::optional<std::string> decoder = ClassifierDecoder(architecture);
  const std::string& served = decoder.value_or(architecture);
  for (const std::string& supported : SupportedArchitectures()) {
    if (served == supported &&
        !(decoder.has_value() && (served == kGemma3 || served == kGemma3Multimodal))) {
      return architecture;
    }
  }
  return reader.Error("architectures",
                      absl::StrCat("names unsupported architecture \"", architecture,
                                   "\"; supported: ", absl::StrJoin(SupportedArchitectures(), ", "),
                                   ", and the ForSequenceClassification form of each but "
                                   "Gemma 3's"));
}

// "linear" scaling: every rotary frequency divided by the required `factor`.
absl::StatusOr<RopeScaling> ReadLinearScaling(const FieldReader& rope) {
  RopeScaling scaling{.type = RopeScalingType::kLinear};
  HR_ASSIGN_OR_RETURN(scaling.factor, rope.PositiveNumber("factor", 0));
  if (scaling.factor == 0) return rope.Error("factor", "is required for linear rope scaling");
  return scaling;
}

// "yarn" scaling as transformers and vLLM read it (docs/engine.md, YaRN): the required factor
// (at least 1), the pretrained length from rope_scaling (else max_position_embeddings), betas
// where 0 or null mean transformers' defaults, and the attention factor. DeepSeek's mscale
// variant, gpt-oss's untruncated ramp and vLLM's own extrapolation_factor / attn_factor keys
// would change the numbers and are refused.
absl::StatusOr<RopeScaling> ReadYarnScaling(const FieldReader& rope, const ModelConfig& config) {
  for (std::string_view unsupported : {"mscale", "mscale_all_dim"}) {
    if (rope.Find(unsupported) != nullptr) {
      return rope.Error(unsupported,
                        "is not supported (DeepSeek's YaRN variant); headroom's yarn takes factor, "
                        "original_max_position_embeddings, beta_fast, beta_slow and "
                        "attention_factor");
    }
  }
  HR_ASSIGN_OR_RETURN(const bool truncate, rope.Bool("truncate", true));
  if (!truncate) return rope.Error("truncate", "is false; only the truncated ramp is supported");
  for (std::string_view vllm_key : {"extrapolation_factor", "attn_factor"}) {
    HR_ASSIGN_OR_RETURN(const std::optional<double> value, rope.OptionalNumber(vllm_key));
    if (value && *value != 1.0) {
      return rope.Error(vllm_key, absl::StrCat("is ", *value,
                                               "; only 1 is supported (use "
                                               "attention_factor for the factor on cos and sin)"));
    }
  }
  RopeScaling scaling{.type = RopeScalingType::kYarn};
  HR_ASSIGN_OR_RETURN(scaling.factor, rope.PositiveNumber("factor", 0));
  if (scaling.factor == 0) return rope.Error("factor", "is required for yarn rope scaling");
  if (scaling.factor < 1.0) {
    return rope.Error("factor", absl::StrCat("must be at least 1 for yarn, got ", scaling.factor));
  }
  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> original,
                      rope.OptionalPositiveInt("original_max_position_embeddings"));
  scaling.original_max_position_embeddings = original.value_or(config.max_position_embeddings);
  const double context =
      static_cast<double>(scaling.original_max_position_embeddings) * scaling.factor;
  if (context > static_cast<double>(kvcache::kMaxModelLen)) {
    return rope.Error("factor",
                      absl::StrCat("is ", scaling.factor, ": ",
                                   scaling.original_max_position_embeddings, " x ", scaling.factor,
                                   " positions exceed the largest "
                                   "context headroom serves (",
                                   kvcache::kMaxModelLen, ")"));
  }
  for (auto [key, beta] : {std::pair{std::string_view("beta_fast"), &scaling.beta_fast},
                           std::pair{std::string_view("beta_slow"), &scaling.beta_slow}}) {
    HR_ASSIGN_OR_RETURN(const std::optional<double> value, rope.OptionalNumber(key));
    if (!value || *value == 0) continue;  // transformers: `rope_scaling.get(key) or default`
    if (!(*value > 0)) return rope.Error(key, absl::StrCat("must be positive, got ", *value));
    *beta = *value;
  }
  if (scaling.beta_fast < scaling.beta_slow) {
    return rope.Error("beta_fast", absl::StrCat("must be at least beta_slow (", scaling.beta_slow,
                                                "), got ", scaling.beta_fast));
  }
  HR_ASSIGN_OR_RETURN(scaling.attention_factor,
                      rope.PositiveNumber("attention_factor", YarnAttentionFactor(scaling.factor)));
  return scaling;
}

// rotary_dim from partial_rotary_factor (Phi-4-mini's 0.75, GLM's 0.5 by default), as
// transformers forms it: int(head_dim * factor), rotating that many leading values of each head
// (Phi-3 and GLM only: the other architectures' attention rotates whole heads, so a factor there
// is refused).
absl::Status ReadRotaryDim(const FieldReader& reader, ModelConfig& config) {
  const bool glm = config.architecture == kGlm || config.architecture == kGlm4 ||
                   config.architecture == kGlm4Moe;
  HR_ASSIGN_OR_RETURN(std::optional<double> factor, reader.OptionalNumber("partial_rotary_factor"));
  if (!factor && glm) factor = kGlmDefaultPartialRotaryFactor;
  if (!factor || *factor == 1.0) return absl::OkStatus();
  if (config.architecture != kPhi3 && !glm) {
    return reader.Error("partial_rotary_factor",
                        absl::StrCat("is ", *factor, "; partial rotary embedding is supported for ",
                                     std::string(kPhi3), ", ", std::string(kGlm), ", ",
                                     std::string(kGlm4), " and ", std::string(kGlm4Moe), " only"));
  }
  if (!(*factor > 0.0 && *factor < 1.0)) {
    return reader.Error("partial_rotary_factor", absl::StrCat("must be in (0, 1], got ", *factor));
  }
  const auto rotary_dim = static_cast<int64_t>(static_cast<double>(config.head_dim) * *factor);
  if (rotary_dim < 2 || rotary_dim % 2 != 0) {
    return reader.Error(
        "partial_rotary_factor",
        absl::StrCat("is ", *factor, ": int(head_dim ", config.head_dim, " x ", *factor, ") = ",
                     rotary_dim, " rotated values per head, which must be even and at least 2"));
  }
  config.rotary_dim = rotary_dim;
  return absl::OkStatus();
}

// LongRoPE as Phi-3.5's config.json gives it: the two factor lists in rope_scaling, the pretrained
// length at the top level (Phi3Config) or in rope_scaling.
absl::Status ReadLongRope(const FieldReader& reader, const FieldReader& rope, ModelConfig& config) {
  for (std::string_view unsupported : {"short_mscale", "long_mscale"}) {
    if (rope.Find(unsupported) != nullptr) {
      return rope.Error(unsupported,
                        "is not supported (only the default attention factor or "
                        "rope_scaling.attention_factor)");
    }
  }
  LongRope long_rope;
  const auto half = static_cast<size_t>(RotaryDim(config) / 2);
  HR_ASSIGN_OR_RETURN(long_rope.short_factor, rope.PositiveNumbers("short_factor", half));
  HR_ASSIGN_OR_RETURN(long_rope.long_factor, rope.PositiveNumbers("long_factor", half));
  HR_ASSIGN_OR_RETURN(std::optional<int64_t> original,
                      reader.OptionalPositiveInt("original_max_position_embeddings"));
  if (!original) {
    HR_ASSIGN_OR_RETURN(original, rope.OptionalPositiveInt("original_max_position_embeddings"));
  }
  if (!original) {
    return reader.Error("original_max_position_embeddings", "is required by longrope scaling");
  }
  long_rope.original_max_position_embeddings = *original;
  HR_ASSIGN_OR_RETURN(const std::optional<double> attention_factor,
                      rope.OptionalNumber("attention_factor"));
  if (attention_factor) {
    if (!(*attention_factor > 0)) {
      return rope.Error("attention_factor",
                        absl::StrCat("must be positive, got ", *attention_factor));
    }
    long_rope.attention_factor = *attention_factor;
  } else {
    long_rope.attention_factor = LongRopeAttentionFactor(config.max_position_embeddings, *original);
  }
  config.long_rope = std::move(long_rope);
  return absl::OkStatus();
}

// rope_scaling (transformers < 5) or rope_parameters (transformers >= 5): "llama3" and "longrope"
// (or its old name "su") change the rotary frequencies; "default" (or no type) means none.
absl::Status ReadRopeScaling(const FieldReader& reader, std::string_view path,
                             ModelConfig& config) {
  for (std::string_view key :
       {std::string_view("rope_scaling"), std::string_view("rope_parameters")}) {
    const Json* value = reader.Find(key);
    if (value == nullptr) continue;
    if (!value->is_object()) {
      return reader.Error(key, absl::StrCat("must be an object or null, got ", Describe(*value)));
    }
    const FieldReader rope(*value, path, absl::StrCat(std::string(key), "."));
    if (key == "rope_parameters") {
      HR_ASSIGN_OR_RETURN(config.rope_theta, rope.PositiveNumber("rope_theta", config.rope_theta));
    }
    HR_ASSIGN_OR_RETURN(std::optional<std::string> type, rope.OptionalString("rope_type"));
    if (!type) {
      HR_ASSIGN_OR_RETURN(type, rope.OptionalString("type"));
    }
    if (!type || *type == "default") continue;
    if (*type == "longrope" || *type == "su") {
      HR_RETURN_IF_ERROR(ReadLongRope(reader, rope, config));
      continue;
    }
    if (*type == "linear") {
      HR_ASSIGN_OR_RETURN(config.rope_scaling, ReadLinearScaling(rope));
      continue;
    }
    if (*type == "yarn") {
      HR_ASSIGN_OR_RETURN(config.rope_scaling, ReadYarnScaling(rope, config));
      continue;
    }
    if (*type != "llama3") {
      return rope.Error("rope_type",
                        absl::StrCat("names unsupported rope scaling \"", *type,
                                     "\"; supported: default, linear, llama3, longrope, yarn"));
    }
    RopeScaling scaling;
    HR_ASSIGN_OR_RETURN(scaling.factor, rope.PositiveNumber("factor", 0));
    HR_ASSIGN_OR_RETURN(scaling.low_freq_factor, rope.PositiveNumber("low_freq_factor", 1.0));
    HR_ASSIGN_OR_RETURN(scaling.high_freq_factor, rope.PositiveNumber("high_freq_factor", 4.0));
    HR_ASSIGN_OR_RETURN(scaling.original_max_position_embeddings,
                        rope.PositiveInt("original_max_position_embeddings"));
    if (scaling.factor == 0) return rope.Error("factor", "is required for llama3 rope scaling");
    if (scaling.high_freq_factor <= scaling.low_freq_factor) {
      return rope.Error("high_freq_factor",
                        absl::StrCat("must exceed low_freq_factor (", scaling.low_freq_factor,
                                     "), got ", scaling.high_freq_factor));
    }
    config.rope_scaling = scaling;
  }
  return absl::OkStatus();
}

// A positive integer field, `default_value` when absent or null; required without a default.
absl::StatusOr<int64_t> PositiveIntOr(const FieldReader& reader, std::string_view field,
                                      std::optional<int64_t> default_value) {
  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> value, reader.OptionalPositiveInt(field));
  if (value) return *value;
  if (default_value) return *default_value;
  return reader.Error(field, "is required but missing");
}

// A non-negative integer field, `default_value` when absent or null; required without a default.
absl::StatusOr<int64_t> NonNegativeIntOr(const FieldReader& reader, std::string_view field,
                                         std::optional<int64_t> default_value) {
  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> value, reader.OptionalInt(field));
  if (value && *value < 0) {
    return reader.Error(field, absl::StrCat("must not be negative, got ", *value));
  }
  if (value) return *value;
  if (default_value) return *default_value;
  return reader.Error(field, "is required but missing");
}

// sliding_window: `default_value` (the config class's) when the key is absent, none when it is
// null (Mistral v0.2 and later, EXAONE-4.0-1.2B), else its positive value.
absl::StatusOr<std::optional<int64_t>> SlidingWindowOr(const FieldReader& reader,
                                                       int64_t default_value) {
  if (!reader.Has("sliding_window")) return std::optional<int64_t>(default_value);
  return reader.OptionalPositiveInt("sliding_window");
}

// config.json's layer_types (newer transformers): which layers slide, into sliding_layers.
absl::Status ReadLayerTypes(const FieldReader& reader, ModelConfig& config) {
  const Json* types = reader.Find("layer_types");
  if (types == nullptr) return absl::OkStatus();
  if (!types->is_array() || static_cast<int64_t>(types->size()) != config.num_hidden_layers) {
    return reader.Error("layer_types",
                        absl::StrCat("must list one type per layer (", config.num_hidden_layers,
                                     "), got ", Describe(*types)));
  }
  config.sliding_layers.clear();
  for (const Json& type : *types) {
    if (type == "sliding_attention") {
      config.sliding_layers.push_back(true);
    } else if (type == "full_attention") {
      config.sliding_layers.push_back(false);
    } else {
      return reader.Error("layer_types",
                          absl::StrCat("has ", Describe(type),
                                       "; supported: \"sliding_attention\", \"full_attention\""));
    }
  }
  return absl::OkStatus();
}

// attention_bias (LlamaConfig's: q/k/v and o_proj) and, for configs that have it, mlp_bias
// (gate/up/down); both false when absent.
absl::Status ReadBiasFlags(const FieldReader& reader, bool mlp, ModelConfig& config) {
  HR_ASSIGN_OR_RETURN(const bool attention_bias, reader.Bool("attention_bias", false));
  config.qkv_bias = attention_bias;
  config.o_proj_bias = attention_bias;
  if (!mlp) return absl::OkStatus();
  HR_ASSIGN_OR_RETURN(config.mlp_bias, reader.Bool("mlp_bias", false));
  return absl::OkStatus();
}

// SmolLM3: Llama's block, but the layers no_rope_layers marks 0 (every 4th by default) attend
// without rotary (NoPE); with use_sliding_window, layer_types' sliding layers (by default the NoPE
// ones, as SmolLM3Config derives them) take the window.
absl::Status ReadSmolLM3(const FieldReader& reader, ModelConfig& config) {
  HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/true, config));
  const auto layers = static_cast<size_t>(config.num_hidden_layers);
  config.nope_layers.assign(layers, false);
  if (const Json* rope = reader.Find("no_rope_layers"); rope != nullptr) {
    // SmolLM3Config: "at least the same length as the number of layers", 1 for rotary.
    if (!rope->is_array() || rope->size() < layers) {
      return reader.Error("no_rope_layers", absl::StrCat("must list 0 or 1 for each of the ",
                                                         layers, " layers, got ", Describe(*rope)));
    }
    for (size_t i = 0; i < layers; ++i) {
      const Json& flag = (*rope)[i];
      if (flag != 0 && flag != 1) {
        return reader.Error("no_rope_layers", absl::StrCat("has ", Describe(flag), " at layer ", i,
                                                           "; each entry is 0 (NoPE) or 1"));
      }
      config.nope_layers[i] = flag == 0;
    }
  } else {
    HR_ASSIGN_OR_RETURN(const std::optional<int64_t> given,
                        reader.OptionalPositiveInt("no_rope_layer_interval"));
    const int64_t interval = given.value_or(kSmolLM3DefaultNoRopeInterval);
    for (size_t i = 0; i < layers; ++i) {
      config.nope_layers[i] = (static_cast<int64_t>(i) + 1) % interval == 0;
    }
  }
  HR_ASSIGN_OR_RETURN(const bool use_sliding_window, reader.Bool("use_sliding_window", false));
  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> window,
                      reader.OptionalPositiveInt("sliding_window"));
  if (!use_sliding_window || !window) return absl::OkStatus();
  config.sliding_window = window;
  config.sliding_layers = config.nope_layers;
  return ReadLayerTypes(reader, config);
}

// OLMo 3: OLMo 2's block with a sliding window on three layers of four (layer_types, else
// Olmo3Config's pattern) whose rotary is never scaled; only the full-attention layers apply
// rope_scaling (YaRN in OLMo-3-7B and -32B), as transformers' Olmo3 builds one rotary per kind.
absl::Status ReadOlmo3Window(const FieldReader& reader, ModelConfig& config) {
  HR_ASSIGN_OR_RETURN(config.sliding_window, SlidingWindowOr(reader, kOlmo3DefaultSlidingWindow));
  config.sliding_window_pattern = kOlmo3DefaultPattern;
  HR_RETURN_IF_ERROR(ReadLayerTypes(reader, config));
  if (config.long_rope) {
    return reader.Error("rope_scaling",
                        "is longrope; OLMo 3 supports default, linear, llama3 "
                        "and yarn");
  }
  if (config.rope_scaling) config.rope_local_theta = config.rope_theta;
  return absl::OkStatus();
}

// EXAONE 4.0: with a sliding window (Exaone4Config's default 4096; null: none), the layers of the
// sliding kind attend the window with rotary and the others the whole context WITHOUT rotary
// (transformers rotates a layer only when sliding_window is null or the layer slides). The kinds:
// layer_types, else sliding_window_pattern, a period (every n-th layer global) or a string of
// L (local) and G (global) repeated from layer 0 (EXAONE-4.0-32B: "LLLG").
absl::Status ReadExaone4Window(const FieldReader& reader, ModelConfig& config) {
  HR_ASSIGN_OR_RETURN(config.sliding_window, SlidingWindowOr(reader, kExaone4DefaultSlidingWindow));
  if (!config.sliding_window) return absl::OkStatus();
  const Json* pattern = reader.Find("sliding_window_pattern");
  if (reader.Find("layer_types") != nullptr) {
    HR_RETURN_IF_ERROR(ReadLayerTypes(reader, config));
  } else if (pattern != nullptr && pattern->is_string()) {
    const std::string kinds = pattern->get<std::string>();
    if (kinds.empty() || kinds.find_first_not_of("LG") != std::string::npos) {
      return reader.Error("sliding_window_pattern",
                          absl::StrCat("is ", Describe(*pattern),
                                       "; a string pattern lists L (local) and G (global) only"));
    }
    for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
      config.sliding_layers.push_back(kinds[static_cast<size_t>(layer) % kinds.size()] == 'L');
    }
  } else {
    HR_ASSIGN_OR_RETURN(const std::optional<int64_t> period,
                        reader.OptionalPositiveInt("sliding_window_pattern"));
    config.sliding_window_pattern = period.value_or(kExaone4DefaultPattern);
    if (config.sliding_window_pattern < 2) {
      return reader.Error("sliding_window_pattern",
                          absl::StrCat("is ", config.sliding_window_pattern,
                                       "; a period must be at least 2 (one local layer)"));
    }
  }
  config.nope_layers.clear();
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    config.nope_layers.push_back(!LayerIsSlidingKind(config, layer));
  }
  return absl::OkStatus();
}

// Dots1Config's layer kinds: layer_types, else the layers from max_window_layers on slide when
// sliding_window (4096 by default; null: none) is set. No sliding layer: no window.
absl::Status ReadDots1Window(const FieldReader& reader, ModelConfig& config) {
  HR_ASSIGN_OR_RETURN(config.sliding_window, SlidingWindowOr(reader, kDots1DefaultSlidingWindow));
  if (!config.sliding_window) return absl::OkStatus();
  if (reader.Find("layer_types") != nullptr) {
    HR_RETURN_IF_ERROR(ReadLayerTypes(reader, config));
  } else {
    HR_ASSIGN_OR_RETURN(const int64_t first, NonNegativeIntOr(reader, "max_window_layers",
                                                              kDots1DefaultMaxWindowLayers));
    for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
      config.sliding_layers.push_back(layer >= first);
    }
  }
  if (std::find(config.sliding_layers.begin(), config.sliding_layers.end(), true) ==
      config.sliding_layers.end()) {
    config.sliding_window.reset();
    config.sliding_layers.clear();
  }
  return absl::OkStatus();
}

absl::Status ReadBiasesAndWindow(const FieldReader& reader, ModelConfig& config) {
  if (config.architecture == kQwen2 || config.architecture == kQwen2Moe) {
    // Qwen2's q/k/v projections always carry a bias and o_proj never does; config.json has no key.
    // Qwen2MoeConfig later gained qkv_bias, true by default.
    config.qkv_bias = true;
    if (config.architecture == kQwen2Moe) {
      HR_ASSIGN_OR_RETURN(config.qkv_bias, reader.Bool("qkv_bias", true));
    }
    HR_ASSIGN_OR_RETURN(const bool use_sliding_window, reader.Bool("use_sliding_window", false));
    if (use_sliding_window) {
      return reader.Error("use_sliding_window",
                          absl::StrCat("is true; sliding-window attention for ",
                                       config.architecture, " is not supported"));
    }
  } else if (config.architecture == kQwen3 || config.architecture == kQwen3Moe) {
    // Qwen3: q/k/v and o biases only with attention_bias (false in the published checkpoints),
    // and a per-head RMSNorm of q and k.
    HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/false, config));
    config.qk_norm = true;
    HR_ASSIGN_OR_RETURN(const bool use_sliding_window, reader.Bool("use_sliding_window", false));
    if (use_sliding_window) {
      return reader.Error("use_sliding_window",
                          "is true; sliding-window attention for Qwen3 is not supported");
    }
  } else if (config.architecture == kLlama) {
    HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/true, config));
  } else if (config.architecture == kPhi3) {
    // Phi-3 / Phi-4: fused projections, no biases, a window on every layer when set (Phi-3-mini-4k:
    // 2047; Phi3Config's default is none).
    config.fused_qkv = true;
    config.fused_gate_up = true;
    HR_ASSIGN_OR_RETURN(config.sliding_window, reader.OptionalPositiveInt("sliding_window"));
  } else if (config.architecture == kGranite || config.architecture == kGraniteMoe) {
    // Granite (3.x): Llama's block with muP multipliers on the embeddings, the attention scores,
    // the residual branches and the logits; all 1 in GraniteConfig when absent.
    HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/true, config));
    HR_ASSIGN_OR_RETURN(config.embedding_multiplier,
                        reader.PositiveNumber("embedding_multiplier", 1.0));
    HR_ASSIGN_OR_RETURN(config.attention_multiplier,
                        reader.PositiveNumber("attention_multiplier", 1.0));
    HR_ASSIGN_OR_RETURN(config.residual_multiplier,
                        reader.PositiveNumber("residual_multiplier", 1.0));
    HR_ASSIGN_OR_RETURN(config.logits_scaling, reader.PositiveNumber("logits_scaling", 1.0));
  } else if (config.architecture == kGemma || config.architecture == kGemma2 ||
             config.architecture == kGemma3) {
    HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/false, config));
  } else if (config.architecture == kSmolLM3) {
    HR_RETURN_IF_ERROR(ReadSmolLM3(reader, config));
  } else if (config.architecture == kGlm || config.architecture == kGlm4) {
    // GLM-4 (GlmForCausalLM: glm-4-9b-chat-hf; Glm4ForCausalLM: GLM-4-0414, with sandwich norms):
    // q/k/v biases with attention_bias (true by default), never an o_proj bias, gate and up fused,
    // and rotary over interleaved pairs of the leading partial_rotary_factor of each head.
    HR_ASSIGN_OR_RETURN(config.qkv_bias, reader.Bool("attention_bias", kGlmDefaultAttentionBias));
    config.fused_gate_up = true;
    config.interleaved_rotary = true;
    // GLM-4-0414's four norms are Gemma 2's sandwich under other names (ModelWeights::NormNames).
    config.sandwich_norms = config.architecture == kGlm4;
  } else if (config.architecture == kGlm4Moe) {
    // GLM-4.5 / 4.6: q/k/v biases with attention_bias (false by default, true in the published
    // checkpoints), never an o_proj bias, per-head q/k norms with use_qk_norm (GLM-4.5 has them,
    // GLM-4.5-Air not), separate projections, and rotary over the leading partial_rotary_factor
    // of each head in Llama's rotate-half layout (GLM-4's pairs are interleaved).
    HR_ASSIGN_OR_RETURN(config.qkv_bias, reader.Bool("attention_bias", false));
    HR_ASSIGN_OR_RETURN(config.qk_norm, reader.Bool("use_qk_norm", false));
  } else if (config.architecture == kDots1) {
    // dots.llm1: Qwen3's attention (per-head q/k norms; q/k/v/o biases only with attention_bias)
    // and its window on the layers from max_window_layers on (none of dots.llm1's), unless
    // config.json lists layer_types.
    HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/false, config));
    config.qk_norm = true;
    HR_RETURN_IF_ERROR(ReadDots1Window(reader, config));
  } else if (config.architecture == kOlmo2 || config.architecture == kOlmo3) {
    // OLMo 2: no norm before attention or the MLP, an RMSNorm of each one's output before its
    // residual add (Gemma 2's post norms, under the same names), and q/k norms over the whole
    // projections; q/k/v/o biases only with attention_bias (false in the published checkpoints).
    HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/false, config));
    config.qk_norm = true;
    config.qk_norm_across_heads = true;
    config.sandwich_norms = true;
    config.pre_norms = false;
    if (config.architecture == kOlmo3) HR_RETURN_IF_ERROR(ReadOlmo3Window(reader, config));
  } else if (config.architecture == kSeedOss) {
    // Seed-OSS: Llama's block with q/k/v biases (attention_bias, true by default) and an o_proj
    // bias of its own (attention_out_bias, false by default); mlp_bias as Llama's.
    HR_ASSIGN_OR_RETURN(config.qkv_bias, reader.Bool("attention_bias", true));
    HR_ASSIGN_OR_RETURN(config.o_proj_bias, reader.Bool("attention_out_bias", false));
    HR_ASSIGN_OR_RETURN(config.mlp_bias, reader.Bool("mlp_bias", false));
  } else if (config.architecture == kExaone4) {
    // EXAONE 4.0: OLMo 2's output norms (no input norms), Qwen3's per-head q/k norms, no biases.
    config.qk_norm = true;
    config.sandwich_norms = true;
    config.pre_norms = false;
    HR_RETURN_IF_ERROR(ReadExaone4Window(reader, config));
  } else if (config.architecture == kOlmoe) {
    // OLMoE: Llama's pre-norm block with OLMo 2's q/k norms over the whole projections and a
    // mixture of experts; clip_qkv (a clamp of q, k and v, null in OLMoE-1B-7B) is refused.
    HR_RETURN_IF_ERROR(ReadBiasFlags(reader, /*mlp=*/false, config));
    config.qk_norm = true;
    config.qk_norm_across_heads = true;
    HR_ASSIGN_OR_RETURN(const std::optional<double> clip, reader.OptionalNumber("clip_qkv"));
    if (clip) {
      return reader.Error("clip_qkv", absl::StrCat("is ", *clip,
                                                   "; clamping q, k and v is not supported "
                                                   "(only null)"));
    }
  } else if (config.architecture == kMixtral) {
    // MixtralConfig's sliding_window defaults to none (Mistral's to 4096).
    HR_ASSIGN_OR_RETURN(config.sliding_window, reader.OptionalPositiveInt("sliding_window"));
  } else if (config.architecture == kMistral) {
    // An absent key takes MistralConfig's default; an explicit null (v0.2 and later) means none.
    HR_ASSIGN_OR_RETURN(config.sliding_window,
                        SlidingWindowOr(reader, kMistralDefaultSlidingWindow));
  }
  // A window of at least the model's context (MaxContextLength) never masks a key: a sequence's
  // tokens are fewer than that apart (--max-model-len may not exceed it). Phi-3-mini-128k,
  // Phi-3.5-mini and Phi-4-mini declare 262144 with 131072 positions; they are planned and served
  // without one.
  if (config.sliding_window && *config.sliding_window >= MaxContextLength(config)) {
    config.sliding_window.reset();
  }
  return absl::OkStatus();
}

// A softcap key: absent takes `default_value` (the config class's), null means none (0), else
// positive.
absl::StatusOr<double> ReadSoftcap(const FieldReader& reader, std::string_view field,
                                   double default_value) {
  if (!reader.Has(field)) return default_value;
  HR_ASSIGN_OR_RETURN(const std::optional<double> value, reader.OptionalNumber(field));
  if (!value) return 0.0;
  if (!(*value > 0) || !std::isfinite(*value)) {
    return reader.Error(field, absl::StrCat("must be positive or null, got ", *value));
  }
  return *value;
}

// Gemma 2: (1 + w) norms, sqrt(hidden)-scaled embeddings, norms around attention and the MLP,
// query_pre_attn_scalar, soft-capped attention scores and logits, and a sliding window on the
// even layers.
absl::Status ReadGemma2(const FieldReader& reader, ModelConfig& config) {
  config.norm_weight_offset = true;
  config.embedding_multiplier = std::sqrt(static_cast<double>(config.hidden_size));
  config.sandwich_norms = true;
  config.sliding_window_pattern = 2;
  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> window,
                      reader.OptionalPositiveInt("sliding_window"));
  config.sliding_window = window.value_or(kGemma2DefaultSlidingWindow);
  HR_ASSIGN_OR_RETURN(
      config.query_pre_attn_scalar,
      reader.PositiveNumber("query_pre_attn_scalar", kGemma2DefaultQueryPreAttnScalar));
  HR_ASSIGN_OR_RETURN(config.attn_logit_softcapping,
                      ReadSoftcap(reader, "attn_logit_softcapping", kGemma2DefaultAttnSoftcap));
  HR_ASSIGN_OR_RETURN(config.final_logit_softcapping,
                      ReadSoftcap(reader, "final_logit_softcapping", kGemma2DefaultFinalSoftcap));
  return absl::OkStatus();
}

// Which Gemma 3 layers slide: config.json's layer_types list when present (newer transformers),
// else sliding_window_pattern (older; `_sliding_window_pattern` in some files).
absl::Status ReadGemma3LayerTypes(const FieldReader& reader, ModelConfig& config) {
  if (reader.Find("layer_types") != nullptr) return ReadLayerTypes(reader, config);
  for (std::string_view key : {"sliding_window_pattern", "_sliding_window_pattern"}) {
    HR_ASSIGN_OR_RETURN(const std::optional<int64_t> pattern, reader.OptionalPositiveInt(key));
    if (!pattern) continue;
    if (*pattern < 2) {
      return reader.Error(key, absl::StrCat("is ", *pattern, "; it must be at least 2"));
    }
    config.sliding_window_pattern = *pattern;
    return absl::OkStatus();
  }
  config.sliding_window_pattern = kGemma3DefaultPattern;
  return absl::OkStatus();
}

// transformers 5 writes Gemma 3's rotary settings per layer type: rope_parameters
// {"full_attention": {...}, "sliding_attention": {...}}. Plain rotary only.
absl::Status ReadGemma3RopeParameters(const FieldReader& reader, std::string_view path,
                                      ModelConfig& config) {
  const Json* parameters = reader.Find("rope_parameters");
  if (parameters == nullptr || !parameters->is_object()) return absl::OkStatus();
  for (const auto& [type, theta] :
       {std::pair{std::string_view("full_attention"), &config.rope_theta},
        std::pair{std::string_view("sliding_attention"), &config.rope_local_theta}}) {
    const auto it = parameters->find(type);
    if (it == parameters->end() || it->is_null()) continue;
    if (!it->is_object()) {
      return reader.Error(absl::StrCat("rope_parameters.", std::string(type)),
                          absl::StrCat("must be an object, got ", Describe(*it)));
    }
    const FieldReader rope(*it, path, absl::StrCat("rope_parameters.", std::string(type), "."));
    HR_ASSIGN_OR_RETURN(*theta, rope.PositiveNumber("rope_theta", *theta));
    HR_ASSIGN_OR_RETURN(const std::optional<std::string> rope_type,
                        rope.OptionalString("rope_type"));
    // Gemma 3 4B+ scale the full-attention layers' rotary linearly; the sliding ones never.
    if (rope_type && *rope_type == "linear" && type == "full_attention") {
      HR_ASSIGN_OR_RETURN(config.rope_scaling, ReadLinearScaling(rope));
    } else if (rope_type && *rope_type != "default") {
      return rope.Error("rope_type", absl::StrCat("names unsupported rope scaling \"", *rope_type,
                                                  "\"; supported for Gemma 3: default, and "
                                                  "linear for full_attention"));
    }
  }
  return absl::OkStatus();
}

// Gemma 3 (text): Gemma 2's block without its softcaps (null by default), per-head q/k norms,
// a rotary base of its own for the sliding layers, and five sliding layers in six.
absl::Status ReadGemma3(const FieldReader& reader, std::string_view path, ModelConfig& config) {
  config.norm_weight_offset = true;
  config.embedding_multiplier = std::sqrt(static_cast<double>(config.hidden_size));
  config.sandwich_norms = true;
  config.qk_norm = true;
  HR_ASSIGN_OR_RETURN(const bool bidirectional, reader.Bool("use_bidirectional_attention", false));
  if (bidirectional) {
    return reader.Error("use_bidirectional_attention",
                        "is true (an embedding model); only causal attention is supported");
  }
  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> window,
                      reader.OptionalPositiveInt("sliding_window"));
  config.sliding_window = window.value_or(kGemma3DefaultSlidingWindow);
  HR_RETURN_IF_ERROR(ReadGemma3LayerTypes(reader, config));
  HR_ASSIGN_OR_RETURN(
      config.query_pre_attn_scalar,
      reader.PositiveNumber("query_pre_attn_scalar", kGemma3DefaultQueryPreAttnScalar));
  HR_ASSIGN_OR_RETURN(config.attn_logit_softcapping,
                      ReadSoftcap(reader, "attn_logit_softcapping", 0.0));
  HR_ASSIGN_OR_RETURN(config.final_logit_softcapping,
                      ReadSoftcap(reader, "final_logit_softcapping", 0.0));
  HR_ASSIGN_OR_RETURN(config.rope_local_theta,
                      reader.PositiveNumber("rope_local_base_freq", kGemma3DefaultLocalRopeTheta));
  if (!reader.Has("rope_theta")) config.rope_theta = kGemma3DefaultRopeTheta;
  return ReadGemma3RopeParameters(reader, path, config);
}

// is_matryoshka and matryoshka_dimensions (a list implies is_matryoshka), as vLLM reads them.
absl::Status ReadMatryoshka(const FieldReader& reader, ModelConfig& config) {
  HR_ASSIGN_OR_RETURN(config.is_matryoshka, reader.Bool("is_matryoshka", false));
  const Json* dimensions = reader.Find("matryoshka_dimensions");
  if (dimensions == nullptr) return absl::OkStatus();
  const std::string expected =
      absl::StrCat("must be a list of sizes in [1, hidden_size (", config.hidden_size, ")]");
  if (!dimensions->is_array() || dimensions->empty()) {
    return reader.Error("matryoshka_dimensions", expected);
  }
  for (const Json& size : *dimensions) {
    if (!size.is_number_integer() || size.get<int64_t>() < 1 ||
        size.get<int64_t>() > config.hidden_size) {
      return reader.Error("matryoshka_dimensions", absl::StrCat(expected, ", got ", size.dump()));
    }
    config.matryoshka_dimensions.push_back(size.get<int64_t>());
  }
  config.is_matryoshka = true;
  return absl::OkStatus();
}

// The MLP's activation: Gemma reads hidden_activation (transformers ignores its hidden_act), the
// others hidden_act.
absl::Status ReadActivation(const FieldReader& reader, ModelConfig& config) {
  const bool gemma = config.architecture == kGemma || config.architecture == kGemma2 ||
                     config.architecture == kGemma3;
  const std::string_view field = gemma ? "hidden_activation" : "hidden_act";
  HR_ASSIGN_OR_RETURN(const std::optional<std::string> activation, reader.OptionalString(field));
  const std::string name = activation.value_or(gemma ? "gelu_pytorch_tanh" : "silu");
  if (name == "silu") {
    config.hidden_activation = Activation::kSilu;
  } else if (name == "gelu_pytorch_tanh" || name == "gelu_new") {
    config.hidden_activation = Activation::kGeluTanh;
  } else {
    return reader.Error(field, absl::StrCat("names unsupported activation \"", name,
                                            "\"; supported: silu, gelu_pytorch_tanh, gelu_new"));
  }
  if (config.num_experts > 0 && config.hidden_activation != Activation::kSilu) {
    return reader.Error(field, absl::StrCat("names activation \"", name,
                                            "\"; a mixture of experts supports only silu"));
  }
  return absl::OkStatus();
}

// A DeepSeek-V3-style mixture of experts (GLM-4.5's Glm4MoeConfig, dots.llm1's Dots1Config):
// n_routed_experts of moe_intermediate_size routed by sigmoid scores with a correction bias,
// group-limited (n_group, topk_group), renormalized (norm_topk_prob) and scaled
// (routed_scaling_factor); n_shared_experts ungated shared experts as one MLP; and the first
// first_k_dense_replace layers dense, of intermediate_size.
absl::Status ReadDeepseekExperts(const FieldReader& reader, const DeepseekMoeDefaults& defaults,
                                 ModelConfig& config) {
  HR_ASSIGN_OR_RETURN(config.num_experts,
                      PositiveIntOr(reader, "n_routed_experts", defaults.experts));
  HR_ASSIGN_OR_RETURN(config.num_experts_per_tok,
                      PositiveIntOr(reader, "num_experts_per_tok", defaults.experts_per_token));
  config.dense_intermediate_size = config.intermediate_size;
  HR_ASSIGN_OR_RETURN(config.intermediate_size,
                      PositiveIntOr(reader, "moe_intermediate_size", defaults.expert_width));
  HR_ASSIGN_OR_RETURN(config.norm_topk_prob,
                      reader.Bool("norm_topk_prob", defaults.norm_topk_prob));
  HR_ASSIGN_OR_RETURN(config.routed_scaling_factor,
                      reader.PositiveNumber("routed_scaling_factor", 1.0));
  config.moe_sigmoid_scores = true;
  config.moe_correction_bias = true;
  HR_ASSIGN_OR_RETURN(config.moe_num_groups, PositiveIntOr(reader, "n_group", 1));
  HR_ASSIGN_OR_RETURN(config.moe_topk_groups, PositiveIntOr(reader, "topk_group", 1));
  const int64_t groups = config.moe_num_groups;
  if (config.num_experts % groups != 0 || (groups > 1 && config.num_experts / groups < 2)) {
    return reader.Error("n_group",
                        absl::StrCat("is ", groups, "; it must split the ", config.num_experts,
                                     " experts into equal groups of at least 2"));
  }
  if (config.moe_topk_groups > groups ||
      config.num_experts_per_tok > config.moe_topk_groups * (config.num_experts / groups)) {
    return reader.Error(
        "topk_group",
        absl::StrCat("is ", config.moe_topk_groups, "; it must be at most n_group (", groups,
                     ") and its groups must hold num_experts_per_tok (", config.num_experts_per_tok,
                     ") experts of ", config.num_experts / groups, " each"));
  }
  HR_ASSIGN_OR_RETURN(const int64_t shared,
                      NonNegativeIntOr(reader, "n_shared_experts", defaults.shared_experts));
  config.shared_expert_intermediate_size = shared * config.intermediate_size;
  config.shared_expert_gated = false;
  HR_ASSIGN_OR_RETURN(const int64_t dense,
                      NonNegativeIntOr(reader, "first_k_dense_replace", defaults.dense_layers));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    config.dense_mlp_layers.push_back(layer < dense);
  }
  return absl::OkStatus();
}

// Mixtral's, Qwen3-MoE's, Qwen2-MoE's and OLMoE's experts (Qwen2-MoE's with its shared expert).
// Qwen layers listed in mlp_only_layers, or skipped by a decoder_sparse_step above 1, would be
// dense: refused (no published checkpoint has them).
absl::Status ReadExperts(const FieldReader& reader, ModelConfig& config) {
  if (config.architecture == kMixtral || config.architecture == kGraniteMoe) {
    // Granite-MoE's gate: a softmax over the top k router logits, which is the softmax over all of
    // them renormalized over the top k.
    HR_ASSIGN_OR_RETURN(config.num_experts, reader.PositiveInt("num_local_experts"));
    HR_ASSIGN_OR_RETURN(config.num_experts_per_tok, reader.PositiveInt("num_experts_per_tok"));
    config.norm_topk_prob = true;
  } else if (config.architecture == kOlmoe) {
    // OLMoE: intermediate_size is each expert's; the top k are not renormalized by default.
    HR_ASSIGN_OR_RETURN(config.num_experts, reader.PositiveInt("num_experts"));
    HR_ASSIGN_OR_RETURN(config.num_experts_per_tok, reader.PositiveInt("num_experts_per_tok"));
    HR_ASSIGN_OR_RETURN(config.norm_topk_prob, reader.Bool("norm_topk_prob", false));
  } else if (config.architecture == kQwen3Moe || config.architecture == kQwen2Moe) {
    HR_ASSIGN_OR_RETURN(config.num_experts, reader.PositiveInt("num_experts"));
    HR_ASSIGN_OR_RETURN(config.num_experts_per_tok, reader.PositiveInt("num_experts_per_tok"));
    HR_ASSIGN_OR_RETURN(config.intermediate_size, reader.PositiveInt("moe_intermediate_size"));
    HR_ASSIGN_OR_RETURN(config.norm_topk_prob, reader.Bool("norm_topk_prob", false));
    HR_ASSIGN_OR_RETURN(const std::optional<int64_t> step,
                        reader.OptionalPositiveInt("decoder_sparse_step"));
    if (step.value_or(1) != 1) {
      return reader.Error("decoder_sparse_step",
                          absl::StrCat("is ", *step,
                                       "; only every layer a mixture of experts (1) "
                                       "is supported"));
    }
    const Json* dense = reader.Find("mlp_only_layers");
    if (dense != nullptr && !dense->is_null() && !(dense->is_array() && dense->empty())) {
      return reader.Error("mlp_only_layers",
                          "names dense layers; only every layer a mixture of experts is "
                          "supported");
    }
    // Qwen2-MoE's shared expert, every token's, beside the routed ones (Qwen2MoeConfig's default
    // 5632 when absent; Qwen3-MoE has none).
    if (config.architecture == kQwen2Moe) {
      HR_ASSIGN_OR_RETURN(const std::optional<int64_t> shared,
                          reader.OptionalPositiveInt("shared_expert_intermediate_size"));
      config.shared_expert_intermediate_size =
          shared.value_or(kQwen2MoeDefaultSharedExpertIntermediateSize);
    }
  } else if (config.architecture == kGlm4Moe) {
    HR_RETURN_IF_ERROR(ReadDeepseekExperts(reader, kGlm4MoeDefaults, config));
  } else if (config.architecture == kDots1) {
    HR_RETURN_IF_ERROR(ReadDeepseekExperts(reader, kDots1Defaults, config));
  } else {
    return absl::OkStatus();
  }
  if (config.num_experts > kvcache::kMaxNumExperts) {
    return reader.Error(
        config.architecture == kMixtral || config.architecture == kGraniteMoe ? "num_local_experts"
        : config.architecture == kGlm4Moe || config.architecture == kDots1    ? "n_routed_experts"
                                                                              : "num_experts",
        absl::StrCat("is ", config.num_experts, "; at most ", kvcache::kMaxNumExperts,
                     " experts per layer are supported"));
  }
  if (config.num_experts_per_tok > config.num_experts) {
    return reader.Error(
        "num_experts_per_tok",
        absl::StrCat("(", config.num_experts_per_tok, ") must not exceed the number of experts (",
                     config.num_experts, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& SupportedArchitectures() {
  // clang-format off
  static const std::vector<std::string>* const kArchitectures = new std::vector<std::string>{
      std::string(kLlama),       std::string(kMistral),     std::string(kMixtral),
      std::string(kQwen2),       std::string(kQwen2Moe),    std::string(kQwen3),
      std::string(kQwen3Moe),    std::string(kGemma),       std::string(kGemma2),
      std::string(kGemma3),      std::string(kPhi3),        std::string(kGranite),
      std::string(kGraniteMoe),  std::string(kSmolLM3),     std::string(kGlm),
      std::string(kGlm4),        std::string(kOlmo2),       std::string(kOlmo3),
      std::string(kOlmoe),       std::string(kExaone4),     std::string(kSeedOss),
      std::string(kGlm4Moe),     std::string(kDots1),       std::string(kGemma3Multimodal)};
  // clang-format on
  return *kArchitectures;
}

namespace {

// Architectures vLLM refuses to run in float16 (its _FLOAT16_NOT_SUPPORTED_MODELS).
bool RefusesFloat16(const ModelConfig& config) {
  for (std::string_view architecture : {kGemma2, kGemma3, kGemma3Multimodal, kGlm4}) {
    if (config.architecture == architecture) return true;
  }
  return false;
}

}  // namespace

int64_t NumDenseMlpLayers(const ModelConfig& config) {
  if (config.num_experts == 0) return 0;
  int64_t dense = 0;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (!LayerHasExperts(config, layer)) ++dense;
  }
  return dense;
}

absl::StatusOr<DType> ResolveModelDType(const ModelConfig& config, std::string_view flag_value) {
  const bool refuses_float16 = RefusesFloat16(config);
  // What "auto" means; never float16 for a model that refuses it.
  DType auto_dtype = config.torch_dtype;
  if (auto_dtype == DType::kFloat32) {
    auto_dtype = config.classifier && !refuses_float16 ? DType::kFloat16 : DType::kBFloat16;
  } else if (auto_dtype == DType::kFloat16 && refuses_float16) {
    auto_dtype = DType::kBFloat16;
  }
  HR_ASSIGN_OR_RETURN(const DType dtype, ResolveDType(flag_value, auto_dtype));
  if (dtype == DType::kFloat16 && refuses_float16) {
    return absl::InvalidArgumentError(absl::StrCat(
        config.architecture,
        " does not support float16 (numerical instability, as vLLM refuses it); use bfloat16 "
        "or float32"));
  }
  return dtype;
}

namespace {

// Whether the rope scaling stretches the context, as vLLM derives max_model_len: yarn and linear
// multiply it by their factor, but not for Gemma 3, whose max_position_embeddings (131072) already
// counts its linear factor 8.
bool ScalesContext(const ModelConfig& config) {
  if (!config.rope_scaling) return false;
  switch (config.rope_scaling->type) {
    case RopeScalingType::kYarn:
      return true;
    case RopeScalingType::kLinear:
      return config.architecture != kGemma3 && config.architecture != kGemma3Multimodal;
    case RopeScalingType::kLlama3:
      return false;
  }
  return false;
}

// The length the factor multiplies: yarn's pretrained length, else max_position_embeddings.
int64_t UnscaledContext(const ModelConfig& config) {
  return config.rope_scaling->type == RopeScalingType::kYarn
             ? config.rope_scaling->original_max_position_embeddings
             : config.max_position_embeddings;
}

}  // namespace

int64_t MaxContextLength(const ModelConfig& config) {
  if (!ScalesContext(config)) return config.max_position_embeddings;
  // vLLM: int(length * factor).
  return static_cast<int64_t>(static_cast<double>(UnscaledContext(config)) *
                              config.rope_scaling->factor);
}

std::string MaxContextSource(const ModelConfig& config) {
  if (!ScalesContext(config)) return "";
  const bool yarn = config.rope_scaling->type == RopeScalingType::kYarn;
  return absl::StrCat("rope_scaling ",
                      yarn ? "yarn: original_" : "linear: ", "max_position_embeddings ",
                      UnscaledContext(config), " x factor ", config.rope_scaling->factor);
}

bool LayerIsSlidingKind(const ModelConfig& config, int64_t layer) {
  if (!config.sliding_layers.empty()) {
    return layer >= 0 && layer < static_cast<int64_t>(config.sliding_layers.size()) &&
           config.sliding_layers[static_cast<size_t>(layer)];
  }
  const int64_t pattern = config.sliding_window_pattern;
  return !(pattern >= 2 && (layer + 1) % pattern == 0);
}

int64_t LayerSlidingWindow(const ModelConfig& config, int64_t layer) {
  if (!config.sliding_window || !LayerIsSlidingKind(config, layer)) return 0;
  return *config.sliding_window;
}

kvcache::LayerGroups KvCacheLayerGroups(const ModelConfig& config) {
  std::vector<int32_t> windows;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    windows.push_back(static_cast<int32_t>(
        std::min<int64_t>(LayerSlidingWindow(config, layer), std::numeric_limits<int32_t>::max())));
  }
  return kvcache::PlanLayerGroups(windows);
}

int64_t KvCacheSlidingWindow(const ModelConfig& config) {
  int64_t window = 0;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const int64_t layer_window = LayerSlidingWindow(config, layer);
    if (layer_window == 0) return 0;
    window = std::max(window, layer_window);
  }
  return window;
}

namespace {

// Gemma 3 4B+'s config.json: the language model's settings in text_config, which leaves out what
// equals Gemma3TextConfig's defaults (the published 4B's lacks vocab_size and rope_theta). The
// result is a Gemma3ForCausalLM config.json; the dtype comes from the top level when text_config
// has none.
absl::StatusOr<Json> Gemma3TextConfigJson(const Json& root, std::string_view path) {
  const auto text_config = root.find("text_config");
  if (text_config == root.end() || !text_config->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(path), ": field \"text_config\" must be an object (",
        std::string(kGemma3Multimodal), " keeps its language model's settings there)"));
  }
  Json text = {{"vocab_size", 262208},
               {"hidden_size", 2304},
               {"intermediate_size", 9216},
               {"num_hidden_layers", 26},
               {"num_attention_heads", 8},
               {"num_key_value_heads", 4},
               {"head_dim", 256},
               {"hidden_activation", "gelu_pytorch_tanh"},
               {"max_position_embeddings", 131072},
               {"rms_norm_eps", 1e-6},
               {"rope_theta", 1000000.0},
               {"rope_local_base_freq", 10000.0},
               {"query_pre_attn_scalar", 256},
               {"sliding_window", 4096},
               {"sliding_window_pattern", 6}};
  for (const auto& [key, value] : text_config->items()) text[key] = value;
  text["architectures"] = Json::array({std::string(kGemma3)});
  for (const char* dtype : {"torch_dtype", "dtype"}) {
    if (!text.contains(dtype) && root.contains(dtype)) text[dtype] = root[dtype];
  }
  return text;
}

}  // namespace

absl::StatusOr<ModelConfig> ParseModelConfigJson(std::string_view json_text,
                                                 std::string_view path) {
  HR_ASSIGN_OR_RETURN(const Json root, ParseJson(json_text, path));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(path), ": expected a JSON object at the top level, got ", Describe(root)));
  }

  if (const auto architectures = root.find("architectures");
      architectures != root.end() && architectures->is_array() && !architectures->empty() &&
      (*architectures)[0] == kGemma3Multimodal) {
    HR_ASSIGN_OR_RETURN(const Json text, Gemma3TextConfigJson(root, path));
    HR_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfigJson(text.dump(), path));
    config.architecture = std::string(kGemma3Multimodal);
    config.language_model_of_multimodal = true;
    return config;
  }

  const FieldReader reader(root, path);
  ModelConfig config;
  config.source = std::string(path);
  HR_ASSIGN_OR_RETURN(config.architecture, ReadArchitecture(reader, root));
  if (std::optional<std::string> decoder = ClassifierDecoder(config.architecture)) {
    HR_ASSIGN_OR_RETURN(config.classifier, ReadClassifier(root, path, config.architecture));
    config.architecture = *std::move(decoder);
  }
  HR_ASSIGN_OR_RETURN(config.vocab_size, reader.PositiveInt("vocab_size"));
  HR_ASSIGN_OR_RETURN(config.hidden_size, reader.PositiveInt("hidden_size"));
  HR_ASSIGN_OR_RETURN(config.intermediate_size, reader.PositiveInt("intermediate_size"));
  HR_ASSIGN_OR_RETURN(config.num_hidden_layers, reader.PositiveInt("num_hidden_layers"));
  HR_ASSIGN_OR_RETURN(config.num_attention_heads, reader.PositiveInt("num_attention_heads"));
  HR_ASSIGN_OR_RETURN(config.max_position_embeddings,
                      reader.PositiveInt("max_position_embeddings"));

  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> kv_heads,
                      reader.OptionalPositiveInt("num_key_value_heads"));
  config.num_key_value_heads = kv_heads.value_or(config.num_attention_heads);
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    return reader.Error("num_key_value_heads", absl::StrCat("(", config.num_key_value_heads,
                                                            ") must divide num_attention_heads (",
                                                            config.num_attention_heads, ")"));
  }

  HR_ASSIGN_OR_RETURN(const std::optional<int64_t> head_dim,
                      reader.OptionalPositiveInt("head_dim"));
  if (head_dim) {
    config.head_dim = *head_dim;
  } else if (config.hidden_size % config.num_attention_heads != 0) {
    return reader.Error("head_dim", absl::StrCat("is missing and hidden_size (", config.hidden_size,
                                                 ") is not a multiple of num_attention_heads (",
                                                 config.num_attention_heads, ")"));
  } else {
    config.head_dim = config.hidden_size / config.num_attention_heads;
  }

  // Gemma's and SmolLM3's configs tie the embeddings unless told otherwise (transformers then
  // leaves the key out of config.json: it equals PretrainedConfig's default); the others do not.
  HR_ASSIGN_OR_RETURN(config.tie_word_embeddings,
                      reader.Bool("tie_word_embeddings", config.architecture == kGemma ||
                                                             config.architecture == kGemma2 ||
                                                             config.architecture == kGemma3 ||
                                                             config.architecture == kSmolLM3));
  // A classifier has a score head and no LM head (a converted one reads the head's rows from
  // the embedding when the checkpoint ties them, else from lm_head.weight).
  if (config.classifier.has_value()) {
    config.classifier->rows_from_embedding = config.tie_word_embeddings;
    config.tie_word_embeddings = true;
  }
  HR_ASSIGN_OR_RETURN(config.rms_norm_eps, reader.PositiveNumber("rms_norm_eps", 1e-6));
  HR_ASSIGN_OR_RETURN(config.rope_theta, reader.PositiveNumber("rope_theta", 10000.0));
  HR_RETURN_IF_ERROR(ReadRotaryDim(reader, config));
  HR_RETURN_IF_ERROR(ReadRopeScaling(reader, path, config));

  // transformers >= 4.56 writes "dtype"; older versions "torch_dtype". Absent means float32.
  std::string_view dtype_field = "torch_dtype";
  HR_ASSIGN_OR_RETURN(std::optional<std::string> dtype, reader.OptionalString(dtype_field));
  if (!dtype) {
    dtype_field = "dtype";
    HR_ASSIGN_OR_RETURN(dtype, reader.OptionalString(dtype_field));
  }
  if (dtype) {
    absl::StatusOr<DType> parsed = ParseDType(*dtype);
    if (!parsed.ok()) return reader.Error(dtype_field, std::string(parsed.status().message()));
    config.torch_dtype = *parsed;
  }

  HR_RETURN_IF_ERROR(ReadBiasesAndWindow(reader, config));
  HR_RETURN_IF_ERROR(ReadExperts(reader, config));
  HR_RETURN_IF_ERROR(ReadActivation(reader, config));
  HR_RETURN_IF_ERROR(ReadMatryoshka(reader, config));
  if (config.architecture == kGemma) {
    // Gemma (1, 1.1, CodeGemma): Llama's block with (1 + w) norms, sqrt(hidden)-scaled embeddings
    // and the tanh GELU (transformers and vLLM take it whatever hidden_act says when
    // hidden_activation is absent, as the first checkpoints' "gelu" was a mistake).
    config.norm_weight_offset = true;
    config.embedding_multiplier = std::sqrt(static_cast<double>(config.hidden_size));
  }
  if (config.architecture == kGemma2) HR_RETURN_IF_ERROR(ReadGemma2(reader, config));
  if (config.architecture == kGemma3) HR_RETURN_IF_ERROR(ReadGemma3(reader, path, config));
  return config;
}

absl::StatusOr<ModelConfig> LoadModelConfig(std::string_view model, std::string_view hf_overrides) {
  if (model.starts_with(kDummyPrefix)) {
    if (!hf_overrides.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--hf-overrides changes a model directory's config.json, and ", std::string(model),
          " has none; pass a directory (with --load-format dummy for random weights)"));
    }
    return PresetModelConfig(model.substr(kDummyPrefix.size()));
  }
  const std::filesystem::path directory{std::string(model)};
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(directory, error);
  if (!std::filesystem::exists(status)) {
    std::string message =
        absl::StrCat("model directory \"", std::string(model), "\" does not exist");
    const bool looks_like_hub_id = model.find('/') != std::string_view::npos &&
                                   !model.starts_with('/') && !model.starts_with('.') &&
                                   model.find('/') == model.rfind('/');
    if (looks_like_hub_id) {
      absl::StrAppend(&message, "; headroom reads local directories, so download it first (",
                      "huggingface-cli download ", std::string(model), " --local-dir <dir>)");
    }
    absl::StrAppend(&message,
                    "; or use dummy:<preset> with one of: ", absl::StrJoin(PresetNames(), ", "));
    return absl::NotFoundError(message);
  }
  if (!std::filesystem::is_directory(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model \"", std::string(model),
                     "\" is not a directory; pass the directory holding config.json"));
  }
  const std::filesystem::path config_path = directory / "config.json";
  std::ifstream file(config_path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat(config_path.string(),
                     " not found or not readable; a Hugging Face model directory has one"));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  std::string text = contents.str();
  std::string where = config_path.string();
  if (!hf_overrides.empty()) {
    HR_ASSIGN_OR_RETURN(const Json overrides, ParseJson(hf_overrides, "--hf-overrides"));
    if (!overrides.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--hf-overrides must be a JSON object of config.json keys (vLLM's dict), "
                       "got ",
                       Describe(overrides)));
    }
    HR_ASSIGN_OR_RETURN(Json root, ParseJson(text, where));
    if (root.is_object()) ApplyHfOverrides(root, overrides);
    text = root.dump();
    absl::StrAppend(&where, " with --hf-overrides");
  }
  HR_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfigJson(text, where));
  config.source = std::string(model);
  if (!hf_overrides.empty()) absl::StrAppend(&config.source, " (with --hf-overrides)");
  return config;
}

}  // namespace headroom::worker
