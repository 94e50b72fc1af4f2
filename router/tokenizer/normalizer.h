// Normalizers: the text rewrites `tokenizers` applies before pre-tokenization. Supported: NFC, NFD,
// NFKC, NFKD (utf8proc), Replace (string or regex pattern), Prepend, Strip and Sequence; anything
// else is rejected at load time with its name.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "router/tokenizer/json_util.h"

namespace headroom::router {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites valid UTF-8 `text` in place.
  virtual void Normalize(std::string& text) const = 0;
};

// Builds the normalizer described by the JSON object at `path` ("normalizer"); a JSON null gives
// nullptr (no normalization).
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const json_util::Json& spec,
                                                            std::string_view path);

}  // namespace headroom::router
