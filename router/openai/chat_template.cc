#include "router/openai/chat_template.h"

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "router/tokenizer/json_util.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/tokenizer_config.h"

namespace headroom::router::openai {
namespace {

// Python's str.isspace() for one code point.
bool IsPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Length of the whitespace code point starting at text[i], or 0 when there is none (invalid
// UTF-8 never counts as whitespace).
size_t SpaceAt(std::string_view text, size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) return IsPythonSpace(b0) ? 1 : 0;
  size_t len = 0;
  uint32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else {
    return 0;  // 4-byte sequences hold no whitespace; continuation bytes are not a start
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return IsPythonSpace(cp) ? len : 0;
}

// Start of the code point that ends just before `end` (at most 3 bytes back for whitespace).
size_t SpaceEndingAt(std::string_view text, size_t end) {
  for (size_t len = 1; len <= 3 && len <= end; ++len) {
    const size_t start = end - len;
    if (SpaceAt(text, start) == len) return len;
  }
  return 0;
}

}  // namespace

std::string_view PyStrip(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t n = SpaceAt(text, begin);
    if (n == 0) break;
    begin += n;
  }
  size_t end = text.size();
  while (end > begin) {
    const size_t n = SpaceEndingAt(text, end);
    if (n == 0 || end - n < begin) break;
    end -= n;
  }
  return text.substr(begin, end - begin);
}

absl::StatusOr<ChatFormat> DetectChatFormat(std::string_view jinja_template) {
  if (jinja_template.find("<|im_start|>") != std::string_view::npos) return ChatFormat::kChatML;
  if (jinja_template.find("<|start_header_id|>") != std::string_view::npos) {
    return ChatFormat::kLlama3;
  }
  return absl::FailedPreconditionError(
      "chat template is not one headroom can render (supported: chatml, llama3)");
}

absl::StatusOr<std::optional<ChatFormat>> LoadChatFormat(const std::string& tokenizer_dir) {
  const std::string path = tokenizer_dir + "/tokenizer_config.json";
  absl::StatusOr<std::string> text = json_util::ReadFile(path);
  if (absl::IsNotFound(text.status())) return std::optional<ChatFormat>();
  if (!text.ok()) return text.status();
  absl::StatusOr<TokenizerConfig> config = ParseTokenizerConfig(*text, path);
  if (!config.ok()) return config.status();
  if (!config->chat_template.has_value()) return std::optional<ChatFormat>();
  absl::StatusOr<ChatFormat> format = DetectChatFormat(*config->chat_template);
  if (!format.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": ", format.status().message()));
  }
  return std::optional<ChatFormat>(*format);
}

absl::StatusOr<ChatFormat> ParseChatFormatName(std::string_view name) {
  if (name == "chatml") return ChatFormat::kChatML;
  if (name == "llama3") return ChatFormat::kLlama3;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown chat format \"", Sv(name), "\" (supported: chatml, llama3)"));
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

std::string_view ChatEndOfTurn(ChatFormat format) {
  return format == ChatFormat::kChatML ? "<|im_end|>" : "<|eot_id|>";
}

std::string RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages,
                       bool add_generation_prompt, const std::string& bos_token) {
  std::string out;
  switch (format) {
    case ChatFormat::kChatML:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0 && messages[0].role != "system") {
          out += "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";
        }
        absl::StrAppend(&out, "<|im_start|>", messages[i].role, "\n", messages[i].content,
                        "<|im_end|>\n");
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    case ChatFormat::kLlama3:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0) out += bos_token;
        absl::StrAppend(&out, "<|start_header_id|>", messages[i].role, "<|end_header_id|>\n\n",
                        Sv(PyStrip(messages[i].content)), "<|eot_id|>");
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
  }
  return out;
}

}  // namespace headroom::router::openai
