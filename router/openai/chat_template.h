// Chat templates: the model's own Jinja template (chat_template.jinja or tokenizer_config.json's
// chat_template) rendered by headroom's Jinja interpreter (router/jinja) with what transformers'
// apply_chat_template passes it: messages, add_generation_prompt, the special token strings
// (bos_token, eos_token, unk_token, pad_token), and a request's chat_template_kwargs. Tests compare
// renders byte for byte with transformers for real models' templates
// (tests/router/openai/fixtures/jinja_chat_templates.json, scripts/gen_jinja_fixtures.py).
//
// Two templates are built in, for models without one and for --chat-template chatml|llama3:
//   chatml  Qwen2-Instruct's template: "<|im_start|>{role}\n{content}<|im_end|>\n" per message,
//           after a "You are a helpful assistant." system message when the first is not one.
//   llama3  Meta-Llama-3-8B-Instruct's: bos_token + "<|start_header_id|>{role}<|end_header_id|>
//           \n\n" + content|trim + "<|eot_id|>" per message.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "router/jinja/template.h"
#include "router/openai/content_format.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router::openai {

enum class ChatFormat { kChatML, kLlama3 };

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  // The content's text parts: a string content is one, null content none.
  std::vector<std::string> parts = {};
  // More members the template sees, in order: tool_calls (arguments parsed), tool_call_id, name.
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();

  // The content as one string: the parts joined with "\n", as vLLM joins them ("" for none).
  std::string Text() const;
};

// The special token strings a template may print; unset ones are undefined in the template.
struct ChatTemplateTokens {
  std::optional<std::string> bos_token = {};
  std::optional<std::string> eos_token = {};
  std::optional<std::string> unk_token = {};
  std::optional<std::string> pad_token = {};
};

class ChatTemplate {
 public:
  // Parses a Jinja chat template: InvalidArgument "chat template line N: ..." when it does not
  // parse or uses what headroom's interpreter lacks (include, an unknown filter...).
  static absl::StatusOr<ChatTemplate> Create(std::string_view source, ChatTemplateTokens tokens);
  // One of the built-in templates.
  static ChatTemplate Builtin(ChatFormat format, ChatTemplateTokens tokens);

  // The prompt text. `tools` is the request's tools (ToolRequest::tools, an empty array
  // included; null: None, as apply_chat_template passes no tools). `kwargs` (an object or null: a
  // request's chat_template_kwargs) are variables over add_generation_prompt, tools and the special
  // tokens, as in vLLM; `messages` is always the request's. Errors are InvalidArgument with the
  // template's message and line (a template's raise_exception("Conversation roles must
  // alternate...")), or ResourceExhausted when the render exceeds the interpreter's bounds.
  // `options` bound the render and can fix strftime_now's clock (tests).
  absl::StatusOr<std::string> Render(const std::vector<ChatMessage>& messages,
                                     bool add_generation_prompt,
                                     const nlohmann::ordered_json& tools = nullptr,
                                     const nlohmann::ordered_json& kwargs = nullptr,
                                     const jinja::RenderOptions& options = {}) const;

  // vLLM's continue_final_message, as transformers' apply_chat_template does it: the final
  // message is left open for the model to continue (an assistant reply's first words, given by
  // the client). The messages are rendered without a generation prompt, the final one's content
  // followed by a sentinel, and the text is cut where the sentinel starts; where the template
  // trimmed the content (the sentinel's trailing space is gone), trailing whitespace is dropped
  // too. InvalidArgument when there are no messages or the template drops the final message's
  // text.
  absl::StatusOr<std::string> RenderContinuingFinalMessage(
      std::vector<ChatMessage> messages, const nlohmann::ordered_json& tools = nullptr,
      const nlohmann::ordered_json& kwargs = nullptr,
      const jinja::RenderOptions& options = {}) const;

  // The token that ends an assistant turn when the template writes a known one ("<|im_end|>",
  // "<|eot_id|>", "<end_of_turn>", "<|end|>"). A checkpoint's eos_token may be another one
  // (Llama-3-Instruct's is <|end_of_text|>), so a chat reply also stops on this token.
  const std::optional<std::string>& end_of_turn() const { return end_of_turn_; }
  // The special token strings it prints.
  const ChatTemplateTokens& tokens() const { return tokens_; }

  // How message content reaches the template: what DetectContentFormat found in it, until
  // set_content_format (--chat-template-content-format string|openai) says otherwise. Found
  // (auto), a tool result's content stays one string: templates' tool branches are written for
  // a string, and several print a part list's Python repr in its place (docs/router.md).
  ContentFormat detected_content_format() const { return detected_format_; }
  ContentFormat content_format() const { return given_format_.value_or(detected_format_); }
  void set_content_format(ContentFormat format);

  // A model may have several templates (tokenizer_config.json's list of {name, template}, or
  // additional_chat_templates/NAME.jinja beside chat_template.jinja): this one is its "default",
  // the others are kept here by name, and set_content_format holds for them too. As transformers'
  // get_chat_template picks one (and vLLM through it): a request that gives tools renders with
  // "tool_use" when there is one (Hermes 2 Pro / 3, Command R), and a request's own
  // chat_template may name one ("rag").
  void AddNamed(std::string name, ChatTemplate t);
  const ChatTemplate* Named(std::string_view name) const;
  const ChatTemplate& ForRequest(bool gives_tools) const;
  const std::vector<std::pair<std::string, ChatTemplate>>& named() const { return named_; }

 private:
  ChatTemplate(jinja::Template t, ChatTemplateTokens tokens, std::optional<std::string> eot);

  // Whether a message's content reaches the template as a list of parts; else one string.
  bool AsParts(const ChatMessage& m) const;
  // A message's content as the template gets it.
  jinja::Value Content(const ChatMessage& m) const;

  jinja::Template template_;
  ChatTemplateTokens tokens_;
  std::optional<std::string> end_of_turn_;
  ContentFormat detected_format_;
  std::optional<ContentFormat> given_format_;  // set_content_format's
  std::vector<std::pair<std::string, ChatTemplate>> named_;
};

// A tokenizer directory's template, found as transformers finds it: chat_template.jinja and
// additional_chat_templates/NAME.jinja when present (what transformers saves since 4.43; they
// replace the config's entry), else tokenizer_config.json's "chat_template" (a string, or a list
// of {name, template}); the "default" one, with the others by name (AddNamed), rendered with the
// config's special tokens. nullopt when there is no default; InvalidArgument for a malformed file
// or a template that does not parse (the message names the file).
absl::StatusOr<std::optional<ChatTemplate>> LoadChatTemplate(const std::string& tokenizer_dir);

// --chat-template's value: "chatml" / "llama3" (built in), else a path to a Jinja file, else
// (when it holds "{{" or "{%") the template itself, as vLLM's --chat-template takes it.
absl::StatusOr<ChatTemplate> ChatTemplateFromFlag(std::string_view value,
                                                  ChatTemplateTokens tokens);

// The tokenizer's BOS and EOS strings, for a template that comes without tokenizer_config.json's
// (a built-in one, --chat-template's, a request's).
ChatTemplateTokens TokenizerSpecialTokens(const Tokenizer& tokenizer);

// "chatml" or "llama3".
absl::StatusOr<ChatFormat> ParseChatFormatName(std::string_view name);
std::string_view ChatFormatName(ChatFormat format);

}  // namespace headroom::router::openai
