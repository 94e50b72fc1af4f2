#include "router/tokenizer/byte_tokenizer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/byte_level.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router {

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeByteTokenizer(int32_t vocab_size) {
  if (vocab_size < 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("the byte tokenizer needs vocab_size >= 256, got ", vocab_size));
  }
  // Spelled as a byte-level BPE tokenizer.json without merges, so it runs through exactly the
  // code that real byte-level tokenizers use.
  using json_util::Json;
  Json vocab = Json::object();
  const auto& chars = byte_level::ByteToChars();
  for (int b = 0; b < 256; ++b) vocab[chars[static_cast<size_t>(b)]] = b;
  Json added = Json::array();
  auto special = [](int32_t id, const char* content) {
    return Json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  if (vocab_size > kByteTokenizerBosId) added.push_back(special(kByteTokenizerBosId, "<|bos|>"));
  if (vocab_size > kByteTokenizerEosId) added.push_back(special(kByteTokenizerEosId, "<|eos|>"));
  Json spec = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}},
  };
  auto tokenizer = Tokenizer::FromJson(spec.dump(), std::nullopt, "byte tokenizer");
  if (!tokenizer.ok()) return tokenizer.status();
  Tokenizer& t = **tokenizer;
  t.vocab_size_ = vocab_size;
  if (vocab_size > kByteTokenizerBosId) {
    t.bos_id_ = kByteTokenizerBosId;
    t.wrap_.prefix = {kByteTokenizerBosId};
    t.wrap_.pair_prefix = {kByteTokenizerBosId};  // <|bos|> A B
  }
  if (vocab_size > kByteTokenizerEosId) t.eos_id_ = kByteTokenizerEosId;
  return tokenizer;
}

}  // namespace headroom::router
