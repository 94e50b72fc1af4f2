#include "router/openai/embedding_response.h"

#include <cstring>

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
                           const std::vector<std::vector<float>>& embeddings,
                           int64_t prompt_tokens, bool base64) {
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

}  // namespace headroom::router::openai
