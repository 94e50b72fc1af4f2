// Validation and conversion of a public GenerateRequest into what the router sends a worker.
// Pure functions (no I/O), unit-tested in tests/router/service.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "headroom/v1/inference.pb.h"
#include "headroom/v1/worker.pb.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router {

// vLLM's default max_tokens when the request sets none.
inline constexpr int32_t kDefaultMaxTokens = 16;
// Most top-N logprobs a request may ask for.
inline constexpr int32_t kMaxLogprobs = 20;
// Most guided_choice strings a request may give, and their most tokens in all.
inline constexpr int32_t kMaxGuidedChoices = 256;
inline constexpr int32_t kMaxGuidedChoiceTokens = 16384;
// Largest sampling.json_schema, sampling.guided_regex and sampling.guided_grammar accepted, in
// bytes.
inline constexpr size_t kMaxJsonSchemaBytes = 64 * 1024;
inline constexpr size_t kMaxGuidedRegexBytes = 4 * 1024;
inline constexpr size_t kMaxGuidedGrammarBytes = 64 * 1024;
// sampling.structural_tag: its structures' schemas together (StructuralTag::kMaxBytes).
inline constexpr size_t kMaxStructuralTagBytes = 256 * 1024;
// sampling.constraint_after (a tag such as "</think>").
inline constexpr size_t kMaxConstraintAfterBytes = 64;
// sampling.bad_words: most token sequences (a word can give two) and their most tokens in all
// (vLLM's limits).
inline constexpr int32_t kMaxBadWordSequences = 128;
inline constexpr int32_t kMaxBadWordTokens = 1024;

struct ValidatedRequest {
  // Prompt token ids (tokenized text, or the ids as given).
  std::vector<int32_t> prompt;
  int32_t max_tokens = kDefaultMaxTokens;
  // Stop strings cannot end the output before this many tokens (vLLM's min_tokens).
  int32_t min_tokens = 0;
  // Sampling as the worker takes it (max_tokens set).
  v1::TokenSamplingParams sampling;
  // Stop strings matched by the router.
  std::vector<std::string> stop;
  bool include_stop_str_in_output = false;
  std::string cache_salt;
  int32_t priority = 0;
  // Detokenize without special tokens (vLLM's skip_special_tokens, default true).
  bool skip_special_tokens = true;
  // An embedding (GenerateRequest.embedding), as the worker takes it; max_tokens is then 0.
  std::optional<v1::PoolingParams> pooling;
  // The first message with tokens carries the prompt's ids
  // (GenerateRequest.return_prompt_token_ids).
  bool return_prompt_token_ids = false;

  // Prompt + max_tokens: what placement reserves for.
  [[nodiscard]] int64_t max_total_tokens() const {
    return static_cast<int64_t>(prompt.size()) + max_tokens;
  }
};

// vLLM's bad_words as token sequences (SamplingParams.update_from_tokenizer): each word with its
// leading whitespace (Python's str.isspace) removed, tokenized without special tokens; then " " +
// that, kept only when it has as many tokens with a different first one (the word in mid-text).
// INVALID_ARGUMENT for a word that is whitespace only, a word the tokenizer refuses, and more
// sequences or tokens than kMaxBadWordSequences / kMaxBadWordTokens.
absl::StatusOr<std::vector<std::vector<int32_t>>> BadWordsTokenIds(const v1::SamplingParams& s,
                                                                   const Tokenizer& tokenizer);

// Tokenizes and validates `request`. INVALID_ARGUMENT names the field and the numbers: empty
// prompt, ids outside the vocabulary, temperature < 0, top_p outside (0, 1], top_k < -1,
// max_tokens < 1, sampling given for an embedding, logprobs outside [0, 20], token ids of
// logit_bias or allowed_token_ids outside the vocabulary, bad_words (BadWordsTokenIds),
// truncate_prompt_tokens other than -1 or >= 1, prompt (after truncation) + max_tokens above
// `largest_max_model_len` (the largest max_model_len among up groups; 0 skips that check and
// makes truncate_prompt_tokens -1 keep the whole prompt).
absl::StatusOr<ValidatedRequest> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                         const Tokenizer& tokenizer,
                                                         int32_t largest_max_model_len);

}  // namespace headroom::router
