#include "router/tokenizer/byte_level.h"

#include "router/tokenizer/utf8.h"

namespace headroom::router::byte_level {
namespace {

constexpr char32_t kTableSize = 0x144;  // every mapped code point is below U+0144

struct Tables {
  std::array<std::string, 256> byte_to_chars;
  std::array<int, kTableSize> char_to_byte{};
};

bool IsPrintable(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

Tables BuildTables() {
  Tables t;
  t.char_to_byte.fill(-1);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = IsPrintable(b) ? static_cast<char32_t>(b) : next++;
    utf8::Append(cp, t.byte_to_chars[static_cast<size_t>(b)]);
    t.char_to_byte[cp] = b;
  }
  return t;
}

const Tables& GetTables() {
  static const Tables* const tables = new Tables(BuildTables());
  return *tables;
}

}  // namespace

const std::array<std::string, 256>& ByteToChars() { return GetTables().byte_to_chars; }

int CharToByte(char32_t code_point) {
  if (code_point >= kTableSize) return -1;
  return GetTables().char_to_byte[code_point];
}

void Encode(std::string_view bytes, std::string& out) {
  const auto& table = GetTables().byte_to_chars;
  for (const char c : bytes) out.append(table[static_cast<unsigned char>(c)]);
}

bool DecodeToken(std::string_view token, std::string& out) {
  const size_t mark = out.size();
  size_t pos = 0;
  while (pos < token.size()) {
    char32_t cp = 0;
    pos += utf8::Decode(token, pos, &cp);
    const int b = CharToByte(cp);
    if (b < 0) {
      out.resize(mark);
      return false;
    }
    out.push_back(static_cast<char>(b));
  }
  return true;
}

}  // namespace headroom::router::byte_level
