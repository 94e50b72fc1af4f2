// OpenAI /v1/completions and /v1/chat/completions request bodies, parsed into the router's public
// v1::GenerateRequest. This layer checks JSON shape and types and the OpenAI-only rules (choices
// <= kMaxChoices, no echo with logprobs, tool_choice...); the ranges that depend on the model
// (temperature >= 0, top_p, max_tokens vs max_model_len, ids in the vocabulary) are
// ValidateGenerateRequest's (router/service). Pure functions, no I/O. See docs/router.md "OpenAI
// API".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "headroom/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "router/openai/chat_template.h"
#include "router/openai/reasoning_parser.h"
#include "router/openai/tools.h"

namespace headroom::router::openai {

// kScore and kRerank are vLLM's /score and /rerank over an embedding model: each text is embedded
// (one choice each) and a score is the cosine similarity of two choices' vectors. kClassify is
// vLLM's /classify: a sequence classifier scores each input (EmbeddingParams.classify). kPooling
// is vLLM's /pooling: each input's pooled output as the model's pooling task makes it (an
// embedding, or a classifier's label scores).
enum class Endpoint { kCompletions, kChat, kEmbeddings, kScore, kRerank, kClassify, kPooling };

// The endpoint's choices pool their prompt: embeddings (kEmbeddings, kScore, kRerank),
// classifications (kClassify) or either (kPooling).
inline bool Embeds(Endpoint endpoint) {
  return endpoint == Endpoint::kEmbeddings || endpoint == Endpoint::kScore ||
         endpoint == Endpoint::kRerank || endpoint == Endpoint::kClassify ||
         endpoint == Endpoint::kPooling;
}

// Most top-N logprobs a request may ask for (OpenAI's and vLLM's limit).
inline constexpr int32_t kMaxTopLogprobs = 20;
// Most choices (prompts x n) one request may ask for: each is a Generate call of its own.
inline constexpr int32_t kMaxChoices = 128;
// Most inputs one embeddings request may give (OpenAI's limit); each is a Generate call.
inline constexpr int32_t kMaxEmbeddingInputs = 2048;

// Longest request_id / X-Request-Id accepted (it is repeated in every streamed chunk).
inline constexpr size_t kMaxRequestIdBytes = 256;

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  // vLLM's request_id (completions, chat): the response id's unique part ("cmpl-<request_id>");
  // the HTTP front puts a request's X-Request-Id header here, which wins, as in vLLM. Empty: a
  // random one. At most kMaxRequestIdBytes.
  std::string request_id;
  // model, prompt (text, or token_ids for an integer-array prompt; unset for chat: the caller
  // renders `messages` and sets it), sampling, cache_salt.
  v1::GenerateRequest generate;
  // Completions given a list of prompts: prompts 1.. (prompt 0 is in `generate`), each holding
  // only its prompt (text or token_ids).
  std::vector<v1::GenerateRequest> more_prompts;
  // Completions per prompt (OpenAI's n), in [1, kMaxChoices / prompts].
  int32_t n = 1;
  // Chat only; the caller renders (ChatTemplate::Render) and tokenizes them.
  std::vector<ChatMessage> messages;
  // Chat: end the prompt with the assistant header (vLLM's add_generation_prompt, default true).
  bool add_generation_prompt = true;
  // Chat: the reply's role after a generation prompt (vLLM's --response-role; the HTTP front
  // sets it).
  std::string response_role = "assistant";
  // Chat: vLLM's continue_final_message: the prompt ends inside the final message (its text
  // continued by the reply, ChatTemplate::RenderContinuingFinalMessage); not with
  // add_generation_prompt.
  bool continue_final_message = false;
  // Chat: vLLM's per-request chat_template (Jinja source), used in place of the model's only where
  // the router trusts request templates (--trust-request-chat-template, as vLLM's flag).
  std::optional<std::string> chat_template;
  // Chat: vLLM's chat_template_kwargs (an object, or null when not given); vLLM's documents
  // field is its "documents".
  nlohmann::ordered_json chat_template_kwargs = nullptr;
  // Chat: tools for the template, and how the reply calls them (sampling.json_schema holds the
  // call's schema for tool_choice "required" or a named function).
  ToolRequest tools;
  // Chat: how the reply is split into reasoning and content (the HTTP front sets it from
  // --reasoning-parser, for requests the reply of which is free text); nullopt: not split.
  std::optional<ReasoningParser> reasoning_parser;
  // Where the rendered prompt left the reasoning (opened, closed or neither).
  PromptReasoning prompt_reasoning = PromptReasoning::kNone;
  bool stream = false;
  // Completions: each choice's text starts with its prompt (a token id prompt detokenized).
  // Chat (vLLM's): each reply's content starts with the last message's, when that message has
  // the reply's role (continue_final_message's prefill); not with tools.
  bool echo = false;
  // stream_options.include_usage: a last chunk with usage and no choices.
  bool include_usage = false;
  // stream_options.continuous_usage_stats (vLLM's): with include_usage, every chunk's usage is its
  // choice's so far (the prompt's tokens and the tokens that choice generated).
  bool continuous_usage = false;
  // Return logprobs (chat: "logprobs": true; completions: "logprobs": N given).
  bool logprobs = false;
  // Alternatives per token (chat top_logprobs / completions logprobs N); sampling.logprobs too.
  int32_t top_logprobs = 0;
  // vLLM's prompt_logprobs field (both endpoints, not streamed): -1 none, else the top-N; the
  // response carries vLLM's `prompt_logprobs` list.
  int32_t prompt_logprobs = -1;
  // vLLM's return_token_ids: each choice carries its token_ids (streamed: each chunk's), and the
  // prompt's ids go with it (completions: per choice; chat: once per response); generate asks
  // the Inference service for them (return_prompt_token_ids).
  bool return_token_ids = false;
  // vLLM's return_tokens_as_token_ids: logprobs name tokens "token_id:<id>" (tokens whose text is
  // not valid UTF-8 alone stay identifiable).
  bool return_tokens_as_token_ids = false;
  // vLLM's use_beam_search: the n choices are the n best beams (router/frontend/beam_search.h),
  // ranked with length_penalty (vLLM's, default 1).
  bool beam_search = false;
  double length_penalty = 1.0;
  // Embeddings and pooling: encoding_format "base64" (little-endian float32 bytes) rather than
  // "float".
  bool embedding_base64 = false;
  // Embeddings and completions: the caller tokenizes text inputs with or without the tokenizer's
  // special tokens (vLLM's add_special_tokens, default true).
  bool add_special_tokens = true;
  // What errors call each choice's prompt ("text_2[3]", "documents[0]"); empty: "prompt[i]"
  // (completions, chat) or "input[i]" (embeddings) when there are several.
  std::vector<std::string> choice_names;
  // Score and rerank: the two choices each score compares, in the answer's order.
  std::vector<std::pair<int32_t, int32_t>> score_pairs;
  // Score and rerank by a reranker (JoinScorePairs): choice i is pair i classified, and its
  // first score is the pair's (score_pairs is then empty).
  bool cross_encoder = false;
  // Rerank: the documents (sent back with their scores) and how many of the best to return
  // (top_n; 0 returns all).
  std::vector<std::string> documents;
  int32_t top_n = 0;
};

// Whether `s` constrains the output to a structure (json_object, a JSON schema, guided choice,
// regex or grammar, a structural tag): what tool_choice "required" and beam search refuse.
bool HasStructuredOutput(const v1::SamplingParams& s);

// Errors are InvalidArgument whose message names the field and the reason or number
// ("temperature must be a number, got string"), with the field ("messages[1].role") also set as
// the status payload read by ErrorParam().
absl::StatusOr<ParsedRequest> ParseCompletionRequest(std::string_view body);
absl::StatusOr<ParsedRequest> ParseChatRequest(std::string_view body);
// The same for a body already parsed (a JSON object; its key order is kept for the tools).
absl::StatusOr<ParsedRequest> ParseChatObject(const nlohmann::ordered_json& body);

// OpenAI /v1/embeddings (with vLLM's extras): `input` (a string, token ids, or a list of either)
// becomes `generate` and `more_prompts` with GenerateRequest.embedding set (dimensions;
// normalize, or vLLM's newer name use_activation, read second); encoding_format,
// truncate_prompt_tokens, add_special_tokens, priority; `user` is accepted and ignored.
absl::StatusOr<ParsedRequest> ParseEmbeddingRequest(std::string_view body);
// The same, of a body already parsed.
absl::StatusOr<ParsedRequest> ParseEmbeddingObject(const nlohmann::ordered_json& body);

// vLLM's /classify (of a body already parsed): `input` as for embeddings (add_special_tokens,
// truncate_prompt_tokens, priority, user too), each input one choice with
// GenerateRequest.embedding.classify set; use_activation (or its older names softmax and
// activation, read first as vLLM does) becomes EmbeddingParams.normalize.
absl::StatusOr<ParsedRequest> ParseClassifyObject(const nlohmann::ordered_json& body);

// vLLM's /pooling (of a body already parsed): the model's one pooling task, `task` ("classify"
// for a `classifier`, else "embed"; another is a 400 naming both), parsed as /classify or
// /v1/embeddings parses it (dimensions refused, as vLLM does); encoding_format for both.
absl::StatusOr<ParsedRequest> ParsePoolingObject(const nlohmann::ordered_json& body,
                                                 bool classifier);

// vLLM's /score over an embedding model: text_1 and text_2 (each a string or a list of strings;
// 1:1, 1:N or N:N) become one embedding choice per text, and score i compares text_1[0 or i]
// with text_2[i]. truncate_prompt_tokens and priority as for embeddings.
absl::StatusOr<ParsedRequest> ParseScoreRequest(std::string_view body);
// vLLM's (Jina's, Cohere's) /rerank over an embedding model: `query` and `documents` (strings)
// become one embedding choice each (the query first), and document j is scored against the
// query; top_n keeps the best (0 or absent: all).
absl::StatusOr<ParsedRequest> ParseRerankRequest(std::string_view body);

// vLLM's scoring by a classifier (a cross-encoder): each pair of a parsed /score or /rerank
// request becomes one classification choice, named "<first> + <second>" for errors, scored with
// the classifier's activation; sets cross_encoder. The choice's text is the first text followed
// by the second, which an LLM-as-reranker classifies as one text (vLLM's use_sep_token false);
// returns each choice's two texts, which a native classifier encodes as a pair.
std::vector<std::pair<std::string, std::string>> JoinScorePairs(ParsedRequest& request);

// The offending request field of an error from the parsers; "" when it has none.
std::string ErrorParam(const absl::Status& status);

// Choices of a request: prompts x n. Choice i is sample i % n of prompt i / n (OpenAI's and
// vLLM's index order).
int32_t ChoiceCount(const ParsedRequest& request);
// The Generate request of choice `i`: `generate` with prompt i / n. With a seed and n > 1, sample
// j is seeded seed + j (as vLLM's parallel sampling does), so the n samples differ and each is
// reproducible on its own; without a seed they differ anyway.
v1::GenerateRequest ChoiceRequest(const ParsedRequest& request, int32_t choice);

}  // namespace headroom::router::openai
