// Pre-tokenizers split normalized text into the words the model encodes one by one. Supported:
// ByteLevel (GPT-2 regex and byte-to-unicode mapping), Split (string or regex pattern, every
// split behavior, invert), Metaspace (replacement, prepend_scheme, split) and Sequence.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/regex_splitter.h"

namespace headroom::router {

// A piece of text on its way to the model.
struct Piece {
  std::string text;
  // True when the piece begins at byte 0 of the original input (Metaspace's prepend_scheme
  // "first" prepends only to such a piece).
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` with their sub-pieces; empty pieces are dropped.
  virtual void PreTokenize(std::vector<Piece>& pieces) const = 0;
};

// What a split does with the matched delimiters (tokenizers' SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Splits `piece` at `matches` (sorted, non-overlapping) and appends the non-empty parts to `out`.
void SplitPiece(const Piece& piece, const std::vector<ByteRange>& matches, SplitBehavior behavior,
                bool invert, std::vector<Piece>& out);

// Builds the pre-tokenizer at `path` ("pre_tokenizer"); a JSON null gives nullptr.
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const json_util::Json& spec,
                                                                std::string_view path);

// GPT-2's split pattern, which ByteLevel uses when use_regex is true.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace headroom::router
