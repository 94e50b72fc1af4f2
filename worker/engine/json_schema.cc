#include "worker/engine/json_schema.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/check.h"
#include "common/json_depth.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/engine/json_matcher.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;
using Kind = JsonSchema::Kind;
using Node = JsonSchema::Node;

// Ways of reading the text kept at once (anyOf alternatives that agree so far); more are
// dropped, which narrows what is accepted but never leaves a dead end.
constexpr size_t kMaxThreads = 32;

// Keywords the compiler enforces, and annotations it ignores (they constrain nothing).
constexpr std::array<std::string_view, 22> kSupported = {"minimum",
                                                         "maximum",
                                                         "exclusiveMinimum",
                                                         "exclusiveMaximum",
                                                         "type",
                                                         "enum",
                                                         "const",
                                                         "properties",
                                                         "required",
                                                         "additionalProperties",
                                                         "items",
                                                         "minItems",
                                                         "maxItems",
                                                         "minLength",
                                                         "maxLength",
                                                         "pattern",
                                                         "anyOf",
                                                         "oneOf",
                                                         "allOf",
                                                         "$ref",
                                                         "$defs",
                                                         "definitions"};
constexpr std::array<std::string_view, 15> kAnnotations = {
    "title",     "description",   "default",          "examples",        "$schema",
    "$id",       "$comment",      "format",           "deprecated",      "readOnly",
    "writeOnly", "discriminator", "contentMediaType", "contentEncoding", "uniqueItems"};

// The string formats JSON Schema 2020-12 defines. Validators (and OpenAI's strict mode, and the
// clients that parse the reply: pydantic's datetime, UUID, EmailStr) check them, so those without
// a pattern below are refused rather than generated unchecked. Other formats (OpenAPI's int32 on
// numbers, custom names) constrain nothing anyone checks and are ignored.
constexpr std::array<std::string_view, 19> kStringFormats = {
    "date-time", "date",          "time", "duration",     "email",        "idn-email",
    "hostname",  "idn-hostname",  "ipv4", "ipv6",         "uri",          "uri-reference",
    "iri",       "iri-reference", "uuid", "uri-template", "json-pointer", "relative-json-pointer",
    "regex"};

// The formats enforced, as patterns (RFC 3339 as jsonschema's checkers read it: year 0000 and
// leap seconds refused, days per month and leap years checked; 't' and 'z' allowed).
constexpr char kYear[] = "([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])";
constexpr char kLeapYear[] =
    "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)";
constexpr char kMonthDay[] =
    "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
    "02-(0[1-9]|1[0-9]|2[0-8]))";
constexpr char kTime[] =
    "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
constexpr char kOctet[] = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
constexpr char kHex[] = "[0-9a-fA-F]";

// The formats' patterns (one of the five names FormatRegex builds).
std::string FormatPattern(std::string_view format) {
  const std::string date = absl::StrCat("(", kYear, "-", kMonthDay, "|", kLeapYear, "-02-29)");
  if (format == "date") return absl::StrCat("^", date, "$");
  if (format == "time") return absl::StrCat("^", kTime, "$");
  if (format == "date-time") return absl::StrCat("^", date, "[Tt]", kTime, "$");
  if (format == "uuid") {
    return absl::StrCat("^", kHex, "{8}-", kHex, "{4}-", kHex, "{4}-", kHex, "{4}-", kHex, "{12}$");
  }
  if (format == "ipv4") return absl::StrCat("^(", kOctet, "\\.){3}", kOctet, "$");
  return "";
}

// The enforced formats' automata: constants, built once per process and shared by every schema
// that uses them (building date-time's takes ~40 µs, three times per request otherwise: the
// HTTP front, the router's validation and the worker each compile the schema). Null for a format
// not enforced.
std::shared_ptr<const JsonRegex> FormatRegex(const std::string& format) {
  static const auto* const regexes = [] {
    auto* built = new absl::flat_hash_map<std::string, std::shared_ptr<const JsonRegex>>();
    for (const char* name : {"date", "time", "date-time", "uuid", "ipv4"}) {
      absl::StatusOr<JsonRegex> regex = JsonRegex::Compile(FormatPattern(name));
      HR_CHECK(regex.ok());  // constant patterns (tests/worker/json_schema_test.cc)
      built->emplace(name, std::make_shared<const JsonRegex>(*std::move(regex)));
    }
    return built;
  }();
  const auto it = regexes->find(format);
  return it == regexes->end() ? nullptr : it->second;
}

template <size_t N>
bool OneOf(const std::array<std::string_view, N>& list, std::string_view key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

bool IsWhitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

std::string PointerToken(const std::string& name) {
  return absl::StrReplaceAll(name, {{"~", "~0"}, {"/", "~1"}});
}

absl::Status Error(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(
      path.empty() ? std::string("at the root") : absl::StrCat("at ", path), ": ", message));
}

bool HasType(const Json& value, std::string_view type) {
  if (type == "string") return value.is_string();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    if (!value.is_number_float()) return false;
    const double d = value.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
  }
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  return false;
}

}  // namespace

class JsonSchemaCompiler {
 public:
  JsonSchemaCompiler(const Json& root, JsonSchema& out) : root_(root), out_(out) {}

  absl::Status Run() {
    // The nodes a value of any kind dispatches to (JsonSchema::AnyNodes).
    HR_ASSIGN_OR_RETURN(any_, Add(Node{.kind = Kind::kAny}));
    JsonSchema::AnyNodes& a = out_.any_;
    HR_ASSIGN_OR_RETURN(a.object, Add(Node{.kind = Kind::kObject, .additional = any_}));
    HR_ASSIGN_OR_RETURN(a.array, Add(Node{.kind = Kind::kArray, .items = any_}));
    HR_ASSIGN_OR_RETURN(a.string, Add(Node{.kind = Kind::kString}));
    HR_ASSIGN_OR_RETURN(a.number, Add(Node{.kind = Kind::kNumber}));
    HR_ASSIGN_OR_RETURN(a.literal,
                        Add(Node{.kind = Kind::kLiterals, .literals = {"false", "null", "true"}}));
    HR_ASSIGN_OR_RETURN(out_.root_, Compile(root_, ""));
    FlattenAnyOf();
    ComputeDepths();
    ComputeFirstBytes();
    const int32_t depth = out_.node(out_.root_).min_depth;
    if (depth == JsonSchema::kUnsatisfiable) {
      return Error("",
                   "the schema accepts no value (an empty enum, false, or required "
                   "properties that can never be written)");
    }
    if (depth > out_.options_.max_depth) {
      return Error("", absl::StrCat("every valid value nests containers ", depth, " deep; at most ",
                                    out_.options_.max_depth, " are supported"));
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<int32_t> Add(Node node) {
    if (static_cast<int32_t>(out_.nodes_.size()) >= out_.options_.max_nodes) {
      return Error(
          "", absl::StrCat("the schema expands to more than ", out_.options_.max_nodes, " parts"));
    }
    out_.nodes_.push_back(std::move(node));
    return static_cast<int32_t>(out_.nodes_.size() - 1);
  }

  absl::StatusOr<int32_t> Compile(const Json& s, const std::string& path) {
    // Bounded recursion (a 64 KiB schema could nest thousands of levels).
    if (nesting_ >= kMaxNesting) {
      return Error(path, absl::StrCat("the schema nests more than ", kMaxNesting, " levels"));
    }
    ++nesting_;
    absl::StatusOr<int32_t> node = CompileNested(s, path);
    --nesting_;
    return node;
  }

  absl::StatusOr<int32_t> CompileNested(const Json& s, const std::string& path) {
    if (s.is_boolean()) {
      return s.get<bool>() ? absl::StatusOr<int32_t>(any_) : Add(Node{.kind = Kind::kAnyOf});
    }
    if (!s.is_object()) {
      return Error(path,
                   absl::StrCat("a schema must be an object or a boolean, got ", s.type_name()));
    }
    // The keywords that constrain, to refuse combinations we cannot enforce.
    std::vector<std::string> assertions;
    for (const auto& [key, value] : s.items()) {
      if (key == "uniqueItems" && !(value.is_boolean() && !value.get<bool>())) {
        return Error(path, "uniqueItems is not supported");
      }
      if (OneOf(kAnnotations, key) || absl::StartsWith(key, "x-")) continue;
      if (!OneOf(kSupported, key)) {
        return Error(path, absl::StrCat(key, " is not supported (supported: ",
                                        absl::StrJoin(kSupported, ", ",
                                                      [](std::string* out, std::string_view k) {
                                                        out->append(k);
                                                      }),
                                        ")"));
      }
      if (key != "$defs" && key != "definitions") assertions.push_back(key);
    }
    const auto alone = [&](const std::string& keyword) -> absl::Status {
      for (const std::string& other : assertions) {
        if (other != keyword) {
          return Error(path, absl::StrCat(keyword, " beside ", other, " is not supported"));
        }
      }
      return absl::OkStatus();
    };
    if (const auto ref = s.find("$ref"); ref != s.end()) {
      HR_RETURN_IF_ERROR(alone("$ref"));
      if (!ref->is_string()) return Error(path, "$ref must be a string");
      return Ref(ref->get<std::string>(), path);
    }
    if (const auto all = s.find("allOf"); all != s.end()) {
      HR_RETURN_IF_ERROR(alone("allOf"));
      if (!all->is_array() || all->size() != 1) {
        return Error(path, "allOf is supported with exactly one schema");
      }
      return Compile((*all)[0], path + "/allOf/0");
    }
    for (const char* keyword : {"anyOf", "oneOf"}) {
      const auto any = s.find(keyword);
      if (any == s.end()) continue;
      HR_RETURN_IF_ERROR(alone(keyword));
      if (!any->is_array() || any->empty()) {
        return Error(path, absl::StrCat(keyword, " must be a non-empty array of schemas"));
      }
      Node node{.kind = Kind::kAnyOf};
      for (size_t i = 0; i < any->size(); ++i) {
        HR_ASSIGN_OR_RETURN(const int32_t alternative,
                            Compile((*any)[i], absl::StrCat(path, "/", keyword, "/", i)));
        node.alternatives.push_back(alternative);
      }
      return Add(std::move(node));
    }
    std::vector<std::string> types;
    if (const auto type = s.find("type"); type != s.end()) {
      if (type->is_string()) {
        types.push_back(type->get<std::string>());
      } else if (type->is_array() && !type->empty() &&
                 std::all_of(type->begin(), type->end(),
                             [](const Json& t) { return t.is_string(); })) {
        for (const Json& t : *type) types.push_back(t.get<std::string>());
      } else {
        return Error(path, "type must be a string or a non-empty array of strings");
      }
    }
    if (s.contains("enum") || s.contains("const")) return Literals(s, types, assertions, path);
    if (types.empty()) {
      // No type: the kind the keywords describe (stricter than the specification, which lets
      // values of the other kinds pass unchecked), or any value.
      HR_ASSIGN_OR_RETURN(const std::string inferred, InferType(s, assertions, path));
      if (inferred.empty()) return any_;
      types.push_back(inferred);
    }
    if (types.size() == 1) return CompileTyped(s, types[0], path);
    Node node{.kind = Kind::kAnyOf};
    for (const std::string& type : types) {
      HR_ASSIGN_OR_RETURN(const int32_t alternative, CompileTyped(s, type, path));
      node.alternatives.push_back(alternative);
    }
    return Add(std::move(node));
  }

  // The kind the keywords of `s` describe ("" for none). A string format counts, though it is not
  // an assertion elsewhere: left to "any value" it would go unchecked.
  static absl::StatusOr<std::string> InferType(const Json& s,
                                               const std::vector<std::string>& assertions,
                                               const std::string& path) {
    std::vector<std::string> keys = assertions;
    if (const auto format = s.find("format"); format != s.end() && format->is_string() &&
                                              OneOf(kStringFormats, format->get<std::string>())) {
      keys.emplace_back("format");
    }
    std::string inferred;
    for (const std::string& key : keys) {
      std::string kind;
      if (key == "properties" || key == "required" || key == "additionalProperties")
        kind = "object";
      if (key == "items" || key == "minItems" || key == "maxItems") kind = "array";
      if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" ||
          key == "exclusiveMaximum") {
        kind = "number";
      }
      if (key == "minLength" || key == "maxLength" || key == "pattern" || key == "format") {
        kind = "string";
      }
      if (kind.empty()) continue;
      if (!inferred.empty() && inferred != kind) {
        return Error(path, absl::StrCat("keywords of ", inferred, " and ", kind,
                                        " values without a type; give one"));
      }
      inferred = kind;
    }
    return inferred;
  }

  absl::StatusOr<int32_t> CompileTyped(const Json& s, const std::string& type,
                                       const std::string& path) {
    if (type == "object") return Object(s, path);
    if (type == "array") return Array(s, path);
    if (type == "string") return String(s, path);
    if (type == "number") {
      for (const char* bound : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (s.contains(bound)) {
          return Error(path, absl::StrCat(bound,
                                          " on a number is not supported (on an integer "
                                          "it is)"));
        }
      }
      return Add(Node{.kind = Kind::kNumber});
    }
    if (type == "integer") return Integer(s, path);
    if (type == "boolean") return Add(Node{.kind = Kind::kLiterals, .literals = {"false", "true"}});
    if (type == "null") return Add(Node{.kind = Kind::kLiterals, .literals = {"null"}});
    return Error(path, absl::StrCat("unknown type \"", type, "\""));
  }

  absl::StatusOr<int32_t> Integer(const Json& s, const std::string& path) {
    Node node{.kind = Kind::kInteger};
    // Each bound as an inclusive integer bound, clamped to int64.
    constexpr double kLimit = 9.2e18;
    const auto bound = [&](const char* key, bool lower, bool exclusive) -> absl::Status {
      const auto it = s.find(key);
      if (it == s.end()) return absl::OkStatus();
      if (!it->is_number()) return Error(path, absl::StrCat(key, " must be a number"));
      int64_t value = 0;
      if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}) {
        value = INT64_MAX;
      } else if (it->is_number_integer()) {
        value = it->get<int64_t>();
      } else {
        const double d = it->get<double>();
        const double rounded = lower ? std::ceil(d) : std::floor(d);
        value = static_cast<int64_t>(std::clamp(rounded, -kLimit, kLimit));
        exclusive = exclusive && rounded == d;  // 2.5 exclusive is >= 3 already
      }
      if (exclusive)
        value = lower ? (value == INT64_MAX ? value : value + 1)
                      : (value == INT64_MIN ? value : value - 1);
      node.bounded = true;
      if (lower) node.minimum = std::max(node.minimum, value);
      if (!lower) node.maximum = std::min(node.maximum, value);
      return absl::OkStatus();
    };
    HR_RETURN_IF_ERROR(bound("minimum", true, false));
    HR_RETURN_IF_ERROR(bound("exclusiveMinimum", true, true));
    HR_RETURN_IF_ERROR(bound("maximum", false, false));
    HR_RETURN_IF_ERROR(bound("exclusiveMaximum", false, true));
    if (node.minimum > node.maximum) {
      return Error(path, absl::StrCat("no integer lies between the bounds (at least ", node.minimum,
                                      ", at most ", node.maximum, ")"));
    }
    return Add(std::move(node));
  }

  absl::StatusOr<int32_t> String(const Json& s, const std::string& path) {
    Node node{.kind = Kind::kString};
    HR_ASSIGN_OR_RETURN(node.min_length, Count(s, "minLength", 0, path));
    HR_ASSIGN_OR_RETURN(node.max_length, Count(s, "maxLength", node.max_length, path));
    if (node.min_length > node.max_length) {
      return Error(path,
                   absl::StrCat("minLength ", node.min_length, " > maxLength ", node.max_length));
    }
    std::shared_ptr<const JsonRegex> regex;
    std::string what;
    if (const auto format = s.find("format"); format != s.end() && format->is_string() &&
                                              OneOf(kStringFormats, format->get<std::string>())) {
      what = absl::StrCat("format \"", format->get<std::string>(), "\"");
      regex = FormatRegex(format->get<std::string>());
      if (regex == nullptr) {
        return Error(path, absl::StrCat(what,
                                        " is not supported (date, time, date-time, uuid and "
                                        "ipv4 are)"));
      }
    }
    if (const auto given = s.find("pattern"); given != s.end()) {
      if (regex != nullptr) {
        return Error(path, absl::StrCat("pattern beside ", what, " is not supported"));
      }
      if (!given->is_string()) return Error(path, "pattern must be a string");
      what = "pattern";
      if (!given->get_ref<const std::string&>().empty()) {  // "" matches every string
        absl::StatusOr<JsonRegex> compiled =
            JsonRegex::Compile(given->get_ref<const std::string&>());
        if (!compiled.ok()) {
          return Error(path, absl::StrCat(what, ": ", compiled.status().message()));
        }
        regex = std::make_shared<const JsonRegex>(*std::move(compiled));
      }
    }
    if (regex != nullptr) {
      if (s.contains("minLength") || s.contains("maxLength")) {
        return Error(path, absl::StrCat("minLength/maxLength beside ", what, " is not supported"));
      }
      node.pattern = static_cast<int32_t>(out_.patterns_.size());
      out_.patterns_.push_back(std::move(regex));
    }
    return Add(std::move(node));
  }

  absl::StatusOr<int32_t> Object(const Json& s, const std::string& path) {
    Node node{.kind = Kind::kObject};
    std::vector<std::pair<std::string, std::string>> names;  // (JSON key, name)
    if (const auto properties = s.find("properties"); properties != s.end()) {
      if (!properties->is_object()) return Error(path, "properties must be an object");
      for (const auto& [name, value] : properties->items())
        names.emplace_back(Json(name).dump(), name);
    }
    if (names.size() > 64) {
      return Error(path, absl::StrCat(names.size(), " properties; at most 64 are supported"));
    }
    std::sort(names.begin(), names.end());
    for (const auto& [key, name] : names) {
      HR_ASSIGN_OR_RETURN(const int32_t child,
                          Compile(s.at("properties").at(name),
                                  absl::StrCat(path, "/properties/", PointerToken(name))));
      node.keys.push_back(key);
      node.properties.push_back(child);
    }
    if (const auto required = s.find("required"); required != s.end()) {
      if (!required->is_array()) return Error(path, "required must be an array of names");
      for (const Json& name : *required) {
        if (!name.is_string()) return Error(path, "required must be an array of names");
        const std::string key = name.dump();
        const auto at = std::lower_bound(node.keys.begin(), node.keys.end(), key);
        if (at == node.keys.end() || *at != key) {
          return Error(path, absl::StrCat("required names ", key, ", which is not in properties"));
        }
        const auto i = static_cast<size_t>(at - node.keys.begin());
        node.required |= uint64_t{1} << i;
      }
    }
    const auto additional = s.find("additionalProperties");
    if (!names.empty()) {
      if (additional != s.end() && !(additional->is_boolean() && !additional->get<bool>())) {
        return Error(path,
                     "additionalProperties beside properties is not supported: give properties "
                     "(the object takes only those) or additionalProperties alone (a map)");
      }
    } else if (additional == s.end()) {
      node.additional = any_;
    } else if (!(additional->is_boolean() && !additional->get<bool>())) {
      HR_ASSIGN_OR_RETURN(node.additional, Compile(*additional, path + "/additionalProperties"));
    }
    return Add(std::move(node));
  }

  absl::StatusOr<int32_t> Array(const Json& s, const std::string& path) {
    Node node{.kind = Kind::kArray, .items = any_};
    if (const auto items = s.find("items"); items != s.end()) {
      if (items->is_array()) return Error(path, "items as an array (tuples) is not supported");
      HR_ASSIGN_OR_RETURN(node.items, Compile(*items, path + "/items"));
    }
    HR_ASSIGN_OR_RETURN(node.min_items, Count(s, "minItems", 0, path));
    HR_ASSIGN_OR_RETURN(node.max_items, Count(s, "maxItems", node.max_items, path));
    if (node.min_items > node.max_items) {
      return Error(path, absl::StrCat("minItems ", node.min_items, " > maxItems ", node.max_items));
    }
    return Add(std::move(node));
  }

  absl::StatusOr<int32_t> Literals(const Json& s, const std::vector<std::string>& types,
                                   const std::vector<std::string>& assertions,
                                   const std::string& path) {
    for (const std::string& key : assertions) {
      if (key != "enum" && key != "const" && key != "type") {
        return Error(path, absl::StrCat("enum/const beside ", key, " is not supported"));
      }
    }
    std::vector<Json> values;
    if (const auto e = s.find("enum"); e != s.end()) {
      if (!e->is_array()) return Error(path, "enum must be an array");
      values.assign(e->begin(), e->end());
    }
    if (const auto c = s.find("const"); c != s.end()) {
      // Beside enum, const keeps only itself (if enum has it).
      if (s.contains("enum") && std::find(values.begin(), values.end(), *c) == values.end()) {
        values.clear();
      } else {
        values = {*c};
      }
    }
    Node node{.kind = Kind::kLiterals};
    for (const Json& value : values) {
      if (!types.empty() && std::none_of(types.begin(), types.end(),
                                         [&](const std::string& t) { return HasType(value, t); })) {
        continue;
      }
      node.literals.push_back(value.dump());
    }
    std::sort(node.literals.begin(), node.literals.end());
    node.literals.erase(std::unique(node.literals.begin(), node.literals.end()),
                        node.literals.end());
    return Add(std::move(node));
  }

  absl::StatusOr<int32_t> Ref(const std::string& ref, const std::string& path) {
    if (const auto known = refs_.find(ref); known != refs_.end()) return known->second;
    if (!absl::StartsWith(ref, "#")) {
      return Error(path, absl::StrCat("$ref \"", ref,
                                      "\": only references into the same schema (#...) are "
                                      "supported"));
    }
    const Json* target = nullptr;
    try {
      const Json::json_pointer pointer(ref.substr(1));
      if (root_.contains(pointer)) target = &root_.at(pointer);
    } catch (const Json::exception&) {
      target = nullptr;
    }
    if (target == nullptr) return Error(path, absl::StrCat("$ref \"", ref, "\" points nowhere"));
    // Reserved first, so a schema that refers to itself (a tree) finds its node.
    HR_ASSIGN_OR_RETURN(const int32_t index, Add(Node{.kind = Kind::kAnyOf}));
    refs_[ref] = index;
    HR_ASSIGN_OR_RETURN(const int32_t body, Compile(*target, ref.substr(1)));
    out_.nodes_[static_cast<size_t>(index)] = out_.nodes_[static_cast<size_t>(body)];
    return index;
  }

  static absl::StatusOr<int32_t> Count(const Json& s, const char* key, int32_t fallback,
                                       const std::string& path) {
    const auto value = s.find(key);
    if (value == s.end()) return fallback;
    if (!value->is_number_integer() || value->get<int64_t>() < 0) {
      return Error(path, absl::StrCat(key, " must be a non-negative integer, got ", value->dump()));
    }
    return static_cast<int32_t>(
        std::min<int64_t>(value->get<int64_t>(), std::numeric_limits<int32_t>::max()));
  }

  // Replaces each anyOf's alternatives by the nodes other than anyOf they reach through anyOfs
  // ($ref cycles included), so that the matcher never goes from one anyOf to another: a
  // recursive anyOf ({"anyOf": [{"$ref": "#"}, ...]}) would otherwise have it loop.
  void FlattenAnyOf() {
    std::vector<Node>& nodes = out_.nodes_;
    for (Node& node : nodes) {
      if (node.kind != Kind::kAnyOf) continue;
      std::vector<int32_t> leaves;
      std::vector<int32_t> pending = node.alternatives;
      absl::flat_hash_set<int32_t> seen(pending.begin(), pending.end());
      while (!pending.empty()) {
        const int32_t next = pending.back();
        pending.pop_back();
        const Node& reached = nodes[static_cast<size_t>(next)];
        if (reached.kind != Kind::kAnyOf) {
          leaves.push_back(next);
          continue;
        }
        for (const int32_t alternative : reached.alternatives) {
          if (seen.insert(alternative).second) pending.push_back(alternative);
        }
      }
      std::sort(leaves.begin(), leaves.end());
      node.alternatives = std::move(leaves);
    }
  }

  // Node::min_depth for every node: the least fixed point, from "unsatisfiable" down.
  void ComputeDepths() {
    constexpr int32_t kNo = JsonSchema::kUnsatisfiable;
    std::vector<Node>& nodes = out_.nodes_;
    for (bool changed = true; changed;) {
      changed = false;
      for (Node& node : nodes) {
        const auto depth = [&](int32_t child) {
          return nodes[static_cast<size_t>(child)].min_depth;
        };
        int32_t d = kNo;
        switch (node.kind) {
          case Kind::kAny:
          case Kind::kNumber:
          case Kind::kInteger:
            d = 0;
            break;
          case Kind::kString:  // a pattern that no string matches is unsatisfiable
            d = node.pattern >= 0 &&
                        out_.patterns_[static_cast<size_t>(node.pattern)]->start().none()
                    ? kNo
                    : 0;
            break;
          case Kind::kLiterals:
            d = node.literals.empty() ? kNo : 0;
            break;
          case Kind::kObject:
            d = 1;
            for (size_t i = 0; i < node.properties.size() && d != kNo; ++i) {
              if ((node.required >> i & 1) == 0) continue;
              const int32_t child = depth(node.properties[i]);
              d = child == kNo ? kNo : std::max(d, 1 + child);
            }
            break;
          case Kind::kArray:
            d = node.min_items == 0 ? 1 : (depth(node.items) == kNo ? kNo : 1 + depth(node.items));
            break;
          case Kind::kAnyOf:
            for (const int32_t alternative : node.alternatives) d = std::min(d, depth(alternative));
            break;
        }
        if (d < node.min_depth) {
          node.min_depth = d;
          changed = true;
        }
      }
    }
  }

  // Node::first_bytes for every node (anyOf: the union of its alternatives', to a fixed point).
  void ComputeFirstBytes() {
    std::bitset<256> number;
    number.set('-');
    for (int d = '0'; d <= '9'; ++d) number.set(static_cast<size_t>(d));
    std::vector<Node>& nodes = out_.nodes_;
    for (Node& node : nodes) {
      switch (node.kind) {
        case Kind::kAny:
          node.first_bytes = number;
          for (const char c : std::string_view("{[\"tfn"))
            node.first_bytes.set(static_cast<uint8_t>(c));
          break;
        case Kind::kObject:
          node.first_bytes.set('{');
          break;
        case Kind::kArray:
          node.first_bytes.set('[');
          break;
        case Kind::kString:
          node.first_bytes.set('"');
          break;
        case Kind::kNumber:
        case Kind::kInteger:
          node.first_bytes = number;
          break;
        case Kind::kLiterals:
          for (const std::string& literal : node.literals) {
            node.first_bytes.set(static_cast<uint8_t>(literal[0]));
          }
          break;
        case Kind::kAnyOf:
          break;
      }
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (Node& node : nodes) {
        if (node.kind != Kind::kAnyOf) continue;
        std::bitset<256> bytes = node.first_bytes;
        for (const int32_t alternative : node.alternatives) {
          bytes |= nodes[static_cast<size_t>(alternative)].first_bytes;
        }
        if (bytes != node.first_bytes) {
          node.first_bytes = bytes;
          changed = true;
        }
      }
    }
  }

  static constexpr int32_t kMaxNesting = 128;

  const Json& root_;
  JsonSchema& out_;
  int32_t nesting_ = 0;
  int32_t any_ = -1;
  absl::flat_hash_map<std::string, int32_t> refs_;
};

absl::StatusOr<std::shared_ptr<const JsonSchema>> JsonSchema::Compile(std::string_view text,
                                                                      Options options) {
  if (text.size() > options.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the schema is ", text.size(), " bytes; at most ", options.max_bytes, " are supported"));
  }
  if (const int depth = JsonNestingDepth(text); depth > kMaxJsonNesting) {
    return absl::InvalidArgumentError(absl::StrCat("the schema nests arrays and objects more than ",
                                                   kMaxJsonNesting, " levels deep"));
  }
  const Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("the schema is not valid JSON");
  std::shared_ptr<JsonSchema> schema(new JsonSchema());
  schema->options_ = options;
  JsonSchemaCompiler compiler(root, *schema);
  HR_RETURN_IF_ERROR(compiler.Run());
  return std::shared_ptr<const JsonSchema>(std::move(schema));
}

// --- JsonSchemaMatcher -------------------------------------------------------------------------

JsonSchemaMatcher::JsonSchemaMatcher(const JsonSchema* schema) : schema_(schema) {
  threads_.push_back(Thread{
      .stack = {Frame{.node = schema->root()}}, .string = {}, .number = {}, .whitespace_run = 0});
}

void JsonSchemaMatcher::AppendStateKey(std::string* key) const {
  AppendKeyBytes(key, threads_.size());
  for (const Thread& t : threads_) {
    AppendKeyBytes(key, t.stack.size());
    AppendKeyBytes(key, t.whitespace_run);
    for (const Frame& f : t.stack) {
      const JsonSchema::Node& node = schema_->node(f.node);
      AppendKeyBytes(key, f.node);
      AppendKeyBytes(key, f.phase);
      AppendKeyBytes(key, f.lo);
      AppendKeyBytes(key, f.hi);
      AppendKeyBytes(key, f.pos);
      AppendKeyBytes(key, f.seen);
      // Items and characters are counted for the bounds alone.
      const bool counted =
          node.min_items > 0 || node.max_items < std::numeric_limits<int32_t>::max() ||
          node.min_length > 0 || node.max_length < std::numeric_limits<int32_t>::max();
      AppendKeyBytes(key, counted ? f.count : 0);
    }
    if (t.stack.empty()) continue;
    const Frame& top = t.stack.back();
    switch (top.phase) {
      case Phase::kString:
      case Phase::kObjectInKey:
        // Both start with a fresh lexer (and pattern) at their opening quote.
        t.string.AppendStateKey(key);
        if (top.phase == Phase::kString && schema_->node(top.node).pattern >= 0) {
          AppendStatesKey(key, t.pattern);
        }
        break;
      case Phase::kNumber:
        // Started afresh at the number's first byte, as are a bounded integer's fields (which
        // are left as they were, unused, in other numbers).
        t.number.AppendStateKey(key);
        if (schema_->node(top.node).bounded) {
          AppendKeyBytes(key, t.negative);
          AppendKeyBytes(key, t.digits);
          AppendKeyBytes(key, t.magnitude);
        }
        break;
      default:
        break;
    }
  }
}

bool JsonSchemaMatcher::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (!Feed(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool JsonSchemaMatcher::Feed(uint8_t byte) {
  // Threads are fed in place; only an anyOf value start copies one, into `forks`.
  Threads forks;
  size_t kept = 0;
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (FeedThread(threads_[i], byte, &forks) != Fed::kAccepted) continue;
    if (kept != i) threads_[kept] = std::move(threads_[i]);
    ++kept;
  }
  threads_.erase(threads_.begin() + static_cast<std::ptrdiff_t>(kept), threads_.end());
  for (Thread& way : forks) {
    if (threads_.size() >= kMaxThreads) break;  // narrows what is accepted, never dead-ends
    threads_.push_back(std::move(way));
  }
  return !threads_.empty();
}

bool JsonSchemaMatcher::Complete() const {
  return std::any_of(threads_.begin(), threads_.end(),
                     [](const Thread& t) { return t.stack.empty(); });
}

bool JsonSchemaMatcher::CanEnd() const {
  return std::any_of(threads_.begin(), threads_.end(),
                     [this](const Thread& t) { return ThreadCanEnd(t); });
}

bool JsonSchemaMatcher::ThreadCanEnd(const Thread& t) const {
  if (t.stack.empty()) return true;
  if (t.stack.size() > 1) return false;
  const Frame& f = t.stack.back();
  if (f.phase == Phase::kNumber) {
    const JsonSchema::Node& node = schema_->node(f.node);
    return t.number.CanEnd() && (!node.bounded || IntegerInBounds(t, node));
  }
  if (f.phase == Phase::kLiteral) {
    return schema_->node(f.node).literals[static_cast<size_t>(f.lo)].size() ==
           static_cast<size_t>(f.pos);
  }
  return false;
}

bool JsonSchemaMatcher::AtStringText() const {
  // One thread that takes any text is enough: the matcher accepts what any thread accepts.
  return std::any_of(threads_.begin(), threads_.end(), [this](const Thread& t) {
    if (t.stack.empty() || !t.string.BetweenCharacters()) return false;
    const Frame& f = t.stack.back();
    if (f.phase == Phase::kObjectInKey) return f.lo < 0;  // a map's key
    const JsonSchema::Node& node = schema_->node(f.node);
    return f.phase == Phase::kString && node.pattern < 0 &&
           node.max_length == std::numeric_limits<int32_t>::max();
  });
}

bool JsonSchemaMatcher::Fits(const Thread& thread, int32_t node) const {
  const int32_t depth = schema_->node(node).min_depth;
  return depth != JsonSchema::kUnsatisfiable &&
         static_cast<int64_t>(thread.stack.size()) + depth <= schema_->options().max_depth;
}

bool JsonSchemaMatcher::KeyAvailable(const Thread& thread, const Frame& object, int32_t lo,
                                     int32_t hi) const {
  const JsonSchema::Node& node = schema_->node(object.node);
  for (int32_t i = lo; i < hi; ++i) {
    if ((object.seen >> i & 1) == 0 && Fits(thread, node.properties[static_cast<size_t>(i)])) {
      return true;
    }
  }
  return false;
}

bool JsonSchemaMatcher::NarrowLiterals(Frame& frame, const std::vector<std::string>& literals,
                                       uint8_t byte) const {
  const auto pos = static_cast<size_t>(frame.pos);
  auto first = literals.begin() + frame.lo;
  const auto last = literals.begin() + frame.hi;
  // The candidates share their first `pos` bytes; one that ends there sorts first.
  if (first != last && first->size() == pos) ++first;
  const auto byte_at = [pos](const std::string& s) { return static_cast<uint8_t>(s[pos]); };
  const auto lo =
      std::partition_point(first, last, [&](const std::string& s) { return byte_at(s) < byte; });
  const auto hi =
      std::partition_point(lo, last, [&](const std::string& s) { return byte_at(s) == byte; });
  if (lo == hi) return false;
  frame.lo = static_cast<int32_t>(lo - literals.begin());
  frame.hi = static_cast<int32_t>(hi - literals.begin());
  ++frame.pos;
  return true;
}

bool JsonSchemaMatcher::FeedBoundedInteger(Thread& thread, const JsonSchema::Node& node,
                                           uint8_t byte) const {
  using Wide = absl::int128;
  if (byte == '-') {
    thread.negative = true;
  } else {
    ++thread.digits;
    const Wide next = Wide{thread.magnitude} * 10 + (byte - '0');
    thread.magnitude = next > Wide{UINT64_MAX} ? UINT64_MAX : absl::Int128Low64(next);
  }
  // Digits that may still follow (the lexer's byte limit).
  const int more = schema_->options().max_number_bytes - (thread.negative ? 1 : 0) - thread.digits;
  const Wide lo = node.minimum;
  const Wide hi = node.maximum;
  // Some integer in [a, b] (magnitudes, signed by `negative`) is in the bounds.
  const auto meets = [&](Wide a, Wide b) {
    return thread.negative ? (-b <= hi && -a >= lo) : (a <= hi && b >= lo);
  };
  if (thread.digits == 0) {  // only '-': "-0" or any negative integer that fits
    Wide reach = 1;
    for (int k = 0; k < more && reach < Wide{1} << 70; ++k) reach *= 10;
    return meets(0, reach - 1);
  }
  if (thread.magnitude == 0) return meets(0, 0);  // a leading 0 is the whole number
  // What was read, then k more digits: [m * 10^k, m * 10^k + 10^k - 1].
  Wide base = thread.magnitude;
  Wide span = 1;
  for (int k = 0; k <= more && base < Wide{1} << 70; ++k) {
    if (meets(base, base + span - 1)) return true;
    base *= 10;
    span *= 10;
  }
  return false;
}

bool JsonSchemaMatcher::IntegerInBounds(const Thread& thread, const JsonSchema::Node& node) {
  using Wide = absl::int128;
  const Wide value = thread.negative ? -Wide{thread.magnitude} : Wide{thread.magnitude};
  return value >= node.minimum && value <= node.maximum;
}

bool JsonSchemaMatcher::ContinuesPattern(const Thread& thread, const JsonRegex& pattern) {
  JsonStringLexer::Range ranges[3];
  const int n = thread.string.PossibleCodePoints(ranges);
  for (int i = 0; i < n; ++i) {
    if (pattern.Continues(thread.pattern, ranges[i].lo, ranges[i].hi)) return true;
  }
  return false;
}

void JsonSchemaMatcher::EndValue(Thread& thread) {
  thread.stack.pop_back();
  if (thread.stack.empty()) return;
  Frame& container = thread.stack.back();
  if (container.phase == Phase::kObjectColon) {
    container.phase = Phase::kObjectNext;
  } else {
    ++container.count;
    container.phase = Phase::kArrayNext;
  }
}

JsonSchemaMatcher::Fed JsonSchemaMatcher::FeedThread(Thread& thread, uint8_t byte,
                                                     Threads* forks) const {
  if (thread.stack.empty()) return Fed::kRefused;  // complete: nothing follows
  Frame& top = thread.stack.back();
  const JsonSchema::Node& node = schema_->node(top.node);
  switch (top.phase) {
    case Phase::kString: {
      const JsonRegex* pattern = node.pattern >= 0 ? &schema_->pattern(node.pattern) : nullptr;
      if (thread.string.BetweenCharacters()) {
        if (byte == '"' ? top.count < node.min_length ||
                              (pattern != nullptr && !pattern->Accepts(thread.pattern))
                        : top.count >= node.max_length) {
          return Fed::kRefused;
        }
      }
      switch (thread.string.Feed(byte)) {
        case JsonStringLexer::Step::kRefused:
          return Fed::kRefused;
        case JsonStringLexer::Step::kCharacter:
          ++top.count;
          if (pattern != nullptr) {
            thread.pattern = pattern->Step(thread.pattern, thread.string.code_point());
            if (thread.pattern.none()) return Fed::kRefused;
          }
          break;
        case JsonStringLexer::Step::kClosed:
          EndValue(thread);
          break;
        case JsonStringLexer::Step::kPartial:
          // Inside a character: some code point it can still become must continue the match.
          if (pattern != nullptr && !ContinuesPattern(thread, *pattern)) return Fed::kRefused;
          break;
      }
      thread.whitespace_run = 0;
      return Fed::kAccepted;
    }
    case Phase::kNumber:
      switch (thread.number.Feed(byte)) {
        case JsonNumberLexer::Step::kAccepted:
          if (node.bounded && !FeedBoundedInteger(thread, node, byte)) return Fed::kRefused;
          thread.whitespace_run = 0;
          return Fed::kAccepted;
        case JsonNumberLexer::Step::kRefused:
          return Fed::kRefused;
        case JsonNumberLexer::Step::kEnded:
          break;
      }
      // The byte belongs to what follows the number (which must then be in its bounds).
      if (node.bounded && !IntegerInBounds(thread, node)) return Fed::kRefused;
      EndValue(thread);
      return FeedThread(thread, byte, forks);
    case Phase::kLiteral:
      if (top.lo >= top.hi) return Fed::kRefused;  // an empty enum (never entered: no fit)
      if (NarrowLiterals(top, node.literals, byte)) {
        // The one candidate left is whole: the value ends here.
        if (top.hi - top.lo == 1 &&
            node.literals[static_cast<size_t>(top.lo)].size() == static_cast<size_t>(top.pos)) {
          EndValue(thread);
        }
        thread.whitespace_run = 0;
        return Fed::kAccepted;
      }
      if (node.literals[static_cast<size_t>(top.lo)].size() != static_cast<size_t>(top.pos)) {
        return Fed::kRefused;
      }
      // A whole literal that others extend (1 of 1 and 12): it ended before this byte.
      EndValue(thread);
      return FeedThread(thread, byte, forks);
    case Phase::kObjectInKey:
      if (!FeedKey(thread, byte)) return Fed::kRefused;
      thread.whitespace_run = 0;
      return Fed::kAccepted;
    default:
      break;
  }
  // Between tokens: whitespace, in runs of at most max_whitespace.
  if (IsWhitespace(byte)) {
    return ++thread.whitespace_run <= schema_->options().max_whitespace ? Fed::kAccepted
                                                                        : Fed::kRefused;
  }
  thread.whitespace_run = 0;
  switch (top.phase) {
    case Phase::kValue:
      return FeedValueStart(thread, byte, forks);
    case Phase::kArrayItemOrEnd:
    case Phase::kArrayNext:
      return FeedArray(thread, byte, forks);
    default:
      return FeedObject(thread, byte) ? Fed::kAccepted : Fed::kRefused;
  }
}

JsonSchemaMatcher::Fed JsonSchemaMatcher::FeedValueStart(Thread& thread, uint8_t byte,
                                                         Threads* forks) const {
  Frame& value = thread.stack.back();
  const JsonSchema::Node& node = schema_->node(value.node);
  switch (node.kind) {
    case Kind::kAnyOf: {
      // The alternatives that can start with `byte` and fit (Fits counts the containers around
      // the value: the stack without it). One: the thread follows it in place; several: a way
      // per alternative.
      thread.stack.pop_back();
      const auto open = [&](int32_t alternative) {
        return schema_->node(alternative).first_bytes.test(byte) && Fits(thread, alternative);
      };
      const auto count = std::count_if(node.alternatives.begin(), node.alternatives.end(), open);
      if (count == 0) return Fed::kRefused;
      if (count == 1) {
        const int32_t only =
            *std::find_if(node.alternatives.begin(), node.alternatives.end(), open);
        thread.stack.push_back(Frame{.node = only});
        return FeedValueStart(thread, byte, forks);
      }
      for (const int32_t alternative : node.alternatives) {
        if (!open(alternative)) continue;
        Thread way = thread;
        way.stack.push_back(Frame{.node = alternative});
        switch (FeedValueStart(way, byte, forks)) {
          case Fed::kAccepted:
            forks->push_back(std::move(way));
            break;
          case Fed::kForked:  // its ways are in `forks` already
          case Fed::kRefused:
            break;
        }
      }
      return Fed::kForked;
    }
    case Kind::kAny: {
      const JsonSchema::AnyNodes& any = schema_->any_nodes();
      int32_t kind = -1;
      if (byte == '{') kind = any.object;
      if (byte == '[') kind = any.array;
      if (byte == '"') kind = any.string;
      if (byte == '-' || (byte >= '0' && byte <= '9')) kind = any.number;
      if (byte == 't' || byte == 'f' || byte == 'n') kind = any.literal;
      if (kind < 0) return Fed::kRefused;
      thread.stack.pop_back();
      if (!Fits(thread, kind)) return Fed::kRefused;
      thread.stack.push_back(Frame{.node = kind});
      return FeedValueStart(thread, byte, forks);
    }
    case Kind::kObject:
      if (byte != '{') return Fed::kRefused;
      value.phase = Phase::kObjectKeyOrEnd;
      return Fed::kAccepted;
    case Kind::kArray:
      if (byte != '[') return Fed::kRefused;
      value.phase = Phase::kArrayItemOrEnd;
      return Fed::kAccepted;
    case Kind::kString:
      if (byte != '"') return Fed::kRefused;
      value.phase = Phase::kString;
      thread.string = JsonStringLexer();
      if (node.pattern >= 0) thread.pattern = schema_->pattern(node.pattern).start();
      return Fed::kAccepted;
    case Kind::kNumber:
    case Kind::kInteger:
      if (byte != '-' && (byte < '0' || byte > '9')) return Fed::kRefused;
      thread.number =
          JsonNumberLexer(node.kind == Kind::kInteger, schema_->options().max_number_bytes);
      if (thread.number.Feed(byte) != JsonNumberLexer::Step::kAccepted) return Fed::kRefused;
      if (node.bounded) {
        thread.negative = false;
        thread.digits = 0;
        thread.magnitude = 0;
        if (!FeedBoundedInteger(thread, node, byte)) return Fed::kRefused;
      }
      value.phase = Phase::kNumber;
      return Fed::kAccepted;
    case Kind::kLiterals:
      value.phase = Phase::kLiteral;
      value.hi = static_cast<int32_t>(node.literals.size());
      return FeedThread(thread, byte, forks);
  }
  return Fed::kRefused;
}

bool JsonSchemaMatcher::FeedObject(Thread& thread, uint8_t byte) const {
  Frame& f = thread.stack.back();
  const JsonSchema::Node& node = schema_->node(f.node);
  const auto size = static_cast<int32_t>(node.keys.size());
  const bool can_close = (f.seen & node.required) == node.required;
  switch (f.phase) {
    case Phase::kObjectKeyOrEnd:
    case Phase::kObjectNext:
      if (byte == '}') {
        if (!can_close) return false;
        EndValue(thread);
        return true;
      }
      if (f.phase == Phase::kObjectKeyOrEnd) break;
      if (byte != ',') return false;
      if (node.additional >= 0 ? !Fits(thread, node.additional)
                               : !KeyAvailable(thread, f, 0, size)) {
        return false;
      }
      f.phase = Phase::kObjectKey;
      return true;
    case Phase::kObjectColon: {
      if (byte != ':') return false;
      const int32_t value =
          f.lo >= 0 ? node.properties[static_cast<size_t>(f.lo)] : node.additional;
      thread.stack.push_back(Frame{.node = value});
      return true;
    }
    default:
      break;
  }
  // kObjectKeyOrEnd or kObjectKey: a key starts.
  if (byte != '"') return false;
  f.phase = Phase::kObjectInKey;
  if (node.additional >= 0) {
    if (!Fits(thread, node.additional)) return false;
    f.lo = -1;
    thread.string = JsonStringLexer();
    return true;
  }
  f.lo = 0;
  f.hi = size;
  f.pos = 0;
  return FeedKey(thread, byte);
}

bool JsonSchemaMatcher::FeedKey(Thread& thread, uint8_t byte) const {
  Frame& f = thread.stack.back();
  if (f.lo < 0) {  // a map's key: any string
    switch (thread.string.Feed(byte)) {
      case JsonStringLexer::Step::kRefused:
        return false;
      case JsonStringLexer::Step::kClosed:
        f.phase = Phase::kObjectColon;
        return true;
      default:
        return true;
    }
  }
  const JsonSchema::Node& node = schema_->node(f.node);
  Frame narrowed = f;
  if (!NarrowLiterals(narrowed, node.keys, byte) ||
      !KeyAvailable(thread, narrowed, narrowed.lo, narrowed.hi)) {
    return false;
  }
  f = narrowed;
  // A key is never a prefix of another (its closing quote), so a whole one is the only candidate.
  if (node.keys[static_cast<size_t>(f.lo)].size() == static_cast<size_t>(f.pos)) {
    f.seen |= uint64_t{1} << f.lo;
    f.phase = Phase::kObjectColon;
  }
  return true;
}

JsonSchemaMatcher::Fed JsonSchemaMatcher::FeedArray(Thread& thread, uint8_t byte,
                                                    Threads* forks) const {
  Frame& f = thread.stack.back();
  const JsonSchema::Node& node = schema_->node(f.node);
  if (byte == ']') {
    if (f.count < node.min_items) return Fed::kRefused;
    EndValue(thread);
    return Fed::kAccepted;
  }
  const bool item_starts = f.phase == Phase::kArrayItemOrEnd;
  if (!item_starts && byte != ',') return Fed::kRefused;
  if (f.count >= node.max_items || !Fits(thread, node.items)) return Fed::kRefused;
  thread.stack.push_back(Frame{.node = node.items});
  // After '[' the byte starts the item; after ',' the item follows.
  return item_starts ? FeedValueStart(thread, byte, forks) : Fed::kAccepted;
}

template void JsonAllowedTokens<JsonSchemaMatcher>(const JsonSchemaMatcher&, const JsonVocabulary&,
                                                   std::vector<int32_t>*);

}  // namespace headroom::worker
