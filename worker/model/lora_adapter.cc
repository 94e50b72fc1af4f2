#include "worker/model/lora_adapter.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/model/safetensors.h"

namespace headroom::worker {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr absl::string_view kConfigFile = "adapter_config.json";
constexpr absl::string_view kWeightsFile = "adapter_model.safetensors";
constexpr absl::string_view kPrefix = "base_model.model.";
// What PEFT saves for lora_alpha when a config leaves it out.
constexpr double kPeftDefaultAlpha = 8.0;

// A module a tensor names: a target, or a fused projection (Phi-3) whose B splits into targets.
enum class Module : uint8_t { kQ, kK, kV, kO, kGate, kUp, kDown, kQkv, kGateUp };

struct ModuleFactors {
  HostTensor a;
  HostTensor b;
  std::string name;  // the tensor name up to ".lora_A"
};

std::string Describe(const LoraModuleSpec& spec) {
  return absl::StrCat("LoRA adapter \"", spec.name, "\" (", spec.path, ")");
}

// LoraAdapter::cache_key of an adapter whose adapter_config.json holds `config` and whose
// weights file is `weights`: XXH3-128 of the weights, seeded with XXH3-64 of the config.
std::string CacheKeyOf(std::string_view config, absl::Span<const uint8_t> weights) {
  const XXH128_hash_t hash = XXH3_128bits_withSeed(weights.data(), weights.size(),
                                                   XXH3_64bits(config.data(), config.size()));
  std::string key = "lora:";
  for (const uint64_t word : {hash.high64, hash.low64}) {
    for (int shift = 60; shift >= 0; shift -= 4)
      key.push_back("0123456789abcdef"[(word >> shift) & 0xf]);
  }
  return key;
}

// The parsed adapter_config.json; its text goes to `text` (for the cache key).
absl::StatusOr<Json> ReadConfig(const LoraModuleSpec& spec, std::string* text) {
  std::error_code error;
  if (!fs::is_directory(spec.path, error)) {
    return absl::NotFoundError(absl::StrCat(Describe(spec), ": not a directory"));
  }
  const std::string path = (fs::path(spec.path) / std::string(kConfigFile)).string();
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(Describe(spec), ": cannot open ", path));
  std::stringstream read;
  read << in.rdbuf();
  *text = read.str();
  Json config = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a JSON object"));
  }
  return config;
}

// Whether `key` holds something other than null, false, "none", or an empty list or object.
bool IsSet(const Json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) return it->get<std::string>() != "none";
  if (it->is_array() || it->is_object()) return !it->empty();
  return true;
}

// Reads r, lora_alpha and use_rslora into `adapter`; refuses what is not served.
absl::Status ReadHyperparameters(const Json& config, const LoraModuleSpec& spec,
                                 int64_t max_lora_rank, LoraAdapter& adapter) {
  const std::string where = absl::StrCat(Describe(spec), ": ", kConfigFile);
  if (const auto type = config.find("peft_type");
      type != config.end() && (!type->is_string() || type->get<std::string>() != "LORA")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has peft_type ", type->dump(), "; only LORA adapters are served"));
  }
  // Each of these changes the model in a way the stacked A/B factors cannot carry.
  constexpr std::pair<const char*, const char*> kRefused[] = {
      {"use_dora", "DoRA's magnitude vectors"},
      {"bias", "trained biases"},
      {"modules_to_save", "fully trained modules (modules_to_save)"},
      {"fan_in_fan_out", "fan_in_fan_out (transposed) factors"},
      {"rank_pattern", "per-module ranks (rank_pattern)"},
      {"alpha_pattern", "per-module alphas (alpha_pattern)"},
  };
  for (const auto& [key, what] : kRefused) {
    if (IsSet(config, key)) {
      return absl::InvalidArgumentError(absl::StrCat(where, " sets ", key, " = ",
                                                     config.at(key).dump(), ": adapters with ",
                                                     what, " are not served"));
    }
  }
  const auto r = config.find("r");
  if (r == config.end() || !r->is_number_integer() || r->get<int64_t>() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, " must set r, a positive integer"));
  }
  adapter.rank = r->get<int64_t>();
  if (adapter.rank > max_lora_rank) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(spec), " has rank ", adapter.rank,
                                                   ", greater than --max-lora-rank ", max_lora_rank,
                                                   "; raise --max-lora-rank"));
  }
  double alpha = kPeftDefaultAlpha;
  if (const auto it = config.find("lora_alpha"); it != config.end()) {
    if (!it->is_number()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": lora_alpha must be a number"));
    }
    alpha = it->get<double>();
  }
  bool rslora = false;
  if (const auto it = config.find("use_rslora"); it != config.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": use_rslora must be true or false"));
    }
    rslora = it->get<bool>();
  }
  const double r_value = static_cast<double>(adapter.rank);
  adapter.scale = alpha / (rslora ? std::sqrt(r_value) : r_value);
  return absl::OkStatus();
}

// The module `tensor` is a factor of, its layer and whether it is A; InvalidArgument for a tensor
// that is not a served LoRA factor of `config`.
struct FactorName {
  Module module;
  int64_t layer;
  bool is_a;
  std::string module_name;
};
absl::StatusOr<FactorName> ParseFactorName(const ModelConfig& config, absl::string_view tensor,
                                           const std::string& where) {
  const auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor \"", tensor, "\" ", why));
  };
  constexpr absl::string_view kServed =
      "is not a LoRA factor of a decoder layer's projection (served: lora_A/lora_B of "
      "self_attn.q_proj/k_proj/v_proj/o_proj/qkv_proj and mlp.gate_proj/up_proj/down_proj/"
      "gate_up_proj)";
  if (!absl::StartsWith(tensor, kPrefix))
    return refuse(absl::StrCat("does not start with ", kPrefix));
  const std::vector<absl::string_view> parts = absl::StrSplit(tensor.substr(kPrefix.size()), '.');
  if (parts.size() != 7 || parts[0] != "model" || parts[1] != "layers" || parts[6] != "weight" ||
      (parts[5] != "lora_A" && parts[5] != "lora_B")) {
    return refuse(kServed);
  }
  FactorName name;
  if (!absl::SimpleAtoi(parts[2], &name.layer) || name.layer < 0 ||
      name.layer >= config.num_hidden_layers) {
    return refuse(
        absl::StrCat("names a layer outside the base model's ", config.num_hidden_layers));
  }
  name.is_a = parts[5] == "lora_A";
  name.module_name =
      std::string(tensor.substr(0, tensor.size() - absl::string_view(".lora_A.weight").size()));
  const absl::string_view block = parts[3];
  const absl::string_view proj = parts[4];
  static const std::map<std::pair<absl::string_view, absl::string_view>, Module> kModules = {
      {{"self_attn", "q_proj"}, Module::kQ},     {{"self_attn", "k_proj"}, Module::kK},
      {{"self_attn", "v_proj"}, Module::kV},     {{"self_attn", "o_proj"}, Module::kO},
      {{"self_attn", "qkv_proj"}, Module::kQkv}, {{"mlp", "gate_proj"}, Module::kGate},
      {{"mlp", "up_proj"}, Module::kUp},         {{"mlp", "down_proj"}, Module::kDown},
      {{"mlp", "gate_up_proj"}, Module::kGateUp}};
  const auto it = kModules.find({block, proj});
  if (it == kModules.end()) return refuse(kServed);
  name.module = it->second;
  if (block == "mlp" && config.num_experts > 0) {
    return refuse(absl::StrCat("adapts the MLP of ", config.source,
                               ", a mixture of experts: LoRA on experts is not served"));
  }
  // Phi-3 fuses q/k/v and gate/up, GLM gate/up; o_proj and down_proj stand alone in every model.
  const bool fused = name.module == Module::kQkv || name.module == Module::kGateUp;
  const bool fusable = name.module != Module::kO && name.module != Module::kDown;
  const bool model_fuses = block == "mlp" ? config.fused_gate_up : config.fused_qkv;
  if (fusable && fused != model_fuses) {
    return refuse(absl::StrCat("names ", proj, ", which ", config.source, " does not have (its ",
                               block, " ", model_fuses ? "fuses" : "splits", " its projections)"));
  }
  return name;
}

// [in, out] of a module in the whole base model.
std::pair<int64_t, int64_t> ModuleDims(const ModelConfig& c, Module module) {
  const int64_t q = c.num_attention_heads * c.head_dim;
  const int64_t kv = c.num_key_value_heads * c.head_dim;
  const int64_t h = c.hidden_size;
  const int64_t i = c.intermediate_size;
  switch (module) {
    case Module::kQ:
      return {h, q};
    case Module::kK:
    case Module::kV:
      return {h, kv};
    case Module::kO:
      return {q, h};
    case Module::kGate:
    case Module::kUp:
      return {h, i};
    case Module::kDown:
      return {i, h};
    case Module::kQkv:
      return {h, q + 2 * kv};
    case Module::kGateUp:
      return {h, 2 * i};
  }
  return {0, 0};
}

// Rows [start, start + count) of a [rows, cols] tensor.
HostTensor Rows(const HostTensor& t, int64_t start, int64_t count) {
  const int64_t cols = t.shape[1];
  HostTensor out{{count, cols}, {}};
  out.data.assign(t.data.begin() + start * cols, t.data.begin() + (start + count) * cols);
  return out;
}

// Columns [start, start + count) of a [rows, cols] tensor.
HostTensor Columns(const HostTensor& t, int64_t start, int64_t count) {
  const int64_t rows = t.shape[0];
  const int64_t cols = t.shape[1];
  HostTensor out{{rows, count}, {}};
  out.data.reserve(static_cast<size_t>(rows * count));
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = t.data.begin() + r * cols + start;
    out.data.insert(out.data.end(), row, row + count);
  }
  return out;
}

// `t`'s part `slice`: `t` itself, moved, when that is all of it.
HostTensor Slice(HostTensor t, const TensorSlice& slice) {
  switch (slice.kind) {
    case TensorSlice::Kind::kRows:
      return Rows(t, slice.start, slice.count);
    case TensorSlice::Kind::kColumns:
      return Columns(t, slice.start, slice.count);
    case TensorSlice::Kind::kWhole:
    case TensorSlice::Kind::kAbsent:
      break;
  }
  return t;
}

// Puts one target's factors into `layer`, this rank's shard of them.
void Place(const ModelConfig& config, ShardSpec shard, LoraTarget target, HostTensor a,
           HostTensor b, LoraLayer& layer) {
  Split a_split = Split::kReplicated;
  Split b_split = Split::kReplicated;
  switch (target) {
    case LoraTarget::kQ:
      b_split = Split::kQueryRows;
      break;
    case LoraTarget::kK:
    case LoraTarget::kV:
      b_split = Split::kKvRows;
      break;
    case LoraTarget::kO:
      a_split = Split::kQueryColumns;
      break;
    case LoraTarget::kGate:
    case LoraTarget::kUp:
      b_split = Split::kMlpRows;
      break;
    case LoraTarget::kDown:
      a_split = Split::kMlpColumns;
      break;
  }
  const auto t = static_cast<size_t>(target);
  layer.a[t] = Slice(std::move(a), SliceOf(config, shard, a_split));
  layer.b[t] = Slice(std::move(b), SliceOf(config, shard, b_split));
}

}  // namespace

const char* LoraTargetName(LoraTarget target) {
  constexpr std::array<const char*, kNumLoraTargets> kNames = {
      "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  return kNames[static_cast<size_t>(target)];
}

kvcache::LoraDims LoraDimsOf(absl::Span<const LoraAdapter> adapters) {
  kvcache::LoraDims dims;
  dims.num_adapters = static_cast<int64_t>(adapters.size());
  for (const LoraAdapter& adapter : adapters) {
    dims.max_rank = std::max(dims.max_rank, adapter.rank);
    for (size_t t = 0; t < kNumLoraTargets; ++t) dims.targets[t] |= adapter.targets[t];
  }
  return dims;
}

kvcache::LoraDims ReservedLoraDims(int64_t slots, int64_t rank) {
  kvcache::LoraDims dims{.num_adapters = slots, .max_rank = rank, .targets = {}};
  dims.targets.fill(true);
  return dims;
}

absl::StatusOr<LoraModuleSpec> ParseLoraModule(std::string_view raw) {
  const absl::string_view text(raw.data(), raw.size());
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("--lora-modules entry \"", text,
                     "\" is neither name=path nor {\"name\": ..., \"path\": ...}"));
  };
  LoraModuleSpec spec;
  if (absl::StartsWith(text, "{")) {
    const Json json = Json::parse(raw, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object()) return bad();
    const auto name = json.find("name");
    const auto path = json.find("path");
    if (name == json.end() || path == json.end() || !name->is_string() || !path->is_string()) {
      return bad();
    }
    spec.name = name->get<std::string>();
    spec.path = path->get<std::string>();
  } else {
    const size_t eq = text.find('=');
    if (eq == absl::string_view::npos) return bad();
    spec.name = std::string(text.substr(0, eq));
    spec.path = std::string(text.substr(eq + 1));
  }
  if (spec.name.empty() || spec.path.empty()) return bad();
  return spec;
}

absl::StatusOr<LoraAdapter> LoadLoraAdapter(const ModelConfig& config, const LoraModuleSpec& spec,
                                            int64_t max_lora_rank, ShardSpec shard) {
  LoraAdapter adapter;
  adapter.name = spec.name;
  adapter.path = spec.path;
  std::string config_text;
  HR_ASSIGN_OR_RETURN(const Json json, ReadConfig(spec, &config_text));
  HR_RETURN_IF_ERROR(ReadHyperparameters(json, spec, max_lora_rank, adapter));

  const fs::path weights_path = fs::path(spec.path) / std::string(kWeightsFile);
  std::error_code error;
  if (!fs::exists(weights_path, error)) {
    const bool bin = fs::exists(fs::path(spec.path) / "adapter_model.bin", error);
    return absl::NotFoundError(
        absl::StrCat(Describe(spec), ": no ", kWeightsFile,
                     bin ? " (it has PyTorch adapter_model.bin, which headroom does not read: "
                           "save it with safe_serialization=True)"
                         : ""));
  }
  HR_ASSIGN_OR_RETURN(const SafetensorsFile file, SafetensorsFile::Open(weights_path.string()));
  adapter.cache_key = CacheKeyOf(config_text, file.FileBytes());
  const std::string where = absl::StrCat(Describe(spec), ": ", kWeightsFile);

  // Every tensor's name first: a module the base model lacks says more than the shape it would
  // have had. Then every module's A and B, whole, checked against the base model's shapes.
  std::vector<FactorName> names;
  for (const auto& [tensor_name, tensor] : file.tensors()) {
    HR_ASSIGN_OR_RETURN(FactorName name, ParseFactorName(config, tensor_name, where));
    names.push_back(std::move(name));
  }
  std::map<std::pair<int64_t, Module>, ModuleFactors> modules;
  size_t index = 0;
  for (const auto& [tensor_name, tensor] : file.tensors()) {
    const FactorName& name = names[index++];
    const auto [in, out] = ModuleDims(config, name.module);
    const std::vector<int64_t> want = name.is_a ? std::vector<int64_t>{adapter.rank, in}
                                                : std::vector<int64_t>{out, adapter.rank};
    if (tensor.shape != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": tensor \"", tensor_name, "\" has shape [", absl::StrJoin(tensor.shape, ", "),
          "], expected [", absl::StrJoin(want, ", "), "] (rank ", adapter.rank, " of ",
          config.source, ")"));
    }
    if (!SafetensorsDTypeConvertsToFloat32(tensor.dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": tensor \"", tensor_name,
                                                     "\" has dtype ", tensor.dtype,
                                                     "; F32, F16 and BF16 are read"));
    }
    ModuleFactors& factors = modules[{name.layer, name.module}];
    factors.name = name.module_name;
    HostTensor& into = name.is_a ? factors.a : factors.b;
    into.shape = want;
    into.data.resize(static_cast<size_t>(tensor.num_elements()));
    HR_RETURN_IF_ERROR(file.ReadFloat32(tensor, absl::MakeSpan(into.data)));
  }
  if (modules.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " holds no LoRA factors"));
  }

  adapter.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  const int64_t q = config.num_attention_heads * config.head_dim;
  const int64_t kv = config.num_key_value_heads * config.head_dim;
  const int64_t inter = config.intermediate_size;
  for (auto& [key, factors] : modules) {
    if (factors.a.empty() || factors.b.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", factors.name, " has lora_",
                                                     factors.a.empty() ? "B" : "A", " but no lora_",
                                                     factors.a.empty() ? "A" : "B"));
    }
    LoraLayer& layer = adapter.layers[static_cast<size_t>(key.first)];
    // The factors move into place (a fused module's A is copied for each part that shares it).
    const auto place = [&](LoraTarget target, HostTensor a, HostTensor b) {
      Place(config, shard, target, std::move(a), std::move(b), layer);
      adapter.targets[static_cast<size_t>(target)] = true;
    };
    switch (key.second) {
      case Module::kQkv:  // B's rows: q, then k, then v; A is shared
        place(LoraTarget::kQ, factors.a, Rows(factors.b, 0, q));
        place(LoraTarget::kK, factors.a, Rows(factors.b, q, kv));
        place(LoraTarget::kV, std::move(factors.a), Rows(factors.b, q + kv, kv));
        break;
      case Module::kGateUp:  // B's rows: gate, then up
        place(LoraTarget::kGate, factors.a, Rows(factors.b, 0, inter));
        place(LoraTarget::kUp, std::move(factors.a), Rows(factors.b, inter, inter));
        break;
      default:
        place(static_cast<LoraTarget>(key.second), std::move(factors.a), std::move(factors.b));
        break;
    }
  }
  return adapter;
}

}  // namespace headroom::worker
