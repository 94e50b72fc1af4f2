#include "worker/engine/json_matcher.h"

#include <utility>

namespace headroom::worker {
namespace {

bool IsWhitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }

int HexValue(uint8_t b) {
  if (b >= '0' && b <= '9') return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}

}  // namespace

bool JsonMatcher::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (!Feed(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool JsonMatcher::Feed(uint8_t byte) {
  switch (mode_) {
    case Mode::kString:
      whitespace_run_ = 0;
      return FeedString(byte);
    case Mode::kEscape:
      if (byte == 'u') {
        mode_ = Mode::kUnicode;
        hex_digits_ = 0;
        hex_value_ = 0;
        return true;
      }
      if (byte == '"' || byte == '\\' || byte == '/' || byte == 'b' || byte == 'f' || byte == 'n' ||
          byte == 'r' || byte == 't') {
        mode_ = Mode::kString;
        return true;
      }
      return false;
    case Mode::kUnicode:
      return FeedUnicodeDigit(byte);
    case Mode::kLowSurrogateSlash:
      if (byte != '\\') return false;
      mode_ = Mode::kLowSurrogateU;
      return true;
    case Mode::kLowSurrogateU:
      if (byte != 'u') return false;
      mode_ = Mode::kUnicode;
      hex_digits_ = 0;
      hex_value_ = 0;
      return true;
    case Mode::kLiteral:
      if (byte != static_cast<uint8_t>(literal_rest_.front())) return false;
      literal_rest_.remove_prefix(1);
      if (literal_rest_.empty()) EndValue();
      return true;
    case Mode::kNumber:
      return FeedNumber(byte);
    case Mode::kDone:
      return false;
    default:
      break;
  }
  if (IsWhitespace(byte)) return Whitespace();
  whitespace_run_ = 0;
  switch (mode_) {
    case Mode::kValue:
      return FeedValueStart(byte);
    case Mode::kValueOrEnd:
      return byte == ']' ? Close('[') : FeedValueStart(byte);
    case Mode::kKeyOrEnd:
      if (byte == '}') return Close('{');
      [[fallthrough]];
    case Mode::kKey:
      if (byte != '"') return false;
      mode_ = Mode::kString;
      in_key_ = true;
      return true;
    case Mode::kColon:
      if (byte != ':') return false;
      mode_ = Mode::kValue;
      return true;
    case Mode::kAfterValue:
      if (byte == ',') {
        mode_ = stack_.back() == '{' ? Mode::kKey : Mode::kValue;
        return true;
      }
      if (byte == '}') return Close('{');
      if (byte == ']') return Close('[');
      return false;
    default:
      return false;
  }
}

bool JsonMatcher::Whitespace() {
  if (++whitespace_run_ > options_.max_whitespace) return false;
  return true;
}

bool JsonMatcher::FeedValueStart(uint8_t byte) {
  if (options_.object_only && stack_.empty() && byte != '{') return false;
  switch (byte) {
    case '{':
      return Open('{');
    case '[':
      return Open('[');
    case '"':
      mode_ = Mode::kString;
      in_key_ = false;
      return true;
    case 't':
      literal_rest_ = "rue";
      mode_ = Mode::kLiteral;
      return true;
    case 'f':
      literal_rest_ = "alse";
      mode_ = Mode::kLiteral;
      return true;
    case 'n':
      literal_rest_ = "ull";
      mode_ = Mode::kLiteral;
      return true;
    case '-':
      mode_ = Mode::kNumber;
      number_ = Number::kMinus;
      return true;
    default:
      if (!IsDigit(byte)) return false;
      mode_ = Mode::kNumber;
      number_ = byte == '0' ? Number::kZero : Number::kInt;
      return true;
  }
}

bool JsonMatcher::FeedString(uint8_t byte) {
  if (utf8_due_ > 0) {
    if (byte < utf8_lo_ || byte > utf8_hi_) return false;
    --utf8_due_;
    utf8_lo_ = 0x80;
    utf8_hi_ = 0xBF;
    return true;
  }
  if (byte == '"') {
    if (in_key_) {
      in_key_ = false;
      mode_ = Mode::kColon;
    } else {
      EndValue();
    }
    return true;
  }
  if (byte == '\\') {
    mode_ = Mode::kEscape;
    return true;
  }
  if (byte < 0x20) return false;  // control characters must be escaped
  if (byte < 0x80) return true;
  // A UTF-8 lead byte: how many continuation bytes, and the range of the first (no overlong
  // forms, no surrogates, nothing past U+10FFFF).
  if (byte >= 0xC2 && byte <= 0xDF) {
    utf8_due_ = 1;
  } else if (byte >= 0xE0 && byte <= 0xEF) {
    utf8_due_ = 2;
    if (byte == 0xE0) utf8_lo_ = 0xA0;
    if (byte == 0xED) utf8_hi_ = 0x9F;
  } else if (byte >= 0xF0 && byte <= 0xF4) {
    utf8_due_ = 3;
    if (byte == 0xF0) utf8_lo_ = 0x90;
    if (byte == 0xF4) utf8_hi_ = 0x8F;
  } else {
    return false;
  }
  return true;
}

bool JsonMatcher::FeedUnicodeDigit(uint8_t byte) {
  const int digit = HexValue(byte);
  if (digit < 0) return false;
  // Decided digit by digit, so no escape is accepted that cannot be finished: a low surrogate
  // (DC00-DFFF) only right after a high one (D800-DBFF), which needs one.
  const bool low_range = hex_digits_ == 1 && hex_value_ == 0xD && digit >= 0xC;
  if (want_low_surrogate_) {
    if (hex_digits_ == 0 && digit != 0xD) return false;
    if (hex_digits_ == 1 && !low_range) return false;
  } else if (low_range) {
    return false;
  }
  hex_value_ = static_cast<uint16_t>(hex_value_ * 16 + digit);
  if (++hex_digits_ < 4) return true;
  if (want_low_surrogate_) {
    want_low_surrogate_ = false;
    mode_ = Mode::kString;
  } else if (hex_value_ >= 0xD800 && hex_value_ <= 0xDBFF) {
    want_low_surrogate_ = true;
    mode_ = Mode::kLowSurrogateSlash;
  } else {
    mode_ = Mode::kString;
  }
  return true;
}

bool JsonMatcher::FeedNumber(uint8_t byte) {
  const bool digit = IsDigit(byte);
  const bool exponent = byte == 'e' || byte == 'E';
  switch (number_) {
    case Number::kMinus:
      if (!digit) return false;
      number_ = byte == '0' ? Number::kZero : Number::kInt;
      return true;
    case Number::kZero:
    case Number::kInt:
      if (digit && number_ == Number::kInt) return true;
      if (byte == '.') {
        number_ = Number::kFracStart;
        return true;
      }
      if (exponent) {
        number_ = Number::kExpStart;
        return true;
      }
      break;  // the number ends before this byte
    case Number::kFracStart:
      if (!digit) return false;
      number_ = Number::kFrac;
      return true;
    case Number::kFrac:
      if (digit) return true;
      if (exponent) {
        number_ = Number::kExpStart;
        return true;
      }
      break;
    case Number::kExpStart:
      if (byte == '+' || byte == '-') {
        number_ = Number::kExpSign;
        return true;
      }
      [[fallthrough]];
    case Number::kExpSign:
      if (!digit) return false;
      number_ = Number::kExp;
      return true;
    case Number::kExp:
      if (digit) return true;
      break;
  }
  // The number ended: the byte belongs to what follows it (after a top-level number, only
  // whitespace).
  EndValue();
  if (mode_ == Mode::kDone) return IsWhitespace(byte) && Whitespace();
  return Feed(byte);
}

void JsonMatcher::EndValue() { mode_ = stack_.empty() ? Mode::kDone : Mode::kAfterValue; }

bool JsonMatcher::Open(char container) {
  if (static_cast<int32_t>(stack_.size()) >= options_.max_depth) return false;
  stack_.push_back(container);
  mode_ = container == '{' ? Mode::kKeyOrEnd : Mode::kValueOrEnd;
  return true;
}

bool JsonMatcher::Close(char container) {
  if (stack_.empty() || stack_.back() != container) return false;
  stack_.pop_back();
  EndValue();
  return true;
}

JsonVocabulary::JsonVocabulary(std::vector<std::string> token_bytes)
    : bytes_(std::move(token_bytes)), by_first_byte_(256), other_by_first_byte_(256) {
  JsonMatcher in_string(JsonMatcher::Options{.object_only = false});
  const bool opened = in_string.Feed('"');
  (void)opened;  // a string may always start a document
  for (size_t id = 0; id < bytes_.size(); ++id) {
    const std::string& bytes = bytes_[id];
    if (bytes.empty()) continue;
    const auto token = static_cast<int32_t>(id);
    by_first_byte_[static_cast<uint8_t>(bytes[0])].push_back(token);
    JsonMatcher m = in_string;
    bool text = true;
    for (const char c : bytes) {
      if (!m.Feed(static_cast<uint8_t>(c)) || !m.InString()) {
        text = false;
        break;
      }
    }
    if (text && m.AtStringText()) {
      string_text_.push_back(token);
    } else {
      other_by_first_byte_[static_cast<uint8_t>(bytes[0])].push_back(token);
    }
  }
}

void JsonAllowedTokens(const JsonMatcher& matcher, const JsonVocabulary& vocabulary,
                       std::vector<int32_t>* allowed) {
  allowed->clear();
  // Between a string's characters, string text fits whatever else the matcher holds (the
  // string's text is not part of its state); only the other tokens need trying.
  const bool at_text = matcher.AtStringText();
  if (at_text) allowed->assign(vocabulary.string_text_.begin(), vocabulary.string_text_.end());
  const std::vector<std::vector<int32_t>>& groups =
      at_text ? vocabulary.other_by_first_byte_ : vocabulary.by_first_byte_;
  for (int byte = 0; byte < 256; ++byte) {
    const std::vector<int32_t>& group = groups[static_cast<size_t>(byte)];
    if (group.empty()) continue;
    JsonMatcher after_first = matcher;
    if (!after_first.Feed(static_cast<uint8_t>(byte))) continue;
    for (const int32_t id : group) {
      JsonMatcher next = after_first;
      if (next.Feed(std::string_view(vocabulary.bytes_[static_cast<size_t>(id)]).substr(1))) {
        allowed->push_back(id);
      }
    }
  }
}

}  // namespace headroom::worker
