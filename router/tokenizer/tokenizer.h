// headroom's tokenizer: loads a Hugging Face tokenizer.json (plus tokenizer_config.json) and
// encodes / decodes exactly as the `tokenizers` library does for the two families real checkpoints
// use: byte-level BPE with a regex pre-tokenizer (GPT-2, Llama-3, Qwen2) and SentencePiece-style
// BPE with byte fallback (Llama-2, Mistral). See docs/tokenizer.md.
//
// Encode pipeline (as in `tokenizers`): split out added tokens matched in the raw text ->
// normalize the rest -> split out added tokens matched in normalized text -> pre-tokenize into
// words -> BPE each word -> add the post-processor's special tokens (BOS).
//
// A Tokenizer is immutable after loading; every method is safe to call from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/tokenizer/added_vocabulary.h"
#include "router/tokenizer/bpe_model.h"
#include "router/tokenizer/decoder.h"
#include "router/tokenizer/normalizer.h"
#include "router/tokenizer/post_processor.h"
#include "router/tokenizer/pre_tokenizer.h"
#include "router/tokenizer/tokenizer_config.h"

namespace headroom::router {

struct EncodeOptions {
  // Add the post-processor's special tokens (Llama's BOS), as `tokenizers`' encode() does by
  // default.
  bool add_special_tokens = true;
};

struct DecodeOptions {
  // Leave out special added tokens (<s>, <|eot_id|>), as `tokenizers`' decode() does by default.
  bool skip_special_tokens = true;
};

class Tokenizer {
 public:
  // Loads <dir>/tokenizer.json and, when present, <dir>/tokenizer_config.json.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromDirectory(std::string_view dir);
  // Loads the given files; an empty `config_path` means no tokenizer_config.json.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromFiles(const std::string& tokenizer_path,
                                                              const std::string& config_path = "");
  // Builds from file contents; `source` names them in error messages.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(
      std::string_view tokenizer_json, std::optional<std::string_view> config_json = std::nullopt,
      std::string_view source = "tokenizer.json");

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text`. InvalidArgument when `text` is not valid UTF-8 (names the byte offset).
  [[nodiscard]] absl::StatusOr<std::vector<int32_t>> Encode(
      std::string_view text, const EncodeOptions& options = {}) const;
  // A text pair as transformers' tokenizer(text, text_pair) and `tokenizers`' encode(a, b)
  // encode it (how vLLM tokenizes a cross-encoder's /score pair): each text encoded alone, with
  // the post-processor's pair template around them (SpecialTokenWrap); an empty `second` is no
  // pair, as transformers reads an empty text_pair (the single template). INVALID_ARGUMENT for
  // invalid UTF-8, or special tokens asked of a post-processor without a pair template.
  [[nodiscard]] absl::StatusOr<std::vector<int32_t>> EncodePair(
      std::string_view first, std::string_view second, const EncodeOptions& options = {}) const;
  // Text of `ids`; ids outside the vocabulary are skipped (as `tokenizers` does). The result is
  // always valid UTF-8 (invalid byte sequences become U+FFFD).
  [[nodiscard]] std::string Decode(std::span<const int32_t> ids,
                                   const DecodeOptions& options = {}) const;

  // The bytes token `id` adds to a text when it follows another token (so a leading space that
  // decoding drops at the start of a text is kept), as raw bytes: a ByteFallback token gives its
  // byte, a byte-level token its bytes, even when they are not valid UTF-8 alone. Special tokens
  // give their content; ids outside the vocabulary give "". For constrained decoding (the worker's
  // JSON mode matches these bytes).
  [[nodiscard]] std::string TokenBytes(int32_t id) const;

  [[nodiscard]] std::optional<int32_t> TokenToId(std::string_view token) const;
  [[nodiscard]] std::optional<std::string> IdToToken(int32_t id) const;
  // Number of ids: one past the largest model or added token id (or the size a byte tokenizer
  // was made with).
  [[nodiscard]] int32_t vocab_size() const { return vocab_size_; }
  [[nodiscard]] std::optional<int32_t> bos_token_id() const { return bos_id_; }
  [[nodiscard]] std::optional<int32_t> eos_token_id() const { return eos_id_; }
  [[nodiscard]] bool IsSpecialToken(int32_t id) const;
  [[nodiscard]] const TokenizerConfig& config() const { return config_; }
  [[nodiscard]] const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }
  // The ids wrapped around every encoding when add_special_tokens is true.
  [[nodiscard]] const SpecialTokenWrap& special_token_wrap() const { return wrap_; }

  // For streaming: true when decoding turns this id into a ByteFallback byte (<0xE2>), whose text
  // is only final once the run of byte tokens it belongs to has ended.
  [[nodiscard]] bool IsByteFallbackToken(int32_t id) const;

 private:
  Tokenizer() = default;
  friend absl::StatusOr<std::unique_ptr<Tokenizer>> MakeByteTokenizer(int32_t vocab_size);

  void EncodeText(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  // Decode before invalid UTF-8 is replaced.
  [[nodiscard]] std::string DecodeBytes(std::span<const int32_t> ids,
                                        const DecodeOptions& options) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  SpecialTokenWrap wrap_;
  TokenizerConfig config_;
  int32_t vocab_size_ = 0;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
};

}  // namespace headroom::router
