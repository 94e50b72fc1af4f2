#include "worker/engine/forward_input_builder.h"

#include "common/check.h"

namespace headroom::worker {

void BuildForwardInput(const StepPlan& plan, const BlockTableLookup& tables, int32_t num_groups,
                       int32_t block_size, int32_t max_blocks_per_seq, ForwardInput* input) {
  HR_CHECK(num_groups >= 1);
  input->token_ids.clear();
  input->positions.clear();
  input->slot_mapping.clear();
  input->query_start.assign(1, 0);
  input->context_lens.clear();
  const size_t row_size = static_cast<size_t>(max_blocks_per_seq);
  input->block_tables.assign(static_cast<size_t>(num_groups) * plan.sequences.size() * row_size,
                             kvcache::kNullBlockId.value());
  input->logits_rows.clear();
  input->prompt_logits_rows.clear();
  input->lora_slots.clear();
  bool any_lora = false;
  // Group 0's pass also lays out the tokens; every pass adds its group's slots and table rows.
  for (int32_t g = 0; g < num_groups; ++g) {
    size_t seq_index = 0;
    for (const ScheduledSequence& seq : plan.sequences) {
      const absl::Span<const kvcache::BlockId> table = tables(seq.id, g);
      HR_CHECK_MSG(table.size() <= row_size, "block table longer than max_model_len allows");
      int32_t* row = input->block_tables.data() +
                     (static_cast<size_t>(g) * plan.sequences.size() + seq_index) * row_size;
      for (size_t b = 0; b < table.size(); ++b) row[b] = table[b].value();
      for (size_t i = 0; i < seq.token_ids.size(); ++i) {
        const int32_t position = seq.num_computed_tokens + static_cast<int32_t>(i);
        const size_t block = static_cast<size_t>(position / block_size);
        HR_CHECK_MSG(block < table.size(), "a scheduled token has no KV slot");
        input->slot_mapping.push_back(int64_t{table[block].value()} * block_size +
                                      position % block_size);
        if (g > 0) continue;
        input->token_ids.push_back(seq.token_ids[i]);
        input->positions.push_back(int64_t{position});
        if (position < seq.prompt_logprobs_end) {
          input->prompt_logits_rows.push_back(static_cast<int32_t>(input->token_ids.size() - 1));
        }
      }
      ++seq_index;
      if (g > 0) continue;
      input->query_start.push_back(static_cast<int32_t>(input->token_ids.size()));
      input->context_lens.push_back(seq.num_computed_tokens +
                                    static_cast<int32_t>(seq.token_ids.size()));
      if (seq.sample) input->logits_rows.push_back(input->query_start.back() - 1);
      input->lora_slots.push_back(seq.lora_slot);
      any_lora |= seq.lora_slot >= 0;
    }
  }
  if (!any_lora) input->lora_slots.clear();  // a base-model step: no segments to build
}

}  // namespace headroom::worker
