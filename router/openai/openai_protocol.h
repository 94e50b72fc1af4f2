// OpenAI /v1/completions and /v1/chat/completions request bodies, parsed into the router's public
// v1::GenerateRequest. This layer checks JSON shape and types and the OpenAI-only rules (n = 1, no
// echo, no penalties...); the ranges that depend on the model (temperature >= 0, top_p, max_tokens
// vs max_model_len, ids in the vocabulary) are ValidateGenerateRequest's (router/service). Pure
// functions, no I/O. See docs/router.md "OpenAI API".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "headroom/v1/inference.pb.h"
#include "router/openai/chat_template.h"

namespace headroom::router::openai {

enum class Endpoint { kCompletions, kChat };

// Most top-N logprobs a request may ask for (OpenAI's and vLLM's limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  // model, prompt (text, or token_ids for an integer-array prompt; unset for chat: the caller
  // renders `messages` and sets it), sampling, cache_salt.
  v1::GenerateRequest generate;
  // Chat only; the caller renders (RenderChat) and tokenizes them.
  std::vector<ChatMessage> messages;
  // Chat: end the prompt with the assistant header (vLLM's add_generation_prompt, default true).
  bool add_generation_prompt = true;
  bool stream = false;
  // stream_options.include_usage: a last chunk with usage and no choices.
  bool include_usage = false;
  // Return logprobs (chat: "logprobs": true; completions: "logprobs": N given).
  bool logprobs = false;
  // Alternatives per token (chat top_logprobs / completions logprobs N); sampling.logprobs too.
  int32_t top_logprobs = 0;
};

// Errors are InvalidArgument whose message names the field and the reason or number
// ("temperature must be a number, got string"), with the field ("messages[1].role") also set as
// the status payload read by ErrorParam().
absl::StatusOr<ParsedRequest> ParseCompletionRequest(std::string_view body);
absl::StatusOr<ParsedRequest> ParseChatRequest(std::string_view body);

// The offending request field of an error from the parsers; "" when it has none.
std::string ErrorParam(const absl::Status& status);

}  // namespace headroom::router::openai
