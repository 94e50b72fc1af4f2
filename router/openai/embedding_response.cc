#include "router/openai/embedding_response.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numeric>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {
namespace {

// vLLM's usage of a pooling answer: the prompts' tokens, no completion.
nlohmann::ordered_json PoolingUsage(int64_t prompt_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"total_tokens", prompt_tokens},
          {"completion_tokens", 0},
          {"prompt_tokens_details", nullptr}};
}

}  // namespace

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

namespace {

// An embeddings-shaped answer: one {"index", "object": `object`, `key`: vector} entry per input.
std::string VectorListBody(const std::string& id, int64_t created, const std::string& model,
                           const std::vector<std::span<const float>>& embeddings,
                           int64_t prompt_tokens, bool base64, const char* object,
                           const char* key) {
  using Json = nlohmann::ordered_json;
  // Written out directly rather than through a JSON tree: 2048 inputs of 4096 values would hold
  // ~130 MB of tree nodes next to the ~170 MB of text.
  size_t values = 0;
  for (const std::span<const float> e : embeddings) values += e.size();
  std::string out;
  out.reserve(embeddings.size() * 64 + values * (base64 ? 6 : 22) + 256);
  out = Json{{"id", id}, {"object", "list"}, {"created", created}, {"model", model}}.dump();
  out.pop_back();  // its closing brace: the object goes on
  out += ",\"data\":[";
  char number[32];
  for (size_t i = 0; i < embeddings.size(); ++i) {
    absl::StrAppend(&out, i > 0 ? "," : "", "{\"index\":", i, ",\"object\":\"", object, "\",\"",
                    key, "\":");
    if (base64) {
      absl::StrAppend(&out, "\"", Float32Base64(embeddings[i]), "\"}");
      continue;
    }
    out += '[';
    for (size_t j = 0; j < embeddings[i].size(); ++j) {
      if (j > 0) out += ',';
      const auto v = static_cast<double>(embeddings[i][j]);
      if (!std::isfinite(v)) {  // JSON has no inf or nan; nlohmann writes null too
        out += "null";
        continue;
      }
      // The shortest text that reads back as this double (so as this float), as Python prints it.
      const std::to_chars_result written = std::to_chars(number, number + sizeof(number), v);
      out.append(number, written.ptr);
    }
    out += "]}";
  }
  out += "],\"usage\":";
  out += PoolingUsage(prompt_tokens).dump();
  out += '}';
  return out;
}

}  // namespace

std::string EmbeddingsBody(const std::string& id, int64_t created, const std::string& model,
                           const std::vector<std::span<const float>>& embeddings,
                           int64_t prompt_tokens, bool base64) {
  return VectorListBody(id, created, model, embeddings, prompt_tokens, base64, "embedding",
                        "embedding");
}

std::string PoolingBody(const std::string& id, int64_t created, const std::string& model,
                        const std::vector<std::span<const float>>& outputs, int64_t prompt_tokens,
                        bool base64) {
  return VectorListBody(id, created, model, outputs, prompt_tokens, base64, "pooling", "data");
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
  body["usage"] = PoolingUsage(prompt_tokens);
  return body.dump();
}

std::string ClassificationBody(const std::string& id, int64_t created, const std::string& model,
                               const std::vector<Classification>& results, int64_t prompt_tokens) {
  using Json = nlohmann::ordered_json;
  Json data = Json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    Json probs = Json::array();
    for (const float p : results[i].probs) probs.push_back(static_cast<double>(p));
    data.push_back(Json{{"index", i},
                        {"label", results[i].label},
                        {"probs", std::move(probs)},
                        {"num_classes", results[i].probs.size()}});
  }
  Json body = Json{{"id", id}, {"object", "list"}, {"created", created}, {"model", model}};
  body["data"] = std::move(data);
  body["usage"] = PoolingUsage(prompt_tokens);
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
