// LoRA adapters in PEFT's format, as vLLM serves them with --lora-modules: a directory holding
// adapter_config.json (r, lora_alpha, use_rslora, ...) and adapter_model.safetensors, whose tensors
// are named after the base model's projections:
//
//   base_model.model.model.layers.<i>.self_attn.q_proj.lora_A.weight   [r, in_features]
//   base_model.model.model.layers.<i>.self_attn.q_proj.lora_B.weight   [out_features, r]
//
// A projection then computes y = x W^T + scale * (x A^T) B^T, scale = lora_alpha / r (rsLoRA:
// lora_alpha / sqrt(r)). The targets served are the attention projections (q/k/v/o_proj, or
// Phi-3's fused qkv_proj) and the dense MLP's (gate/up/down_proj, or gate_up_proj); anything PEFT
// can save that would change the model some other way (biases, DoRA, modules_to_save, embedding
// or LM-head adapters, per-module ranks, mixture-of-experts MLPs) is refused with the reason, so
// an adapter is never served as less than it is.
//
// Tensor parallelism splits an adapter as its projection (shard_weights.h): a column-parallel
// projection's B by rows (A whole on every rank), a row-parallel one's A by columns (B whole),
// so the ranks' partial updates add up in the all-reduce the projection already does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kvcache/memory_planner.h"
#include "worker/model/checkpoint.h"
#include "worker/model/model_config.h"
#include "worker/model/shard_weights.h"

namespace headroom::worker {

// The projections an adapter can change, in the order LlamaModel computes them.
enum class LoraTarget : uint8_t { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr size_t kNumLoraTargets = 7;
// "q_proj", ..., "down_proj".
[[nodiscard]] const char* LoraTargetName(LoraTarget target);

static_assert(kNumLoraTargets == std::tuple_size_v<decltype(kvcache::LoraDims::targets)>);

// vLLM's --max-lora-rank default.
inline constexpr int64_t kDefaultMaxLoraRank = 16;

// One --lora-modules entry: vLLM's `name=path`, or its JSON form
// {"name": ..., "path": ..., "base_model_name": ...}.
struct LoraModuleSpec {
  std::string name;
  std::string path;
};
[[nodiscard]] absl::StatusOr<LoraModuleSpec> ParseLoraModule(std::string_view text);

// An adapter's factors for one layer: A [r, in] and B [out, r] of each target it changes (both
// empty for the others), this rank's shard, B not yet scaled.
struct LoraLayer {
  std::array<HostTensor, kNumLoraTargets> a;
  std::array<HostTensor, kNumLoraTargets> b;
};

struct LoraAdapter {
  std::string name;
  std::string path;
  // What its prefix-cache blocks are keyed by (kvcache/block_hash.h): "lora:" and the hex
  // XXH3-128 of adapter_model.safetensors seeded with XXH3-64 of adapter_config.json (the files
  // as the loader read them). The files, not the name: an
  // adapter loaded at run time under an unloaded one's name never reuses the blocks the old one
  // computed, two names of one adapter share theirs, and every rank, group and router that reads
  // the files agrees on it.
  std::string cache_key;
  int64_t rank = 0;
  double scale = 1.0;  // lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora
  std::array<bool, kNumLoraTargets> targets{};
  std::vector<LoraLayer> layers;  // config.num_hidden_layers entries
};

// Loads the adapter `spec` for the base model `config`, this rank's shard of it.
// InvalidArgument naming the file and the field for a config or tensor that is malformed, a
// feature that is not served (above), a tensor whose shape does not fit the base model, or a rank
// above `max_lora_rank` (vLLM's --max-lora-rank); NotFound for a missing directory or file.
[[nodiscard]] absl::StatusOr<LoraAdapter> LoadLoraAdapter(const ModelConfig& config,
                                                          const LoraModuleSpec& spec,
                                                          int64_t max_lora_rank,
                                                          ShardSpec shard = {});

// What the memory planner needs of `adapters`: how many, the largest rank, and the targets any
// of them changes (the stacking LlamaModel does).
[[nodiscard]] kvcache::LoraDims LoraDimsOf(absl::Span<const LoraAdapter> adapters);
// What the memory planner needs of `slots` reserved for run-time loads at `rank`: every target,
// since a later adapter may change any.
[[nodiscard]] kvcache::LoraDims ReservedLoraDims(int64_t slots, int64_t rank);

}  // namespace headroom::worker
