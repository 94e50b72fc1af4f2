// How a checkpoint says its embeddings are pooled: sentence-transformers' modules.json names a
// Pooling module whose config.json sets one pooling_mode_* key, and a Normalize module when the
// vectors are L2-normalized (Qwen3-Embedding: lasttoken + Normalize). vLLM reads the same files
// for its pooling defaults. headroom pools by the last token, the mean or the first (CLS) token;
// the engine refuses embedding requests for a model that pools otherwise rather than answer
// vectors that are not the model's.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace headroom::worker {

struct PoolingConfig {
  // The pooling_mode_* key that was true, without its prefix ("lasttoken", "mean_tokens",
  // "cls_token", ...); "lasttoken" when the model has no sentence-transformers files.
  std::string mode = "lasttoken";
  // Vectors are L2-normalized unless a request says otherwise: a Normalize module in
  // modules.json; true without modules.json (vLLM's embedding default).
  bool normalize = true;
  // The file `mode` came from; empty when the default applies.
  std::string source;

  [[nodiscard]] bool last_token() const { return mode == "lasttoken"; }
};

// Reads `model`'s modules.json and its Pooling module's config.json. A directory without
// modules.json (and dummy:<preset>) gets the defaults; files that exist but cannot be read as
// sentence-transformers wrote them are INVALID_ARGUMENT naming the file and the field.
absl::StatusOr<PoolingConfig> LoadPoolingConfig(std::string_view model);

// vLLM's --pooler-config (or --override-pooler-config): a JSON object whose "pooling_type" (or
// "seq_pooling_type": "LAST", "MEAN" or "CLS") and "normalize" (or "use_activation") replace
// what the checkpoint's files say; `config.source` becomes "--pooler-config". INVALID_ARGUMENT
// naming the key for anything else (token pooling "ALL"/"STEP", other keys, wrong types).
absl::Status ApplyPoolerConfig(std::string_view json, PoolingConfig& config);

}  // namespace headroom::worker
