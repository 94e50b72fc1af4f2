#include "worker/model/shard_weights.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "kvcache/tensor_parallel.h"

namespace headroom::worker {
namespace {

// Rows [start, start + rows) of a [R, C] tensor (or of a [R] vector: C = 1); rows past R are zero.
HostTensor Rows(const HostTensor& t, int64_t start, int64_t rows) {
  if (t.empty()) return {};
  const int64_t total = t.shape[0];
  const int64_t width = t.shape.size() > 1 ? t.shape[1] : 1;
  HostTensor out;
  out.shape = t.shape;
  out.shape[0] = rows;
  out.data.assign(static_cast<size_t>(rows * width), 0.0f);
  const int64_t copied = std::clamp<int64_t>(total - start, 0, rows);
  std::copy_n(t.data.begin() + start * width, copied * width, out.data.begin());
  return out;
}

// Columns [start, start + cols) of a [R, C] tensor.
HostTensor Columns(const HostTensor& t, int64_t start, int64_t cols) {
  const int64_t rows = t.shape[0];
  const int64_t width = t.shape[1];
  HostTensor out;
  out.shape = {rows, cols};
  out.data.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(t.data.begin() + r * width + start, cols, out.data.begin() + r * cols);
  }
  return out;
}

}  // namespace

kvcache::ModelDims ModelDimsOf(const ModelConfig& config) {
  return kvcache::ModelDims{.num_layers = config.num_hidden_layers,
                            .hidden_size = config.hidden_size,
                            .intermediate_size = config.intermediate_size,
                            .num_attention_heads = config.num_attention_heads,
                            .num_kv_heads = config.num_key_value_heads,
                            .head_dim = config.head_dim,
                            .vocab_size = config.vocab_size,
                            .max_position_embeddings = config.max_position_embeddings,
                            .tie_word_embeddings = config.tie_word_embeddings,
                            .qkv_bias = config.qkv_bias,
                            .o_proj_bias = config.o_proj_bias,
                            .mlp_bias = config.mlp_bias};
}

absl::Status CheckShardable(const ModelConfig& config, int64_t tp, int64_t rank) {
  if (tp < 1 || rank < 0 || rank >= tp) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not a rank of a tensor-parallel group of ", tp));
  }
  const kvcache::ModelDims dims = ModelDimsOf(config);
  const std::vector<std::string> problems = kvcache::ShardingProblems(dims, tp);
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--tensor-parallel-size ", tp, " cannot shard ", config.source, ": ",
      absl::StrJoin(problems, "; "),
      " (sizes that can: ", absl::StrJoin(kvcache::ValidTensorParallelSizes(dims), ", "), ")"));
}

absl::StatusOr<ModelWeights> ShardWeights(const ModelConfig& config, const ModelWeights& full,
                                          int64_t tp, int64_t rank) {
  HR_RETURN_IF_ERROR(CheckShardable(config, tp, rank));
  if (tp == 1) return full;
  const kvcache::ModelDims dims = ModelDimsOf(config);
  const kvcache::TensorParallelShard s = kvcache::ShardOf(dims, tp);
  const kvcache::ShardOffsets at = kvcache::ShardOffsetsOf(dims, tp, rank);
  const int64_t hd = config.head_dim;
  const bool leader = rank == 0;

  ModelWeights out;
  out.embed_tokens = Rows(full.embed_tokens, at.vocab_row, s.vocab_rows);
  out.norm = full.norm;
  out.lm_head = Rows(full.lm_head, at.vocab_row, s.vocab_rows);  // empty when tied
  for (const LayerWeights& l : full.layers) {
    LayerWeights& o = out.layers.emplace_back();
    o.input_layernorm = l.input_layernorm;
    o.post_attention_layernorm = l.post_attention_layernorm;
    o.q_proj = Rows(l.q_proj, at.head * hd, s.q_dim);
    o.k_proj = Rows(l.k_proj, at.kv_head * hd, s.kv_dim);
    o.v_proj = Rows(l.v_proj, at.kv_head * hd, s.kv_dim);
    o.q_proj_bias = Rows(l.q_proj_bias, at.head * hd, s.q_dim);
    o.k_proj_bias = Rows(l.k_proj_bias, at.kv_head * hd, s.kv_dim);
    o.v_proj_bias = Rows(l.v_proj_bias, at.kv_head * hd, s.kv_dim);
    o.o_proj = Columns(l.o_proj, at.head * hd, s.q_dim);
    if (leader) o.o_proj_bias = l.o_proj_bias;
    o.gate_proj = Rows(l.gate_proj, at.intermediate, s.intermediate);
    o.up_proj = Rows(l.up_proj, at.intermediate, s.intermediate);
    o.gate_proj_bias = Rows(l.gate_proj_bias, at.intermediate, s.intermediate);
    o.up_proj_bias = Rows(l.up_proj_bias, at.intermediate, s.intermediate);
    o.down_proj = Columns(l.down_proj, at.intermediate, s.intermediate);
    if (leader) o.down_proj_bias = l.down_proj_bias;
  }
  return out;
}

}  // namespace headroom::worker
