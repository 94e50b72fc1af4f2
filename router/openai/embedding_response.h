// OpenAI /v1/embeddings response bodies ({"object": "list", "data": [{"object": "embedding",
// "index", "embedding"}], "usage"}), with vLLM's id and created, and vLLM's /score, /rerank and
// /classify bodies. Pure.
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
                           const std::vector<std::span<const float>>& embeddings,
                           int64_t prompt_tokens, bool base64);

// vLLM's /pooling answer: {"id", "object": "list", "created", "model", "data": [{"index",
// "object": "pooling", "data"}], "usage"}, each entry's data the input's pooled output (an
// embedding, or a classifier's label scores) as a list of numbers or (base64) a string.
std::string PoolingBody(const std::string& id, int64_t created, const std::string& model,
                        const std::vector<std::span<const float>>& outputs, int64_t prompt_tokens,
                        bool base64);

// The cosine similarity of two vectors of one size, as torch.nn.functional.cosine_similarity
// computes it (each norm clamped to 1e-8), in double precision.
double CosineSimilarity(std::span<const float> a, std::span<const float> b);

// vLLM's /score answer: {"id", "object": "list", "created", "model", "data": [{"index",
// "object": "score", "score"}], "usage"}.
std::string ScoreBody(const std::string& id, int64_t created, const std::string& model,
                      const std::vector<double>& scores, int64_t prompt_tokens);

// One input's classification: the label scores (activated unless asked otherwise) and the label
// of the highest.
struct Classification {
  std::span<const float> probs;
  std::string label;
};

// vLLM's /classify answer: {"id", "object": "list", "created", "model", "data": [{"index",
// "label", "probs", "num_classes"}], "usage"}, inputs in order.
std::string ClassificationBody(const std::string& id, int64_t created, const std::string& model,
                               const std::vector<Classification>& results, int64_t prompt_tokens);

// vLLM's /rerank answer: {"id", "model", "usage": {"total_tokens"}, "results": [{"index",
// "document": {"text"}, "relevance_score"}]}, best first (ties in document order), the `top_n`
// best (0: all).
std::string RerankBody(const std::string& id, const std::string& model,
                       const std::vector<double>& scores, const std::vector<std::string>& documents,
                       int32_t top_n, int64_t prompt_tokens);

}  // namespace headroom::router::openai
