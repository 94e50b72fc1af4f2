#include "router/openai/glm_calls.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "router/jinja/text.h"
#include "router/openai/json_fields.h"
#include "router/openai/pythonic_calls.h"
#include "router/openai/tool_call_tags.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t npos = std::string_view::npos;

// Python's str.strip() and lstrip(): Unicode whitespace (also what `\s` matches in a str pattern).
std::string_view PyStrip(std::string_view s) { return jinja::text::Strip(s, nullptr); }
std::string_view PyLStrip(std::string_view s) { return jinja::text::LStrip(s, nullptr); }

// Whether the request's tool named `function` types its parameter `key` "string" (vLLM's
// _is_string_type: the first tool of that name decides; its parameters' "properties"). A
// parameters, properties or property entry that is not an object types nothing.
bool IsStringTyped(std::string_view function, std::string_view key, const Json* tools) {
  if (tools == nullptr || !tools->is_array()) return false;
  for (const Json& tool : *tools) {
    const Json* f = Member(tool, "function");
    const Json* name = f != nullptr ? Member(*f, "name") : nullptr;
    if (name == nullptr || !name->is_string() || name->get<std::string_view>() != function) {
      continue;
    }
    const Json* params = Member(*f, "parameters");
    const Json* properties = params != nullptr ? Member(*params, "properties") : nullptr;
    const Json* entry = properties != nullptr ? Member(*properties, key) : nullptr;
    const Json* type = entry != nullptr ? Member(*entry, "type") : nullptr;
    return type != nullptr && type->is_string() && type->get<std::string_view>() == "string";
  }
  return false;
}

// A value as vLLM reads it: as written for a string parameter; otherwise stripped, then
// json.loads, else ast.literal_eval, else the stripped text.
Json ValueOf(std::string_view value, bool string_typed) {
  if (string_typed) return Json(std::string(value));
  const std::string_view stripped = PyStrip(value);
  if (std::optional<Json> loaded = JsonLoads(stripped)) return *std::move(loaded);
  if (std::optional<Json> literal = ParsePythonLiteral(stripped)) return *std::move(literal);
  return Json(std::string(stripped));
}

// `"key": value` as json.dumps writes a pair; nullopt when it cannot be written.
std::optional<std::string> PairJson(std::string_view function, std::string_view raw_key,
                                    std::string_view value, const Json* tools) {
  const std::string key(PyStrip(raw_key));
  std::optional<std::string> key_json = PyJsonDumps(Json(key));
  std::optional<std::string> value_json =
      PyJsonDumps(ValueOf(value, IsStringTyped(function, key, tools)));
  if (!key_json.has_value() || !value_json.has_value()) return std::nullopt;
  return *key_json + ": " + *value_json;
}

// How many bytes at the start of `s` the gap between a key and its value takes: whitespace, and
// for glm47 literal backslash-n pairs too.
size_t GapLength(std::string_view s, GlmFormat format) {
  size_t length = 0;
  while (true) {
    const std::string_view rest = PyLStrip(s.substr(length));
    length = s.size() - rest.size();
    if (format != GlmFormat::kGlm47 || !rest.starts_with(kGlm47NewlineEscape)) return length;
    length += kGlm47NewlineEscape.size();
  }
}

// A pair the pattern matched: its key's and its value's text, and where the match ends.
struct Pair {
  std::string_view key;
  std::string_view value;
  size_t end;
};

// The pattern's next match in `region` (a whole call's text after its name) from `from`. The key
// is lazy: it ends at the first </arg_key> that the gap and <arg_value> follow. Where the
// <arg_key> found has no match, none after it has one either (its </arg_key>s and value ends are
// among this one's), so nullopt ends the pairs.
std::optional<Pair> NextPair(std::string_view region, size_t from, GlmFormat format) {
  const size_t open = region.find(kGlmKeyStart, from);
  if (open == npos) return std::nullopt;
  const size_t key = open + kGlmKeyStart.size();
  for (size_t end = region.find(kGlmKeyEnd, key); end != npos;
       end = region.find(kGlmKeyEnd, end + 1)) {
    const size_t gap = end + kGlmKeyEnd.size();
    const size_t value_start = gap + GapLength(region.substr(gap), format);
    if (region.compare(value_start, kGlmValueStart.size(), kGlmValueStart) != 0) continue;
    const size_t value = value_start + kGlmValueStart.size();
    const size_t value_end = region.find(kGlmValueEnd, value);
    if (value_end == npos) return std::nullopt;
    return Pair{region.substr(key, end - key), region.substr(value, value_end - value),
                value_end + kGlmValueEnd.size()};
  }
  return std::nullopt;
}

// The call a block's text (between <tool_call> and </tool_call>) makes; nullopt when it makes
// none (glm45: no line break; an empty name).
std::optional<ToolCall> CallOf(std::string_view block, const Json* tools, GlmFormat format) {
  // glm45: the name is the first line, the pairs what follows it; glm47: the name is the text
  // before the first <arg_key>, the pairs from there.
  const size_t name_end = format == GlmFormat::kGlm45
                              ? block.find('\n')
                              : std::min(block.find(kGlmKeyStart), block.size());
  if (name_end == npos) return std::nullopt;
  const std::string name(PyStrip(block.substr(0, name_end)));
  if (name.empty()) return std::nullopt;
  // A Python dict: a key given twice keeps its first place and takes its last value.
  Json arguments = Json::object();
  const std::string_view pairs = block.substr(name_end + (format == GlmFormat::kGlm45 ? 1 : 0));
  for (std::optional<Pair> pair = NextPair(pairs, 0, format); pair.has_value();
       pair = NextPair(pairs, pair->end, format)) {
    const std::string key(PyStrip(pair->key));
    arguments[key] = ValueOf(pair->value, IsStringTyped(name, key, tools));
  }
  std::optional<std::string> json = PyJsonDumps(arguments);
  if (!json.has_value()) return std::nullopt;
  return ToolCall{name, *std::move(json)};
}

// `s` starts with a character whose bytes are not all there yet (a piece may end inside one).
bool StartsWithCutCharacter(std::string_view s) {
  if (s.empty()) return false;
  return s.size() < utf8::CharLength(static_cast<unsigned char>(s[0]));
}

}  // namespace

ParsedToolOutput ParseGlmCalls(std::string_view text, const Json* tools, GlmFormat format) {
  ParsedToolOutput content_only{std::string(text), {}};
  const size_t first = text.find(kHermesStart);
  // Python reads text; the names and values go into JSON.
  if (first == npos || !utf8::IsValid(text)) return content_only;
  ParsedToolOutput out;
  for (size_t at = first; at != npos; at = text.find(kHermesStart, at)) {
    const size_t body = at + kHermesStart.size();
    const size_t end = text.find(kHermesEnd, body);
    if (end == npos) break;  // a block without its end is no call
    std::optional<ToolCall> call = CallOf(text.substr(body, end - body), tools, format);
    if (call.has_value()) out.calls.push_back(*std::move(call));
    at = end + kHermesEnd.size();
  }
  if (out.calls.empty()) return content_only;
  if (!PyStrip(text.substr(0, first)).empty()) out.content = std::string(text.substr(0, first));
  return out;
}

// --- GlmCallStream ------------------------------------------------------------------------------

void GlmCallStream::Read(std::string_view text) {
  while (stage_ != Stage::kStopped && Step(text)) {
  }
  // Nothing more was found: later searches start where a tag could still begin.
  constexpr size_t kLongestTag = kGlmValueEnd.size();
  searched_ = std::max(pos_, text.size() >= kLongestTag ? text.size() - (kLongestTag - 1) : 0);
}

size_t GlmCallStream::Find(std::string_view text, std::string_view tag) const {
  const size_t at = text.find(tag, std::max(pos_, searched_));
  return at < block_end_ ? at : npos;  // block_end_ is npos while unseen
}

void GlmCallStream::MoveTo(size_t pos, Stage stage) {
  pos_ = pos;
  searched_ = pos;
  stage_ = stage;
}

void GlmCallStream::EndCall() {
  if (!call_started_) {
    calls_.push_back({name_, "{}"});
  } else {
    calls_.back().arguments += '}';
  }
  call_started_ = false;
  MoveTo(block_end_ + kHermesEnd.size(), Stage::kBlock);
  block_end_ = npos;
}

bool GlmCallStream::Step(std::string_view text) {
  if (stage_ != Stage::kBlock && block_end_ == npos) {
    block_end_ = text.find(kHermesEnd, end_searched_);
    if (block_end_ == npos && text.size() >= kHermesEnd.size()) {
      end_searched_ = std::max(end_searched_, text.size() - (kHermesEnd.size() - 1));
    }
  }
  const bool block_ended = block_end_ != npos;
  switch (stage_) {
    case Stage::kBlock: {
      const size_t at = Find(text, kHermesStart);
      if (at == npos) return false;
      end_searched_ = at + kHermesStart.size();
      MoveTo(end_searched_, Stage::kName);
      return true;
    }
    case Stage::kName: {
      const bool glm45 = format_ == GlmFormat::kGlm45;
      size_t end = Find(text, glm45 ? std::string_view("\n") : kGlmKeyStart);
      if (end == npos) {
        if (!block_ended) return false;
        if (glm45) {
          MoveTo(pos_, Stage::kSkip);  // no line break in the block: no call
          return true;
        }
        end = block_end_;  // glm47: a call without arguments
      }
      name_ = std::string(PyStrip(text.substr(pos_, end - pos_)));
      const bool call = !name_.empty() && utf8::IsValid(name_);
      MoveTo(glm45 ? end + 1 : end, call ? Stage::kPair : Stage::kSkip);
      return true;
    }
    case Stage::kSkip:
      if (!block_ended) return false;
      MoveTo(block_end_ + kHermesEnd.size(), Stage::kBlock);
      block_end_ = npos;
      return true;
    case Stage::kPair: {
      const size_t open = Find(text, kGlmKeyStart);
      if (open == npos) {
        if (!block_ended) return false;
        EndCall();
        return true;
      }
      key_begin_ = open + kGlmKeyStart.size();
      MoveTo(key_begin_, Stage::kKeyEnd);
      return true;
    }
    case Stage::kKeyEnd: {
      const size_t end = Find(text, kGlmKeyEnd);
      if (end == npos) {
        if (!block_ended) return false;
        EndCall();  // no pair in the rest of the block
        return true;
      }
      key_end_ = end;
      MoveTo(end + kGlmKeyEnd.size(), Stage::kAfterKey);
      return true;
    }
    case Stage::kAfterKey: {
      const std::string_view block = text.substr(0, std::min(block_end_, text.size()));
      const size_t at = pos_ + GapLength(block.substr(pos_), format_);
      const std::string_view rest = block.substr(at);
      if (rest.starts_with(kGlmValueStart)) {
        MoveTo(at + kGlmValueStart.size(), Stage::kValue);
        return true;
      }
      // What follows the gap may still become <arg_value>, whitespace (a character cut) or, for
      // glm47, a backslash-n.
      const bool may_continue =
          kGlmValueStart.starts_with(rest) || StartsWithCutCharacter(rest) ||
          (format_ == GlmFormat::kGlm47 && rest == kGlm47NewlineEscape.substr(0, 1));
      if (!block_ended && may_continue) {
        pos_ = at;  // the gap read is the pattern's; what follows decides
        return false;
      }
      // No <arg_value> after this </arg_key>: the key runs on to a later one.
      MoveTo(key_end_ + 1, Stage::kKeyEnd);
      return true;
    }
    case Stage::kValue: {
      const size_t end = Find(text, kGlmValueEnd);
      if (end == npos) {
        if (!block_ended) return false;
        EndCall();  // no value ends in the block: no more pairs
        return true;
      }
      const std::string_view key = text.substr(key_begin_, key_end_ - key_begin_);
      const std::string_view value = text.substr(pos_, end - pos_);
      std::optional<std::string> pair = utf8::IsValid(key) && utf8::IsValid(value)
                                            ? PairJson(name_, key, value, tools_)
                                            : std::nullopt;
      if (!pair.has_value()) {
        stage_ = Stage::kStopped;  // the whole reply is content
        return false;
      }
      // A key given twice goes out twice: the whole parse keeps the first one's place with the
      // last value, which is what a JSON reader makes of the streamed text too.
      if (!call_started_) {
        calls_.push_back({name_, "{"});
        call_started_ = true;
      } else {
        calls_.back().arguments += ", ";
      }
      calls_.back().arguments += *pair;
      MoveTo(end + kGlmValueEnd.size(), Stage::kPair);
      return true;
    }
    case Stage::kStopped:
      return false;
  }
  return false;
}

}  // namespace headroom::router::openai
