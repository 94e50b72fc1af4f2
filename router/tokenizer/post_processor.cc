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

absl::Status ParseTemplate(const Json& spec, std::string_view path, SpecialTokenWrap& wrap) {
  const Json* single = json_util::Find(spec, "single");
  const std::string single_path = json_util::Child(path, "single");
  if (single == nullptr) return json_util::Expected(single_path, "a template");
  // Items are either {"SpecialToken": {"id": name}} / {"Sequence": {"id": "A"}} objects or, in
  // the string form, "<s>:0 $A:0" words.
  std::vector<std::pair<bool, std::string>> items;  // (is_sequence, special name)
  if (single->is_string()) {
    for (absl::string_view word :
         absl::StrSplit(single->get_ref<const std::string&>(), ' ', absl::SkipEmpty())) {
      const size_t colon = word.rfind(':');
      if (colon != absl::string_view::npos && colon > 0) word = word.substr(0, colon);
      items.emplace_back(absl::StartsWith(word, "$"), std::string(word));
    }
  } else if (single->is_array()) {
    for (size_t i = 0; i < single->size(); ++i) {
      const Json& item = (*single)[i];
      const std::string item_path = json_util::Index(single_path, i);
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
  } else {
    return json_util::Expected(single_path, "a template array or string");
  }
  bool seen_sequence = false;
  for (const auto& [is_sequence, name] : items) {
    if (is_sequence) {
      seen_sequence = true;
      continue;
    }
    auto ids = TemplateSpecialIds(spec, name, path);
    if (!ids.ok()) return ids.status();
    auto& target = seen_sequence ? wrap.suffix : wrap.prefix;
    target.insert(target.end(), ids->begin(), ids->end());
  }
  return absl::OkStatus();
}

// BertProcessing / RobertaProcessing: {"cls": [token, id], "sep": [token, id]}.
absl::Status ParseClsSep(const Json& spec, std::string_view path, SpecialTokenWrap& wrap) {
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
  return absl::OkStatus();
}

absl::Status Parse(const Json& spec, std::string_view path, SpecialTokenWrap& wrap) {
  if (spec.is_null()) return absl::OkStatus();
  auto type = json_util::GetString(spec, "type", path);
  if (!type.ok()) return type.status();
  if (*type == "ByteLevel") return absl::OkStatus();  // only adjusts offsets
  if (*type == "BertProcessing" || *type == "RobertaProcessing") {
    SpecialTokenWrap inner;
    if (absl::Status s = ParseClsSep(spec, path, inner); !s.ok()) return s;
    wrap.prefix.insert(wrap.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
    wrap.suffix.insert(wrap.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    return absl::OkStatus();
  }
  if (*type == "TemplateProcessing") {
    SpecialTokenWrap inner;
    if (absl::Status s = ParseTemplate(spec, path, inner); !s.ok()) return s;
    wrap.prefix.insert(wrap.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
    wrap.suffix.insert(wrap.suffix.end(), inner.suffix.begin(), inner.suffix.end());
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
