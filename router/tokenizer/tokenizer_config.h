// tokenizer_config.json: what transformers keeps next to tokenizer.json. headroom reads the
// special token names, add_bos_token / add_eos_token and the chat template string; rendering the
// template is the chat front end's job.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::router {

struct TokenizerConfig {
  // Special token strings ("<s>", "<|eot_id|>"); unset when the file has none or null.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  // Explicit add_bos_token / add_eos_token; when either is set the tokenizer wraps encodings with
  // [BOS] ... [EOS] accordingly instead of using the tokenizer.json post-processor (what
  // transformers' Llama tokenizers do).
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  // The default chat template (Jinja source), and any named ones ("tool_use").
  std::optional<std::string> chat_template;
  std::vector<std::pair<std::string, std::string>> named_chat_templates;
  std::optional<int64_t> model_max_length;
  std::optional<bool> clean_up_tokenization_spaces;
  std::optional<std::string> tokenizer_class;
};

// Parses the text of tokenizer_config.json; `source` names the file in errors.
absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view text,
                                                     std::string_view source);

}  // namespace headroom::router
