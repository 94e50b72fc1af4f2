// FormatPlan: the memory plan as the aligned table `headroom plan` and the worker print.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kvcache/memory_planner.h"

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

}  // namespace

std::string FormatPlan(const MemoryPlan& p) {
  const ActivationArena& a = p.arena;
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
      {"KV per token", FormatBytes(p.kv_bytes_per_token),
       absl::StrCat(p.kv_heads_per_rank, " KV heads per rank")},
      {absl::StrCat("KV per block (block size ", p.block_size, ")"),
       FormatBytes(p.kv_bytes_per_block), ""},
      {"blocks", Count(p.num_blocks),
       absl::StrCat(Count(p.num_usable_blocks), " usable + ", kNumReservedBlocks,
                    " reserved null block")},
      {"tokens", Count(p.num_tokens), "usable blocks x block size"},
      {absl::StrCat("max concurrency @ ", p.max_model_len, " tokens"),
       absl::StrFormat("%.2fx", p.max_concurrency),
       p.kv_sliding_window > 0
           ? absl::StrCat("at --max-model-len; sliding window ", p.kv_sliding_window,
                          ": a sequence holds ", p.decode_blocks_per_seq, " blocks decoding, ",
                          p.peak_blocks_per_seq, " at most")
           : "at --max-model-len"},
      {absl::StrCat("max concurrency @ ", p.typical_request_tokens, " tokens"),
       absl::StrFormat("%.2fx", p.max_concurrency_typical), "typical request"},
  };

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
