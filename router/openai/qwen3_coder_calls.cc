#include "router/openai/qwen3_coder_calls.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/json_depth.h"
#include "router/jinja/value.h"
#include "router/openai/json_fields.h"
#include "router/openai/pythonic_calls.h"
#include "router/openai/tool_call_tags.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t npos = std::string_view::npos;

// The tags around a format's calls.
std::string_view StartTag(XmlCallFormat format) {
  return format == XmlCallFormat::kSeedOss ? kSeedToolCallStart : kHermesStart;
}
std::string_view EndTag(XmlCallFormat format) {
  return format == XmlCallFormat::kSeedOss ? kSeedToolCallEnd : kHermesEnd;
}

// Where a lazy `(.*?)$` that may run to `end` stops: Python's `$` also matches before a final
// line break.
size_t DollarEnd(std::string_view text, size_t begin, size_t end) {
  return end > begin && text[end - 1] == '\n' ? end - 1 : end;
}

// --- Python's int() and float() of a string -----------------------------------------------------

// The whitespace str.strip(), int() and float() remove (the ASCII part).
bool IsPySpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

std::string_view PyStrip(std::string_view s) {
  while (!s.empty() && IsPySpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsPySpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Digits with single underscores between them, from s[*at]; appends them without the
// underscores. False when there is no digit there.
bool ReadDigits(std::string_view s, size_t* at, std::string* out) {
  if (*at >= s.size() || !IsDigit(s[*at])) return false;
  while (true) {
    while (*at < s.size() && IsDigit(s[*at])) out->push_back(s[(*at)++]);
    if (*at + 1 < s.size() && s[*at] == '_' && IsDigit(s[*at + 1])) {
      ++*at;
      continue;
    }
    return true;
  }
}

// int(text) as json.dumps writes it (any size: Python's ints are unbounded, up to its 4300-digit
// limit for reading one); nullopt where int() raises ValueError.
std::optional<std::string> PyInt(std::string_view text) {
  const std::string_view s = PyStrip(text);
  size_t at = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) ++at;
  std::string digits;
  if (!ReadDigits(s, &at, &digits) || at != s.size() || digits.size() > 4300) return std::nullopt;
  const size_t first = std::min(digits.find_first_not_of('0'), digits.size() - 1);
  digits.erase(0, first);
  if (negative && digits != "0") return std::string("-").append(digits);
  return digits;
}

// float(text); nullopt where it raises ValueError.
std::optional<double> PyFloat(std::string_view text) {
  const std::string_view s = PyStrip(text);
  size_t at = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) ++at;
  const std::string_view rest = s.substr(at);
  if (absl::EqualsIgnoreCase(Sv(rest), "inf") || absl::EqualsIgnoreCase(Sv(rest), "infinity")) {
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (absl::EqualsIgnoreCase(Sv(rest), "nan")) return std::nan("");
  std::string number;
  const bool whole = ReadDigits(s, &at, &number);
  if (at < s.size() && s[at] == '.') {
    number.push_back(s[at++]);
    const bool fraction = ReadDigits(s, &at, &number);
    if (!whole && !fraction) return std::nullopt;
  } else if (!whole) {
    return std::nullopt;
  }
  if (at < s.size() && (s[at] == 'e' || s[at] == 'E')) {
    number.push_back(s[at++]);
    if (at < s.size() && (s[at] == '+' || s[at] == '-')) number.push_back(s[at++]);
    if (!ReadDigits(s, &at, &number)) return std::nullopt;
  }
  if (at != s.size()) return std::nullopt;
  const double value = std::strtod(number.c_str(), nullptr);  // HUGE_VAL past the range
  return negative ? -value : value;
}

// The exact decimal digits of an integral double (Python's int() of it).
std::string IntegralDigits(double value) {
  if (std::fabs(value) < 9.2e18) return std::to_string(static_cast<int64_t>(value));
  int exponent = 0;
  const double mantissa = std::frexp(std::fabs(value), &exponent);  // value = m * 2^e, m in [.5, 1)
  auto bits = static_cast<uint64_t>(std::ldexp(mantissa, 53));
  exponent -= 53;  // value = bits * 2^exponent, exponent > 0 here
  // Little-endian base-1e9 limbs of `bits`, doubled `exponent` times.
  std::vector<uint32_t> limbs;
  for (; bits > 0; bits /= 1000000000) limbs.push_back(static_cast<uint32_t>(bits % 1000000000));
  for (int i = 0; i < exponent; ++i) {
    uint32_t carry = 0;
    for (uint32_t& limb : limbs) {
      const uint64_t doubled = uint64_t{limb} * 2 + carry;
      limb = static_cast<uint32_t>(doubled % 1000000000);
      carry = static_cast<uint32_t>(doubled / 1000000000);
    }
    if (carry > 0) limbs.push_back(carry);
  }
  std::string out = value < 0 ? "-" : "";
  out += std::to_string(limbs.back());
  for (size_t i = limbs.size() - 1; i-- > 0;) {
    const std::string limb = std::to_string(limbs[i]);
    out.append(9 - limb.size(), '0');
    out += limb;
  }
  return out;
}

// --- Converting a value by its parameter's type
// ---------------------------------------------------

// The types the request's tool gives `function`'s parameters: its parameters' "properties", or
// the parameters object itself when it has none (as vLLM reads it); empty when the tools do not
// name the function.
Json ArgumentsConfig(std::string_view function, const Json* tools) {
  if (tools == nullptr || !tools->is_array()) return Json::object();
  for (const Json& tool : *tools) {
    const Json* f = Member(tool, "function");
    if (f == nullptr || !f->is_object()) continue;
    const Json* name = Member(*f, "name");
    if (name == nullptr || !name->is_string() || name->get<std::string_view>() != function) {
      continue;
    }
    const Json* params = Member(*f, "parameters");
    if (params == nullptr || !params->is_object()) return Json::object();
    if (!params->contains("properties")) return *params;
    const Json* properties = Member(*params, "properties");
    return properties != nullptr && properties->is_object() ? *properties : Json::object();
  }
  return Json::object();
}

// The parameter's type as vLLM compares it: str(type).strip().lower(); kOther for a type that is
// not a string (a list of types), which matches none of the names.
constexpr std::string_view kOther = "\x01";

// An entry without a type: qwen3_coder reads an anyOf as an object, seed_oss any as a string.
std::string ParameterType(std::string_view name, const Json& config, XmlCallFormat format) {
  const auto entry = config.find(std::string(name));
  if (entry == config.end() || !entry->is_object()) return "string";
  if (const auto type = entry->find("type"); type != entry->end()) {
    if (!type->is_string()) return std::string(kOther);
    return absl::AsciiStrToLower(Sv(PyStrip(type->get<std::string_view>())));
  }
  return entry->contains("anyOf") && format == XmlCallFormat::kQwen3Coder ? "object" : "string";
}

bool StartsWithAny(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [s](std::string_view p) { return absl::StartsWith(Sv(s), Sv(p)); });
}

bool IsAnyOf(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

// A converted value.
struct Converted {
  std::string json;     // its JSON text
  bool raised = false;  // vLLM's conversion raised: the whole reply is content
};

Converted ConvertValue(std::string_view value, std::string_view name, const Json& config,
                       XmlCallFormat format) {
  const auto text = [value]() -> Converted {
    std::optional<std::string> json = PyJsonDumps(Json(std::string(value)));
    if (!json.has_value()) return {"", true};
    return {*std::move(json)};
  };
  if (absl::EqualsIgnoreCase(Sv(value), "null")) return {"null"};
  if (!config.contains(std::string(name))) return text();
  const std::string type = ParameterType(name, config, format);
  if (IsAnyOf(type, {"string", "str", "text", "varchar", "char", "enum"})) return text();
  if (StartsWithAny(type, {"int", "uint", "long", "short", "unsigned"})) {
    std::optional<std::string> digits = PyInt(value);
    return digits.has_value() ? Converted{*std::move(digits)} : text();
  }
  if (StartsWithAny(type, {"num", "float"})) {
    const std::optional<double> number = PyFloat(value);
    if (!number.has_value() || std::isnan(*number)) return text();  // int(nan): ValueError
    if (std::isinf(*number)) return {"", true};  // int(inf): OverflowError, not caught
    if (*number == std::trunc(*number)) return {IntegralDigits(*number)};
    return {jinja::PyFloatRepr(*number)};
  }
  if (IsAnyOf(type, {"boolean", "bool", "binary"})) {
    return {absl::EqualsIgnoreCase(Sv(value), "true") ? "true" : "false"};
  }
  std::optional<Json> parsed;
  // json.loads first: qwen3_coder for object and array types, seed_oss for object types only.
  const bool json_first =
      format == XmlCallFormat::kSeedOss
          ? type == "object" || StartsWithAny(type, {"dict"})
          : IsAnyOf(type, {"object", "array", "arr"}) || StartsWithAny(type, {"dict", "list"});
  if (json_first) {
    parsed = JsonLoads(value);
  }
  if (!parsed.has_value()) parsed = ParsePythonLiteral(value);
  if (!parsed.has_value()) return text();
  std::optional<std::string> json = PyJsonDumps(*parsed);
  return json.has_value() ? Converted{*std::move(json)} : text();
}

// One parameter's text: what follows <parameter= up to its end, "name>value".
struct Parameter {
  std::string name;
  std::string value;
};

// "name>\nvalue\n" split at the first '>', the value without one leading and one trailing line
// break; nullopt without a '>' (vLLM's str.index raises: the whole reply is content).
std::optional<Parameter> SplitParameter(std::string_view match) {
  const size_t split = match.find('>');
  if (split == npos) return std::nullopt;
  std::string_view value = match.substr(split + 1);
  if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
  if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
  return Parameter{std::string(match.substr(0, split)), std::string(value)};
}

// Appends `key: value` (both JSON) to a call's arguments so far.
void AppendArgument(std::string_view key, std::string_view json, bool first,
                    std::string* arguments) {
  if (!first) *arguments += ", ";
  *arguments += key;
  *arguments += ": ";
  *arguments += json;
}

// The parameters of a function's text after its name (`params`): each <parameter= match up to
// the first </parameter> or <parameter= after it (seed_oss: the first </parameter>), or the
// text's end. nullopt where vLLM raises.
std::optional<std::string> ArgumentsOf(std::string_view params, const Json& config,
                                       XmlCallFormat format) {
  // Python dict: a repeated name keeps its first place and takes its last value.
  std::vector<std::pair<std::string, std::string>> values;
  absl::flat_hash_map<std::string, size_t> place;
  // The next </parameter>, kept across parameters so that a reply without one is scanned once.
  // (</function> is never inside `params`: the function's text ends at the first one.)
  size_t next_close = 0;
  for (size_t at = params.find(kQwenParameterStart); at != npos;
       at = params.find(kQwenParameterStart, at)) {
    const size_t begin = at + kQwenParameterStart.size();
    if (next_close != npos && next_close < begin) {
      next_close = params.find(kQwenParameterEnd, begin);
    }
    size_t end = format == XmlCallFormat::kSeedOss
                     ? next_close
                     : std::min(next_close, params.find(kQwenParameterStart, begin));
    if (end == npos) end = DollarEnd(params, begin, params.size());
    std::optional<Parameter> parameter = SplitParameter(params.substr(begin, end - begin));
    if (!parameter.has_value()) return std::nullopt;
    Converted converted = ConvertValue(parameter->value, parameter->name, config, format);
    if (converted.raised) return std::nullopt;
    if (const auto same = place.find(parameter->name); same != place.end()) {
      values[same->second].second = std::move(converted.json);
    } else {
      place.emplace(parameter->name, values.size());
      values.emplace_back(std::move(parameter->name), std::move(converted.json));
    }
    at = params.compare(end, kQwenParameterEnd.size(), kQwenParameterEnd) == 0
             ? end + kQwenParameterEnd.size()
             : end;
  }
  std::string arguments = "{";
  for (const auto& [name, json] : values) {
    std::optional<std::string> key = PyJsonDumps(Json(name));
    if (!key.has_value()) return std::nullopt;
    AppendArgument(*key, json, arguments.size() == 1, &arguments);
  }
  return arguments + "}";
}

// The texts after <tool_call> (seed_oss: <seed:tool_call>) of each block
// (`<tool_call>(.*?)</tool_call>|<tool_call>(.*?)$`), or the whole reply when it has none.
std::vector<std::string_view> Blocks(std::string_view text, XmlCallFormat format) {
  const std::string_view start = StartTag(format);
  const std::string_view finish = EndTag(format);
  std::vector<std::string_view> blocks;
  for (size_t at = text.find(start); at != npos; at = text.find(start, at)) {
    const size_t begin = at + start.size();
    const size_t end = text.find(finish, begin);
    if (end == npos) {
      blocks.push_back(text.substr(begin, DollarEnd(text, begin, text.size()) - begin));
      break;
    }
    blocks.push_back(text.substr(begin, end - begin));
    at = end + finish.size();
  }
  if (blocks.empty()) blocks.push_back(text);
  return blocks;
}

// The texts after <function= of each function in a block (`<function=(.*?)</function>|
// <function=(.*)$`).
void AppendFunctions(std::string_view block, std::vector<std::string_view>* functions) {
  for (size_t at = block.find(kQwenFunctionStart); at != npos;
       at = block.find(kQwenFunctionStart, at)) {
    const size_t begin = at + kQwenFunctionStart.size();
    const size_t end = block.find(kQwenFunctionEnd, begin);
    if (end == npos) {
      functions->push_back(block.substr(begin));
      break;
    }
    functions->push_back(block.substr(begin, end - begin));
    at = end + kQwenFunctionEnd.size();
  }
}

}  // namespace

ParsedToolOutput ParseXmlCalls(std::string_view text, const Json* tools, XmlCallFormat format) {
  ParsedToolOutput content_only{std::string(text), {}};
  // Python reads text; the names and values go into JSON.
  if (text.find(kQwenFunctionStart) == npos || !utf8::IsValid(text)) return content_only;
  std::vector<std::string_view> functions;
  for (const std::string_view block : Blocks(text, format)) AppendFunctions(block, &functions);
  ParsedToolOutput out;
  for (const std::string_view function : functions) {
    const size_t name_end = function.find('>');
    if (name_end == npos) {
      // Not a call: qwen3_coder skips it; seed_oss's str.index raises (the reply is content).
      if (format == XmlCallFormat::kSeedOss) return content_only;
      continue;
    }
    const std::string_view name = function.substr(0, name_end);
    std::optional<std::string> arguments =
        ArgumentsOf(function.substr(name_end + 1), ArgumentsConfig(name, tools), format);
    if (!arguments.has_value()) return content_only;
    out.calls.push_back({std::string(name), *std::move(arguments)});
  }
  if (out.calls.empty()) return content_only;
  size_t start = text.find(StartTag(format));
  if (start == npos) start = text.find(kQwenFunctionStart);
  if (start > 0) out.content = std::string(text.substr(0, start));
  return out;
}

// --- Qwen3CoderCallStream
// -------------------------------------------------------------------------

void Qwen3CoderCallStream::Read(std::string_view text) {
  const std::string_view start = StartTag(format_);
  if (stage_ == Stage::kBlock && pos_ == 0 &&
      text.substr(0, start.size()) != start.substr(0, text.size())) {
    stage_ = Stage::kStopped;  // it starts with <function=: whole at the end
  }
  while (stage_ != Stage::kStopped && Step(text)) {
  }
  // Nothing more was found: later searches start where a tag could still begin.
  const size_t longest_tag = std::max(kQwenParameterEnd.size(), EndTag(format_).size());
  searched_ = std::max(pos_, text.size() >= longest_tag ? text.size() - (longest_tag - 1) : 0);
}

ToolCall& Qwen3CoderCallStream::Current() {
  if (!call_started_) {
    calls_.push_back({name_, "{"});
    call_started_ = true;
  }
  return calls_.back();
}

size_t Qwen3CoderCallStream::Find(std::string_view text, std::string_view tag) {
  return text.find(tag, std::max(pos_, searched_));
}

void Qwen3CoderCallStream::MoveTo(size_t pos, Stage stage) {
  pos_ = pos;
  searched_ = pos;
  stage_ = stage;
}

bool Qwen3CoderCallStream::Step(std::string_view text) {
  const std::string_view block_start = StartTag(format_);
  const std::string_view block_finish = EndTag(format_);
  switch (stage_) {
    case Stage::kBlock: {
      const size_t at = Find(text, block_start);
      if (at == npos) return false;
      MoveTo(at + block_start.size(), Stage::kFunction);
      return true;
    }
    case Stage::kFunction: {
      const size_t function = Find(text, kQwenFunctionStart);
      const size_t block_end = Find(text, block_finish);
      if (block_end < function) {
        MoveTo(block_end + block_finish.size(), Stage::kBlock);
      } else if (function != npos) {
        MoveTo(function + kQwenFunctionStart.size(), Stage::kName);
      } else {
        return false;
      }
      return true;
    }
    case Stage::kName: {
      const size_t end = Find(text, ">");
      if (end == npos) return false;
      // The '>' closing </function> or </tool_call>: the function has no name, so it is no call
      // (seed_oss: the whole reply is content).
      const std::string_view before = text.substr(0, end + 1);
      const bool function_ended =
          before.size() >= pos_ + kQwenFunctionEnd.size() && before.ends_with(kQwenFunctionEnd);
      const bool block_ended =
          before.size() >= pos_ + block_finish.size() && before.ends_with(block_finish);
      if ((function_ended || block_ended) && format_ == XmlCallFormat::kSeedOss) {
        stage_ = Stage::kStopped;
        return false;
      }
      if (function_ended) {
        MoveTo(end + 1, Stage::kFunction);
      } else if (block_ended) {
        MoveTo(end + 1, Stage::kBlock);
      } else {
        name_ = text.substr(pos_, end - pos_);
        if (!utf8::IsValid(name_)) {
          stage_ = Stage::kStopped;  // the whole reply is content
          return false;
        }
        config_ = ArgumentsConfig(name_, tools_);
        parameters_ = 0;
        call_started_ = false;
        MoveTo(end + 1, Stage::kParameter);
      }
      return true;
    }
    case Stage::kParameter: {
      const size_t parameter = Find(text, kQwenParameterStart);
      const size_t function_end = Find(text, kQwenFunctionEnd);
      const size_t block_end = Find(text, block_finish);
      const size_t first = std::min({parameter, function_end, block_end});
      if (first == npos) return false;
      if (first == parameter) {
        MoveTo(parameter + kQwenParameterStart.size(), Stage::kValue);
        return true;
      }
      Current().arguments += '}';
      if (first == function_end) {
        MoveTo(function_end + kQwenFunctionEnd.size(), Stage::kFunction);
      } else {
        MoveTo(block_end + block_finish.size(), Stage::kBlock);  // a function cut by its block
      }
      return true;
    }
    case Stage::kValue: {
      // The value ends at the first </parameter> or <parameter= (seed_oss: </parameter>), or
      // else at the end of the function's text: </function>, or </tool_call> for a function its
      // block cuts (there Python's `$` stops before a final line break).
      const size_t next_parameter =
          format_ == XmlCallFormat::kSeedOss ? npos : Find(text, kQwenParameterStart);
      const size_t marker = std::min(Find(text, kQwenParameterEnd), next_parameter);
      const size_t bound = std::min(Find(text, kQwenFunctionEnd), Find(text, block_finish));
      size_t end = marker;
      if (bound < marker) {
        end = DollarEnd(text, pos_, bound);
      } else if (marker == npos) {
        return false;
      }
      // A name given twice goes out twice: the whole parse keeps the first one's place with the
      // last value, which is what a JSON reader makes of the streamed text too.
      const std::string_view match = text.substr(pos_, end - pos_);
      std::optional<Parameter> parameter = SplitParameter(match);
      if (!parameter.has_value() || !utf8::IsValid(match)) {
        stage_ = Stage::kStopped;
        return false;
      }
      const Converted converted = ConvertValue(parameter->value, parameter->name, config_, format_);
      std::optional<std::string> key = PyJsonDumps(Json(parameter->name));
      if (converted.raised || !key.has_value()) {
        stage_ = Stage::kStopped;
        return false;
      }
      AppendArgument(*key, converted.json, parameters_ == 0, &Current().arguments);
      ++parameters_;
      const bool closed = text.compare(end, kQwenParameterEnd.size(), kQwenParameterEnd) == 0;
      MoveTo(closed ? end + kQwenParameterEnd.size() : end, Stage::kParameter);
      return true;
    }
    case Stage::kStopped:
      return false;
  }
  return false;
}

}  // namespace headroom::router::openai
