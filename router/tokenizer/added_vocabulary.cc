#include "router/tokenizer/added_vocabulary.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/regex_splitter.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"
#include "utf8proc.h"

namespace headroom::router {
namespace {

using json_util::Json;

// `tokenizers` treats alphanumerics and '_' as word characters for single_word tokens.
bool IsWordChar(char32_t cp) {
  if (cp == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// Start of the character that ends at `end` (exclusive).
size_t PrevCharStart(std::string_view text, size_t end) {
  size_t p = end - 1;
  while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
  return p;
}

char32_t CodePointAt(std::string_view text, size_t pos) {
  char32_t cp = 0;
  utf8::Decode(text, pos, &cp);
  return cp;
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    by_id_.insert_or_assign(t.id, i);
    by_content_.insert_or_assign(t.content, t.id);
    if (t.special) special_contents_.insert(t.content);
    decode_text_.push_back(t.content);
    if (t.content.empty()) continue;
    if (t.normalized) {
      std::string text = t.content;
      if (normalizer != nullptr) normalizer->Normalize(text);
      decode_text_.back() = text;
      if (!text.empty()) AddPattern(normalized_set_, std::move(text), i);
    } else {
      AddPattern(raw_set_, t.content, i);
    }
  }
  for (MatchSet* set : {&raw_set_, &normalized_set_}) {
    for (auto& bucket : set->by_first_byte) {
      std::stable_sort(bucket.begin(), bucket.end(), [set](size_t a, size_t b) {
        return set->patterns[a].text.size() > set->patterns[b].text.size();
      });
    }
  }
}

void AddedVocabulary::AddPattern(MatchSet& set, std::string text, size_t token) {
  const auto first = static_cast<unsigned char>(text[0]);
  set.by_first_byte[first].push_back(set.patterns.size());
  set.patterns.push_back(Pattern{std::move(text), token});
}

void AddedVocabulary::Split(std::string_view text, bool normalized,
                            std::vector<TextSegment>& out) const {
  const MatchSet& set = normalized ? normalized_set_ : raw_set_;
  size_t start_offset = 0;  // end of the previous accepted match
  size_t pos = 0;
  while (pos < text.size()) {
    // Leftmost-longest: the first position where some pattern matches, longest pattern there.
    const auto& bucket = set.by_first_byte[static_cast<unsigned char>(text[pos])];
    const Pattern* found = nullptr;
    for (const size_t index : bucket) {
      const Pattern& p = set.patterns[index];
      if (p.text.size() <= text.size() - pos &&
          std::memcmp(text.data() + pos, p.text.data(), p.text.size()) == 0) {
        found = &p;
        break;
      }
    }
    if (found == nullptr) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[found->token];
    size_t begin = pos;
    size_t end = pos + found->text.size();
    pos = end;  // the scan resumes after the match whether or not it is accepted
    if (token.single_word) {
      const bool space_before =
          begin == 0 || !IsWordChar(CodePointAt(text, PrevCharStart(text, begin)));
      const bool space_after = end == text.size() || !IsWordChar(CodePointAt(text, end));
      if (!space_before || !space_after) continue;
    }
    if (token.lstrip) {
      size_t b = begin;
      while (b > start_offset) {
        const size_t prev = PrevCharStart(text, b);
        if (!IsUnicodeWhitespace(CodePointAt(text, prev))) break;
        b = prev;
      }
      begin = b;
    }
    if (token.rstrip) {
      while (end < text.size()) {
        char32_t cp = 0;
        const size_t len = utf8::Decode(text, end, &cp);
        if (!IsUnicodeWhitespace(cp)) break;
        end += len;
      }
      pos = end;
    }
    if (start_offset < begin) out.push_back(TextSegment{start_offset, begin, std::nullopt});
    out.push_back(TextSegment{begin, end, token.id});
    start_offset = end;
  }
  if (start_offset < text.size())
    out.push_back(TextSegment{start_offset, text.size(), std::nullopt});
}

const AddedToken* AddedVocabulary::FindById(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const std::string* AddedVocabulary::DecodeText(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &decode_text_[it->second];
}

std::optional<int32_t> AddedVocabulary::FindByContent(std::string_view content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::vector<AddedToken>> ParseAddedTokens(const Json& spec, std::string_view path) {
  std::vector<AddedToken> tokens;
  if (spec.is_null()) return tokens;
  if (!spec.is_array()) return json_util::Expected(path, "an array");
  tokens.reserve(spec.size());
  for (size_t i = 0; i < spec.size(); ++i) {
    const Json& t = spec[i];
    const std::string p = json_util::Index(path, i);
    if (!t.is_object()) return json_util::Expected(p, "an object");
    AddedToken token;
    const Json* id = json_util::Find(t, "id");
    if (id == nullptr) return json_util::Expected(json_util::Child(p, "id"), "a token id");
    auto parsed_id = json_util::ToTokenId(*id, json_util::Child(p, "id"));
    if (!parsed_id.ok()) return parsed_id.status();
    token.id = *parsed_id;
    auto content = json_util::GetString(t, "content", p);
    if (!content.ok()) return content.status();
    token.content = *std::move(content);
    if (!utf8::IsValid(token.content)) return json_util::Expected(p, "valid UTF-8 content");
    auto special = json_util::GetBool(t, "special", p, false);
    if (!special.ok()) return special.status();
    token.special = *special;
    for (auto [field, out, fallback] :
         {std::tuple<const char*, bool*, bool>{"single_word", &token.single_word, false},
          {"lstrip", &token.lstrip, false},
          {"rstrip", &token.rstrip, false},
          {"normalized", &token.normalized, !token.special}}) {
      auto value = json_util::GetBool(t, field, p, fallback);
      if (!value.ok()) return value.status();
      *out = *value;
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

}  // namespace headroom::router
