// GPT-2's byte-to-unicode table: byte-level BPE vocabularies spell every byte as a printable
// code point ('!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves, the other 68 bytes to U+0100..U+0143)
// so that a vocabulary file never holds raw control bytes or partial UTF-8.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace headroom::router::byte_level {

// The UTF-8 spelling of each byte's code point.
[[nodiscard]] const std::array<std::string, 256>& ByteToChars();

// The byte a code point spells, or -1 when the code point is not in the table.
[[nodiscard]] int CharToByte(char32_t code_point);

// Maps every byte of `bytes` to its code point and appends the UTF-8 result to `out`.
void Encode(std::string_view bytes, std::string& out);

// Appends the bytes that `token` spells to `out`; returns false (appending nothing) when some
// character of `token` is not in the table.
bool DecodeToken(std::string_view token, std::string& out);

}  // namespace headroom::router::byte_level
