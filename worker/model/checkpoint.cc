#include "worker/model/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/model/safetensors.h"

namespace headroom::worker {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";

// Dims larger than this are not a real model; the bound keeps every product of two in int64_t.
constexpr int64_t kMaxDim = int64_t{1} << 31;

// Which config flag a tensor depends on.
enum class Presence {
  kAlways,
  kQkvBias,
  kOProjBias,
  kMlpBias,
  kQkNorm,
  kDenseMlp,
  kSandwichNorms,
  kSharedExpert,
  kSharedExpertGate,   // Qwen2-MoE's sigmoid gate of its shared expert (not GLM-4.5's)
  kPreNorm,            // input_layernorm: all but OLMo 2
  kPreFeedforwardNorm  // Gemma 2's MLP input norm (sandwich norms, but not OLMo 2's)
};
// How DummyWeights fills a tensor. kNorm: an RMSNorm weight of 1 (stored as 0 when the config
// keeps norm weights as offsets from 1, as Gemma's do).
enum class Init { kRandom, kNorm, kZeros };
// A symbolic dimension, resolved against the config.
// kQNorm / kKNorm: head_dim, or the whole q / k width when the norms span every head (OLMo 2).
// kInter: the dense MLP's width (DenseMlpWidth).
enum class Dim { kNone, kOne, kHidden, kQ, kKv, kInter, kSharedInter, kHeadDim, kQNorm, kKNorm };

struct LayerField {
  std::string_view suffix;  // After "model.layers.{i}.".
  HostTensor LayerWeights::*member;
  Presence presence;
  Init init;
  Dim rows;
  Dim cols;     // kNone for a vector.
  Split split;  // What a rank of a tensor-parallel group holds.
};

// Every LayerWeights field, in the order ListWeights and ExpectedWeights report them.
constexpr LayerField kLayerFields[] = {
    {"input_layernorm.weight", &LayerWeights::input_layernorm, Presence::kPreNorm, Init::kNorm,
     Dim::kHidden, Dim::kNone, Split::kReplicated},
    {"self_attn.q_proj.weight", &LayerWeights::q_proj, Presence::kAlways, Init::kRandom, Dim::kQ,
     Dim::kHidden, Split::kQueryRows},
    {"self_attn.q_proj.bias", &LayerWeights::q_proj_bias, Presence::kQkvBias, Init::kZeros, Dim::kQ,
     Dim::kNone, Split::kQueryRows},
    {"self_attn.k_proj.weight", &LayerWeights::k_proj, Presence::kAlways, Init::kRandom, Dim::kKv,
     Dim::kHidden, Split::kKvRows},
    {"self_attn.k_proj.bias", &LayerWeights::k_proj_bias, Presence::kQkvBias, Init::kZeros,
     Dim::kKv, Dim::kNone, Split::kKvRows},
    {"self_attn.v_proj.weight", &LayerWeights::v_proj, Presence::kAlways, Init::kRandom, Dim::kKv,
     Dim::kHidden, Split::kKvRows},
    {"self_attn.v_proj.bias", &LayerWeights::v_proj_bias, Presence::kQkvBias, Init::kZeros,
     Dim::kKv, Dim::kNone, Split::kKvRows},
    {"self_attn.q_norm.weight", &LayerWeights::q_norm, Presence::kQkNorm, Init::kNorm, Dim::kQNorm,
     Dim::kNone, Split::kQueryNorm},
    {"self_attn.k_norm.weight", &LayerWeights::k_norm, Presence::kQkNorm, Init::kNorm, Dim::kKNorm,
     Dim::kNone, Split::kKvNorm},
    {"self_attn.o_proj.weight", &LayerWeights::o_proj, Presence::kAlways, Init::kRandom,
     Dim::kHidden, Dim::kQ, Split::kQueryColumns},
    {"self_attn.o_proj.bias", &LayerWeights::o_proj_bias, Presence::kOProjBias, Init::kZeros,
     Dim::kHidden, Dim::kNone, Split::kLeaderOnly},
    {"post_attention_layernorm.weight", &LayerWeights::post_attention_layernorm, Presence::kAlways,
     Init::kNorm, Dim::kHidden, Dim::kNone, Split::kReplicated},
    {"pre_feedforward_layernorm.weight", &LayerWeights::pre_feedforward_layernorm,
     Presence::kPreFeedforwardNorm, Init::kNorm, Dim::kHidden, Dim::kNone, Split::kReplicated},
    {"post_feedforward_layernorm.weight", &LayerWeights::post_feedforward_layernorm,
     Presence::kSandwichNorms, Init::kNorm, Dim::kHidden, Dim::kNone, Split::kReplicated},
    {"mlp.gate_proj.weight", &LayerWeights::gate_proj, Presence::kDenseMlp, Init::kRandom,
     Dim::kInter, Dim::kHidden, Split::kDenseMlpRows},
    {"mlp.gate_proj.bias", &LayerWeights::gate_proj_bias, Presence::kMlpBias, Init::kZeros,
     Dim::kInter, Dim::kNone, Split::kDenseMlpRows},
    {"mlp.up_proj.weight", &LayerWeights::up_proj, Presence::kDenseMlp, Init::kRandom, Dim::kInter,
     Dim::kHidden, Split::kDenseMlpRows},
    {"mlp.up_proj.bias", &LayerWeights::up_proj_bias, Presence::kMlpBias, Init::kZeros, Dim::kInter,
     Dim::kNone, Split::kDenseMlpRows},
    {"mlp.down_proj.weight", &LayerWeights::down_proj, Presence::kDenseMlp, Init::kRandom,
     Dim::kHidden, Dim::kInter, Split::kDenseMlpColumns},
    {"mlp.down_proj.bias", &LayerWeights::down_proj_bias, Presence::kMlpBias, Init::kZeros,
     Dim::kHidden, Dim::kNone, Split::kLeaderOnly},
    {"mlp.shared_expert.gate_proj.weight", &LayerWeights::shared_gate_proj, Presence::kSharedExpert,
     Init::kRandom, Dim::kSharedInter, Dim::kHidden, Split::kSharedMlpRows},
    {"mlp.shared_expert.up_proj.weight", &LayerWeights::shared_up_proj, Presence::kSharedExpert,
     Init::kRandom, Dim::kSharedInter, Dim::kHidden, Split::kSharedMlpRows},
    {"mlp.shared_expert.down_proj.weight", &LayerWeights::shared_down_proj, Presence::kSharedExpert,
     Init::kRandom, Dim::kHidden, Dim::kSharedInter, Split::kSharedMlpColumns},
    {"mlp.shared_expert_gate.weight", &LayerWeights::shared_expert_gate,
     Presence::kSharedExpertGate, Init::kRandom, Dim::kOne, Dim::kHidden, Split::kReplicated},
};

constexpr char kEmbedName[] = "model.embed_tokens.weight";
constexpr char kNormName[] = "model.norm.weight";
constexpr char kLmHeadName[] = "lm_head.weight";
constexpr char kScoreName[] = "score.weight";

std::string LayerTensorName(size_t layer, std::string_view suffix) {
  return absl::StrCat("model.layers.", layer, ".", absl::string_view(suffix.data(), suffix.size()));
}

using ExpertLayout = ModelWeights::ExpertLayout;
using NormNames = ModelWeights::NormNames;

// The checkpoint's name for a layer field's tensor (after "model.layers.{i}."): the field's own,
// but GLM-4's for the sandwich norms and DeepSeek-V3's for the shared experts (GLM-4.5's,
// dots.llm1's).
std::string CheckpointSuffix(const ModelWeights& weights, std::string_view suffix) {
  constexpr std::string_view kShared = "mlp.shared_expert.";
  if (weights.expert_layout == ExpertLayout::kDeepseek && suffix.starts_with(kShared)) {
    return absl::StrCat("mlp.shared_experts.", std::string(suffix.substr(kShared.size())));
  }
  if (weights.norm_names != NormNames::kGlm4) return std::string(suffix);
  if (suffix == "post_attention_layernorm.weight") return "post_self_attn_layernorm.weight";
  if (suffix == "pre_feedforward_layernorm.weight") return "post_attention_layernorm.weight";
  if (suffix == "post_feedforward_layernorm.weight") return "post_mlp_layernorm.weight";
  return std::string(suffix);
}

// A mixture-of-experts layer's tensor names after "model.layers.{i}.": its router's (and its
// correction bias', DeepSeek-V3's layout only), and expert e's gate, up and down projections'.
std::string_view RouterName(ExpertLayout layout) {
  switch (layout) {
    case ExpertLayout::kMixtral:
      return "block_sparse_moe.gate.weight";
    case ExpertLayout::kStacked:
      return "block_sparse_moe.router.layer.weight";
    case ExpertLayout::kQwen:
    case ExpertLayout::kDeepseek:
      break;
  }
  return "mlp.gate.weight";
}
constexpr std::string_view kCorrectionBiasName = "mlp.gate.e_score_correction_bias";
struct ExpertNames {
  std::string gate;
  std::string up;
  std::string down;
};
// Granite-MoE's stacked expert tensors, after "model.layers.{i}.".
constexpr std::string_view kStackedGateUp = "block_sparse_moe.input_linear.weight";
constexpr std::string_view kStackedDown = "block_sparse_moe.output_linear.weight";
ExpertNames ExpertNamesOf(ExpertLayout layout, int64_t expert) {
  if (layout == ExpertLayout::kMixtral) {
    const std::string e = absl::StrCat("block_sparse_moe.experts.", expert, ".");
    return {e + "w1.weight", e + "w3.weight", e + "w2.weight"};
  }
  if (layout == ExpertLayout::kStacked) {
    const std::string e = absl::StrCat("[", expert, "]");
    const std::string gate_up(kStackedGateUp);
    return {gate_up + e + ".gate", gate_up + e + ".up", std::string(kStackedDown) + e};
  }
  const std::string e = absl::StrCat("mlp.experts.", expert, ".");
  return {e + "gate_proj.weight", e + "up_proj.weight", e + "down_proj.weight"};
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// A tensor the config calls for, with the part this rank holds and where it goes.
struct Slot {
  std::string name;
  std::vector<int64_t> full_shape;  // In the checkpoint.
  std::vector<int64_t> shape;       // Held by this rank (empty when slice is kAbsent).
  HostTensor* tensor;
  Init init;
  TensorSlice slice;
  // The checkpoint tensor it is read from: `name` itself, or for a part of a fused tensor (Phi-3's
  // qkv_proj, gate_up_proj) or a stacked one (Granite-MoE's experts) that tensor, its shape, and
  // the part's first row in it (rows of the last dimension's width).
  std::string tensor_name;
  std::vector<int64_t> tensor_shape;
  int64_t row_offset = 0;
};

// Reads `slot` as rows [first_row, first_row + its rows) of the checkpoint tensor `tensor_name` of
// shape `tensor_shape` (rows of the last dimension's width).
void ReadAsPart(Slot& slot, std::string tensor_name, std::vector<int64_t> tensor_shape,
                int64_t first_row) {
  slot.tensor_name = std::move(tensor_name);
  slot.tensor_shape = std::move(tensor_shape);
  slot.row_offset = first_row;
}

// Phi-3 keeps q/k/v in one qkv_proj and gate/up in one gate_up_proj (GLM the latter only): the
// part that `suffix` names is a block of rows of that tensor when the config fuses it. Other
// suffixes are left alone.
void MarkFusedPart(const ModelConfig& config, std::string_view suffix, size_t layer, Slot& slot) {
  const int64_t q = config.num_attention_heads * config.head_dim;
  const int64_t kv = config.num_key_value_heads * config.head_dim;
  const int64_t inter = DenseMlpWidth(config);
  struct Part {
    std::string_view suffix;
    std::string_view fused;
    int64_t row_offset;
    int64_t fused_rows;
    bool in_use;  // whether this config fuses the tensor
  };
  const Part parts[] = {
      {"self_attn.q_proj.weight", "self_attn.qkv_proj.weight", 0, q + 2 * kv, config.fused_qkv},
      {"self_attn.k_proj.weight", "self_attn.qkv_proj.weight", q, q + 2 * kv, config.fused_qkv},
      {"self_attn.v_proj.weight", "self_attn.qkv_proj.weight", q + kv, q + 2 * kv,
       config.fused_qkv},
      {"mlp.gate_proj.weight", "mlp.gate_up_proj.weight", 0, 2 * inter, config.fused_gate_up},
      {"mlp.up_proj.weight", "mlp.gate_up_proj.weight", inter, 2 * inter, config.fused_gate_up},
  };
  for (const Part& part : parts) {
    if (part.suffix != suffix || !part.in_use) continue;
    ReadAsPart(slot, LayerTensorName(layer, part.fused), {part.fused_rows, config.hidden_size},
               part.row_offset);
  }
}

absl::Status ValidateDims(const ModelConfig& config) {
  const std::pair<std::string_view, int64_t> dims[] = {
      {"vocab_size", config.vocab_size},
      {"hidden_size", config.hidden_size},
      {"intermediate_size", config.intermediate_size},
      // The dense layers' MLP width (a mixture of experts' dense layers: GLM-4.5's first ones).
      {"dense MLP width", NumDenseMlpLayers(config) > 0 ? config.dense_intermediate_size : 1},
      {"num_hidden_layers", config.num_hidden_layers},
      {"num_attention_heads", config.num_attention_heads},
      {"num_key_value_heads", config.num_key_value_heads},
      {"head_dim", config.head_dim},
  };
  for (const auto& [field, value] : dims) {
    if (value <= 0 || value > kMaxDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("model ", config.source, ": ", absl::string_view(field.data(), field.size()),
                       " = ", value, " is not a usable dimension (must be in [1, 2^31])"));
    }
  }
  if (config.num_attention_heads * config.head_dim > kMaxDim ||
      config.num_key_value_heads * config.head_dim > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", config.source, ": heads x head_dim exceeds 2^31"));
  }
  if (config.shared_expert_intermediate_size < 0 ||
      config.shared_expert_intermediate_size > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", config.source,
                     ": shared_expert_intermediate_size = ", config.shared_expert_intermediate_size,
                     " is not a usable dimension (must be in [0, 2^31])"));
  }
  return absl::OkStatus();
}

// The tensors `config` calls for, with `shard`'s part of each, pointing into `weights` (whose
// layers are resized to fit).
absl::StatusOr<std::vector<Slot>> MakeSlots(const ModelConfig& config, ShardSpec shard,
                                            ModelWeights& weights) {
  HR_RETURN_IF_ERROR(ValidateDims(config));
  HR_RETURN_IF_ERROR(CheckShardable(config, shard));
  const auto resolve = [&config](Dim dim) -> int64_t {
    switch (dim) {
      case Dim::kHidden:
        return config.hidden_size;
      case Dim::kQ:
        return config.num_attention_heads * config.head_dim;
      case Dim::kKv:
        return config.num_key_value_heads * config.head_dim;
      case Dim::kInter:
        return DenseMlpWidth(config);
      case Dim::kSharedInter:
        return config.shared_expert_intermediate_size;
      case Dim::kOne:
        return 1;
      case Dim::kQNorm:
        return config.qk_norm_across_heads ? config.num_attention_heads * config.head_dim
                                           : config.head_dim;
      case Dim::kKNorm:
        return config.qk_norm_across_heads ? config.num_key_value_heads * config.head_dim
                                           : config.head_dim;
      case Dim::kHeadDim:
        return config.head_dim;
      case Dim::kNone:
        break;
    }
    return 0;
  };
  // Whether layer `layer` has a field of this presence.
  const auto present = [&config](Presence presence, int64_t layer) {
    switch (presence) {
      case Presence::kAlways:
        return true;
      case Presence::kQkvBias:
        return config.qkv_bias;
      case Presence::kOProjBias:
        return config.o_proj_bias;
      case Presence::kMlpBias:
        return config.mlp_bias && !LayerHasExperts(config, layer);
      case Presence::kQkNorm:
        return config.qk_norm;
      case Presence::kDenseMlp:
        return !LayerHasExperts(config, layer);
      case Presence::kSandwichNorms:
        return config.sandwich_norms;
      case Presence::kSharedExpert:
        return config.shared_expert_intermediate_size > 0 && LayerHasExperts(config, layer);
      case Presence::kSharedExpertGate:
        return config.shared_expert_intermediate_size > 0 && config.shared_expert_gated &&
               LayerHasExperts(config, layer);
      case Presence::kPreNorm:
        return config.pre_norms;
      case Presence::kPreFeedforwardNorm:
        return config.sandwich_norms && config.pre_norms;
    }
    return false;
  };

  std::vector<Slot> slots;
  const auto add = [&](std::string name, std::vector<int64_t> full_shape, HostTensor* tensor,
                       Init init, Split split) {
    const TensorSlice slice = SliceOf(config, shard, split);
    std::vector<int64_t> shape = full_shape;
    switch (slice.kind) {
      case TensorSlice::Kind::kWhole:
        break;
      case TensorSlice::Kind::kRows:
        shape[0] = slice.count;
        break;
      case TensorSlice::Kind::kColumns:
        shape[1] = slice.count;
        break;
      case TensorSlice::Kind::kAbsent:
        shape.clear();
        break;
    }
    std::string tensor_name = name;
    std::vector<int64_t> tensor_shape = full_shape;
    slots.push_back({std::move(name), std::move(full_shape), std::move(shape), tensor, init, slice,
                     std::move(tensor_name), std::move(tensor_shape), /*row_offset=*/0});
  };
  const int64_t vocab = config.vocab_size;
  const int64_t hidden = config.hidden_size;
  weights.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  weights.expert_layout =
      config.architecture == "MixtralForCausalLM"      ? ExpertLayout::kMixtral
      : config.architecture == "GraniteMoeForCausalLM" ? ExpertLayout::kStacked
      : config.architecture == "Glm4MoeForCausalLM" || config.architecture == "Dots1ForCausalLM"
          ? ExpertLayout::kDeepseek
          : ExpertLayout::kQwen;
  weights.norm_names =
      config.architecture == "Glm4ForCausalLM" ? NormNames::kGlm4 : NormNames::kGemma;
  add(std::string(kEmbedName), {vocab, hidden}, &weights.embed_tokens, Init::kRandom,
      Split::kVocabRows);
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    LayerWeights& layer = weights.layers[i];
    for (const LayerField& field : kLayerFields) {
      if (!present(field.presence, static_cast<int64_t>(i))) continue;
      std::vector<int64_t> shape = {resolve(field.rows)};
      if (field.cols != Dim::kNone) shape.push_back(resolve(field.cols));
      add(LayerTensorName(i, CheckpointSuffix(weights, field.suffix)), std::move(shape),
          &(layer.*field.member), field.init, field.split);
      MarkFusedPart(config, field.suffix, i, slots.back());
    }
    if (!LayerHasExperts(config, static_cast<int64_t>(i))) continue;
    const int64_t inter = config.intermediate_size;
    add(LayerTensorName(i, RouterName(weights.expert_layout)), {config.num_experts, hidden},
        &layer.moe_router, Init::kRandom, Split::kReplicated);
    if (config.moe_correction_bias) {
      add(LayerTensorName(i, kCorrectionBiasName), {config.num_experts}, &layer.moe_correction_bias,
          Init::kZeros, Split::kReplicated);
    }
    layer.experts.resize(static_cast<size_t>(config.num_experts));
    const bool stacked = weights.expert_layout == ExpertLayout::kStacked;
    // A stacked part: rows [first_row, first_row + its rows) of the [E, rows, width] tensor.
    const auto stack = [&](std::string_view tensor, int64_t rows, int64_t width,
                           int64_t first_row) {
      ReadAsPart(slots.back(), LayerTensorName(i, tensor), {config.num_experts, rows, width},
                 first_row);
    };
    for (int64_t e = 0; e < config.num_experts; ++e) {
      const ExpertNames names = ExpertNamesOf(weights.expert_layout, e);
      ExpertWeights& expert = layer.experts[static_cast<size_t>(e)];
      add(LayerTensorName(i, names.gate), {inter, hidden}, &expert.gate_proj, Init::kRandom,
          Split::kMlpRows);
      if (stacked) stack(kStackedGateUp, 2 * inter, hidden, e * 2 * inter);
      add(LayerTensorName(i, names.up), {inter, hidden}, &expert.up_proj, Init::kRandom,
          Split::kMlpRows);
      if (stacked) stack(kStackedGateUp, 2 * inter, hidden, e * 2 * inter + inter);
      add(LayerTensorName(i, names.down), {hidden, inter}, &expert.down_proj, Init::kRandom,
          Split::kMlpColumns);
      if (stacked) stack(kStackedDown, hidden, inter, e * hidden);
    }
  }
  add(std::string(kNormName), {hidden}, &weights.norm, Init::kNorm, Split::kReplicated);
  if (!config.tie_word_embeddings) {
    add(std::string(kLmHeadName), {vocab, hidden}, &weights.lm_head, Init::kRandom,
        Split::kVocabRows);
  }
  // A converted classifier's head comes from LM-head rows instead (ConvertedScoreHead).
  if (config.classifier.has_value() && config.classifier->method.empty()) {
    add(std::string(kScoreName), {config.classifier->num_labels(), hidden}, &weights.score,
        Init::kRandom, Split::kReplicated);
  }
  return slots;
}

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (const int64_t dim : shape) n *= dim;
  return n;
}

// ResourceExhaustedError when `bytes` of float32 weights cannot fit in this machine's memory.
absl::Status CheckHostMemory(const std::vector<Slot>& slots, std::string_view what) {
  // Computed in double: a huge config must not overflow the check itself.
  double bytes = 0;
  for (const Slot& slot : slots) {
    if (slot.slice.kind != TensorSlice::Kind::kAbsent) {
      bytes += 4.0 * static_cast<double>(NumElements(slot.shape));
    }
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return absl::OkStatus();  // Unknown: let the caller try.
  const double physical = static_cast<double>(pages) * static_cast<double>(page_size);
  if (bytes > physical) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: float32 host weights need %.1f GiB but this machine has %.1f GiB of memory",
        absl::string_view(what.data(), what.size()), bytes / kGiB, physical / kGiB));
  }
  return absl::OkStatus();
}

// Reads the elements [first, first + out.size()) of a slot's full tensor, row-major, into `out`.
using ElementReader = std::function<absl::Status(int64_t first, absl::Span<float> out)>;

// Fills `slot.tensor` with the part of the full tensor its slice holds, through `read`: one call
// for a whole tensor or a block of rows, one per row for columns. Rows past the full tensor (the
// vocabulary padding of the last rank) are zero.
absl::Status FillSlot(const Slot& slot, const ElementReader& read) {
  HostTensor& tensor = *slot.tensor;
  if (slot.slice.kind == TensorSlice::Kind::kAbsent) return absl::OkStatus();
  tensor.shape = slot.shape;
  tensor.data.assign(static_cast<size_t>(NumElements(slot.shape)), 0.0f);
  const absl::Span<float> out = absl::MakeSpan(tensor.data);
  const int64_t rows = slot.full_shape[0];
  const int64_t width = slot.full_shape.size() > 1 ? slot.full_shape[1] : 1;
  switch (slot.slice.kind) {
    case TensorSlice::Kind::kWhole:
      return read(0, out);
    case TensorSlice::Kind::kRows: {
      // Rows past the tensor stay zero: the last rank's vocabulary padding (with a tiny
      // vocabulary, a whole rank's slice can lie past it).
      const int64_t held = std::clamp<int64_t>(rows - slot.slice.start, 0, slot.slice.count);
      if (held == 0) return absl::OkStatus();
      return read(slot.slice.start * width, out.subspan(0, static_cast<size_t>(held * width)));
    }
    case TensorSlice::Kind::kColumns:
      for (int64_t r = 0; r < rows; ++r) {
        HR_RETURN_IF_ERROR(read(r * width + slot.slice.start,
                                out.subspan(static_cast<size_t>(r * slot.slice.count),
                                            static_cast<size_t>(slot.slice.count))));
      }
      return absl::OkStatus();
    case TensorSlice::Kind::kAbsent:
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTextFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path.string(), ": read error"));
  return text.str();
}

// Where each tensor of a checkpoint lives.
class CheckpointFiles {
 public:
  // Opens `dir`: model.safetensors if present, else model.safetensors.index.json (as transformers
  // does).
  static absl::StatusOr<CheckpointFiles> Open(const fs::path& dir) {
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
      return absl::NotFoundError(absl::StrCat("checkpoint ", dir.string(), ": not a directory"));
    }
    CheckpointFiles files;
    files.dir_ = dir;
    if (fs::exists(dir / kSingleFile, error)) {
      HR_ASSIGN_OR_RETURN(SafetensorsFile file,
                          SafetensorsFile::Open((dir / kSingleFile).string()));
      files.shards_.emplace(std::string(kSingleFile), std::move(file));
      return files;
    }
    if (fs::exists(dir / kIndexFile, error)) {
      HR_RETURN_IF_ERROR(files.ReadIndex());
      return files;
    }
    std::string hint;
    if (fs::exists(dir / "pytorch_model.bin", error) ||
        fs::exists(dir / "pytorch_model.bin.index.json", error)) {
      hint =
          "; it has PyTorch .bin weights, which headroom does not read: convert them to "
          "safetensors";
    }
    return absl::NotFoundError(absl::StrCat("checkpoint ", dir.string(), ": neither ", kSingleFile,
                                            " nor ", kIndexFile, " exists", hint));
  }

  // Whether the checkpoint lists `name` (no file is opened).
  [[nodiscard]] bool Has(const std::string& name) const {
    if (sharded_) return weight_map_.contains(name);
    return shards_.begin()->second.Find(name) != nullptr;
  }

  // Finds `name`; the file that holds it is opened on first use.
  absl::StatusOr<std::pair<const SafetensorsFile*, const SafetensorsTensor*>> Find(
      const std::string& name) {
    if (!sharded_) {
      const SafetensorsFile& file = shards_.begin()->second;
      const SafetensorsTensor* tensor = file.Find(name);
      if (tensor == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("checkpoint ", dir_.string(),
                                                       ": missing tensor \"", name, "\" (searched ",
                                                       file.path(), ")"));
      }
      return std::make_pair(&file, tensor);
    }
    const auto entry = weight_map_.find(name);
    if (entry == weight_map_.end()) {
      std::set<std::string> shard_names;
      for (const auto& [tensor_name, shard] : weight_map_) shard_names.insert(shard);
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint ", dir_.string(), ": missing tensor \"", name,
          "\" (not in the weight_map of ", (dir_ / kIndexFile).string(), ", which lists ",
          weight_map_.size(), " tensors in shards ", absl::StrJoin(shard_names, ", "), ")"));
    }
    const std::string& shard_name = entry->second;
    auto shard = shards_.find(shard_name);
    if (shard == shards_.end()) {
      const fs::path shard_path = dir_ / shard_name;
      std::error_code error;
      if (!fs::exists(shard_path, error)) {
        return absl::NotFoundError(absl::StrCat("checkpoint ", dir_.string(), ": shard file ",
                                                shard_name, " is missing (", kIndexFile, " maps \"",
                                                name, "\" and possibly other tensors to it)"));
      }
      HR_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open(shard_path.string()));
      shard = shards_.emplace(shard_name, std::move(file)).first;
    }
    const SafetensorsTensor* tensor = shard->second.Find(name);
    if (tensor == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", dir_.string(), ": ", kIndexFile,
                                                     " maps tensor \"", name, "\" to ", shard_name,
                                                     ", but that file does not contain it"));
    }
    return std::make_pair(&shard->second, tensor);
  }

 private:
  absl::Status ReadIndex() {
    sharded_ = true;
    const fs::path path = dir_ / kIndexFile;
    HR_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
    Json root;
    try {
      root = Json::parse(text);
    } catch (const Json::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(path.string(), ": not valid JSON: ", e.what()));
    }
    if (!root.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(path.string(), ": must be a JSON object"));
    }
    const auto map = root.find("weight_map");
    if (map == root.end() || !map->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path.string(), ": \"weight_map\" must be an object of tensor -> file"));
    }
    for (const auto& [tensor, shard] : map->items()) {
      if (!shard.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(path.string(), ": weight_map entry \"",
                                                       tensor, "\" must be a file name string"));
      }
      const std::string shard_name = shard.get<std::string>();
      // Shards live in the checkpoint directory; a name must not lead out of it.
      const fs::path shard_path(shard_name);
      bool escapes = shard_name.empty() || shard_path.is_absolute();
      for (const fs::path& part : shard_path) escapes = escapes || part == "..";
      if (escapes) {
        return absl::InvalidArgumentError(
            absl::StrCat(path.string(), ": weight_map entry \"", tensor, "\" names the file \"",
                         shard_name, "\", which is not inside the checkpoint directory"));
      }
      weight_map_.emplace(tensor, shard_name);
    }
    return absl::OkStatus();
  }

  fs::path dir_;
  bool sharded_ = false;
  std::map<std::string, std::string> weight_map_;  // Tensor -> shard file (sharded only).
  std::map<std::string, SafetensorsFile> shards_;  // File name -> opened file.
};

// SplitMix64's output function: a bijective 64-bit mixer.
constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// FNV-1a over the tensor name: ties the stream to the name, not to the order of generation.
constexpr uint64_t HashName(std::string_view name) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (const char c : name) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001B3ull;
  }
  return hash;
}

// Sum of four 16-bit uniforms, centered: mean 0, standard deviation sqrt((65536^2 - 1) / 3).
// One double multiply and one rounding to float: the same bits on every IEEE-754 machine.
constexpr double kDummyStd = 0.02;
constexpr double kSumOfFourStd = 37837.22723720648;
constexpr double kDummyScale = kDummyStd / kSumOfFourStd;

// Elements [first, first + out.size()) of the tensor `name`.
void FillDummy(uint64_t seed, const std::string& name, int64_t first, absl::Span<float> out) {
  const uint64_t key = Mix64(seed ^ Mix64(HashName(name)));
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t index = static_cast<uint64_t>(first) + i;
    const uint64_t bits = Mix64(key + (index + 1) * kGolden);
    const int64_t sum = static_cast<int64_t>((bits & 0xFFFF) + ((bits >> 16) & 0xFFFF) +
                                             ((bits >> 32) & 0xFFFF) + (bits >> 48));
    out[i] = static_cast<float>(static_cast<double>(sum - 2 * 0xFFFF) * kDummyScale);
  }
}

}  // namespace

absl::StatusOr<std::vector<WeightSpec>> ExpectedWeights(const ModelConfig& config) {
  ModelWeights scratch;
  HR_ASSIGN_OR_RETURN(const std::vector<Slot> slots, MakeSlots(config, ShardSpec{}, scratch));
  std::vector<WeightSpec> specs;
  specs.reserve(slots.size());
  std::set<std::string> listed;  // a fused tensor once, for its first part
  for (const Slot& slot : slots) {
    if (listed.insert(slot.tensor_name).second) {
      specs.push_back({slot.tensor_name, slot.tensor_shape});
    }
  }
  return specs;
}

std::vector<NamedWeight> ListWeights(const ModelWeights& weights) {
  std::vector<NamedWeight> named;
  const auto add = [&named](std::string name, const HostTensor& tensor) {
    if (!tensor.empty()) named.push_back({std::move(name), &tensor});
  };
  add(std::string(kEmbedName), weights.embed_tokens);
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const LayerWeights& layer = weights.layers[i];
    for (const LayerField& field : kLayerFields) {
      add(LayerTensorName(i, CheckpointSuffix(weights, field.suffix)), layer.*field.member);
    }
    add(LayerTensorName(i, RouterName(weights.expert_layout)), layer.moe_router);
    add(LayerTensorName(i, kCorrectionBiasName), layer.moe_correction_bias);
    for (size_t e = 0; e < layer.experts.size(); ++e) {
      const ExpertNames names = ExpertNamesOf(weights.expert_layout, static_cast<int64_t>(e));
      add(LayerTensorName(i, names.gate), layer.experts[e].gate_proj);
      add(LayerTensorName(i, names.up), layer.experts[e].up_proj);
      add(LayerTensorName(i, names.down), layer.experts[e].down_proj);
    }
  }
  add(std::string(kNormName), weights.norm);
  add(std::string(kLmHeadName), weights.lm_head);
  add(std::string(kScoreName), weights.score);
  return named;
}

namespace {

// A multimodal checkpoint's name for the language model's tensor `name` ("model.layers.0...",
// "lm_head.weight"): "language_model." + name as transformers < 4.52 saved Gemma 3 4B+ (the
// published checkpoints), else "model.language_model." + the rest as later versions save it; the
// first the checkpoint lists, or the first form (whose absence then names it).
std::string LanguageModelTensorName(const CheckpointFiles& files, const std::string& name) {
  const std::string old_form = absl::StrCat("language_model.", name);
  if (files.Has(old_form)) return old_form;
  if (name.starts_with("model.")) {
    std::string new_form = absl::StrCat("model.language_model.", name.substr(6));
    if (files.Has(new_form)) return new_form;
  } else if (files.Has(name)) {
    return name;  // transformers >= 4.52 keeps lm_head.weight at the top
  }
  return old_form;
}

// A converted classifier (Classifier::method): the LM head's rows of its tokens, read by
// `read_row(tensor name, first element, out)` from the embedding matrix or lm_head.weight, made
// into the score head. Nothing for any other model.
absl::Status ConvertedScoreHead(
    const ModelConfig& config,
    const std::function<absl::Status(const std::string&, int64_t, absl::Span<float>)>& read_row,
    ModelWeights& weights) {
  if (!config.classifier.has_value() || config.classifier->method.empty()) {
    return absl::OkStatus();
  }
  const Classifier& classifier = *config.classifier;
  if (classifier.from_token_ids.size() != classifier.from_tokens.size()) {
    return absl::FailedPreconditionError(
        "classifier_from_token: the tokens' ids were not resolved (ResolveClassifierTokens)");
  }
  const int64_t hidden = config.hidden_size;
  const std::string source = classifier.rows_from_embedding ? kEmbedName : kLmHeadName;
  std::vector<float> rows(classifier.from_token_ids.size() * static_cast<size_t>(hidden));
  for (size_t t = 0; t < classifier.from_token_ids.size(); ++t) {
    HR_RETURN_IF_ERROR(read_row(source, classifier.from_token_ids[t] * hidden,
                                absl::MakeSpan(rows).subspan(t * static_cast<size_t>(hidden),
                                                             static_cast<size_t>(hidden))));
  }
  weights.score = {.shape = {classifier.num_labels(), hidden},
                   .data = ConvertedHead(classifier, rows, hidden)};
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelWeights> LoadWeights(const ModelConfig& config, std::string_view dir,
                                         ShardSpec shard) {
  const fs::path dir_path{std::string(dir)};
  ModelWeights weights;
  HR_ASSIGN_OR_RETURN(std::vector<Slot> slots, MakeSlots(config, shard, weights));
  HR_RETURN_IF_ERROR(CheckHostMemory(slots, absl::StrCat("checkpoint ", dir_path.string())));
  HR_ASSIGN_OR_RETURN(CheckpointFiles files, CheckpointFiles::Open(dir_path));
  for (Slot& slot : slots) {
    if (config.language_model_of_multimodal) {
      slot.tensor_name = LanguageModelTensorName(files, slot.tensor_name);
    }
    absl::StatusOr<std::pair<const SafetensorsFile*, const SafetensorsTensor*>> found =
        files.Find(slot.tensor_name);
    if (!found.ok()) {
      if (slot.name == kLmHeadName && absl::IsInvalidArgument(found.status())) {
        return absl::Status(found.status().code(),
                            absl::StrCat(found.status().message(),
                                         "; config.json has tie_word_embeddings=false, so the "
                                         "checkpoint must have its own LM head"));
      }
      return found.status();
    }
    const auto [file, tensor] = *found;
    // Every rank checks every tensor, also those it does not hold, so that all ranks of a group
    // accept or refuse a checkpoint alike.
    if (tensor->shape != slot.tensor_shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint ", dir_path.string(), ": tensor \"", slot.tensor_name, "\" in ",
                       file->path(), " has shape ", ShapeString(tensor->shape), ", expected ",
                       ShapeString(slot.tensor_shape), " from the model config"));
    }
    if (!SafetensorsDTypeConvertsToFloat32(tensor->dtype)) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint ", dir_path.string(), ": tensor \"", slot.tensor_name, "\" in ",
                       file->path(), " has dtype ", tensor->dtype,
                       ", which headroom cannot load (supported: F32, F16, BF16)"));
    }
    // A part of a fused or stacked tensor starts row_offset rows (of its last dimension's width)
    // into it.
    const int64_t part_start =
        slot.row_offset * (slot.tensor_shape.size() > 1 ? slot.tensor_shape.back() : 1);
    HR_RETURN_IF_ERROR(FillSlot(slot, [&](int64_t first, absl::Span<float> out) {
      return file->ReadFloat32(*tensor, part_start + first, out);
    }));
  }
  HR_RETURN_IF_ERROR(ConvertedScoreHead(
      config,
      [&](const std::string& name, int64_t first, absl::Span<float> out) -> absl::Status {
        HR_ASSIGN_OR_RETURN(const auto found, files.Find(name));
        const std::vector<int64_t> want = {config.vocab_size, config.hidden_size};
        if (found.second->shape != want) {
          return absl::InvalidArgumentError(
              absl::StrCat("checkpoint ", dir_path.string(), ": tensor \"", name, "\" has shape ",
                           ShapeString(found.second->shape), ", expected ", ShapeString(want),
                           " (classifier_from_token reads its rows)"));
        }
        return found.first->ReadFloat32(*found.second, first, out);
      },
      weights));
  return weights;
}

absl::StatusOr<ModelWeights> DummyWeights(const ModelConfig& config, uint64_t seed,
                                          ShardSpec shard) {
  ModelWeights weights;
  HR_ASSIGN_OR_RETURN(const std::vector<Slot> slots, MakeSlots(config, shard, weights));
  HR_RETURN_IF_ERROR(CheckHostMemory(slots, absl::StrCat("dummy weights for ", config.source)));
  for (const Slot& slot : slots) {
    HR_RETURN_IF_ERROR(FillSlot(slot, [&](int64_t first, absl::Span<float> out) {
      switch (slot.init) {
        case Init::kNorm:
          std::fill(out.begin(), out.end(), config.norm_weight_offset ? 0.0f : 1.0f);
          break;
        case Init::kZeros:
          std::fill(out.begin(), out.end(), 0.0f);
          break;
        case Init::kRandom:
          FillDummy(seed, slot.name, first, out);
          break;
      }
      return absl::OkStatus();
    }));
  }
  HR_RETURN_IF_ERROR(ConvertedScoreHead(
      config,
      [seed](const std::string& name, int64_t first, absl::Span<float> out) {
        FillDummy(seed, name, first, out);
        return absl::OkStatus();
      },
      weights));
  return weights;
}

absl::StatusOr<LoadFormat> ParseLoadFormat(std::string_view name) {
  if (name == "auto") return LoadFormat::kAuto;
  if (name == "safetensors") return LoadFormat::kSafetensors;
  if (name == "dummy") return LoadFormat::kDummy;
  return absl::InvalidArgumentError(absl::StrCat("--load-format ",
                                                 absl::string_view(name.data(), name.size()),
                                                 " is not one of: auto, safetensors, dummy"));
}

absl::StatusOr<ModelWeights> LoadModelWeights(const ModelConfig& config, std::string_view model,
                                              LoadFormat format, uint64_t seed, ShardSpec shard) {
  const bool preset = model.starts_with("dummy:");
  if (format == LoadFormat::kSafetensors && preset) {
    return absl::InvalidArgumentError(
        absl::StrCat("--load-format safetensors needs a checkpoint directory, not ",
                     absl::string_view(model.data(), model.size())));
  }
  if (format == LoadFormat::kDummy || (format == LoadFormat::kAuto && preset)) {
    return DummyWeights(config, seed, shard);
  }
  return LoadWeights(config, model, shard);
}

}  // namespace headroom::worker
