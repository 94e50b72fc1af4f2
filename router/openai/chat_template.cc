#include "router/openai/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "router/jinja/text.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/tokenizer_config.h"

namespace headroom::router::openai {
namespace {

// Qwen/Qwen2-7B-Instruct's tokenizer_config.json chat_template.
constexpr std::string_view kChatMLTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// meta-llama/Meta-Llama-3-8B-Instruct's tokenizer_config.json chat_template.
constexpr std::string_view kLlama3Template =
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}";

// Turn-ending tokens of the common template families, in the order they are looked for.
constexpr std::string_view kEndOfTurnTokens[] = {"<|im_end|>", "<|eot_id|>", "<end_of_turn>",
                                                 "<|end|>"};

std::optional<std::string> FindEndOfTurn(std::string_view source) {
  for (std::string_view token : kEndOfTurnTokens) {
    if (source.find(token) != std::string_view::npos) return std::string(token);
  }
  return std::nullopt;
}

void SetToken(jinja::Dict& vars, const char* name, const std::optional<std::string>& token) {
  if (token.has_value()) vars.Set(name, jinja::Value::String(*token));
}

}  // namespace

std::string ChatMessage::Text() const { return absl::StrJoin(parts, "\n"); }

ChatTemplate::ChatTemplate(jinja::Template t, ChatTemplateTokens tokens,
                           std::optional<std::string> eot)
    : template_(std::move(t)),
      tokens_(std::move(tokens)),
      end_of_turn_(std::move(eot)),
      detected_format_(DetectContentFormat(template_.body())) {}

void ChatTemplate::set_content_format(ContentFormat format) {
  given_format_ = format;
  for (auto& [name, t] : named_) t.set_content_format(format);
}

void ChatTemplate::AddNamed(std::string name, ChatTemplate t) {
  if (given_format_.has_value()) t.set_content_format(*given_format_);
  named_.emplace_back(std::move(name), std::move(t));
}

const ChatTemplate* ChatTemplate::Named(std::string_view name) const {
  // A model with named templates calls this one "default"; one without names none.
  if (name == "default" && !named_.empty()) return this;
  for (const auto& [n, t] : named_) {
    if (n == name) return &t;
  }
  return nullptr;
}

const ChatTemplate& ChatTemplate::ForRequest(bool gives_tools) const {
  const ChatTemplate* tool_use = gives_tools ? Named("tool_use") : nullptr;
  return tool_use != nullptr ? *tool_use : *this;
}

bool ChatTemplate::AsParts(const ChatMessage& m) const {
  return content_format() == ContentFormat::kOpenAI &&
         (given_format_.has_value() || m.role != "tool");
}

jinja::Value ChatTemplate::Content(const ChatMessage& m) const {
  if (!AsParts(m)) return jinja::Value::String(m.Text());
  jinja::List parts;
  parts.reserve(m.parts.size());
  for (const std::string& text : m.parts) {
    jinja::Dict part;
    part.Set("type", jinja::Value::String("text"));
    part.Set("text", jinja::Value::String(text));
    parts.push_back(jinja::Value::MakeDict(std::move(part)));
  }
  return jinja::Value::MakeList(std::move(parts));
}

absl::StatusOr<ChatTemplate> ChatTemplate::Create(std::string_view source,
                                                  ChatTemplateTokens tokens) {
  absl::StatusOr<jinja::Template> parsed = jinja::Template::Parse(source);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("chat template ", parsed.status().message()));
  }
  return ChatTemplate(*std::move(parsed), std::move(tokens), FindEndOfTurn(source));
}

ChatTemplate ChatTemplate::Builtin(ChatFormat format, ChatTemplateTokens tokens) {
  absl::StatusOr<ChatTemplate> t =
      Create(format == ChatFormat::kChatML ? kChatMLTemplate : kLlama3Template, std::move(tokens));
  return *std::move(t);  // both parse: tests render them against transformers
}

absl::StatusOr<std::string> ChatTemplate::RenderContinuingFinalMessage(
    std::vector<ChatMessage> messages, const nlohmann::ordered_json& tools,
    const nlohmann::ordered_json& kwargs, const jinja::RenderOptions& options) const {
  if (messages.empty()) {
    return absl::InvalidArgumentError(
        "continue_final_message is set but there are no messages to continue");
  }
  // transformers' sentinel, its trailing space included: whether it survives tells whether the
  // template trimmed the content.
  constexpr std::string_view kTag = "CONTINUE_FINAL_MESSAGE_TAG ";
  // The text continued: the last part of content given as parts, else the one string.
  ChatMessage& last = messages.back();
  if (!AsParts(last)) {
    last.parts = {last.Text()};
  } else if (last.parts.empty()) {
    return absl::InvalidArgumentError(
        "continue_final_message is set but we could not find any text to continue in the final "
        "message!");
  }
  const std::string final_text(jinja::text::Strip(last.parts.back(), nullptr));
  last.parts.back() += kTag;
  HR_ASSIGN_OR_RETURN(std::string rendered,
                      Render(messages, /*add_generation_prompt=*/false, tools, kwargs, options));
  const std::string_view bare_tag = kTag.substr(0, kTag.size() - 1);
  const size_t tag_at = rendered.rfind(bare_tag);
  if (rendered.find(final_text) == std::string::npos || tag_at == std::string::npos) {
    return absl::InvalidArgumentError(
        "continue_final_message is set but the final message does not appear in the chat after "
        "applying the chat template (the template drops part of it), so it cannot be continued");
  }
  if (std::string_view(rendered).substr(tag_at, kTag.size()) == kTag) {
    rendered.resize(tag_at);  // the template keeps the content as it is
    return rendered;
  }
  return std::string(jinja::text::RStrip(std::string_view(rendered).substr(0, tag_at), nullptr));
}

absl::StatusOr<std::string> ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                                 bool add_generation_prompt,
                                                 const nlohmann::ordered_json& tools,
                                                 const nlohmann::ordered_json& kwargs,
                                                 const jinja::RenderOptions& options) const {
  jinja::Dict vars;
  SetToken(vars, "bos_token", tokens_.bos_token);
  SetToken(vars, "eos_token", tokens_.eos_token);
  SetToken(vars, "unk_token", tokens_.unk_token);
  SetToken(vars, "pad_token", tokens_.pad_token);
  vars.Set("add_generation_prompt", jinja::Value::Bool(add_generation_prompt));
  // apply_chat_template passes tools (an empty list too) as given and None without them;
  // documents are None unless a kwarg gives them.
  vars.Set("tools", tools.is_array() ? jinja::Value::FromJson(tools) : jinja::Value::None());
  vars.Set("documents", jinja::Value::None());
  if (kwargs.is_object()) {
    for (const auto& [key, value] : kwargs.items()) {
      vars.Set(key, jinja::Value::FromJson(value));
    }
  }
  jinja::List list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    jinja::Dict message;
    message.Set("role", jinja::Value::String(m.role));
    message.Set("content", Content(m));
    for (const auto& [key, value] : m.fields.items()) {
      message.Set(key, jinja::Value::FromJson(value));
    }
    list.push_back(jinja::Value::MakeDict(std::move(message)));
  }
  vars.Set("messages", jinja::Value::MakeList(std::move(list)));
  absl::StatusOr<std::string> out = template_.Render(std::move(vars), options);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("chat template ", out.status().message()));
  }
  return out;
}

absl::StatusOr<std::optional<ChatTemplate>> LoadChatTemplate(const std::string& tokenizer_dir) {
  // A template's name, text, and where it was read (for errors).
  struct Source {
    std::string name;
    std::string text;
    std::string where;
  };
  std::vector<Source> sources;
  const std::string config_path = tokenizer_dir + "/tokenizer_config.json";
  ChatTemplateTokens tokens;
  absl::StatusOr<std::string> text = json_util::ReadFile(config_path);
  if (text.ok()) {
    absl::StatusOr<TokenizerConfig> config = ParseTokenizerConfig(*text, config_path);
    if (!config.ok()) return config.status();
    tokens = {.bos_token = config->bos_token,
              .eos_token = config->eos_token,
              .unk_token = config->unk_token,
              .pad_token = config->pad_token};
    if (config->named_chat_templates.empty() && config->chat_template.has_value()) {
      sources.push_back({"default", *config->chat_template, config_path});
    }
    for (const auto& [name, body] : config->named_chat_templates) {
      sources.push_back({name, body, absl::StrCat(config_path, " (chat template \"", name, "\")")});
    }
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }
  // The files, when there are any, replace the config's entries (as transformers loads them).
  std::vector<Source> files;
  const std::string jinja_path = tokenizer_dir + "/chat_template.jinja";
  absl::StatusOr<std::string> jinja_text = json_util::ReadFile(jinja_path);
  if (jinja_text.ok()) {
    files.push_back({"default", *std::move(jinja_text), jinja_path});
  } else if (!absl::IsNotFound(jinja_text.status())) {
    return jinja_text.status();
  }
  std::error_code ec;
  std::vector<std::filesystem::path> extra;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(tokenizer_dir) / "additional_chat_templates", ec)) {
    if (entry.path().extension() == ".jinja") extra.push_back(entry.path());
  }
  std::sort(extra.begin(), extra.end());
  for (const std::filesystem::path& path : extra) {
    HR_ASSIGN_OR_RETURN(std::string body, json_util::ReadFile(path.string()));
    files.push_back({path.stem().string(), std::move(body), path.string()});
  }
  if (!files.empty()) sources = std::move(files);
  if (sources.empty()) return std::optional<ChatTemplate>();
  const auto is_default = [](const Source& s) { return s.name == "default"; };
  const auto default_source = std::find_if(sources.begin(), sources.end(), is_default);
  if (default_source == sources.end()) {
    std::vector<std::string> names;
    for (const Source& s : sources) names.push_back(s.name);
    return absl::InvalidArgumentError(
        absl::StrCat(tokenizer_dir, " has chat templates named ", absl::StrJoin(names, ", "),
                     " but none named \"default\", which renders chat requests"));
  }
  const auto create = [&tokens](const Source& s) -> absl::StatusOr<ChatTemplate> {
    absl::StatusOr<ChatTemplate> t = ChatTemplate::Create(s.text, tokens);
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(s.where, ": ", t.status().message()));
    }
    return t;
  };
  HR_ASSIGN_OR_RETURN(ChatTemplate chat_template, create(*default_source));
  for (const Source& s : sources) {
    if (is_default(s)) continue;
    HR_ASSIGN_OR_RETURN(ChatTemplate named, create(s));
    chat_template.AddNamed(s.name, std::move(named));
  }
  return std::optional<ChatTemplate>(std::move(chat_template));
}

absl::StatusOr<ChatTemplate> ChatTemplateFromFlag(std::string_view value,
                                                  ChatTemplateTokens tokens) {
  if (absl::StatusOr<ChatFormat> format = ParseChatFormatName(value); format.ok()) {
    return ChatTemplate::Builtin(*format, std::move(tokens));
  }
  const std::string path(value);
  absl::StatusOr<std::string> file = json_util::ReadFile(path);
  if (file.ok()) {
    absl::StatusOr<ChatTemplate> t = ChatTemplate::Create(*file, std::move(tokens));
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", t.status().message()));
    }
    return t;
  }
  if (value.find("{{") != std::string_view::npos || value.find("{%") != std::string_view::npos) {
    return ChatTemplate::Create(value, std::move(tokens));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--chat-template \"", Sv(value), "\" is not chatml, llama3, none, auto, a readable file (",
      file.status().message(), ") or a Jinja template"));
}

ChatTemplateTokens TokenizerSpecialTokens(const Tokenizer& tokenizer) {
  ChatTemplateTokens tokens;
  if (const std::optional<int32_t> bos = tokenizer.bos_token_id()) {
    tokens.bos_token = tokenizer.IdToToken(*bos);
  }
  if (const std::optional<int32_t> eos = tokenizer.eos_token_id()) {
    tokens.eos_token = tokenizer.IdToToken(*eos);
  }
  return tokens;
}

absl::StatusOr<ChatFormat> ParseChatFormatName(std::string_view name) {
  if (name == "chatml") return ChatFormat::kChatML;
  if (name == "llama3") return ChatFormat::kLlama3;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown chat format \"", Sv(name), "\" (built in: chatml, llama3)"));
}

std::string_view ChatFormatName(ChatFormat format) {
  switch (format) {
    case ChatFormat::kChatML:
      return "chatml";
    case ChatFormat::kLlama3:
      return "llama3";
  }
  return "unknown";
}

}  // namespace headroom::router::openai
