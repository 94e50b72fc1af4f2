#include "router/openai/embedding_response.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {

std::string Float32Base64(std::span<const float> values) {
  std::string bytes;
  bytes.reserve(values.size() * 4);
  for (const float v : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    for (int shift = 0; shift < 32; shift += 8) {
      bytes.push_back(static_cast<char>((bits >> shift) & 0xFF));
    }
  }
  return absl::Base64Escape(bytes);
}

std::string EmbeddingsBody(const std::string& id, int64_t created, const std::string& model,
                           const std::vector<std::vector<float>>& embeddings, int64_t prompt_tokens,
                           bool base64) {
  using Json = nlohmann::ordered_json;
  Json data = Json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    Json vector = base64 ? Json(Float32Base64(embeddings[i])) : Json::array();
    if (!base64) {
      for (const float v : embeddings[i]) vector.push_back(static_cast<double>(v));
    }
    data.push_back(Json{{"index", i}, {"object", "embedding"}, {"embedding", std::move(vector)}});
  }
  Json body = Json{{"id", id}, {"object", "list"}, {"created", created}, {"model", model}};
  body["data"] = std::move(data);
  body["usage"] = Json{{"prompt_tokens", prompt_tokens},
                       {"total_tokens", prompt_tokens},
                       {"completion_tokens", 0},
                       {"prompt_tokens_details", nullptr}};
  return body.dump();
}

double CosineSimilarity(std::span<const float> a, std::span<const float> b) {
  double dot = 0;
  double aa = 0;
  double bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const auto x = static_cast<double>(a[i]);
    const auto y = static_cast<double>(b[i]);
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  constexpr double kEps = 1e-8;
  return dot / (std::max(std::sqrt(aa), kEps) * std::max(std::sqrt(bb), kEps));
}

std::string ScoreBody(const std::string& id, int64_t created, const std::string& model,
                      const std::vector<double>& scores, int64_t prompt_tokens) {
  using Json = nlohmann::ordered_json;
  Json data = Json::array();
  for (size_t i = 0; i < scores.size(); ++i) {
    data.push_back(Json{{"index", i}, {"object", "score"}, {"score", scores[i]}});
  }
  Json body = Json{{"id", id}, {"object", "list"}, {"created", created}, {"model", model}};
  body["data"] = std::move(data);
  body["usage"] = Json{{"prompt_tokens", prompt_tokens},
                       {"total_tokens", prompt_tokens},
                       {"completion_tokens", 0},
                       {"prompt_tokens_details", nullptr}};
  return body.dump();
}

std::string RerankBody(const std::string& id, const std::string& model,
                       const std::vector<double>& scores, const std::vector<std::string>& documents,
                       int32_t top_n, int64_t prompt_tokens) {
  using Json = nlohmann::ordered_json;
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&scores](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (top_n > 0 && order.size() > static_cast<size_t>(top_n))
    order.resize(static_cast<size_t>(top_n));
  Json results = Json::array();
  for (const size_t i : order) {
    results.push_back(Json{{"index", i},
                           {"document", Json{{"text", documents.at(i)}}},
                           {"relevance_score", scores[i]}});
  }
  Json body = Json{{"id", id}, {"model", model}};
  body["usage"] = Json{{"total_tokens", prompt_tokens}};
  body["results"] = std::move(results);
  return body.dump();
}

}  // namespace headroom::router::openai
