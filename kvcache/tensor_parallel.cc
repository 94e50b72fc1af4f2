#include "kvcache/tensor_parallel.h"

#include "absl/strings/str_cat.h"

namespace headroom::kvcache {

TensorParallelShard ShardOf(const ModelDims& model, int64_t tp) {
  TensorParallelShard shard;
  shard.heads = model.num_attention_heads / tp;
  shard.kv_heads = model.num_kv_heads % tp == 0 ? model.num_kv_heads / tp : 1;
  shard.q_dim = shard.heads * model.head_dim;
  shard.kv_dim = shard.kv_heads * model.head_dim;
  shard.intermediate = model.intermediate_size / tp;
  shard.vocab_rows = (model.vocab_size + tp - 1) / tp;
  shard.shared_intermediate = model.shared_expert_intermediate_size / tp;
  shard.dense_intermediate =
      (model.num_experts > 0 ? model.dense_intermediate_size : model.intermediate_size) / tp;
  return shard;
}

std::vector<std::string> ShardingProblems(const ModelDims& model, int64_t tp) {
  std::vector<std::string> problems;
  if (model.num_attention_heads % tp != 0) {
    problems.push_back(absl::StrCat("the ", model.num_attention_heads,
                                    " attention heads are not divisible by ", tp));
  }
  if (model.num_kv_heads % tp != 0 && tp % model.num_kv_heads != 0) {
    problems.push_back(absl::StrCat("the ", model.num_kv_heads, " KV heads can neither be split ",
                                    tp, " ways nor replicated onto ", tp, " ranks"));
  }
  if (model.intermediate_size % tp != 0) {
    problems.push_back(
        absl::StrCat("intermediate_size ", model.intermediate_size, " is not divisible by ", tp));
  }
  if (model.num_experts > 0 && model.num_dense_mlp_layers > 0 &&
      model.dense_intermediate_size % tp != 0) {
    problems.push_back(absl::StrCat("the dense layers' intermediate_size ",
                                    model.dense_intermediate_size, " is not divisible by ", tp));
  }
  if (model.shared_expert_intermediate_size % tp != 0) {
    problems.push_back(absl::StrCat("shared_expert_intermediate_size ",
                                    model.shared_expert_intermediate_size, " is not divisible by ",
                                    tp));
  }
  return problems;
}

ShardOffsets ShardOffsetsOf(const ModelDims& model, int64_t tp, int64_t rank) {
  const TensorParallelShard shard = ShardOf(model, tp);
  ShardOffsets offsets;
  offsets.head = rank * shard.heads;
  // Replicated: ranks [k * tp / kv, (k + 1) * tp / kv) share KV head k, which is the head their
  // query heads attend to (query head h uses KV head h / (heads / kv)).
  offsets.kv_head =
      model.num_kv_heads % tp == 0 ? rank * shard.kv_heads : rank / (tp / model.num_kv_heads);
  offsets.intermediate = rank * shard.intermediate;
  offsets.vocab_row = rank * shard.vocab_rows;
  offsets.shared_intermediate = rank * shard.shared_intermediate;
  offsets.dense_intermediate = rank * shard.dense_intermediate;
  return offsets;
}

}  // namespace headroom::kvcache
