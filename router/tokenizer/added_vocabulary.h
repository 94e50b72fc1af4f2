// Added tokens (tokenizer.json "added_tokens"): special tokens such as <|eot_id|> and user-added
// words. They are matched in the text before the model runs and are never split. Matching follows
// `tokenizers`: leftmost match, longest at a position; tokens with normalized=false are matched in
// the raw text first, tokens with normalized=true in the normalized remainder; single_word, lstrip
// and rstrip are honoured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/normalizer.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A part of the input: either a matched added token (token_id set) or text for the model.
struct TextSegment {
  size_t begin = 0;
  size_t end = 0;
  std::optional<int32_t> token_id;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `normalizer` (may be null) normalizes the content of normalized=true tokens for matching.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Splits `text` around the tokens of one matching set: `normalized` picks the set of
  // normalized=true tokens, otherwise the normalized=false set. Segments cover `text` in order.
  void Split(std::string_view text, bool normalized, std::vector<TextSegment>& out) const;

  [[nodiscard]] const AddedToken* FindById(int32_t id) const;
  // The string decoding uses for an added token: its content, normalized for normalized=true
  // tokens (what `tokenizers`' id_to_token returns). Null when `id` is not an added token.
  [[nodiscard]] const std::string* DecodeText(int32_t id) const;
  [[nodiscard]] std::optional<int32_t> FindByContent(std::string_view content) const;
  // True when some special added token has this content (what decode's skip_special_tokens uses).
  [[nodiscard]] bool IsSpecialContent(std::string_view content) const {
    return special_contents_.contains(content);
  }
  [[nodiscard]] const std::vector<AddedToken>& tokens() const { return tokens_; }
  [[nodiscard]] bool has_normalized_tokens() const { return !normalized_set_.patterns.empty(); }

 private:
  struct Pattern {
    std::string text;  // what is matched (normalized content for normalized tokens)
    size_t token;      // index into tokens_
  };
  struct MatchSet {
    std::vector<Pattern> patterns;
    // For each first byte, the patterns starting with it, longest first.
    std::vector<std::vector<size_t>> by_first_byte = std::vector<std::vector<size_t>>(256);
  };
  static void AddPattern(MatchSet& set, std::string text, size_t token);

  std::vector<AddedToken> tokens_;
  std::vector<std::string> decode_text_;  // per token
  absl::flat_hash_map<int32_t, size_t> by_id_;
  StringMap<int32_t> by_content_;
  StringSet special_contents_;
  MatchSet raw_set_;
  MatchSet normalized_set_;
};

// Parses the "added_tokens" array.
absl::StatusOr<std::vector<AddedToken>> ParseAddedTokens(const json_util::Json& spec,
                                                         std::string_view path);

}  // namespace headroom::router
