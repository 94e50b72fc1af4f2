// ForwardInput: the host-side tensors of one forward step (the engine builds them from a StepPlan
// and the block tables: worker/engine/forward_input_builder.h). The model copies them to the
// device in one go per step.
#pragma once

#include <cstdint>
#include <vector>

namespace headroom::worker {

struct ForwardInput {
  std::vector<int32_t> token_ids;  // [n]: every token computed in this step, sequence by sequence
  std::vector<int64_t> positions;  // [n]: position of each token in its sequence
  // [groups, n]: KV slot (block * block_size + offset) of each token in each layer group's table
  std::vector<int64_t> slot_mapping;
  std::vector<int32_t> query_start;   // [num_seqs + 1]: rows of sequence s are [qs[s], qs[s+1])
  std::vector<int32_t> context_lens;  // [num_seqs]: tokens in the KV cache after this step
  // [groups, num_seqs, max_blocks_per_seq], padded with the null block
  std::vector<int32_t> block_tables;
  std::vector<int32_t> logits_rows;  // rows whose logits are needed (one per sampling sequence)
  // Rows whose logits predict the next prompt token (prompt logprobs), in row order.
  std::vector<int32_t> prompt_logits_rows;
  // [num_seqs]: each sequence's LoRA adapter slot, -1 for the base model; empty: all base.
  std::vector<int32_t> lora_slots;
  // Rows whose final-normed hidden states an embedding pools (mean or CLS pooling), in row order;
  // the leader's engine alone fills it (LlamaModel::Forward's pooled_sink).
  std::vector<int32_t> pooled_rows;

  [[nodiscard]] int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  [[nodiscard]] int32_t num_seqs() const { return static_cast<int32_t>(context_lens.size()); }
};

}  // namespace headroom::worker
