#include "router/tokenizer/tokenizer_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router {
namespace {

using json_util::Json;

// A special token is a string, null, or an AddedToken object {"content": ..., ...}.
absl::StatusOr<std::optional<std::string>> TokenString(const Json& config, std::string_view key) {
  const Json* v = json_util::Find(config, key);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (v->is_string()) return std::optional<std::string>(v->get<std::string>());
  if (v->is_object()) {
    auto content = json_util::GetString(*v, "content", key);
    if (!content.ok()) return content.status();
    return std::optional<std::string>(*content);
  }
  return json_util::Expected(key, "a token string, an AddedToken object or null");
}

absl::StatusOr<std::optional<bool>> OptionalBool(const Json& config, std::string_view key) {
  const Json* v = json_util::Find(config, key);
  if (v == nullptr || v->is_null()) return std::optional<bool>();
  if (!v->is_boolean()) return json_util::Expected(key, "true or false");
  return std::optional<bool>(v->get<bool>());
}

}  // namespace

absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view text,
                                                     std::string_view source) {
  auto parsed = json_util::Parse(text, source);
  if (!parsed.ok()) return parsed.status();
  const Json& config = *parsed;
  auto fail = [&](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", s.message()));
  };
  if (!config.is_object()) return fail(json_util::Expected("(root)", "an object"));
  TokenizerConfig out;
  for (auto [key, field] :
       {std::pair<const char*, std::optional<std::string>*>{"bos_token", &out.bos_token},
        {"eos_token", &out.eos_token},
        {"unk_token", &out.unk_token},
        {"pad_token", &out.pad_token}}) {
    auto value = TokenString(config, key);
    if (!value.ok()) return fail(value.status());
    *field = *value;
  }
  for (auto [key, field] :
       {std::pair<const char*, std::optional<bool>*>{"add_bos_token", &out.add_bos_token},
        {"add_eos_token", &out.add_eos_token},
        {"clean_up_tokenization_spaces", &out.clean_up_tokenization_spaces}}) {
    auto value = OptionalBool(config, key);
    if (!value.ok()) return fail(value.status());
    *field = *value;
  }
  if (const Json* t = json_util::Find(config, "chat_template"); t != nullptr && !t->is_null()) {
    if (t->is_string()) {
      out.chat_template = t->get<std::string>();
    } else if (t->is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (size_t i = 0; i < t->size(); ++i) {
        const std::string p = json_util::Index("chat_template", i);
        auto name = json_util::GetString((*t)[i], "name", p);
        if (!name.ok()) return fail(name.status());
        auto body = json_util::GetString((*t)[i], "template", p);
        if (!body.ok()) return fail(body.status());
        if (*name == "default") out.chat_template = *body;
        out.named_chat_templates.emplace_back(*name, *body);
      }
    } else {
      return fail(json_util::Expected("chat_template", "a string or a list of named templates"));
    }
  }
  if (const Json* m = json_util::Find(config, "model_max_length"); m != nullptr) {
    // transformers writes a huge float (1e30) when there is no limit.
    if (m->is_number_integer()) {
      out.model_max_length = m->get<int64_t>();
    } else if (m->is_number_float() && std::isfinite(m->get<double>()) &&
               m->get<double>() < 9.0e18) {
      out.model_max_length = static_cast<int64_t>(m->get<double>());
    }
  }
  if (const Json* c = json_util::Find(config, "tokenizer_class"); c != nullptr && c->is_string()) {
    out.tokenizer_class = c->get<std::string>();
  }
  return out;
}

}  // namespace headroom::router
