#include "worker/model/shard_weights.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kvcache/tensor_parallel.h"

namespace headroom::worker {

kvcache::ModelDims ModelDimsOf(const ModelConfig& config) {
  const kvcache::LayerGroups groups = KvCacheLayerGroups(config);
  return kvcache::ModelDims{
      .num_layers = config.num_hidden_layers,
      .hidden_size = config.hidden_size,
      .intermediate_size = config.intermediate_size,
      .num_attention_heads = config.num_attention_heads,
      .num_kv_heads = config.num_key_value_heads,
      .head_dim = config.head_dim,
      .vocab_size = config.vocab_size,
      .max_position_embeddings = MaxContextLength(config),
      .tie_word_embeddings = config.tie_word_embeddings,
      .qkv_bias = config.qkv_bias,
      .o_proj_bias = config.o_proj_bias,
      .mlp_bias = config.mlp_bias,
      .qk_norm = config.qk_norm,
      .qk_norm_across_heads = config.qk_norm_across_heads,
      .sandwich_norms = config.sandwich_norms,
      .pre_norms = config.pre_norms,
      .num_experts = config.num_experts,
      .num_experts_per_tok = config.num_experts_per_tok,
      .moe_correction_bias = config.moe_correction_bias,
      .shared_expert_intermediate_size = config.shared_expert_intermediate_size,
      .shared_expert_gated = config.shared_expert_gated,
      .num_dense_mlp_layers = NumDenseMlpLayers(config),
      .dense_intermediate_size = config.dense_intermediate_size,
      .kv_sliding_window = KvCacheSlidingWindow(config),
      .kv_group_windows = groups.windows,
      .kv_group_size = groups.group_size,
      .max_position_source = MaxContextSource(config)};
}

absl::Status CheckShardable(const ModelConfig& config, ShardSpec shard) {
  const int64_t tp = shard.tensor_parallel_size;
  if (tp < 1 || shard.rank < 0 || shard.rank >= tp) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", shard.rank, " is not a rank of a tensor-parallel group of ", tp));
  }
  const kvcache::ModelDims dims = ModelDimsOf(config);
  const std::vector<std::string> problems = kvcache::ShardingProblems(dims, tp);
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--tensor-parallel-size ", tp, " cannot shard ", config.source, ": ",
      absl::StrJoin(problems, "; "),
      " (sizes that can: ", absl::StrJoin(kvcache::ValidTensorParallelSizes(dims), ", "), ")"));
}

TensorSlice SliceOf(const ModelConfig& config, ShardSpec shard, Split split) {
  using Kind = TensorSlice::Kind;
  if (shard.tensor_parallel_size == 1) return {};
  const kvcache::ModelDims dims = ModelDimsOf(config);
  const kvcache::TensorParallelShard s = kvcache::ShardOf(dims, shard.tensor_parallel_size);
  const kvcache::ShardOffsets at =
      kvcache::ShardOffsetsOf(dims, shard.tensor_parallel_size, shard.rank);
  const int64_t hd = config.head_dim;
  switch (split) {
    case Split::kReplicated:
      return {};
    case Split::kQueryRows:
      return {Kind::kRows, at.head * hd, s.q_dim};
    case Split::kKvRows:
      return {Kind::kRows, at.kv_head * hd, s.kv_dim};
    case Split::kQueryColumns:
      return {Kind::kColumns, at.head * hd, s.q_dim};
    case Split::kMlpRows:
      return {Kind::kRows, at.intermediate, s.intermediate};
    case Split::kMlpColumns:
      return {Kind::kColumns, at.intermediate, s.intermediate};
    case Split::kDenseMlpRows:
      return {Kind::kRows, at.dense_intermediate, s.dense_intermediate};
    case Split::kDenseMlpColumns:
      return {Kind::kColumns, at.dense_intermediate, s.dense_intermediate};
    case Split::kSharedMlpRows:
      return {Kind::kRows, at.shared_intermediate, s.shared_intermediate};
    case Split::kSharedMlpColumns:
      return {Kind::kColumns, at.shared_intermediate, s.shared_intermediate};
    case Split::kQueryNorm:
      return config.qk_norm_across_heads ? TensorSlice{Kind::kRows, at.head * hd, s.q_dim}
                                         : TensorSlice{};
    case Split::kKvNorm:
      return config.qk_norm_across_heads ? TensorSlice{Kind::kRows, at.kv_head * hd, s.kv_dim}
                                         : TensorSlice{};
    case Split::kVocabRows:
      return {Kind::kRows, at.vocab_row, s.vocab_rows};
    case Split::kLeaderOnly:
      return shard.rank == 0 ? TensorSlice{} : TensorSlice{Kind::kAbsent, 0, 0};
  }
  return {};
}

}  // namespace headroom::worker
