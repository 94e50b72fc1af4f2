// OpenAI /v1/embeddings response bodies ({"object": "list", "data": [{"object": "embedding",
// "index", "embedding"}], "usage"}), with vLLM's id and created. Pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace headroom::router::openai {

// `values` as OpenAI's encoding_format "base64": the little-endian float32 bytes, base64-encoded
// (what the openai client decodes with numpy.frombuffer(..., dtype="float32")).
std::string Float32Base64(std::span<const float> values);

// The whole response: one entry per input in order, each a list of numbers or (base64) a string;
// usage counts the inputs' tokens (completion_tokens 0).
std::string EmbeddingsBody(const std::string& id, int64_t created, const std::string& model,
                           const std::vector<std::vector<float>>& embeddings,
                           int64_t prompt_tokens, bool base64);

}  // namespace headroom::router::openai
