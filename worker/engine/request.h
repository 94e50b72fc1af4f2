// A generation request as the engine sees it: token ids and sampling parameters, already parsed
// and validated at the edge (the engine never sees JSON or protobuf).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvcache/block_id.h"

namespace headroom::worker {

struct SharedJsonSchema;
struct SharedGuidedRegex;
struct SharedGrammar;
struct SharedStructuralTag;

// A request's constraints, compiled (ConstraintCompiler, worker/engine/constraint_compiler.h):
// null where the request has none, or before they were compiled.
struct CompiledConstraints {
  // Their token-list caches are the engine thread's alone (not thread-safe).
  std::shared_ptr<SharedJsonSchema> schema;
  std::shared_ptr<SharedGuidedRegex> regex;
  std::shared_ptr<SharedGrammar> grammar;
  std::shared_ptr<SharedStructuralTag> structural_tag;
};

// One request is one sequence (n > 1 sampling would fork several).
using RequestId = kvcache::SequenceId;

struct SamplingParams {
  // 0 means greedy (argmax); otherwise logits are divided by it before softmax.
  float temperature = 1.0f;
  // Keep the k most likely tokens; 0 keeps all.
  int32_t top_k = 0;
  // Keep the smallest set of most likely tokens whose probability reaches top_p; 1 keeps all.
  float top_p = 1.0f;
  // Per-request seed: the same seed gives the same tokens whatever else is in the batch.
  std::optional<uint64_t> seed;
  // Tokens to generate at most.
  int32_t max_tokens = 16;
  // Finishing on any of these (and on EOS unless ignore_eos) ends the request.
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  // Return the top-N logprobs of each sampled token (0: only the sampled token's).
  int32_t logprobs = 0;
  // vLLM's penalties (kernels/cpu/sampling.h): > 0, 1 = off, over prompt and output tokens...
  float repetition_penalty = 1.0f;
  // ...and in [-2, 2], 0 = off, over the output tokens.
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // Drop tokens less likely than min_p x the most likely one; in [0, 1], 0 = off.
  float min_p = 0.0f;
  // EOS and stop_token_ids are not sampled before this many output tokens; in [0, max_tokens].
  int32_t min_tokens = 0;
  // Added to the logits of these tokens (ids in the vocabulary, distinct; finite values).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // vLLM's allowed_token_ids: when not empty, only these tokens can be sampled (ids in the
  // vocabulary).
  std::vector<int32_t> allowed_token_ids;
  // vLLM's guided_choice, tokenized (worker/engine/guided_choice.h): the output is one of these
  // sequences. Not with allowed_token_ids.
  std::vector<std::vector<int32_t>> guided_choice;
  // vLLM's bad_words, tokenized (worker/engine/bad_words.h): a sequence's last token is not
  // sampled where the output so far ends with its other tokens (each sequence not empty, ids in
  // the vocabulary). With any constraint above.
  std::vector<std::vector<int32_t>> bad_words;
  // OpenAI's response_format json_object: the output is a JSON object (worker/engine/
  // json_matcher.h); the request stops once it is closed. Not with guided_choice or
  // allowed_token_ids.
  bool json_object = false;
  // OpenAI's response_format json_schema: the output is valid against this JSON Schema (JSON
  // text; worker/engine/json_schema.h); the request stops once the value is whole. Not with the
  // three above.
  std::string json_schema;
  // vLLM's guided_regex: the output's text matches this pattern as a whole (worker/engine/
  // regex_matcher.h); the request stops once nothing can follow. Not with the four above.
  std::string regex;
  // vLLM's guided_grammar: the output's text is a sentence of this EBNF grammar (worker/engine/
  // ebnf_grammar.h); the request stops once nothing can follow. Not with the five above.
  std::string grammar;
  // vLLM's structural tag (JSON text; worker/engine/structural_tag.h): free text in which each
  // trigger starts a structure (its begin, a value of its schema, its end). EOS may end it in free
  // text; it ends the request itself only under stop_after_first. Not with the six above.
  std::string structural_tag;
  // json_object, json_schema, regex, grammar or structural_tag applies only after the output's
  // bytes contain this text (a thinking model's "</think>": it reasons freely, then answers in the
  // format; vLLM's reasoning-aware structured output). Empty: from the first token.
  std::string constraint_after;
  // vLLM's prompt_logprobs: -1 off; otherwise every prompt token after the first gets its
  // logprob given the tokens before it, with the top-N alternatives (N in [0, 20]). Such a
  // request computes its whole prompt (no prefix-cache hit: cached blocks have no logits).
  int32_t prompt_logprobs = -1;
};

// How an embedding pools the final-normed hidden states of its prompt (sentence-transformers'
// pooling_mode_*, vLLM's pooling_type): the last token's, their mean, or the first token's.
enum class Pooling : uint8_t { kLast, kMean, kCls };

// An embedding request (vLLM's pooling runner): the prompt is computed and its pooled
// final-normed hidden states are returned instead of generated tokens.
struct EmbeddingParams {
  // Keep only the first `dimensions` values (Matryoshka); 0 keeps all. Applied before normalize.
  int32_t dimensions = 0;
  // Divide the vector by its L2 norm; unset: the model's default (PoolingConfig::normalize).
  // With `classify`: vLLM's use_activation, the classifier's activation (unset: true).
  std::optional<bool> normalize;
  // vLLM's classify task: the model's score head over the pooled row (ModelConfig::classifier;
  // other models refuse it), num_labels scores in place of the vector.
  bool classify = false;
  // With classify: vLLM's score task (a cross-encoder's pair), activated by
  // Classifier::score_activation.
  bool score_pair = false;
  // The model's (PoolingConfig), set by the engine. Other than kLast, every prompt position is
  // computed: the request takes no prefix-cache hits.
  Pooling pooling = Pooling::kLast;

  [[nodiscard]] bool pools_prompt() const { return pooling != Pooling::kLast; }
};

struct Request {
  RequestId id;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  // Isolates prefix-cache sharing (tenants): blocks are shared only under the same salt.
  std::string cache_salt;
  // vLLM's priority: lower values are served first (SchedulingPolicy::kPriority only; 0 under
  // kFcfs).
  int32_t priority = 0;
  // The LoRA adapter that computes this request (vLLM's LoRARequest), by name ("": the base
  // model, or lora_slot). Engine::AddRequest resolves it to its slot in the model (-1: the base
  // model) and the adapter's cache key, which keys the request's prefix-cache blocks
  // (kvcache/block_hash.h).
  std::string lora_name;
  int32_t lora_slot = -1;
  std::string lora_key;
  // Set for an embedding: `sampling` is then ignored, and the scheduler admits the prompt alone.
  std::optional<EmbeddingParams> embedding;
  // Compiled by EngineLoop::Submit on the submitting thread; Engine::AddRequest compiles what is
  // missing.
  CompiledConstraints constraints;
};

// vLLM's --scheduling-policy.
enum class SchedulingPolicy {
  kFcfs,      // arrival order
  kPriority,  // by (priority, arrival)
};

enum class FinishReason {
  kNone,    // still running
  kStop,    // EOS or a stop token
  kLength,  // max_tokens or max_model_len reached
  kAbort,   // aborted by the client or the router
};

}  // namespace headroom::worker
