// vLLM's bad_words (vllm/v1/sample/ops/bad_words.py): token sequences, as the router tokenized
// the words, that the output may never contain. A pure function of the sequences and the output
// so far (kept across preemption), evaluated per step.
//
// At each step a sequence's last token is banned when the output so far ends with the sequence's
// other tokens; a one-token sequence is banned at every step. Only the output counts: a word
// whose first tokens end the prompt is not banned (as vLLM; transformers' bad_words_ids also
// matches across the prompt).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace headroom::worker {

// Appends to `banned` the last token of every sequence of `bad_words` that `output` (the tokens
// generated so far) completes but for that token. Sequences are not empty.
void AppendBadWordBans(const std::vector<std::vector<int32_t>>& bad_words,
                       std::span<const int32_t> output, std::vector<int32_t>* banned);

}  // namespace headroom::worker
