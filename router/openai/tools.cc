#include "router/openai/tools.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "router/jinja/value.h"
#include "router/openai/json_fields.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router::openai {
namespace {

// A function's parameters, or, when it declares none, the empty object's schema: it takes no
// arguments, so the call's are "{}".
Json ParametersOf(const Json& tool) {
  const Json& parameters = tool["function"]["parameters"];
  if (parameters.is_object() && !parameters.empty()) return parameters;
  return Json{{"type", "object"}, {"properties", Json::object()}, {"additionalProperties", false}};
}

// One entry of `tools`, normalized as vLLM's model_dump gives it to the template.
absl::StatusOr<Json> ParseTool(const Json& tool, const std::string& path) {
  if (!tool.is_object()) return WrongType(path, "an object", tool);
  if (const Json* type = Member(tool, "type"); type != nullptr && *type != "function") {
    return Bad(path + ".type",
               absl::StrCat(path, ".type must be \"function\", got ", type->dump()));
  }
  const std::string fpath = path + ".function";
  const Json* function = Member(tool, "function");
  if (function == nullptr) return Bad(fpath, fpath + " is required");
  if (!function->is_object()) return WrongType(fpath, "an object", *function);
  const Json* name = Member(*function, "name");
  if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return Bad(fpath + ".name", fpath + ".name must be a non-empty string");
  }
  const Json* description = Member(*function, "description");
  if (description != nullptr && !description->is_string()) {
    return WrongType(fpath + ".description", "a string", *description);
  }
  const Json* parameters = Member(*function, "parameters");
  if (parameters != nullptr && !parameters->is_object()) {
    return WrongType(fpath + ".parameters", "a JSON schema (an object)", *parameters);
  }
  return Json{{"type", "function"},
              {"function",
               {{"name", *name},
                {"description", description != nullptr ? *description : Json(nullptr)},
                {"parameters", parameters != nullptr ? *parameters : Json(nullptr)}}}};
}

absl::StatusOr<ToolChoice> ParseChoice(const Json& request, const Json& tools) {
  ToolChoice choice;
  const Json* given = Member(request, "tool_choice");
  if (given == nullptr) {
    choice.kind = tools.empty() ? ToolChoice::Kind::kNone : ToolChoice::Kind::kAuto;
  } else if (given->is_string()) {
    const std::string& kind = given->get_ref<const std::string&>();
    if (kind == "none") return choice;
    if (kind == "auto") {
      choice.kind = ToolChoice::Kind::kAuto;
    } else if (kind == "required") {
      choice.kind = tools.empty() ? ToolChoice::Kind::kNone : ToolChoice::Kind::kRequired;
    } else {
      return Bad("tool_choice", absl::StrCat("tool_choice must be \"none\", \"auto\", "
                                             "\"required\" or a named function, got \"",
                                             kind, "\""));
    }
  } else if (given->is_object()) {
    const Json* function = Member(*given, "function");
    const Json* name =
        function != nullptr && function->is_object() ? Member(*function, "name") : nullptr;
    if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
      return Bad("tool_choice",
                 "tool_choice must name a function: {\"type\": \"function\", \"function\": "
                 "{\"name\": \"my_function\"}}");
    }
    choice.kind = ToolChoice::Kind::kFunction;
    choice.function = name->get<std::string>();
    bool known = false;
    for (const Json& tool : tools) known = known || tool["function"]["name"] == *name;
    if (!known) {
      return Bad("tool_choice", absl::StrCat("tool_choice names function \"", choice.function,
                                             "\", which is not in tools"));
    }
  } else {
    return WrongType("tool_choice", "a string or an object", *given);
  }
  if (choice.kind != ToolChoice::Kind::kNone && tools.empty()) {
    return Bad("tool_choice", "tool_choice needs tools");
  }
  return choice;
}

}  // namespace

absl::StatusOr<ToolRequest> ParseToolRequest(const Json& request) {
  ToolRequest out;
  if (const Json* tools = Member(request, "tools"); tools != nullptr) {
    if (!tools->is_array()) return WrongType("tools", "an array", *tools);
    out.given = true;
    for (size_t i = 0; i < tools->size(); ++i) {
      HEADROOM_OPENAI_ASSIGN(tool, ParseTool((*tools)[i], Path("tools", i)));
      for (const Json& other : out.tools) {
        if (other["function"]["name"] == tool["function"]["name"]) {
          return Bad(Path("tools", i), absl::StrCat(Path("tools", i), " repeats function name ",
                                                    tool["function"]["name"].dump()));
        }
      }
      out.tools.push_back(std::move(tool));
    }
  }
  HEADROOM_OPENAI_ASSIGN(choice, ParseChoice(request, out.tools));
  HEADROOM_OPENAI_ASSIGN(parallel, OptBool(request, "parallel_tool_calls"));
  choice.parallel = parallel.value_or(true);
  out.choice = std::move(choice);
  return out;
}

absl::StatusOr<Json> ParseToolCalls(const Json& calls, std::string_view path) {
  if (!calls.is_array()) return WrongType(path, "an array", calls);
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string p = Path(path, i);
    const Json& call = calls[i];
    if (!call.is_object()) return WrongType(p, "an object", call);
    const Json* function = Member(call, "function");
    if (function == nullptr || !function->is_object()) {
      return Bad(p + ".function", p + ".function must be an object with name and arguments");
    }
    const Json* name = Member(*function, "name");
    if (name == nullptr || !name->is_string()) {
      return Bad(p + ".function.name", p + ".function.name must be a string");
    }
    const Json* arguments = Member(*function, "arguments");
    Json parsed = Json::object();
    if (arguments != nullptr) {
      if (!arguments->is_string()) {
        return WrongType(p + ".function.arguments", "a string (JSON text)", *arguments);
      }
      const auto& text = arguments->get_ref<const std::string&>();
      if (JsonNestingDepth(text) > kMaxJsonNesting) {
        return Bad(p + ".function.arguments",
                   absl::StrCat(p, ".function.arguments nests more than ", kMaxJsonNesting,
                                " levels deep"));
      }
      parsed = Json::parse(text, nullptr, false);
      if (parsed.is_discarded()) {
        return Bad(p + ".function.arguments", p + ".function.arguments is not valid JSON");
      }
    }
    Json entry = Json::object();
    if (const Json* id = Member(call, "id"); id != nullptr) {
      if (!id->is_string()) return WrongType(p + ".id", "a string", *id);
      entry["id"] = *id;
    }
    entry["type"] = "function";
    entry["function"] = {{"name", *name}, {"arguments", std::move(parsed)}};
    out.push_back(std::move(entry));
  }
  return out;
}

absl::StatusOr<std::string> ToolChoiceSchema(const Json& tools, const ToolChoice& choice) {
  if (choice.kind == ToolChoice::Kind::kFunction) {
    for (const Json& tool : tools) {
      if (tool["function"]["name"] == choice.function) return ParametersOf(tool).dump();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("tool_choice names function \"", choice.function, "\", not in tools"));
  }
  if (choice.kind != ToolChoice::Kind::kRequired) return std::string();
  Json alternatives = Json::array();
  Json defs = Json::object();
  for (const Json& tool : tools) {
    Json parameters = ParametersOf(tool);
    // $ref "#/$defs/X" inside a function's parameters resolves at the root of this schema.
    if (auto it = parameters.find("$defs"); it != parameters.end() && it->is_object()) {
      for (const auto& [name, def] : it->items()) {
        if (defs.contains(name) && defs[name] != def) {
          return absl::InvalidArgumentError(
              absl::StrCat("tools define $defs \"", name, "\" differently; give it one schema"));
        }
        defs[name] = def;
      }
      parameters.erase("$defs");
    }
    alternatives.push_back(
        Json{{"type", "object"},
             {"properties",
              {{"name", {{"type", "string"}, {"enum", {tool["function"]["name"]}}}},
               {"parameters", std::move(parameters)}}},
             {"required", {"name", "parameters"}}});
  }
  Json schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", alternatives}}}};
  if (!choice.parallel) schema["maxItems"] = 1;
  if (!defs.empty()) schema["$defs"] = std::move(defs);
  return schema.dump();
}

std::optional<std::vector<ToolCall>> ToolCallsFromText(const ToolChoice& choice,
                                                       std::string_view text) {
  if (choice.kind == ToolChoice::Kind::kFunction) {
    return std::vector<ToolCall>{{choice.function, std::string(text)}};
  }
  if (choice.kind != ToolChoice::Kind::kRequired) return std::nullopt;
  if (JsonNestingDepth(text) > kMaxJsonNesting) return std::nullopt;
  const Json calls = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!calls.is_array() || calls.empty()) return std::nullopt;
  std::vector<ToolCall> out;
  for (const Json& call : calls) {
    std::optional<ToolCall> one = ToolCallFromJson(call, "parameters");
    if (!one.has_value()) return std::nullopt;
    out.push_back(*std::move(one));
  }
  return out;
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// An integer literal outside int64 in JSON text (json.loads reads it exactly; nlohmann would make
// it a float).
bool HasWideInteger(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      i = JsonStringEnd(text, i) - 1;
      continue;
    }
    if (c != '-' && !IsDigit(c)) continue;
    const bool negative = c == '-';
    size_t end = negative ? i + 1 : i;
    const size_t start = end;
    while (end < text.size() && IsDigit(text[end])) ++end;
    const bool integer =
        end >= text.size() || (text[end] != '.' && text[end] != 'e' && text[end] != 'E');
    const std::string_view digits = text.substr(start, end - start);
    const std::string_view limit = negative ? "9223372036854775808" : "9223372036854775807";
    if (integer &&
        (digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit))) {
      return true;
    }
    while (end < text.size() && (IsDigit(text[end]) || text[end] == '.' || text[end] == 'e' ||
                                 text[end] == 'E' || text[end] == '+' || text[end] == '-')) {
      ++end;
    }
    i = end - 1;
  }
  return false;
}

}  // namespace

std::optional<Json> JsonLoads(std::string_view text) {
  if (JsonNestingDepth(text) > kMaxJsonNesting || HasWideInteger(text)) return std::nullopt;
  // nlohmann refuses what json.loads reads as infinite (1e999) or NaN; the router holds finite
  // numbers only.
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

std::optional<std::string> PyJsonDumps(const Json& value) {
  absl::StatusOr<std::string> out = jinja::ToJson(jinja::Value::FromJson(value), {});
  if (!out.ok()) return std::nullopt;
  return *std::move(out);
}

std::optional<ToolCall> ToolCallFromJson(const Json& call, std::string_view arguments_key) {
  const std::string key(arguments_key);
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string() ||
      !call.contains(key)) {
    return std::nullopt;
  }
  std::optional<std::string> arguments = PyJsonDumps(call[key]);
  if (!arguments.has_value()) return std::nullopt;
  return ToolCall{call["name"].get<std::string>(), *std::move(arguments)};
}

}  // namespace headroom::router::openai
