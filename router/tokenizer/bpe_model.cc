#include "router/tokenizer/bpe_model.h"

#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router {
namespace {

using json_util::Json;

// One symbol of a word being merged: a doubly linked list over a vector.
struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  size_t len;  // bytes of the word it covers; 0 once merged into its left neighbour
};

// A candidate merge of the symbol at `pos` with its right neighbour.
struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  // Lowest rank first, then leftmost.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(
    std::vector<std::pair<std::string, int32_t>> vocab,
    const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options) {
  std::unique_ptr<BpeModel> m(new BpeModel(std::move(options)));
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) max_id = std::max(max_id, id);
  m->id_to_token_.resize(static_cast<size_t>(max_id + 1));
  m->has_id_.resize(static_cast<size_t>(max_id + 1), false);
  m->token_to_id_.reserve(vocab.size());
  for (auto& [token, id] : vocab) {
    m->id_to_token_[static_cast<size_t>(id)] = token;
    m->has_id_[static_cast<size_t>(id)] = true;
    m->token_to_id_.insert_or_assign(std::move(token), id);
  }
  const std::string prefix = m->options_.continuing_subword_prefix.value_or("");
  m->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto a_id = m->TokenToId(a);
    const auto b_id = m->TokenToId(b);
    if (!a_id.has_value() || !b_id.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("merge ", rank, " ('", a, "', '", b,
                                                     "') uses a token that is not in the vocab"));
    }
    if (b.size() < prefix.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "merge ", rank, ": '", b, "' is shorter than the continuing_subword_prefix"));
    }
    const std::string merged = absl::StrCat(a, Sv(std::string_view(b).substr(prefix.size())));
    const auto new_id = m->TokenToId(merged);
    if (!new_id.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("merge ", rank, " ('", a, "', '", b,
                                                     "') makes '", merged,
                                                     "', which is not in the vocab"));
    }
    // Like `tokenizers`, a pair listed twice keeps its last rank.
    m->merges_.insert_or_assign(PairKey(*a_id, *b_id),
                                MergeResult{static_cast<int32_t>(rank), *new_id});
  }
  if (m->options_.unk_token.has_value()) {
    m->unk_id_ = m->TokenToId(*m->options_.unk_token);
    if (!m->unk_id_.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unk_token '", *m->options_.unk_token, "' is not in the vocab"));
    }
  }
  if (m->options_.byte_fallback) {
    m->byte_ids_.resize(256, -1);
    for (int b = 0; b < 256; ++b) {
      if (auto id = m->TokenToId(absl::StrFormat("<0x%02X>", b))) {
        m->byte_ids_[static_cast<size_t>(b)] = *id;
      }
    }
  }
  return m;
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  const auto it = token_to_id_.find(token);
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() ||
      !has_id_[static_cast<size_t>(id)]) {
    return nullptr;
  }
  return &id_to_token_[static_cast<size_t>(id)];
}

void BpeModel::Encode(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const auto id = TokenToId(word)) {
      out.push_back(*id);
      return;
    }
  }
  if (word.size() >= kMaxCachedWordBytes) {
    EncodeUncached(word, out);
    return;
  }
  {
    absl::MutexLock lock(&cache_mu_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t mark = out.size();
  EncodeUncached(word, out);
  absl::MutexLock lock(&cache_mu_);
  if (cache_.size() < kCacheCapacity) {
    cache_.try_emplace(std::string(word), out.begin() + static_cast<std::ptrdiff_t>(mark),
                       out.end());
  }
}

void BpeModel::EncodeUncached(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&symbols](int32_t id, size_t len) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, index - 1, -1, len});
    if (index > 0) symbols[static_cast<size_t>(index - 1)].next = index;
  };

  // Initial symbols: one per character, with the unknown-token and byte-fallback rules of
  // `tokenizers`' BPE::merge_word.
  size_t pending_unk_len = 0;  // bytes covered by a pending unknown token (0: none)
  std::string scratch;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t char_len =
        std::min(utf8::CharLength(static_cast<unsigned char>(word[pos])), word.size() - pos);
    const std::string_view ch = word.substr(pos, char_len);
    const bool is_first = pos == 0;
    const bool is_last = pos + char_len == word.size();
    std::string_view piece = ch;
    if ((!is_first && options_.continuing_subword_prefix.has_value()) ||
        (is_last && options_.end_of_word_suffix.has_value())) {
      scratch.clear();
      if (!is_first && options_.continuing_subword_prefix.has_value()) {
        scratch.append(*options_.continuing_subword_prefix);
      }
      scratch.append(ch);
      if (is_last && options_.end_of_word_suffix.has_value()) {
        scratch.append(*options_.end_of_word_suffix);
      }
      piece = scratch;
    }
    pos += char_len;
    if (const auto id = TokenToId(piece)) {
      if (pending_unk_len > 0) {
        add(*unk_id_, pending_unk_len);
        pending_unk_len = 0;
      }
      add(*id, char_len);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (const char c : piece) {
        if (byte_ids_[static_cast<unsigned char>(c)] < 0) all_bytes = false;
      }
      if (all_bytes) {
        for (const char c : piece) add(byte_ids_[static_cast<unsigned char>(c)], 1);
        continue;
      }
    }
    if (unk_id_.has_value()) {
      if (pending_unk_len > 0 && options_.fuse_unk) {
        pending_unk_len += char_len;
      } else {
        if (pending_unk_len > 0) add(*unk_id_, pending_unk_len);
        pending_unk_len = char_len;
      }
    }
  }
  if (pending_unk_len > 0) add(*unk_id_, pending_unk_len);

  std::priority_queue<Candidate> queue;
  auto push_pair = [&](int32_t left) {
    const int32_t right = symbols[static_cast<size_t>(left)].next;
    if (right < 0) return;
    const auto it = merges_.find(
        PairKey(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, left, it->second.new_id});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) push_pair(static_cast<int32_t>(i));
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (left.len == 0 || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    const auto it = merges_.find(PairKey(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale candidate
    left.id = top.new_id;
    left.len += right.len;
    left.next = right.next;
    right.len = 0;
    if (left.next >= 0) symbols[static_cast<size_t>(left.next)].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (s.len > 0) out.push_back(s.id);
  }
}

absl::StatusOr<std::unique_ptr<BpeModel>> ParseBpeModel(const Json& spec, std::string_view path) {
  if (!spec.is_object()) return json_util::Expected(path, "an object");
  auto type = json_util::GetOptionalString(spec, "type", path);
  if (!type.ok()) return type.status();
  if (type->has_value() && **type != "BPE") {
    return absl::InvalidArgumentError(absl::StrCat(json_util::Child(path, "type"),
                                                   ": unsupported model type '", **type,
                                                   "' (supported: BPE)"));
  }
  if (!type->has_value() && json_util::Find(spec, "merges") == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(path), ": model has no type and no merges (only BPE models are supported)"));
  }
  if (const Json* dropout = json_util::Find(spec, "dropout");
      dropout != nullptr && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        json_util::Child(path, "dropout"), ": BPE dropout is a training feature and unsupported"));
  }
  BpeOptions options;
  auto unk = json_util::GetOptionalString(spec, "unk_token", path);
  if (!unk.ok()) return unk.status();
  options.unk_token = *unk;
  auto prefix = json_util::GetOptionalString(spec, "continuing_subword_prefix", path);
  if (!prefix.ok()) return prefix.status();
  options.continuing_subword_prefix = *prefix;
  auto suffix = json_util::GetOptionalString(spec, "end_of_word_suffix", path);
  if (!suffix.ok()) return suffix.status();
  options.end_of_word_suffix = *suffix;
  auto fuse_unk = json_util::GetBool(spec, "fuse_unk", path, false);
  if (!fuse_unk.ok()) return fuse_unk.status();
  options.fuse_unk = *fuse_unk;
  auto byte_fallback = json_util::GetBool(spec, "byte_fallback", path, false);
  if (!byte_fallback.ok()) return byte_fallback.status();
  options.byte_fallback = *byte_fallback;
  auto ignore_merges = json_util::GetBool(spec, "ignore_merges", path, false);
  if (!ignore_merges.ok()) return ignore_merges.status();
  options.ignore_merges = *ignore_merges;

  const std::string vocab_path = json_util::Child(path, "vocab");
  const Json* vocab_json = json_util::Find(spec, "vocab");
  if (vocab_json == nullptr || !vocab_json->is_object()) {
    return json_util::Expected(vocab_path, "an object of token -> id");
  }
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(vocab_json->size());
  for (const auto& [token, id_json] : vocab_json->items()) {
    auto id = json_util::ToTokenId(id_json, json_util::Child(vocab_path, token));
    if (!id.ok()) return id.status();
    vocab.emplace_back(token, *id);
  }

  const std::string merges_path = json_util::Child(path, "merges");
  std::vector<std::pair<std::string, std::string>> merges;
  if (const Json* merges_json = json_util::Find(spec, "merges"); merges_json != nullptr) {
    if (!merges_json->is_array()) return json_util::Expected(merges_path, "an array");
    merges.reserve(merges_json->size());
    for (size_t i = 0; i < merges_json->size(); ++i) {
      const Json& m = (*merges_json)[i];
      if (m.is_string()) {  // legacy "left right"
        const auto& s = m.get_ref<const std::string&>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
          return json_util::Expected(json_util::Index(merges_path, i),
                                     "\"left right\" (exactly one space)");
        }
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return json_util::Expected(json_util::Index(merges_path, i),
                                   "a merge: \"left right\" or [\"left\", \"right\"]");
      }
    }
  }
  auto model = BpeModel::Create(std::move(vocab), merges, std::move(options));
  if (!model.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(path), ": ", model.status().message()));
  }
  return model;
}

}  // namespace headroom::router
