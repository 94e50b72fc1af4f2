// UTF-8 helpers shared by the tokenizer: validation, code point iteration and lossy decoding that
// matches Rust's String::from_utf8_lossy (one U+FFFD per maximal invalid subpart), which is what
// Hugging Face `tokenizers` uses when it turns decoded bytes back into text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace headroom::router::utf8 {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at `pos`, or 0 when the bytes there are not a
// complete, valid sequence (a truncated sequence at the end counts as invalid).
[[nodiscard]] size_t ValidSequenceLength(std::string_view text, size_t pos);

// True when `text` is valid UTF-8. On failure *error_offset (when given) is the first bad byte.
[[nodiscard]] bool IsValid(std::string_view text, size_t* error_offset = nullptr);

// Decodes the code point at `pos` of valid UTF-8 text and returns its length in bytes.
size_t Decode(std::string_view text, size_t pos, char32_t* code_point);

// Length in bytes of the valid UTF-8 character that starts with `lead` (1 for invalid leads).
[[nodiscard]] size_t CharLength(unsigned char lead);

// Appends the UTF-8 encoding of `code_point` to `out`.
void Append(char32_t code_point, std::string& out);

// Valid text for arbitrary bytes: every maximal invalid subpart becomes U+FFFD.
[[nodiscard]] std::string Lossy(std::string_view bytes);

// True when `text` ends with `suffix` (byte comparison).
[[nodiscard]] bool EndsWith(std::string_view text, std::string_view suffix);

}  // namespace headroom::router::utf8
