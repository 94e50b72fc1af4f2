// Sampling: picks the next token of every row of logits and reports logprobs.
//
// Per row, in this order:
//   1. Logprobs, always from the *unmodified* logits: logprob(t) = logits[t] - logsumexp(logits)
//      (vLLM's default "raw_logprobs"), for the chosen token and for the top num_logprobs tokens
//      (sorted by logprob descending, ties by lower id). Unused top entries get id -1, -inf.
//   2. Processing, vLLM's order, on a copy of the logits (every later step uses the result):
//      allowed_tokens (vLLM's allowed_token_ids) or allowed_bitmask (a constraint's tokens):
//        every other token's logit -inf;
//      logit_bias: bias_values[i] added to the logit of bias_tokens[i] (OpenAI's logit_bias);
//      banned_tokens: logit -inf, unless that would leave no token with a finite logit (then the
//        ban is skipped: min_tokens yields rather than the row failing);
//      repetition_penalty != 1: each distinct token of the prompt or the output so far has its
//        logit divided by the penalty when positive, multiplied when not (Hugging Face's
//        RepetitionPenaltyLogitsProcessor);
//      frequency_penalty, presence_penalty != 0: logit(t) -= frequency_penalty * count(t) +
//        presence_penalty * (count(t) > 0), count over the output so far (OpenAI's definition).
//   3. temperature < kGreedyTemperature (so 0): greedy, the argmax, ties to the lowest id. The RNG
//      is not called. (vLLM also treats temperatures below 1e-5 as greedy.)
//   4. Otherwise the distribution softmax(logits / temperature) is filtered:
//      min_p > 0: keep the tokens whose probability is >= min_p x the most likely one's (Hugging
//                 Face's MinPLogitsWarper; vLLM applies it before top-k/top-p too);
//      top_k > 0: keep the top_k highest logits (ties at the boundary: lower ids first);
//      top_p < 1: of those, keep the smallest set of highest-probability tokens whose probability
//                 (renormalised over the top-k set) sums to >= top_p; at least one token.
//   5. Inverse CDF: u = PhiloxUniform(seed, counter) (kernels/philox.h) in [0, 1); the kept tokens,
//      in ascending token id order, are walked with a running sum of their unnormalised
//      probabilities exp((logit - max) / temperature) in double, and the first token whose running
//      sum exceeds u * total is the sample.
// Determinism: u depends only on (seed, counter), never on the row index or batch, so a request
// with a fixed seed samples the same tokens in any batch. The engine passes counter = index of the
// token being generated (0 for the first output token) and should draw a random seed for requests
// without one. Logit bias is not applied here.
//
// CPU version: one pass for max/logsumexp in double; top-k by nth_element; top-p by a partial sort
// that grows (64, 256, ...) until the nucleus is covered; rows run sequentially.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/logprobs.h"  // kMaxLogprobs

namespace headroom::kernels::cpu {
// Temperatures below this sample greedily.
inline constexpr float kGreedyTemperature = 1e-5f;

struct SamplingParams {
  // >= 0; < kGreedyTemperature means greedy.
  float temperature = 1.0f;
  // >= 0; 0 (or >= vocab_size) means no top-k filter.
  int32_t top_k = 0;
  // In (0, 1]; 1 means no top-p filter.
  float top_p = 1.0f;
  // Key of the RNG; the request's seed.
  uint64_t seed = 0;
  // Counter of the RNG: index of the token being generated in the request's output.
  uint64_t counter = 0;
  // Top logprobs to report, in [0, kMaxLogprobs].
  int32_t num_logprobs = 0;
  // > 0 and finite; 1 = off.
  float repetition_penalty = 1.0f;
  // Finite; 0 = off.
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // In [0, 1]; 0 = off.
  float min_p = 0.0f;
  // The request's prompt and its output so far, for the penalties (ids in [0, vocab_size); the
  // pointers may be null when the count is 0).
  const int32_t* prompt_tokens = nullptr;
  int64_t num_prompt_tokens = 0;
  const int32_t* output_tokens = nullptr;
  int64_t num_output_tokens = 0;
  // Tokens that may not be chosen now (vLLM's min_tokens: EOS and the stop token ids until the
  // output is long enough; vLLM's bad_words: a word's last token after its others); ignored when
  // they would leave no token to choose.
  const int32_t* banned_tokens = nullptr;
  int64_t num_banned_tokens = 0;
  // Finite biases added to those tokens' logits (ids distinct).
  const int32_t* bias_tokens = nullptr;
  const float* bias_values = nullptr;
  int64_t num_bias = 0;
  // When num_allowed_tokens > 0, only these tokens may be chosen (vLLM's allowed_token_ids;
  // repeats are harmless).
  const int32_t* allowed_tokens = nullptr;
  int64_t num_allowed_tokens = 0;
  // Or, when allowed_bitmask_words > 0 (and no allowed_tokens), only the tokens whose bit is set:
  // bit t % 32 of allowed_bitmask[t / 32] (the layout GPU masking kernels read). Tokens past its
  // words are not allowed; bits at or past vocab_size must be clear.
  const uint32_t* allowed_bitmask = nullptr;
  int64_t allowed_bitmask_words = 0;
};

// Step 2 applied to `row`, written to `out` (both [vocab_size]; they may alias).
void ProcessLogits(const float* row, int64_t vocab_size, const SamplingParams& params, float* out);

struct SamplerOutput {
  int32_t* token_ids;     // [num_rows]
  float* token_logprobs;  // [num_rows] raw logprob of the sampled token
  int32_t* top_ids;       // [num_rows, kMaxLogprobs]; may be null when no row asks for logprobs
  float* top_logprobs;    // [num_rows, kMaxLogprobs]; may be null when no row asks for logprobs
};

// InvalidArgument, before any output is written, for: temperature < 0 or not finite, top_k < 0,
// top_p outside (0, 1], num_logprobs outside [0, kMaxLogprobs], repetition_penalty <= 0 or not
// finite, penalties not finite, min_p outside [0, 1], prompt/output ids outside the vocabulary,
// both allowed_tokens and allowed_bitmask, a bitmask bit at or past vocab_size, bad sizes or
// pointers, and a row of logits with a NaN or +inf, or with every logit -inf.
[[nodiscard]] absl::Status Sample(const float* logits,  // [num_rows, vocab_size]
                                  int64_t num_rows, int64_t vocab_size,
                                  const SamplingParams* params,  // [num_rows]
                                  const SamplerOutput& output);

}  // namespace headroom::kernels::cpu
