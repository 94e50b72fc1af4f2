#include "router/tokenizer/post_processor.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router {
namespace {

using json_util::Json;

// The ids of a TemplateProcessing special token name ("<s>").
absl::StatusOr<std::vector<int32_t>> TemplateSpecialIds(const Json& spec, const std::string& name,
                                                        std::string_view path) {
  const Json* specials = json_util::Find(spec, "special_tokens");
  const Json* entry = specials == nullptr ? nullptr : json_util::Find(*specials, name);
  const std::string entry_path = json_util::Child(json_util::Child(path, "special_tokens"), name);
  if (entry == nullptr) return json_util::Expected(entry_path, "an entry for this template token");
  const Json* ids = json_util::Find(*entry, "ids");
  if (ids == nullptr || !ids->is_array()) {
    return json_util::Expected(json_util::Child(entry_path, "ids"), "an array of ids");
  }
  std::vector<int32_t> out;
  for (size_t i = 0; i < ids->size(); ++i) {
    auto id =
        json_util::ToTokenId((*ids)[i], json_util::Index(json_util::Child(entry_path, "ids"), i));
    if (!id.ok()) return id.status();
    out.push_back(*id);
  }
  return out;
}

// A template's items in order: (true, "") for a sequence ($A, $B), (false, name) for a special
// token. Items are either {"SpecialToken": {"id": name}} / {"Sequence": {"id": "A"}} objects or,
// in the string form, "<s>:0 $A:0" words.
absl::StatusOr<std::vector<std::pair<bool, std::string>>> TemplateItems(const Json& tmpl,
                                                                        const std::string& path) {
  std::vector<std::pair<bool, std::string>> items;
  if (tmpl.is_string()) {
    for (absl::string_view word :
         absl::StrSplit(tmpl.get_ref<const std::string&>(), ' ', absl::SkipEmpty())) {
      const size_t colon = word.rfind(':');
      if (colon != absl::string_view::npos && colon > 0) word = word.substr(0, colon);
      const bool sequence = absl::StartsWith(word, "$");
      items.emplace_back(sequence, sequence ? "" : std::string(word));
    }
    return items;
  }
  if (!tmpl.is_array()) return json_util::Expected(path, "a template array or string");
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const Json& item = tmpl[i];
    const std::string item_path = json_util::Index(path, i);
    if (const Json* s = json_util::Find(item, "SpecialToken"); s != nullptr) {
      auto name = json_util::GetString(*s, "id", json_util::Child(item_path, "SpecialToken"));
      if (!name.ok()) return name.status();
      items.emplace_back(false, *name);
    } else if (json_util::Find(item, "Sequence") != nullptr) {
      items.emplace_back(true, "");
    } else {
      return json_util::Expected(item_path, "{\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
  }
  return items;
}

// The special tokens of `items` split at its sequences into parts.size() runs (before the first
// sequence, between, after); false when the template has another number of sequences.
absl::StatusOr<bool> SplitTemplate(const Json& spec, std::string_view path,
                                   const std::vector<std::pair<bool, std::string>>& items,
                                   std::vector<std::vector<int32_t>*> parts) {
  size_t part = 0;
  for (const auto& [is_sequence, name] : items) {
    if (is_sequence) {
      if (++part >= parts.size()) return false;
      continue;
    }
    auto ids = TemplateSpecialIds(spec, name, path);
    if (!ids.ok()) return ids.status();
    parts[part]->insert(parts[part]->end(), ids->begin(), ids->end());
  }
  return part + 1 == parts.size();
}

absl::Status ParseTemplate(const Json& spec, std::string_view path, SpecialTokenWrap& wrap) {
  const Json* single = json_util::Find(spec, "single");
  const std::string single_path = json_util::Child(path, "single");
  if (single == nullptr) return json_util::Expected(single_path, "a template");
  auto items = TemplateItems(*single, single_path);
  if (!items.ok()) return items.status();
  // A single template with no sequence puts everything before it, as before.
  auto split = SplitTemplate(spec, path, *items, {&wrap.prefix, &wrap.suffix});
  if (!split.ok()) return split.status();
  // The pair template (tokenizers' `pair`; optional, and encoding a pair without one fails). One
  // that cannot be read leaves pairs unsupported rather than the tokenizer unloadable: single
  // texts never use it.
  wrap.pair_supported = false;
  const Json* pair = json_util::Find(spec, "pair");
  if (pair == nullptr) return absl::OkStatus();
  auto pair_items = TemplateItems(*pair, json_util::Child(path, "pair"));
  if (!pair_items.ok()) return absl::OkStatus();
  auto pair_split = SplitTemplate(spec, path, *pair_items,
                                  {&wrap.pair_prefix, &wrap.pair_middle, &wrap.pair_suffix});
  wrap.pair_supported = pair_split.ok() && *pair_split;
  return absl::OkStatus();
}

// BertProcessing / RobertaProcessing: {"cls": [token, id], "sep": [token, id]}.
absl::Status ParseClsSep(const Json& spec, std::string_view path, bool roberta,
                         SpecialTokenWrap& wrap) {
  for (const char* key : {"cls", "sep"}) {
    const Json* pair = json_util::Find(spec, key);
    const std::string p = json_util::Child(path, key);
    if (pair == nullptr || !pair->is_array() || pair->size() != 2) {
      return json_util::Expected(p, "[token, id]");
    }
    auto id = json_util::ToTokenId((*pair)[1], json_util::Index(p, 1));
    if (!id.ok()) return id.status();
    (std::string_view(key) == "cls" ? wrap.prefix : wrap.suffix).push_back(*id);
  }
  // [CLS] A [SEP] B [SEP]; RoBERTa doubles the separator between: <s> A </s></s> B </s>.
  wrap.pair_prefix = wrap.prefix;
  wrap.pair_middle = wrap.suffix;
  if (roberta)
    wrap.pair_middle.insert(wrap.pair_middle.end(), wrap.suffix.begin(), wrap.suffix.end());
  wrap.pair_suffix = wrap.suffix;
  wrap.pair_supported = true;
  return absl::OkStatus();
}

// A later processor (of a Sequence) wraps what the earlier ones add: `inner`'s tokens go outside
// `wrap`'s. A pair takes the tokens of one processor's pair template; two that both add some
// are not composed (pair_supported false), nor is one without a pair template.
void AddWrap(const SpecialTokenWrap& inner, SpecialTokenWrap& wrap) {
  wrap.prefix.insert(wrap.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
  wrap.suffix.insert(wrap.suffix.end(), inner.suffix.begin(), inner.suffix.end());
  const auto adds = [](const SpecialTokenWrap& w) {
    return !w.pair_prefix.empty() || !w.pair_middle.empty() || !w.pair_suffix.empty();
  };
  if (adds(inner) && adds(wrap)) wrap.pair_supported = false;
  if (adds(inner)) {
    wrap.pair_prefix = inner.pair_prefix;
    wrap.pair_middle = inner.pair_middle;
    wrap.pair_suffix = inner.pair_suffix;
  }
  wrap.pair_supported = wrap.pair_supported && inner.pair_supported;
}

absl::Status Parse(const Json& spec, std::string_view path, SpecialTokenWrap& wrap) {
  if (spec.is_null()) return absl::OkStatus();
  auto type = json_util::GetString(spec, "type", path);
  if (!type.ok()) return type.status();
  if (*type == "ByteLevel") return absl::OkStatus();  // only adjusts offsets
  if (*type == "BertProcessing" || *type == "RobertaProcessing") {
    SpecialTokenWrap inner;
    if (absl::Status s = ParseClsSep(spec, path, *type == "RobertaProcessing", inner); !s.ok()) {
      return s;
    }
    AddWrap(inner, wrap);
    return absl::OkStatus();
  }
  if (*type == "TemplateProcessing") {
    SpecialTokenWrap inner;
    if (absl::Status s = ParseTemplate(spec, path, inner); !s.ok()) return s;
    AddWrap(inner, wrap);
    return absl::OkStatus();
  }
  if (*type == "Sequence") {
    const Json* list = json_util::Find(spec, "processors");
    const std::string list_path = json_util::Child(path, "processors");
    if (list == nullptr || !list->is_array()) return json_util::Expected(list_path, "an array");
    for (size_t i = 0; i < list->size(); ++i) {
      if (absl::Status s = Parse((*list)[i], json_util::Index(list_path, i), wrap); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Sv(path), ": unsupported post-processor '", *type,
                   "' (supported: TemplateProcessing, ByteLevel, BertProcessing, "
                   "RobertaProcessing, Sequence)"));
}

}  // namespace

absl::StatusOr<SpecialTokenWrap> ParsePostProcessor(const Json& spec, std::string_view path) {
  SpecialTokenWrap wrap;
  if (absl::Status s = Parse(spec, path, wrap); !s.ok()) return s;
  return wrap;
}

}  // namespace headroom::router
