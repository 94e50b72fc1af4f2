// Post-processors add the special tokens around an encoded sequence (BOS for Llama, [CLS]/[SEP]
// for BERT-style models). For a single sequence every supported processor (TemplateProcessing,
// BertProcessing, RobertaProcessing, ByteLevel, Sequence) amounts to ids before and ids after, and
// for a pair to ids before, between and after, so the parsed form is just that.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/tokenizer/json_util.h"

namespace headroom::router {

struct SpecialTokenWrap {
  std::vector<int32_t> prefix;  // ids before the sequence (e.g. BOS)
  std::vector<int32_t> suffix;  // ids after the sequence (e.g. EOS)
  // A pair of sequences (tokenizers' encode(a, b), transformers' text_pair): ids before the
  // first, between the two, after the second ([CLS] A [SEP] B [SEP]; Llama 3: <bos> A <bos> B).
  // False when the post-processor has no pair template (encoding a pair fails, as in
  // `tokenizers`).
  std::vector<int32_t> pair_prefix;
  std::vector<int32_t> pair_middle;
  std::vector<int32_t> pair_suffix;
  bool pair_supported = true;
};

// Parses "post_processor" (null gives an empty wrap).
absl::StatusOr<SpecialTokenWrap> ParsePostProcessor(const json_util::Json& spec,
                                                    std::string_view path);

}  // namespace headroom::router
