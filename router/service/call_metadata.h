// gRPC metadata the router's own HTTP front puts on the Generate calls it makes.
#pragma once

namespace headroom::router {

// Set on each choice of an OpenAI request (router/frontend/generation.h): the front, which knows
// the request's `n`, reports the request-level metrics (vllm:request_params_n) for it, so the
// Inference service does not count the call as a request of its own.
inline constexpr char kOpenAiChoiceMetadataKey[] = "x-headroom-openai-choice";

}  // namespace headroom::router
