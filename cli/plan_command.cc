#include "cli/plan_command.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/exit_codes.h"
#include "cli/hf_overrides_flag.h"
#include "cli/lora_flags.h"
#include "cli/parse_flags.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "kvcache/memory_planner.h"
#include "worker/model/lora_adapter.h"
#include "worker/model/model_config.h"
#include "worker/model/shard_weights.h"

namespace headroom::cli {
namespace {

// Largest --gpu-memory-gib accepted (1 PiB); the planner refuses more anyway.
inline constexpr double kMaxGpuMemoryGiB = 1024.0 * 1024.0;

FlagSet MakePlanFlags() {
  FlagSet flags("headroom plan",
                "Prints the model's shape and the memory plan of one GPU of a tensor-parallel "
                "group: budget, weights, activation arena, workspaces, reserves and the KV "
                "cache that remains (blocks, tokens, concurrency). Refuses (exit 2) with the "
                "numbers and the settings that would fit. Flags use vLLM's names.");
  flags.AddString("model", std::nullopt,
                  "Hugging Face model directory (with config.json) or dummy:<preset>.");
  AddHfOverridesFlag(flags);
  flags.AddInt64("tensor-parallel-size", 1, "GPUs in the tensor-parallel group.");
  flags.AddDouble("gpu-memory-utilization", kvcache::kDefaultGpuMemoryUtilization,
                  "Share of each GPU's memory headroom may use, in (0, 1].");
  flags.AddInt64("max-model-len", std::nullopt,
                 "Longest sequence (prompt + output) in tokens (default: the model's "
                 "max_position_embeddings, or original_max_position_embeddings x factor with yarn "
                 "rope scaling).");
  flags.AddInt64("max-num-seqs", kvcache::kDefaultMaxNumSeqs,
                 "Most sequences running in one step.");
  flags.AddInt64("max-num-batched-tokens", kvcache::kDefaultMaxNumBatchedTokens,
                 "Most tokens in one forward step; longer prompts are prefilled in chunks.");
  flags.AddInt64("block-size", kvcache::kDefaultBlockSize,
                 "Tokens per KV-cache block (a power of two, 1 to 256).");
  flags.AddString("dtype", "auto",
                  "Weight and activation dtype: auto (as vLLM: the checkpoint's torch_dtype, a "
                  "float32 checkpoint in bfloat16, a float32 classifier in float16), float16, "
                  "bfloat16, float32.");
  flags.AddString("kv-cache-dtype", "auto",
                  "KV-cache dtype: auto (same as --dtype), float16, bfloat16, float32.");
  flags.AddDouble("gpu-memory-gib", std::nullopt,
                  "Memory of one GPU in GiB, e.g. 80 for an H100 80GB (required: `plan` does "
                  "not look for a GPU).");
  flags.MarkRequired("model");
  flags.AddStringList("lora-modules",
                      "LoRA adapters the workers will serve (name=path, as `headroom worker`): "
                      "planned as resident weights, stacked and padded to the largest rank.");
  flags.AddInt64("max-lora-rank", worker::kDefaultMaxLoraRank,
                 "Largest adapter rank accepted (the reserved slots' rank).");
  AddRuntimeLoraFlags(flags);
  return flags;
}

// 1234567 -> "1,234,567".
std::string Count(int64_t value) {
  const std::string digits = absl::StrCat(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// A dtype flag's value, or its error prefixed with the flag's name.
absl::StatusOr<worker::DType> NamedDTypeFlag(const char* name,
                                             absl::StatusOr<worker::DType> dtype) {
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", dtype.status().message()));
  }
  return dtype;
}

// Partial rotary, sliding window and soft-capping, as the summary's attention line lists them.
std::string AttentionExtras(const worker::ModelConfig& c) {
  std::string extras;
  if (worker::RotaryDim(c) < c.head_dim) {
    absl::StrAppend(&extras, ", rotary on ", worker::RotaryDim(c), " of ", c.head_dim,
                    " values per head");
  }
  if (c.sliding_window) {
    int64_t sliding = 0;
    for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
      sliding += worker::LayerSlidingWindow(c, layer) > 0 ? 1 : 0;
    }
    absl::StrAppend(&extras, ", sliding window ", *c.sliding_window,
                    sliding < c.num_hidden_layers
                        ? absl::StrCat(" on ", sliding, " of ", c.num_hidden_layers, " layers")
                        : std::string());
    if (c.rope_local_theta > 0) {
      absl::StrAppend(&extras, " (their rope_theta ", c.rope_local_theta,
                      c.rope_scaling ? ", unscaled)" : ")");
    }
  }
  if (c.attn_logit_softcapping > 0) {
    absl::StrAppend(&extras, ", scores soft-capped at ", c.attn_logit_softcapping);
  }
  if (c.final_logit_softcapping > 0) {
    absl::StrAppend(&extras, ", logits soft-capped at ", c.final_logit_softcapping);
  }
  return extras;
}

// "  mixture of experts: 128 experts of intermediate 1408, top 8 (renormalized), sigmoid scores
// with a correction bias, an ungated shared expert of intermediate 1408; the first 1 layer dense
// of intermediate 10944".
std::string ExpertsSummary(const worker::ModelConfig& c) {
  std::string summary = absl::StrFormat(
      "  mixture of experts: %d experts of intermediate %d, top %d%s", c.num_experts,
      c.intermediate_size, c.num_experts_per_tok, c.norm_topk_prob ? " (renormalized)" : "");
  if (c.moe_num_groups > 1) {
    absl::StrAppendFormat(&summary, " from the best %d of %d groups", c.moe_topk_groups,
                          c.moe_num_groups);
  }
  if (c.routed_scaling_factor != 1.0) {
    absl::StrAppendFormat(&summary, " scaled x%g", c.routed_scaling_factor);
  }
  if (c.moe_sigmoid_scores) {
    absl::StrAppend(&summary, ", sigmoid scores",
                    c.moe_correction_bias ? " with a correction bias" : "");
  }
  if (c.shared_expert_intermediate_size > 0) {
    absl::StrAppend(&summary, c.shared_expert_gated ? ", a gated" : ", an ungated",
                    " shared expert of intermediate ", c.shared_expert_intermediate_size);
  }
  const int64_t dense = worker::NumDenseMlpLayers(c);
  if (dense > 0) {
    absl::StrAppendFormat(&summary, "; the first %d layer%s dense of intermediate %d", dense,
                          dense == 1 ? "" : "s", c.dense_intermediate_size);
  }
  return summary + "\n";
}

std::string ModelSummary(const worker::ModelConfig& c, worker::DType dtype, worker::DType kv_dtype,
                         int64_t max_model_len) {
  std::string summary = absl::StrFormat("Model %s (%s)\n", c.source,
                                        c.classifier ? c.classifier->architecture : c.architecture);
  absl::StrAppendFormat(&summary, "  layers %d, hidden %d, intermediate %d, vocab %d (%s)\n",
                        c.num_hidden_layers, c.hidden_size, c.intermediate_size, c.vocab_size,
                        c.classifier
                            ? absl::StrCat("a score head of ", c.classifier->num_labels(),
                                           c.classifier->num_labels() == 1 ? " label" : " labels",
                                           " on the host, no LM head")
                        : c.tie_word_embeddings ? "tied LM head"
                                                : "untied LM head");
  absl::StrAppendFormat(&summary, "  attention: %d heads, %d KV heads, head_dim %d%s\n",
                        c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                        absl::StrCat(c.qkv_bias ? ", q/k/v bias" : "",
                                     !c.qk_norm               ? ""
                                     : c.qk_norm_across_heads ? ", q/k norm across heads"
                                                              : ", per-head q/k norm",
                                     AttentionExtras(c)));
  if (c.num_experts > 0) absl::StrAppend(&summary, ExpertsSummary(c));
  std::string rope_scaling;
  if (c.rope_scaling && c.rope_scaling->type == worker::RopeScalingType::kYarn) {
    rope_scaling = absl::StrFormat(
        ", yarn rope scaling x%g over %d pretrained positions (context %d), attention factor %.4f",
        c.rope_scaling->factor, c.rope_scaling->original_max_position_embeddings,
        worker::MaxContextLength(c), c.rope_scaling->attention_factor);
  } else if (c.rope_scaling) {
    const int64_t context = worker::MaxContextLength(c);
    rope_scaling = absl::StrFormat(
        ", %s rope scaling x%g%s",
        c.rope_scaling->type == worker::RopeScalingType::kLinear ? "linear" : "llama3",
        c.rope_scaling->factor,
        context != c.max_position_embeddings ? absl::StrFormat(" (context %d)", context) : "");
  } else if (c.long_rope) {
    // The list LlamaModel picks for this --max-model-len (docs/engine.md, LongRoPE).
    const int64_t original = c.long_rope->original_max_position_embeddings;
    rope_scaling = absl::StrFormat(
        ", longrope: its %s factors at --max-model-len %d (pretrained at %d), attention factor "
        "%.4f",
        max_model_len > original ? "long" : "short", max_model_len, original,
        c.long_rope->attention_factor);
  }
  absl::StrAppendFormat(&summary, "  max_position_embeddings %d, rope_theta %g%s\n",
                        c.max_position_embeddings, c.rope_theta, rope_scaling);
  absl::StrAppendFormat(&summary, "  parameters %s; weights %s, KV cache %s (checkpoint %s)\n",
                        Count(kvcache::WeightParamsPerRank(worker::ModelDimsOf(c), 1)),
                        worker::DTypeName(dtype), worker::DTypeName(kv_dtype),
                        worker::DTypeName(c.torch_dtype));
  return summary;
}

absl::StatusOr<std::string> Plan(const FlagSet& flags) {
  HR_ASSIGN_OR_RETURN(const worker::ModelConfig config,
                      worker::LoadModelConfig(*flags.GetString("model"), HfOverrides(flags)));
  HR_ASSIGN_OR_RETURN(
      const worker::DType dtype,
      NamedDTypeFlag("dtype", worker::ResolveModelDType(config, *flags.GetString("dtype"))));
  HR_ASSIGN_OR_RETURN(
      const worker::DType kv_dtype,
      NamedDTypeFlag("kv-cache-dtype",
                     worker::ResolveDType(*flags.GetString("kv-cache-dtype"), dtype)));

  const std::optional<double> gpu_memory_gib = flags.GetDouble("gpu-memory-gib");
  if (!gpu_memory_gib) {
    return absl::InvalidArgumentError(
        "no GPU visible; pass --gpu-memory-gib with the memory of one GPU in GiB (e.g. 80 for "
        "an H100 80GB, 24 for an L4 or RTX 4090)");
  }
  if (!(*gpu_memory_gib > 0 && *gpu_memory_gib <= kMaxGpuMemoryGiB)) {
    return absl::InvalidArgumentError(absl::StrFormat("--gpu-memory-gib must be in (0, %g], got %g",
                                                      kMaxGpuMemoryGiB, *gpu_memory_gib));
  }

  kvcache::MemoryPlanInput input;
  input.model = worker::ModelDimsOf(config);
  input.weight_dtype_bytes = worker::DTypeBytes(dtype);
  input.kv_cache_dtype_bytes = worker::DTypeBytes(kv_dtype);
  input.tensor_parallel_size = *flags.GetInt64("tensor-parallel-size");
  input.block_size = *flags.GetInt64("block-size");
  input.max_model_len = flags.GetInt64("max-model-len").value_or(worker::MaxContextLength(config));
  input.max_num_seqs = *flags.GetInt64("max-num-seqs");
  input.max_num_batched_tokens = *flags.GetInt64("max-num-batched-tokens");
  input.gpu_memory_utilization = *flags.GetDouble("gpu-memory-utilization");
  input.device_memory_bytes =
      static_cast<int64_t>(std::llround(*gpu_memory_gib * static_cast<double>(kGiB)));
  std::vector<worker::LoraAdapter> adapters;
  for (const std::string& entry : flags.GetStringList("lora-modules")) {
    HR_ASSIGN_OR_RETURN(const worker::LoraModuleSpec spec, worker::ParseLoraModule(entry));
    HR_ASSIGN_OR_RETURN(worker::LoraAdapter adapter,
                        worker::LoadLoraAdapter(config, spec, *flags.GetInt64("max-lora-rank")));
    adapters.push_back(std::move(adapter));
  }
  input.lora = worker::LoraDimsOf(adapters);
  HR_ASSIGN_OR_RETURN(const int32_t reserved,
                      RuntimeLoraSlots(flags, static_cast<int64_t>(adapters.size())));
  if (reserved > 0)
    input.lora = worker::ReservedLoraDims(reserved, *flags.GetInt64("max-lora-rank"));

  HR_ASSIGN_OR_RETURN(const kvcache::MemoryPlan plan, kvcache::PlanMemory(input));
  return absl::StrCat(ModelSummary(config, dtype, kv_dtype, input.max_model_len), "\n",
                      kvcache::FormatPlan(plan));
}

}  // namespace

int RunPlanCommand(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  FlagSet flags = MakePlanFlags();
  if (const std::optional<int> done = ParseFlagsOrExit(flags, args, out, err)) return *done;
  const absl::StatusOr<std::string> plan = Plan(flags);
  if (!plan.ok()) {
    err << "error: " << plan.status().message() << "\n";
    return kExitRefused;
  }
  out << *plan;
  return kExitOk;
}

}  // namespace headroom::cli
