#include "router/openai/tool_call_stream.h"

#include <algorithm>
#include <utility>

#include "common/json_depth.h"
#include "nlohmann/json.hpp"
#include "router/openai/tool_call_tags.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

bool IsSpace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

}  // namespace

// --- JsonDumpsStream ----------------------------------------------------------------------------

size_t JsonDumpsStream::Feed(std::string_view piece, std::string* out) {
  for (size_t i = 0; i < piece.size(); ++i) {
    if (mode_ == Mode::kDone || mode_ == Mode::kInvalid) return i;
    if (!Byte(static_cast<uint8_t>(piece[i]), out)) return i;
  }
  if (mode_ == Mode::kString) FlushString(out);
  return piece.size();
}

bool JsonDumpsStream::Byte(uint8_t byte, std::string* out) {
  switch (mode_) {
    case Mode::kString:
      return StringByte(byte, out);
    case Mode::kNumber: {
      if ((byte >= '0' && byte <= '9') || byte == '-' || byte == '+' || byte == '.' ||
          byte == 'e' || byte == 'E') {
        number_.push_back(static_cast<char>(byte));
        return true;
      }
      const Json value = Json::parse(number_, nullptr, /*allow_exceptions=*/false);
      std::optional<std::string> text;
      if (value.is_number()) text = PyJsonDumps(value);
      if (!text.has_value()) return Invalid();
      if (out != nullptr) *out += *text;
      EndValue();
      if (mode_ == Mode::kDone) return false;  // the byte is not the value's
      return Byte(byte, out);
    }
    case Mode::kLiteral:
      if (byte != static_cast<uint8_t>(literal_[literal_read_])) return Invalid();
      if (++literal_read_ == literal_.size()) {
        if (out != nullptr) *out += literal_;
        EndValue();
      }
      return true;
    case Mode::kDone:
    case Mode::kInvalid:
      return false;
    default:
      break;
  }
  if (IsSpace(byte)) return true;
  switch (mode_) {
    case Mode::kValue:
      return StartValue(byte, out);
    case Mode::kValueOrClose:
      if (byte != ']') return StartValue(byte, out);
      break;
    case Mode::kKeyOrClose:
      if (byte == '}') break;
      [[fallthrough]];
    case Mode::kKey:
      if (byte != '"') return Invalid();
      if (out != nullptr) *out += '"';
      mode_ = Mode::kString;
      in_key_ = true;
      return true;
    case Mode::kColon:
      if (byte != ':') return Invalid();
      if (out != nullptr) *out += ": ";
      mode_ = Mode::kValue;
      return true;
    case Mode::kAfterValue:
      if (byte == ',') {
        if (out != nullptr) *out += ", ";
        mode_ = stack_.back() == '{' ? Mode::kKey : Mode::kValue;
        return true;
      }
      break;
    default:
      return Invalid();
  }
  // A closer: '}' or ']' for the innermost container.
  if ((byte != '}' && byte != ']') || stack_.empty() || (byte == '}') != (stack_.back() == '{')) {
    return Invalid();
  }
  if (out != nullptr) out->push_back(static_cast<char>(byte));
  stack_.pop_back();
  EndValue();
  return true;
}

bool JsonDumpsStream::StartValue(uint8_t byte, std::string* out) {
  switch (byte) {
    case '{':
    case '[':
      if (static_cast<int>(stack_.size()) >= max_depth_) return Invalid();
      stack_.push_back(static_cast<char>(byte));
      if (out != nullptr) out->push_back(static_cast<char>(byte));
      mode_ = byte == '{' ? Mode::kKeyOrClose : Mode::kValueOrClose;
      return true;
    case '"':
      if (out != nullptr) *out += '"';
      mode_ = Mode::kString;
      in_key_ = false;
      return true;
    case 't':
    case 'f':
    case 'n':
      literal_ = byte == 't' ? "true" : byte == 'f' ? "false" : "null";
      literal_read_ = 1;
      mode_ = Mode::kLiteral;
      return true;
    default:
      if (byte != '-' && (byte < '0' || byte > '9')) return Invalid();
      number_.assign(1, static_cast<char>(byte));
      mode_ = Mode::kNumber;
      return true;
  }
}

void JsonDumpsStream::EndValue() { mode_ = stack_.empty() ? Mode::kDone : Mode::kAfterValue; }

bool JsonDumpsStream::StringByte(uint8_t byte, std::string* out) {
  if (low_prefix_ == 1) {  // a high surrogate was read: "\u" must follow
    if (byte != '\\') return Invalid();
    low_prefix_ = 2;
    return true;
  }
  if (low_prefix_ == 2) {
    if (byte != 'u') return Invalid();
    low_prefix_ = 0;
    escape_ = 2;
    hex_digits_ = 0;
    hex_ = 0;
    return true;
  }
  if (escape_ == 1) {
    escape_ = 0;
    switch (byte) {
      case '"':
      case '\\':
      case '/':
        chars_.push_back(static_cast<char>(byte));
        return true;
      case 'b':
        chars_ += '\b';
        return true;
      case 'f':
        chars_ += '\f';
        return true;
      case 'n':
        chars_ += '\n';
        return true;
      case 'r':
        chars_ += '\r';
        return true;
      case 't':
        chars_ += '\t';
        return true;
      case 'u':
        escape_ = 2;
        hex_digits_ = 0;
        hex_ = 0;
        return true;
      default:
        return Invalid();
    }
  }
  if (escape_ == 2) {
    const int digit = HexDigitValue(static_cast<char>(byte));
    if (digit < 0) return Invalid();
    hex_ = hex_ * 16 + static_cast<uint32_t>(digit);
    if (++hex_digits_ < 4) return true;
    escape_ = 0;
    const bool high = hex_ >= 0xD800 && hex_ <= 0xDBFF;
    const bool low = hex_ >= 0xDC00 && hex_ <= 0xDFFF;
    if (high_surrogate_ != 0) {
      if (!low) return Invalid();
      AppendCodePoint(0x10000 + ((high_surrogate_ - 0xD800) << 10) + (hex_ - 0xDC00));
      high_surrogate_ = 0;
    } else if (high) {
      high_surrogate_ = hex_;
      low_prefix_ = 1;
    } else if (low) {
      return Invalid();
    } else {
      AppendCodePoint(hex_);
    }
    return true;
  }
  if (utf8_due_ > 0) {
    if ((byte & 0xC0) != 0x80) return Invalid();
    chars_.push_back(static_cast<char>(byte));
    --utf8_due_;
    return true;
  }
  if (byte == '"') {
    FlushString(out);
    if (mode_ == Mode::kInvalid) return true;
    if (out != nullptr) *out += '"';
    if (in_key_) {
      mode_ = Mode::kColon;
    } else {
      EndValue();
    }
    return true;
  }
  if (byte == '\\') {
    escape_ = 1;
    return true;
  }
  if (byte < 0x20) return Invalid();
  if (byte >= 0x80) {
    if (byte >= 0xC2 && byte <= 0xDF) {
      utf8_due_ = 1;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      utf8_due_ = 2;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      utf8_due_ = 3;
    } else {
      return Invalid();
    }
  }
  chars_.push_back(static_cast<char>(byte));
  return true;
}

void JsonDumpsStream::AppendCodePoint(uint32_t cp) {
  utf8::Append(static_cast<char32_t>(cp), chars_);
}

void JsonDumpsStream::FlushString(std::string* out) {
  // Whole characters only: the bytes of one still being read (its lead byte and the continuation
  // bytes after it) stay.
  size_t whole = chars_.size();
  if (utf8_due_ > 0) {
    while (whole > 0 && (static_cast<uint8_t>(chars_[whole - 1]) & 0xC0) == 0x80) --whole;
    --whole;  // the lead byte
  }
  if (whole == 0) return;
  // Lead and continuation bytes were counted; overlong forms, surrogates and bytes past U+10FFFF
  // are not JSON text either.
  if (!utf8::IsValid(std::string_view(chars_).substr(0, whole))) {
    mode_ = Mode::kInvalid;
    return;
  }
  if (out != nullptr) {
    std::optional<std::string> text = PyJsonDumps(Json(chars_.substr(0, whole)));
    if (!text.has_value()) {
      mode_ = Mode::kInvalid;
      return;
    }
    out->append(*text, 1, text->size() - 2);  // without its quotes
  }
  chars_.erase(0, whole);
}

// --- ToolCallObjectStream -----------------------------------------------------------------------

size_t ToolCallObjectStream::Feed(std::string_view piece) {
  size_t i = 0;
  while (i < piece.size() && mode_ != Mode::kDone && mode_ != Mode::kInvalid) {
    const auto byte = static_cast<uint8_t>(piece[i]);
    switch (mode_) {
      case Mode::kKey:
      case Mode::kValue: {
        std::string* out = mode_ == Mode::kKey || member_ == Member::kName ? &text_
                           : member_ == Member::kArguments                 ? &arguments_
                                                                           : nullptr;
        i += value_.Feed(piece.substr(i), out);
        if (value_.invalid()) {
          mode_ = Mode::kInvalid;
        } else if (value_.done()) {
          if (mode_ == Mode::kKey) {
            EndKey();
          } else {
            EndValue();
          }
        }
        continue;
      }
      default:
        break;
    }
    ++i;
    if (IsSpace(byte)) continue;
    switch (mode_) {
      case Mode::kOpen:
        mode_ = byte == '{' ? Mode::kKeyOrClose : Mode::kInvalid;
        break;
      case Mode::kKeyOrClose:
      case Mode::kAfterMember:
        if (byte == '}') {
          mode_ = Mode::kDone;
          break;
        }
        if (mode_ == Mode::kAfterMember) {
          mode_ = byte == ',' ? Mode::kKeyOrClose : Mode::kInvalid;
          break;
        }
        if (byte != '"') {
          mode_ = Mode::kInvalid;
          break;
        }
        mode_ = Mode::kKey;
        value_ = JsonDumpsStream(max_depth_ - 1);
        text_.clear();
        (void)value_.Feed("\"", &text_);
        break;
      case Mode::kColon:
        if (byte != ':') {
          mode_ = Mode::kInvalid;
          break;
        }
        mode_ = Mode::kValue;
        value_ = JsonDumpsStream(max_depth_ - 1);
        text_.clear();
        if (member_ == Member::kArguments) arguments_begun_ = true;
        break;
      default:
        mode_ = Mode::kInvalid;
        break;
    }
  }
  return i;
}

void ToolCallObjectStream::EndKey() {
  const Json key = Json::parse(text_, nullptr, /*allow_exceptions=*/false);
  member_ = Member::kOther;
  if (key == "name" && !name_.has_value()) {
    member_ = Member::kName;
  } else if (!arguments_begun_ && ((key == "arguments" && key_ != ArgumentsKey::kParameters) ||
                                   (key == "parameters" && key_ != ArgumentsKey::kArguments))) {
    member_ = Member::kArguments;
  }
  mode_ = Mode::kColon;
}

void ToolCallObjectStream::EndValue() {
  if (member_ == Member::kName) {
    const Json name = Json::parse(text_, nullptr, /*allow_exceptions=*/false);
    if (!name.is_string()) {
      mode_ = Mode::kInvalid;
      return;
    }
    name_ = name.get<std::string>();
  }
  mode_ = Mode::kAfterMember;
}

// --- ToolCallStreamer ---------------------------------------------------------------------------

void ToolCallStreamer::Read(std::string_view text) {
  if (qwen3_coder_.has_value()) {
    qwen3_coder_->Read(text);
    return;
  }
  if (pythonic_.has_value()) {
    pythonic_->Read(text);
    return;
  }
  if (glm_.has_value()) {
    glm_->Read(text);
    return;
  }
  while (frame_ != Frame::kStopped) {
    if (frame_ == Frame::kSeek) {
      if (!Seek(text)) return;
      continue;
    }
    if (frame_ == Frame::kAfterObject) {
      if (!AfterObject(text)) return;
      continue;
    }
    // kObject
    ToolCallObjectStream& object = *object_;
    pos_ += object.Feed(text.substr(pos_));
    if (object.name().has_value() && object.arguments_begun()) {
      if (!streaming_) {
        calls_.push_back({*object.name(), ""});
        streaming_ = true;
      }
      std::string& arguments = calls_.back().arguments;
      arguments.append(object.arguments(), arguments.size());  // what is new
    }
    if (object.invalid()) {
      frame_ = Frame::kStopped;
    } else if (object.done()) {
      streaming_ = false;
      frame_ = Frame::kAfterObject;
    } else {
      return;  // more text needed
    }
  }
}

std::optional<ToolCallStreamer::Framing> ToolCallStreamer::FramingOf(ToolCallParser parser) {
  switch (parser) {
    case ToolCallParser::kHermes:
      return Framing::kHermes;
    case ToolCallParser::kLlama3Json:
      return Framing::kLlama3;
    case ToolCallParser::kMistral:
      return Framing::kMistral;
    case ToolCallParser::kPythonic:
      return Framing::kPythonic;
    case ToolCallParser::kQwen3Coder:
      return Framing::kQwen3Coder;
    case ToolCallParser::kSeedOss:
      return Framing::kSeedOss;
    case ToolCallParser::kGranite:
      return Framing::kGranite;
    case ToolCallParser::kPhi4MiniJson:
      return Framing::kPhi4Mini;
    case ToolCallParser::kGlm45:
      return Framing::kGlm45;
    case ToolCallParser::kGlm47:
      return Framing::kGlm47;
  }
  return std::nullopt;
}

ToolCallStreamer::ToolCallStreamer(Framing framing, const Json* tools) : framing_(framing) {
  if (framing == Framing::kQwen3Coder) qwen3_coder_.emplace(tools, XmlCallFormat::kQwen3Coder);
  if (framing == Framing::kSeedOss) qwen3_coder_.emplace(tools, XmlCallFormat::kSeedOss);
  if (framing == Framing::kPythonic) pythonic_.emplace();
  if (framing == Framing::kGlm45) glm_.emplace(tools, GlmFormat::kGlm45);
  if (framing == Framing::kGlm47) glm_.emplace(tools, GlmFormat::kGlm47);
}

void ToolCallStreamer::StartObject() {
  using Key = ToolCallObjectStream::ArgumentsKey;
  // The whole parse reads an object alone (hermes, llama3) or in its array (mistral,
  // "required"): what the object may nest is what that leaves of kMaxJsonNesting.
  const bool in_array = framing_ == Framing::kMistral || framing_ == Framing::kJsonArray ||
                        framing_ == Framing::kGranite || framing_ == Framing::kPhi4Mini;
  object_.emplace(framing_ == Framing::kLlama3 || framing_ == Framing::kPhi4Mini ? Key::kEither
                  : framing_ == Framing::kJsonArray                              ? Key::kParameters
                                                                                 : Key::kArguments,
                  kMaxJsonNesting - (in_array ? 1 : 0));
  frame_ = Frame::kObject;
}

namespace {

// Skips whitespace from `pos` in `text`; false when the text ends first.
bool SkipSpace(std::string_view text, size_t& pos) {
  while (pos < text.size() && IsSpace(static_cast<uint8_t>(text[pos]))) ++pos;
  return pos < text.size();
}

// `text` at `pos` starts with `tag` (true: pos moves past it), does not (false), or ends inside
// it (nullopt).
std::optional<bool> Expect(std::string_view text, size_t& pos, std::string_view tag) {
  const std::string_view rest = text.substr(pos);
  if (rest.size() < tag.size()) {
    if (tag.substr(0, rest.size()) == rest) return std::nullopt;
    return false;
  }
  if (rest.substr(0, tag.size()) != tag) return false;
  pos += tag.size();
  return true;
}

}  // namespace

bool ToolCallStreamer::Seek(std::string_view text) {
  switch (framing_) {
    case Framing::kHermes: {
      const size_t tag = text.find(kHermesStart, pos_);
      if (tag == std::string_view::npos) {
        // Not scanned again: only a tag's start can hide in the last bytes.
        pos_ = std::max(pos_, text.size() - std::min(text.size(), kHermesStart.size() - 1));
        return false;
      }
      // pos_ moves past the tag only with what follows it, so that it is found again.
      size_t at = tag + kHermesStart.size();
      if (!SkipSpace(text, at)) return false;
      pos_ = at;
      break;
    }
    case Framing::kLlama3: {
      if (!SkipSpace(text, pos_)) return false;
      if (!Expect(text, pos_, kPythonTag).has_value()) return false;
      if (!SkipSpace(text, pos_)) return false;
      break;
    }
    case Framing::kQwen3Coder:  // read by qwen3_coder_
    case Framing::kSeedOss:
    case Framing::kPythonic:  // read by pythonic_
    case Framing::kGlm45:     // read by glm_
    case Framing::kGlm47:
      frame_ = Frame::kStopped;
      return true;
    case Framing::kMistral:
    case Framing::kJsonArray:
    case Framing::kGranite:
    case Framing::kPhi4Mini: {
      if (!in_array_) {
        size_t at = pos_;
        if (framing_ == Framing::kGranite) {
          // The reply opens with the array, after whitespace and the optional tags (nothing
          // between the two tags, as vLLM removes them); the whole parse decides the rest.
          if (!SkipSpace(text, at)) return false;
          for (const std::string_view tag : {kGraniteToken, kHermesStart}) {
            const std::optional<bool> found = Expect(text, at, tag);
            if (!found.has_value()) return false;
          }
        }
        if (framing_ == Framing::kMistral || framing_ == Framing::kPhi4Mini) {
          const std::string_view start =
              framing_ == Framing::kMistral ? kMistralStart : kPhi4MiniStart;
          const size_t tag = text.find(start, pos_);
          if (tag == std::string_view::npos) {
            pos_ = std::max(pos_, text.size() - std::min(text.size(), start.size() - 1));
            return false;
          }
          // Phi-4-mini's tag ends with the array's '['.
          at = tag + start.size() - (framing_ == Framing::kPhi4Mini ? 1 : 0);
        }
        if (!SkipSpace(text, at)) return false;
        if (text[at] != '[') {
          frame_ = Frame::kStopped;
          return true;
        }
        pos_ = at + 1;
        in_array_ = true;
      }
      if (!SkipSpace(text, pos_)) return false;
      break;
    }
  }
  if (text[pos_] != '{') {
    frame_ = Frame::kStopped;
    return true;
  }
  StartObject();
  return true;
}

bool ToolCallStreamer::AfterObject(std::string_view text) {
  if (framing_ == Framing::kHermes) {
    frame_ = Frame::kSeek;  // past </tool_call> to the next <tool_call>
    return true;
  }
  if (!SkipSpace(text, pos_)) return false;
  const char next = text[pos_];
  if (framing_ == Framing::kLlama3 ? next != ';' : next != ',' && next != ']') {
    frame_ = Frame::kStopped;
    return true;
  }
  ++pos_;
  if (next == ']') {
    in_array_ = false;
    if (framing_ == Framing::kJsonArray || framing_ == Framing::kGranite ||
        framing_ == Framing::kPhi4Mini) {
      frame_ = Frame::kStopped;  // one array
      return true;
    }
  }
  frame_ = Frame::kSeek;
  return true;
}

}  // namespace headroom::router::openai
