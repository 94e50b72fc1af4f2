// Decoders turn token strings back into text, as `tokenizers` does: each step maps the list of
// token strings to a new list, and the final list is concatenated. Supported: ByteLevel, Metaspace,
// Replace, ByteFallback, Fuse, Strip and Sequence.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/tokenizer/json_util.h"

namespace headroom::router {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the token strings in place (the list may change length).
  virtual void DecodeChain(std::vector<std::string>& tokens) const = 0;
  // True when the chain contains ByteFallback: `<0xXX>` tokens become raw bytes, and a run of
  // them becomes text only as a whole (a stream must not emit part of an unfinished run).
  [[nodiscard]] virtual bool UsesByteFallback() const { return false; }
  // True when the chain contains ByteLevel: tokens spell bytes (GPT-2's byte-to-character map),
  // which it joins and then replaces invalid UTF-8 in.
  [[nodiscard]] virtual bool UsesByteLevel() const { return false; }
};

// Builds the decoder at `path` ("decoder"); a JSON null gives nullptr (tokens joined by spaces).
absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const json_util::Json& spec,
                                                      std::string_view path);

// The byte a ByteFallback piece such as "<0xE2>" stands for, or -1.
[[nodiscard]] int ByteFallbackValue(std::string_view token);

}  // namespace headroom::router
