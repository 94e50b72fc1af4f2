// The planner's refusals (c), (d), (e) and the fixes they suggest, each found by re-planning.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kvcache/memory_planner.h"
#include "kvcache/memory_planner_constants.h"
#include "kvcache/memory_planner_internal.h"

namespace headroom::kvcache {
namespace internal {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string GiB(int64_t bytes) { return absl::StrCat(FormatGiB(bytes), " GiB"); }

// Largest value in [low, high] for which fits(value) holds, given fits is true up to some point
// and false after it; nullopt when fits(low) is false.
template <typename Predicate>
std::optional<int64_t> LargestFitting(int64_t low, int64_t high, Predicate fits) {
  if (low > high || !fits(low)) return std::nullopt;
  while (low < high) {
    const int64_t mid = low + (high - low + 1) / 2;
    if (fits(mid)) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  return low;
}

// ", LoRA adapters 0.16 GiB" when the plan holds adapters.
std::string LoraPart(const MemoryPlan& p) {
  return p.lora_bytes > 0 ? absl::StrCat(", LoRA adapters ", GiB(p.lora_bytes)) : "";
}

std::string BudgetLine(const MemoryPlan& p) {
  return absl::StrFormat(
      "budget %s = %s x --gpu-memory-utilization %.2f: weights %s%s, activation arena %s, "
      "workspaces %s, CUDA context and graphs %s, safety margin %s, %s",
      GiB(p.budget_bytes), GiB(p.device_memory_bytes), p.gpu_memory_utilization,
      GiB(p.weights_bytes), LoraPart(p), GiB(p.arena.total_bytes), GiB(p.workspace_bytes),
      GiB(p.cuda_context_bytes + p.cuda_graph_bytes), GiB(p.safety_margin_bytes),
      p.kv_cache_bytes >= 0 ? absl::StrCat("KV cache ", GiB(p.kv_cache_bytes))
                            : absl::StrCat("no KV cache (short by ", GiB(-p.kv_cache_bytes), ")"));
}

// What one sequence's peak demand is made of, after the blocks in the refusal's parenthesis.
std::string NeedBreakdown(const MemoryPlan& p) {
  if (p.kv_group_windows.size() > 1) {
    return absl::StrCat("; layer groups ", DescribeLayerGroups(p), ": ",
                        GroupBlocksSum(p, p.max_model_len, p.max_num_batched_tokens),
                        " blocks, a windowed group holding its window plus a prefill chunk of ",
                        p.max_num_batched_tokens);
  }
  if (p.kv_sliding_window > 0) {
    return absl::StrCat("; the sliding window of ", p.kv_sliding_window,
                        " tokens plus a prefill chunk of ", p.max_num_batched_tokens);
  }
  return "";
}

// The "Fixes" block of a refusal: one line per setting that fits on its own.
std::string FixLines(const MemoryPlanInput& in, const MemoryPlan& p, const MemoryFixes& fixes,
                     bool suggest_limits) {
  std::vector<std::string> lines;
  if (fixes.max_model_len > 0) {
    std::string line = absl::StrCat("--max-model-len ", fixes.max_model_len);
    if (fixes.max_model_len < fixes.max_model_len_by_memory) {
      absl::StrAppend(
          &line, " (the model's ",
          in.model.max_position_source.empty() ? "max_position_embeddings" : "context length",
          "; memory alone would fit ", fixes.max_model_len_by_memory, " tokens)");
    } else {
      absl::StrAppend(&line, " (the largest that fits)");
    }
    lines.push_back(line);
  } else if (suggest_limits) {
    lines.push_back("--max-model-len: no value fits (not even one block)");
  }
  if (fixes.gpu_memory_utilization > 0) {
    lines.push_back(absl::StrFormat("--gpu-memory-utilization %.2f (the smallest that fits)",
                                    fixes.gpu_memory_utilization));
  } else {
    lines.push_back(
        absl::StrFormat("--gpu-memory-utilization: no value <= 1.00 fits (it would need %.2f x %s)",
                        fixes.needed_utilization, GiB(p.device_memory_bytes)));
  }
  if (fixes.tensor_parallel_size > 0) {
    MemoryPlanInput at_tp = in;
    at_tp.tensor_parallel_size = fixes.tensor_parallel_size;
    const MemoryPlan plan = Evaluate(at_tp).plan;
    lines.push_back(absl::StrFormat(
        "--tensor-parallel-size %d (the smallest that fits: %s of weights and %s of KV cache "
        "per GPU, %.2fx concurrency at %d tokens)",
        fixes.tensor_parallel_size, GiB(plan.weights_bytes), GiB(plan.kv_cache_bytes),
        plan.max_concurrency, plan.max_model_len));
  } else {
    std::vector<int64_t> larger;
    for (int64_t tp : ValidTensorParallelSizes(in.model)) {
      if (tp > in.tensor_parallel_size && tp <= kMaxSuggestedTensorParallelSize) {
        larger.push_back(tp);
      }
    }
    lines.push_back(absl::StrCat(
        "--tensor-parallel-size: no valid size up to ", kMaxSuggestedTensorParallelSize, " fits",
        larger.empty() ? "" : " (tried ", absl::StrJoin(larger, ", "), larger.empty() ? "" : ")"));
  }
  if (suggest_limits && fixes.max_num_batched_tokens > 0) {
    lines.push_back(absl::StrCat("--max-num-batched-tokens ", fixes.max_num_batched_tokens,
                                 " (the largest that fits with --max-num-seqs ", in.max_num_seqs,
                                 ")"));
  }
  if (suggest_limits && fixes.max_num_seqs > 0) {
    lines.push_back(
        absl::StrCat("--max-num-seqs ", fixes.max_num_seqs, " (the largest that fits)"));
  }
  if (fixes.block_size > 0) {
    lines.push_back(absl::StrCat("--block-size ", fixes.block_size,
                                 " (less rounding; the largest size that fits)"));
  }
  std::string text = "Any one of these fits (each checked by re-planning):";
  for (const std::string& line : lines) absl::StrAppend(&text, "\n  ", line);
  return text;
}

std::string MaxPositionNote(const MemoryPlanInput& in) {
  const int64_t max_positions = in.model.max_position_embeddings;
  if (max_positions == 0 || in.max_model_len <= max_positions) return "";
  return absl::StrCat("\nNote: --max-model-len ", in.max_model_len, " also exceeds the model's ",
                      ContextLimitName(in.model), "; it is refused even where memory fits.");
}

}  // namespace

absl::Status Refuse(const MemoryPlanInput& in, const Evaluation& e) {
  const MemoryPlan& p = e.plan;
  const MemoryFixes fixes = SuggestFixes(in);
  std::string message;
  bool suggest_limits = true;
  switch (e.outcome) {
    case Outcome::kWeightsExceedBudget:
      message = absl::StrFormat(
          "the model's weights do not fit: %s per GPU at --tensor-parallel-size %d, more than "
          "the %s budget (%s x --gpu-memory-utilization %.2f).",
          GiB(p.weights_bytes), p.tensor_parallel_size, GiB(p.budget_bytes),
          GiB(p.device_memory_bytes), p.gpu_memory_utilization);
      suggest_limits = false;
      break;
    case Outcome::kNoKvBlocks:
      message = absl::StrFormat(
          "no memory left for the KV cache: after %s of weights%s, %s of the %s budget "
          "remains, and the fixed overheads need %s: activation arena %s (for "
          "--max-num-batched-tokens %d and --max-num-seqs %d), workspaces %s, CUDA context and "
          "graphs %s, safety margin %s. Lower --max-num-batched-tokens or --max-num-seqs to "
          "shrink the arena.\n%s",
          GiB(p.weights_bytes),
          p.lora_bytes > 0 ? absl::StrCat(" and ", GiB(p.lora_bytes), " of LoRA adapters") : "",
          GiB(p.budget_bytes - p.weights_bytes - p.lora_bytes), GiB(p.budget_bytes),
          GiB(p.arena.total_bytes + p.workspace_bytes + p.cuda_context_bytes + p.cuda_graph_bytes +
              p.safety_margin_bytes),
          GiB(p.arena.total_bytes), p.max_num_batched_tokens, p.max_num_seqs,
          GiB(p.workspace_bytes), GiB(p.cuda_context_bytes + p.cuda_graph_bytes),
          GiB(p.safety_margin_bytes), BudgetLine(p));
      break;
    case Outcome::kSequenceDoesNotFit:
      message = absl::StrFormat(
          "the KV cache cannot hold one sequence of --max-model-len %d tokens: needed %s KV "
          "cache per GPU (%d blocks of %d tokens x %s%s), available %s (%d usable blocks, %d "
          "tokens).\n%s",
          p.max_model_len, GiB(p.peak_blocks_per_seq * p.kv_bytes_per_block), p.peak_blocks_per_seq,
          p.block_size, FormatBytes(p.kv_bytes_per_block), NeedBreakdown(p), GiB(p.kv_cache_bytes),
          p.num_usable_blocks, p.num_tokens, BudgetLine(p));
      break;
    case Outcome::kFits:
      return absl::OkStatus();
  }
  absl::StrAppend(&message, "\n", FixLines(in, p, fixes, suggest_limits), MaxPositionNote(in));
  return absl::FailedPreconditionError(message);
}

}  // namespace internal

using internal::CeilDiv;
using internal::Evaluate;
using internal::Evaluation;
using internal::Fits;
using internal::LargestFitting;
using internal::Outcome;
using internal::Validate;

MemoryFixes SuggestFixes(const MemoryPlanInput& in) {
  MemoryFixes fixes;
  if (!Validate(in).ok()) return fixes;
  const Evaluation current = Evaluate(in);
  if (current.outcome == Outcome::kFits) return fixes;

  // --max-model-len: the arena and block demand depend on it only through its block count, so
  // the largest fitting length is a whole number of blocks.
  const int64_t blocks_now = CeilDiv(in.max_model_len, in.block_size);
  const std::optional<int64_t> blocks = LargestFitting(1, blocks_now - 1, [&](int64_t b) {
    MemoryPlanInput trial = in;
    trial.max_model_len = b * in.block_size;
    return Fits(trial);
  });
  if (blocks) {
    fixes.max_model_len_by_memory = *blocks * in.block_size;
    fixes.max_model_len = fixes.max_model_len_by_memory;
    if (in.model.max_position_embeddings > 0) {
      fixes.max_model_len = std::min(fixes.max_model_len, in.model.max_position_embeddings);
    }
  }

  // --gpu-memory-utilization in hundredths: the smallest that fits, or what it would take.
  const std::optional<int64_t> too_small = LargestFitting(0, 100, [&](int64_t hundredths) {
    if (hundredths == 0) return true;
    MemoryPlanInput trial = in;
    trial.gpu_memory_utilization = static_cast<double>(hundredths) / 100.0;
    return !Fits(trial);
  });
  if (too_small && *too_small < 100) {
    fixes.gpu_memory_utilization = static_cast<double>(*too_small + 1) / 100.0;
  }
  const MemoryPlan& p = current.plan;
  const int64_t needed_bytes = p.budget_bytes - p.kv_cache_bytes +
                               (p.peak_blocks_per_seq + kNumReservedBlocks) * p.kv_bytes_per_block;
  fixes.needed_utilization = std::ceil(static_cast<double>(needed_bytes) * 100.0 /
                                       static_cast<double>(p.device_memory_bytes)) /
                             100.0;

  for (int64_t tp : ValidTensorParallelSizes(in.model)) {
    if (tp <= in.tensor_parallel_size || tp > kMaxSuggestedTensorParallelSize) continue;
    MemoryPlanInput trial = in;
    trial.tensor_parallel_size = tp;
    if (Fits(trial)) {
      fixes.tensor_parallel_size = tp;
      break;
    }
  }

  fixes.max_num_batched_tokens =
      LargestFitting(in.max_num_seqs, in.max_num_batched_tokens - 1, [&](int64_t tokens) {
        MemoryPlanInput trial = in;
        trial.max_num_batched_tokens = tokens;
        return Fits(trial);
      }).value_or(0);
  fixes.max_num_seqs = LargestFitting(1, in.max_num_seqs - 1, [&](int64_t seqs) {
                         MemoryPlanInput trial = in;
                         trial.max_num_seqs = seqs;
                         return Fits(trial);
                       }).value_or(0);

  for (int64_t size = kMaxBlockSize; size >= kMinBlockSize; size /= 2) {
    if (size == in.block_size) continue;
    MemoryPlanInput trial = in;
    trial.block_size = size;
    if (Fits(trial)) {
      fixes.block_size = size;
      break;
    }
  }
  return fixes;
}

}  // namespace headroom::kvcache
