// Chat formats: the two chat templates headroom renders natively instead of running Jinja.
// RenderChat produces byte for byte what transformers' apply_chat_template(..., tokenize=False)
// produces for the reference templates (tests/router/openai/fixtures/chat_templates.json, made by
// scripts/gen_chat_template_fixtures.py):
//   kChatML  Qwen2-Instruct: "<|im_start|>{role}\n{content}<|im_end|>\n" per message, preceded by
//            a "You are a helpful assistant." system message when the first message is not one.
//   kLlama3  Meta-Llama-3-8B-Instruct: bos_token + "<|start_header_id|>{role}<|end_header_id|>\n\n"
//            + trim(content) + "<|eot_id|>" per message (bos only on the first).
// A template that is neither is never rendered approximately: DetectChatFormat refuses it, and
// the router then answers chat requests with a 400 naming the supported formats.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::router::openai {

enum class ChatFormat { kChatML, kLlama3 };

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;  // text parts concatenated; null content is ""
};

// The format of a Jinja chat template: ChatML when it contains "<|im_start|>", Llama-3 when it
// contains "<|start_header_id|>"; otherwise FailedPrecondition.
absl::StatusOr<ChatFormat> DetectChatFormat(std::string_view jinja_template);

// Reads <tokenizer_dir>/tokenizer_config.json's "chat_template" (a string, or a list of
// {name, template} of which "default" is used) and detects its format. nullopt when the file or
// the template is absent; InvalidArgument for a malformed file; FailedPrecondition for a template
// headroom cannot render.
absl::StatusOr<std::optional<ChatFormat>> LoadChatFormat(const std::string& tokenizer_dir);

// "chatml" or "llama3" (a --chat-format flag value).
absl::StatusOr<ChatFormat> ParseChatFormatName(std::string_view name);
std::string_view ChatFormatName(ChatFormat format);
// The token that ends a turn in `format` ("<|im_end|>", "<|eot_id|>"). A checkpoint's eos_token may
// be another one (base-model "<|endoftext|>" / "<|end_of_text|>"), so a chat request should also
// stop on this token's id.
std::string_view ChatEndOfTurn(ChatFormat format);

// The prompt text for `messages`. `bos_token` is used by kLlama3 only.
std::string RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages,
                       bool add_generation_prompt, const std::string& bos_token);

// Python's str.strip() (what Jinja's |trim does): removes leading and trailing Unicode
// whitespace (str.isspace) from UTF-8 text. Exposed for tests.
std::string_view PyStrip(std::string_view text);

}  // namespace headroom::router::openai
