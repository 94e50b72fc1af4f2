// Logprobs: log-probabilities from raw logits, logprob(t) = logits[t] - logsumexp(row) (in
// double), for one given token of each row and for the row's most likely tokens (sorted by
// logprob descending, ties by lower id). The sampler reports its sampled token's logprobs with
// the same helpers; the engine uses TokenLogprobs for prompt logprobs (the logprob of each prompt
// token given the ones before it).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace headroom::kernels::cpu {

// Most top logprobs a row can ask for (vLLM's default max_logprobs).
inline constexpr int32_t kMaxLogprobs = 20;

struct LogprobOutput {
  float* token_logprobs;  // [num_rows]: logprob of targets[r]
  int32_t* top_ids;       // [num_rows, kMaxLogprobs]; entries past num_top are -1
  float* top_logprobs;    // [num_rows, kMaxLogprobs]; entries past num_top are -inf
  // [num_rows] or null: 1 + the number of tokens with a higher logit than targets[r] (vLLM's
  // rank: 1 for the most likely).
  int32_t* target_ranks = nullptr;
};

// InvalidArgument, before any output is written, for num_top outside [0, kMaxLogprobs], a target
// outside [0, vocab_size), bad sizes or pointers, and a row with a NaN or +inf logit or with every
// logit -inf.
[[nodiscard]] absl::Status TokenLogprobs(const float* logits,  // [num_rows, vocab_size]
                                         int64_t num_rows, int64_t vocab_size,
                                         const int32_t* targets,  // [num_rows]
                                         int32_t num_top, const LogprobOutput& output);

namespace internal {

// The maximum and log-sum-exp of a row of logits.
struct RowStats {
  float max_logit = 0.0f;
  double log_sum_exp = 0.0;
};

// InvalidArgument naming `op` and `row_index` for a NaN or +inf logit, or every logit -inf.
absl::Status ComputeRowStats(absl::string_view op, const float* row, int64_t vocab_size,
                             int64_t row_index, RowStats& stats);

// The `n` (<= kMaxLogprobs) most likely tokens of `row` into top_ids / top_logprobs
// ([kMaxLogprobs] each, the rest -1 / -inf). `ids` is scratch of at least vocab_size.
void WriteTopLogprobs(const float* row, int64_t vocab_size, double log_sum_exp, int64_t n,
                      std::vector<int32_t>& ids, int32_t* top_ids, float* top_logprobs);

}  // namespace internal
}  // namespace headroom::kernels::cpu
