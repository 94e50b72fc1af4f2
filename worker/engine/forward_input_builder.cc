#include "worker/engine/forward_input_builder.h"

#include "common/check.h"

namespace headroom::worker {

void BuildForwardInput(const StepPlan& plan, const BlockTableLookup& tables, int32_t block_size,
                       int32_t max_blocks_per_seq, ForwardInput* input) {
  input->token_ids.clear();
  input->positions.clear();
  input->slot_mapping.clear();
  input->query_start.assign(1, 0);
  input->context_lens.clear();
  input->block_tables.assign(plan.sequences.size() * static_cast<size_t>(max_blocks_per_seq),
                             kvcache::kNullBlockId.value());
  input->logits_rows.clear();
  input->prompt_logits_rows.clear();
  size_t seq_index = 0;
  for (const ScheduledSequence& seq : plan.sequences) {
    const absl::Span<const kvcache::BlockId> table = tables(seq.id);
    HR_CHECK_MSG(table.size() <= static_cast<size_t>(max_blocks_per_seq),
                 "block table longer than max_model_len allows");
    int32_t* row = input->block_tables.data() + seq_index * static_cast<size_t>(max_blocks_per_seq);
    for (size_t b = 0; b < table.size(); ++b) row[b] = table[b].value();
    for (size_t i = 0; i < seq.token_ids.size(); ++i) {
      const int32_t position = seq.num_computed_tokens + static_cast<int32_t>(i);
      const size_t block = static_cast<size_t>(position / block_size);
      HR_CHECK_MSG(block < table.size(), "a scheduled token has no KV slot");
      input->token_ids.push_back(seq.token_ids[i]);
      input->positions.push_back(int64_t{position});
      input->slot_mapping.push_back(int64_t{table[block].value()} * block_size +
                                    position % block_size);
      if (position < seq.prompt_logprobs_end) {
        input->prompt_logits_rows.push_back(static_cast<int32_t>(input->token_ids.size() - 1));
      }
    }
    input->query_start.push_back(static_cast<int32_t>(input->token_ids.size()));
    input->context_lens.push_back(seq.num_computed_tokens +
                                  static_cast<int32_t>(seq.token_ids.size()));
    if (seq.sample) input->logits_rows.push_back(input->query_start.back() - 1);
    ++seq_index;
  }
}

}  // namespace headroom::worker
