// The BPE model of tokenizer.json: a vocabulary, ranked merges, and the options real checkpoints
// use (byte_fallback and fuse_unk for SentencePiece-style models, ignore_merges for Llama-3,
// continuing_subword_prefix / end_of_word_suffix). Merging follows `tokenizers` exactly: always the
// lowest-ranked pair, leftmost first.
//
// Encode is thread-safe; a bounded cache of recent words (like `tokenizers`' BPE cache) makes
// repeated words cost one hash lookup.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::optional<std::string> continuing_subword_prefix;
  std::optional<std::string> end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

class BpeModel {
 public:
  // `merges` are (left, right) token pairs in rank order.
  static absl::StatusOr<std::unique_ptr<BpeModel>> Create(
      std::vector<std::pair<std::string, int32_t>> vocab,
      const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);

  // Appends the ids of one pre-tokenized word.
  void Encode(std::string_view word, std::vector<int32_t>& out) const;

  [[nodiscard]] std::optional<int32_t> TokenToId(std::string_view token) const;
  // The token string of `id`, or nullptr for an id outside the vocabulary.
  [[nodiscard]] const std::string* IdToToken(int32_t id) const;
  // One past the largest id in the vocabulary.
  [[nodiscard]] int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }
  [[nodiscard]] const BpeOptions& options() const { return options_; }

 private:
  explicit BpeModel(BpeOptions options) : options_(std::move(options)) {}

  void EncodeUncached(std::string_view word, std::vector<int32_t>& out) const;
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  struct MergeResult {
    int32_t rank;
    int32_t new_id;
  };

  BpeOptions options_;
  StringMap<int32_t> token_to_id_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  absl::flat_hash_map<uint64_t, MergeResult> merges_;
  std::optional<int32_t> unk_id_;
  std::vector<int32_t> byte_ids_;  // <0xXX> token ids for byte_fallback (-1 when absent)

  static constexpr size_t kCacheCapacity = 10000;
  static constexpr size_t kMaxCachedWordBytes = 256;
  mutable absl::Mutex cache_mu_;
  mutable StringMap<std::vector<int32_t>> cache_ ABSL_GUARDED_BY(cache_mu_);
};

// Builds the BPE model at `path` ("model"). Other model types (WordPiece, Unigram, WordLevel) are
// rejected with their name.
absl::StatusOr<std::unique_ptr<BpeModel>> ParseBpeModel(const json_util::Json& spec,
                                                        std::string_view path);

}  // namespace headroom::router
