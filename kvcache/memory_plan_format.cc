// FormatPlan: the memory plan as the aligned table `headroom plan` and the worker print.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kvcache/memory_planner.h"
#include "kvcache/memory_planner_internal.h"
#include "kvcache/sliding_window.h"

namespace headroom::kvcache {
namespace {

struct Row {
  std::string label;  // Left column.
  std::string value;  // Right-aligned middle column.
  std::string note;   // Free text after the value.
};

std::string GiBValue(int64_t bytes) { return absl::StrCat(FormatGiB(bytes), " GiB"); }

// 1234567 -> "1,234,567".
std::string Count(int64_t value) {
  std::string digits = absl::StrCat(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? absl::StrCat("-", out) : out;
}

// Distinct values in order of first appearance, each with how often it appears.
template <typename T>
std::vector<std::pair<T, int64_t>> CountInOrder(const std::vector<T>& values) {
  std::vector<std::pair<T, int64_t>> counts;
  for (const T& value : values) {
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& entry) { return entry.first == value; });
    if (it == counts.end()) {
      counts.emplace_back(value, 1);
    } else {
      ++it->second;
    }
  }
  return counts;
}

bool HasLayerGroups(const MemoryPlan& p) { return p.kv_group_windows.size() > 1; }

// "2246 = 1 x 2048 + 6 x 33" with groups, "2048" without.
std::string BlocksWithSum(const MemoryPlan& p, int64_t blocks, int64_t num_tokens,
                          int64_t max_chunk) {
  if (!HasLayerGroups(p)) return absl::StrCat(blocks);
  return absl::StrCat(blocks, " = ", internal::GroupBlocksSum(p, num_tokens, max_chunk));
}

// The note of the max-concurrency row at --max-model-len: what one sequence holds.
std::string MaxLenConcurrencyNote(const MemoryPlan& p) {
  if (HasLayerGroups(p)) {
    return absl::StrCat(
        "at --max-model-len; a sequence holds ",
        BlocksWithSum(p, p.decode_blocks_per_seq, p.max_model_len, 1), " blocks decoding, ",
        BlocksWithSum(p, p.peak_blocks_per_seq, p.max_model_len, p.max_num_batched_tokens),
        " at most");
  }
  if (p.kv_sliding_window > 0) {
    return absl::StrCat("at --max-model-len; sliding window ", p.kv_sliding_window,
                        ": a sequence holds ", p.decode_blocks_per_seq, " blocks decoding, ",
                        p.peak_blocks_per_seq, " at most");
  }
  return "at --max-model-len";
}

}  // namespace

namespace internal {

std::string DescribeLayerGroups(const MemoryPlan& p) {
  if (!HasLayerGroups(p)) return "";
  std::vector<std::string> parts;
  for (const auto& [window, count] : CountInOrder(p.kv_group_windows)) {
    parts.push_back(window == 0 ? absl::StrCat(count, " full attention")
                                : absl::StrCat(count, " windowed (", window, " tokens)"));
  }
  return absl::StrJoin(parts, " + ");
}

std::string GroupBlocksSum(const MemoryPlan& p, int64_t num_tokens, int64_t max_chunk) {
  if (!HasLayerGroups(p)) return "";
  std::vector<int64_t> blocks;
  for (const int32_t window : p.kv_group_windows) {
    blocks.push_back(PeakBlocksPerSequence(num_tokens, p.block_size, window, max_chunk));
  }
  std::vector<std::string> parts;
  for (const auto& [count, groups] : CountInOrder(blocks)) {
    parts.push_back(absl::StrCat(groups, " x ", count));
  }
  return absl::StrJoin(parts, " + ");
}

}  // namespace internal

std::string FormatPlan(const MemoryPlan& p) {
  const ActivationArena& a = p.arena;
  const bool grouped = HasLayerGroups(p);
  const int64_t num_groups = static_cast<int64_t>(p.kv_group_windows.size());
  std::vector<Row> rows = {
      {"device memory", GiBValue(p.device_memory_bytes), ""},
      {absl::StrFormat("budget (utilization %.2f)", p.gpu_memory_utilization),
       GiBValue(p.budget_bytes), "floor(device memory x utilization)"},
      {"weights per rank", GiBValue(p.weights_bytes),
       absl::StrCat(Count(p.weight_params_per_rank), " parameters")},
      {"activation arena", GiBValue(a.total_bytes),
       absl::StrCat(p.max_num_batched_tokens, " tokens, ", p.max_num_seqs, " seqs per step")},
      {"  per-token buffers", GiBValue(a.token_buffers_bytes),
       "hidden, residual, normed, qkv, attn out, gate_up, act"},
      {"  logits + sampler", GiBValue(a.logits_bytes + a.sampler_bytes),
       "fp32 logits, probs, logprobs, top-k/top-p sort"},
      {"  attention, metadata, rope",
       GiBValue(a.attention_scratch_bytes + a.metadata_bytes + a.rope_cache_bytes),
       "split-KV partials, block tables, cos/sin"},
      {"workspaces", GiBValue(p.workspace_bytes),
       absl::StrCat("cuBLASLt ", FormatBytes(p.cublas_workspace_bytes), ", NCCL ",
                    p.nccl_bytes > 0 ? FormatBytes(p.nccl_bytes) : "none (tp 1)")},
      {"CUDA context + graphs", GiBValue(p.cuda_context_bytes + p.cuda_graph_bytes),
       absl::StrCat("context ", FormatBytes(p.cuda_context_bytes), ", graphs ",
                    FormatBytes(p.cuda_graph_bytes))},
      {"safety margin", GiBValue(p.safety_margin_bytes), ""},
      {"KV cache available", GiBValue(p.kv_cache_bytes), "budget minus everything above"},
  };
  if (p.lora_adapters > 0) {
    // Right after the weights: the adapters are weights too, resident from the start.
    rows.insert(rows.begin() + 3,
                {"LoRA adapters per rank", GiBValue(p.lora_bytes),
                 absl::StrCat(p.lora_adapters, " adapter slots at rank ", p.lora_rank, ", ",
                              Count(p.lora_params_per_rank), " parameters")});
  }
  if (grouped) {
    rows.push_back(
        {"layer groups", Count(num_groups),
         absl::StrCat(
             internal::DescribeLayerGroups(p), "; a block holds one group's ", p.kv_group_size,
             " layers",
             p.kv_group_padding_slots > 0
                 ? absl::StrCat(" (", p.kv_group_padding_slots,
                                p.kv_group_padding_slots == 1 ? " slot" : " slots", " unused)")
                 : "")});
  }
  const std::vector<Row> kv_rows = {
      {grouped ? "KV per token per group" : "KV per token", FormatBytes(p.kv_bytes_per_token),
       absl::StrCat(p.kv_heads_per_rank, " KV heads per rank")},
      {absl::StrCat("KV per block (block size ", p.block_size, ")"),
       FormatBytes(p.kv_bytes_per_block), ""},
      {"blocks", Count(p.num_blocks),
       absl::StrCat(Count(p.num_usable_blocks), " usable + ", kNumReservedBlocks,
                    " reserved null block")},
      {"tokens", Count(p.num_tokens),
       grouped ? absl::StrCat("usable blocks / ", num_groups,
                              " groups x block size (a token takes a slot in every group)")
               : "usable blocks x block size"},
      {absl::StrCat("max concurrency @ ", p.max_model_len, " tokens"),
       absl::StrFormat("%.2fx", p.max_concurrency), MaxLenConcurrencyNote(p)},
      {absl::StrCat("max concurrency @ ", p.typical_request_tokens, " tokens"),
       absl::StrFormat("%.2fx", p.max_concurrency_typical),
       grouped
           ? absl::StrCat("typical request: a sequence holds ",
                          BlocksWithSum(p,
                                        PeakBlocksOverGroups(p.typical_request_tokens, p.block_size,
                                                             p.kv_group_windows, 0, 1),
                                        p.typical_request_tokens, 1),
                          " blocks")
           : "typical request"},
  };
  rows.insert(rows.end(), kv_rows.begin(), kv_rows.end());

  size_t label_width = 0;
  size_t value_width = 0;
  for (const Row& row : rows) {
    label_width = std::max(label_width, row.label.size());
    value_width = std::max(value_width, row.value.size());
  }
  std::string out = absl::StrFormat(
      "Memory plan per GPU (tensor parallel size %d, block size %d, max model len %d)\n",
      p.tensor_parallel_size, p.block_size, p.max_model_len);
  for (const Row& row : rows) {
    std::string line =
        absl::StrCat("  ", row.label, std::string(label_width - row.label.size(), ' '), "  ",
                     std::string(value_width - row.value.size(), ' '), row.value);
    if (!row.note.empty()) absl::StrAppend(&line, "   ", row.note);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace headroom::kvcache
