#include "router/tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "router/tokenizer/byte_level.h"
#include "router/tokenizer/decoder.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router {
namespace {

using json_util::Json;

const Json& Member(const Json& root, std::string_view key) {
  static const Json* const kNull = new Json(nullptr);
  const Json* v = json_util::Find(root, key);
  return v == nullptr ? *kNull : *v;
}

absl::Status WithSource(const absl::Status& status, std::string_view source) {
  return absl::Status(status.code(), absl::StrCat(Sv(source), ": ", status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromDirectory(std::string_view dir) {
  const std::filesystem::path base(dir);
  const std::string tokenizer_path = (base / "tokenizer.json").string();
  const std::string config_path = (base / "tokenizer_config.json").string();
  std::error_code ec;
  const bool has_config = std::filesystem::exists(config_path, ec);
  return FromFiles(tokenizer_path, has_config ? config_path : "");
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFiles(const std::string& tokenizer_path,
                                                                const std::string& config_path) {
  auto text = json_util::ReadFile(tokenizer_path);
  if (!text.ok()) return text.status();
  std::optional<std::string> config;
  if (!config_path.empty()) {
    auto config_text = json_util::ReadFile(config_path);
    if (!config_text.ok()) return config_text.status();
    config = *std::move(config_text);
    // Config errors name the config file; tokenizer.json errors name tokenizer.json.
    auto parsed = ParseTokenizerConfig(*config, config_path);
    if (!parsed.ok()) return parsed.status();
  }
  return FromJson(*text, config, tokenizer_path);
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(
    std::string_view tokenizer_json, std::optional<std::string_view> config_json,
    std::string_view source) {
  auto parsed = json_util::Parse(tokenizer_json, source);
  if (!parsed.ok()) return parsed.status();
  const Json& root = *parsed;
  if (!root.is_object()) return WithSource(json_util::Expected("(root)", "an object"), source);

  std::unique_ptr<Tokenizer> t(new Tokenizer());
  if (config_json.has_value()) {
    auto config = ParseTokenizerConfig(*config_json, "tokenizer_config.json");
    if (!config.ok()) return config.status();
    t->config_ = *std::move(config);
  }
  auto normalizer = ParseNormalizer(Member(root, "normalizer"), "normalizer");
  if (!normalizer.ok()) return WithSource(normalizer.status(), source);
  t->normalizer_ = *std::move(normalizer);
  auto pre_tokenizer = ParsePreTokenizer(Member(root, "pre_tokenizer"), "pre_tokenizer");
  if (!pre_tokenizer.ok()) return WithSource(pre_tokenizer.status(), source);
  t->pre_tokenizer_ = *std::move(pre_tokenizer);
  auto model = ParseBpeModel(Member(root, "model"), "model");
  if (!model.ok()) return WithSource(model.status(), source);
  t->model_ = *std::move(model);
  auto decoder = ParseDecoder(Member(root, "decoder"), "decoder");
  if (!decoder.ok()) return WithSource(decoder.status(), source);
  t->decoder_ = *std::move(decoder);
  auto wrap = ParsePostProcessor(Member(root, "post_processor"), "post_processor");
  if (!wrap.ok()) return WithSource(wrap.status(), source);
  t->wrap_ = *std::move(wrap);
  auto added = ParseAddedTokens(Member(root, "added_tokens"), "added_tokens");
  if (!added.ok()) return WithSource(added.status(), source);
  t->vocab_size_ = t->model_->vocab_size();
  for (const AddedToken& a : *added) t->vocab_size_ = std::max(t->vocab_size_, a.id + 1);
  t->added_ = AddedVocabulary(*std::move(added), t->normalizer_.get());

  // BOS / EOS: the config's token names, else the post-processor's single leading token.
  if (t->config_.bos_token.has_value()) t->bos_id_ = t->TokenToId(*t->config_.bos_token);
  if (!t->bos_id_.has_value() && t->wrap_.prefix.size() == 1) t->bos_id_ = t->wrap_.prefix[0];
  if (t->config_.eos_token.has_value()) t->eos_id_ = t->TokenToId(*t->config_.eos_token);
  for (const int32_t id : t->wrap_.prefix) {
    if (id >= t->vocab_size_) {
      return WithSource(absl::InvalidArgumentError(absl::StrCat("post_processor: special token id ",
                                                                id, " is outside the vocab")),
                        source);
    }
  }
  // add_bos_token / add_eos_token in tokenizer_config.json override the post-processor, as
  // transformers' Llama tokenizers rebuild their template from them.
  if (t->config_.add_bos_token.has_value() || t->config_.add_eos_token.has_value()) {
    auto contains = [](const std::vector<int32_t>& v, std::optional<int32_t> id) {
      return id.has_value() && std::find(v.begin(), v.end(), *id) != v.end();
    };
    const bool add_bos = t->config_.add_bos_token.value_or(contains(t->wrap_.prefix, t->bos_id_));
    const bool add_eos = t->config_.add_eos_token.value_or(contains(t->wrap_.suffix, t->eos_id_));
    SpecialTokenWrap wrap_from_config;
    if (add_bos && t->bos_id_.has_value()) wrap_from_config.prefix.push_back(*t->bos_id_);
    if (add_eos && t->eos_id_.has_value()) wrap_from_config.suffix.push_back(*t->eos_id_);
    // transformers' LlamaTokenizerFast template: the pair repeats the single's tokens around
    // each sequence.
    wrap_from_config.pair_prefix = wrap_from_config.prefix;
    wrap_from_config.pair_middle = wrap_from_config.suffix;
    wrap_from_config.pair_middle.insert(wrap_from_config.pair_middle.end(),
                                        wrap_from_config.prefix.begin(),
                                        wrap_from_config.prefix.end());
    wrap_from_config.pair_suffix = wrap_from_config.suffix;
    t->wrap_ = std::move(wrap_from_config);
  }
  return t;
}

void Tokenizer::EncodeText(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  std::string normalized(text);
  if (normalizer_ != nullptr) normalizer_->Normalize(normalized);
  std::vector<TextSegment> segments;
  if (added_.has_normalized_tokens()) {
    added_.Split(normalized, /*normalized=*/true, segments);
  } else if (!normalized.empty()) {
    segments.push_back(TextSegment{0, normalized.size(), std::nullopt});
  }
  std::vector<Piece> pieces;
  for (const TextSegment& s : segments) {
    if (s.token_id.has_value()) {
      out.push_back(*s.token_id);
      continue;
    }
    pieces.clear();
    pieces.push_back(Piece{normalized.substr(s.begin, s.end - s.begin), at_start && s.begin == 0});
    if (pre_tokenizer_ != nullptr) pre_tokenizer_->PreTokenize(pieces);
    for (const Piece& p : pieces) model_->Encode(p.text, out);
  }
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                       const EncodeOptions& options) const {
  size_t bad = 0;
  if (!utf8::IsValid(text, &bad)) {
    return absl::InvalidArgumentError(
        absl::StrCat("text is not valid UTF-8 (invalid byte sequence at offset ", bad, ")"));
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (options.add_special_tokens) ids.insert(ids.end(), wrap_.prefix.begin(), wrap_.prefix.end());
  std::vector<TextSegment> segments;
  added_.Split(text, /*normalized=*/false, segments);
  for (const TextSegment& s : segments) {
    if (s.token_id.has_value()) {
      ids.push_back(*s.token_id);
    } else {
      EncodeText(text.substr(s.begin, s.end - s.begin), s.begin == 0, ids);
    }
  }
  if (options.add_special_tokens) ids.insert(ids.end(), wrap_.suffix.begin(), wrap_.suffix.end());
  return ids;
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodePair(std::string_view first,
                                                           std::string_view second,
                                                           const EncodeOptions& options) const {
  // transformers reads an empty text_pair as none: the first text alone.
  if (second.empty()) return Encode(first, options);
  if (options.add_special_tokens && !wrap_.pair_supported) {
    return absl::InvalidArgumentError(
        "this tokenizer's post-processor has no pair template (tokenizer.json's post_processor), "
        "so a text pair cannot be encoded with special tokens");
  }
  absl::StatusOr<std::vector<int32_t>> a = Encode(first, {.add_special_tokens = false});
  if (!a.ok()) return a.status();
  absl::StatusOr<std::vector<int32_t>> b = Encode(second, {.add_special_tokens = false});
  if (!b.ok()) return b.status();
  if (!options.add_special_tokens) {
    a->insert(a->end(), b->begin(), b->end());
    return a;
  }
  std::vector<int32_t> ids = wrap_.pair_prefix;
  ids.insert(ids.end(), a->begin(), a->end());
  ids.insert(ids.end(), wrap_.pair_middle.begin(), wrap_.pair_middle.end());
  ids.insert(ids.end(), b->begin(), b->end());
  ids.insert(ids.end(), wrap_.pair_suffix.begin(), wrap_.pair_suffix.end());
  return ids;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  std::string text = DecodeBytes(ids, options);
  // Decoders without ByteLevel / ByteFallback pass token text through; keep the output valid.
  if (!utf8::IsValid(text)) text = utf8::Lossy(text);
  return text;
}

std::string Tokenizer::TokenBytes(int32_t id) const {
  // Byte tokens decode to text only together with their neighbours (and invalid UTF-8 becomes
  // U+FFFD there): their bytes are read off the token itself.
  if (decoder_ != nullptr && added_.FindById(id) == nullptr) {
    if (const std::string* token = model_->IdToToken(id); token != nullptr) {
      std::string bytes;
      if (decoder_->UsesByteLevel() && byte_level::DecodeToken(*token, bytes)) return bytes;
      if (decoder_->UsesByteFallback()) {
        if (const int byte = ByteFallbackValue(*token); byte >= 0) {
          return std::string(1, static_cast<char>(byte));
        }
      }
    }
  }
  // Decoding may treat the first token of a text differently (Metaspace and Strip drop its
  // leading space): decode the token after a copy of itself and keep what the second one added.
  const DecodeOptions keep{.skip_special_tokens = false};
  const int32_t one[] = {id};
  const int32_t two[] = {id, id};
  const std::string alone = DecodeBytes(one, keep);
  const std::string pair = DecodeBytes(two, keep);
  if (pair.size() >= alone.size() && pair.compare(0, alone.size(), alone) == 0) {
    return pair.substr(alone.size());
  }
  return alone;
}

std::string Tokenizer::DecodeBytes(std::span<const int32_t> ids,
                                   const DecodeOptions& options) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    const std::string* token = added_.DecodeText(id);
    if (token == nullptr) token = model_->IdToToken(id);
    if (token == nullptr) continue;
    if (options.skip_special_tokens && added_.IsSpecialContent(*token)) continue;
    tokens.push_back(*token);
  }
  if (decoder_ == nullptr) return absl::StrJoin(tokens, " ");
  decoder_->DecodeChain(tokens);
  return absl::StrJoin(tokens, "");
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (auto id = added_.FindByContent(token)) return id;
  return model_->TokenToId(token);
}

std::optional<std::string> Tokenizer::IdToToken(int32_t id) const {
  if (const std::string* a = added_.DecodeText(id); a != nullptr) return *a;
  if (const std::string* t = model_->IdToToken(id); t != nullptr) return *t;
  return std::nullopt;
}

bool Tokenizer::IsSpecialToken(int32_t id) const {
  const AddedToken* a = added_.FindById(id);
  return a != nullptr && a->special;
}

bool Tokenizer::IsByteFallbackToken(int32_t id) const {
  if (decoder_ == nullptr || !decoder_->UsesByteFallback()) return false;
  if (added_.FindById(id) != nullptr) return false;
  const std::string* token = model_->IdToToken(id);
  return token != nullptr && ByteFallbackValue(*token) >= 0;
}

}  // namespace headroom::router
