#include "worker/engine/json_matcher.h"

#include <utility>

namespace headroom::worker {
namespace {

bool IsWhitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

}  // namespace

void JsonMatcher::AppendStateKey(std::string* key) const {
  AppendKeyBytes(key, options_.object_only);
  AppendKeyBytes(key, options_.max_depth);
  AppendKeyBytes(key, options_.max_whitespace);
  AppendKeyBytes(key, mode_);
  AppendKeyBytes(key, whitespace_run_);
  switch (mode_) {
    case Mode::kString:
      AppendKeyBytes(key, in_key_);
      string_.AppendStateKey(key);
      break;
    case Mode::kNumber:
      number_.AppendStateKey(key);
      break;
    case Mode::kLiteral:
      key->append(literal_rest_);
      break;
    default:
      break;
  }
  // Last, after a separator no field above ends with: the containers, '{' or '['.
  key->push_back('|');
  key->append(stack_);
}

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
      switch (string_.Feed(byte)) {
        case JsonStringLexer::Step::kRefused:
          return false;
        case JsonStringLexer::Step::kClosed:
          if (in_key_) {
            in_key_ = false;
            mode_ = Mode::kColon;
          } else {
            EndValue();
          }
          return true;
        default:
          return true;
      }
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
      string_ = JsonStringLexer();
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
      string_ = JsonStringLexer();
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
    default:
      // Most bytes tried here start no value: refuse them before setting up a number.
      if (byte != '-' && (byte < '0' || byte > '9')) return false;
      number_ = JsonNumberLexer();
      if (number_.Feed(byte) != JsonNumberLexer::Step::kAccepted) return false;
      mode_ = Mode::kNumber;
      return true;
  }
}

bool JsonMatcher::FeedNumber(uint8_t byte) {
  switch (number_.Feed(byte)) {
    case JsonNumberLexer::Step::kAccepted:
      return true;
    case JsonNumberLexer::Step::kRefused:
      return false;
    case JsonNumberLexer::Step::kEnded:
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

template void JsonAllowedTokens<JsonMatcher>(const JsonMatcher&, const JsonVocabulary&,
                                             std::vector<int32_t>*);

}  // namespace headroom::worker
