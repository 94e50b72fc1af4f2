#include "worker/engine/structural_tag.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

bool IsJsonWhitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

absl::Status Bad(const std::string& message) { return absl::InvalidArgumentError(message); }

// `text` quoted for an error message (JSON-escaped, so control bytes show).
std::string Quoted(std::string_view text) {
  return Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<std::string> NonEmptyString(const Json& obj, const char* key,
                                           const std::string& path) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return Bad(absl::StrCat(path, ".", key, " must be a non-empty string"));
  }
  return it->get<std::string>();
}

}  // namespace

// Reads a structural tag's JSON into a StructuralTag, remembering where each structure came from
// for the errors.
class StructuralTagReader {
 public:
  explicit StructuralTagReader(StructuralTag* tag) : tag_(tag) {}

  // {"structures": [{"begin", "schema", "end"}], "triggers": [...]}.
  absl::Status ReadLegacy(const Json& root);
  absl::Status ReadFormat(const Json& format);
  // No trigger inside another; each structure under the trigger its begin starts with.
  absl::Status CheckTriggers();

 private:
  absl::Status AddStructure(const Json& s, const Json* schema, const std::string& path,
                            const std::string& schema_path);
  // `parent`'s "triggers", named `path` in errors.
  absl::Status ReadTriggers(const Json& parent, const std::string& path);

  StructuralTag* tag_;
  std::vector<std::string> paths_;  // each structure's, for errors
  std::string trigger_path_;
};

absl::StatusOr<std::shared_ptr<const StructuralTag>> StructuralTag::Compile(std::string_view text) {
  if (text.size() > kMaxBytes) {
    return Bad(absl::StrCat("the structural tag is ", text.size(), " bytes; at most ", kMaxBytes,
                            " are supported"));
  }
  if (JsonNestingDepth(text) > kMaxJsonNesting) {
    return Bad(absl::StrCat("the structural tag nests arrays and objects more than ",
                            kMaxJsonNesting, " levels deep"));
  }
  const Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return Bad(
        "the structural tag must be a JSON object with \"structures\" and \"triggers\", or "
        "with \"format\"");
  }
  std::shared_ptr<StructuralTag> tag(new StructuralTag());
  StructuralTagReader reader(tag.get());
  const auto format = root.find("format");
  HR_RETURN_IF_ERROR(format != root.end() ? reader.ReadFormat(*format) : reader.ReadLegacy(root));
  HR_RETURN_IF_ERROR(reader.CheckTriggers());
  tag->BuildAutomaton();
  return std::shared_ptr<const StructuralTag>(std::move(tag));
}

absl::Status StructuralTagReader::ReadLegacy(const Json& root) {
  const auto structures = root.find("structures");
  if (structures == root.end() || !structures->is_array() || structures->empty()) {
    return Bad("structures must be a non-empty array of {\"begin\", \"schema\", \"end\"}");
  }
  if (structures->size() > StructuralTag::kMaxStructures) {
    return Bad(absl::StrCat("at most ", StructuralTag::kMaxStructures,
                            " structures are supported, got ", structures->size()));
  }
  for (size_t i = 0; i < structures->size(); ++i) {
    const Json& s = (*structures)[i];
    const std::string path = absl::StrCat("structures[", i, "]");
    if (!s.is_object()) return Bad(absl::StrCat(path, " must be an object"));
    const auto schema = s.find("schema");
    HR_RETURN_IF_ERROR(AddStructure(s, schema != s.end() ? &*schema : nullptr, path,
                                    absl::StrCat(path, ".schema")));
  }
  return ReadTriggers(root, "triggers");
}

// xgrammar's newer form, as far as it says what the older one does: {"type": "triggered_tags",
// "triggers": [...], "tags": [{"type": "tag", "begin", "content": {"type": "json_schema",
// "json_schema": {...}}, "end"}], "at_least_one", "stop_after_first"}.
absl::Status StructuralTagReader::ReadFormat(const Json& format) {
  if (!format.is_object()) return Bad("format must be an object");
  const auto type = format.find("type");
  if (type == format.end() || !type->is_string() || *type != "triggered_tags") {
    return Bad(absl::StrCat("format.type ",
                            type == format.end() ? std::string("(none)") : type->dump(),
                            " is not supported (\"triggered_tags\" is)"));
  }
  const auto tags = format.find("tags");
  if (tags == format.end() || !tags->is_array() || tags->empty()) {
    return Bad("format.tags must be a non-empty array of {\"begin\", \"content\", \"end\"}");
  }
  if (tags->size() > StructuralTag::kMaxStructures) {
    return Bad(absl::StrCat("at most ", StructuralTag::kMaxStructures, " tags are supported, got ",
                            tags->size()));
  }
  for (size_t i = 0; i < tags->size(); ++i) {
    const Json& t = (*tags)[i];
    const std::string path = absl::StrCat("format.tags[", i, "]");
    if (!t.is_object()) return Bad(absl::StrCat(path, " must be an object"));
    if (const auto kind = t.find("type"); kind != t.end() && *kind != "tag") {
      return Bad(absl::StrCat(path, ".type ", kind->dump(), " is not supported (\"tag\" is)"));
    }
    const auto content = t.find("content");
    if (content == t.end() || !content->is_object()) {
      return Bad(absl::StrCat(path, ".content must be an object"));
    }
    if (const auto kind = content->find("type"); kind == content->end() || *kind != "json_schema") {
      return Bad(absl::StrCat(path, ".content.type ",
                              kind == content->end() ? std::string("(none)") : kind->dump(),
                              " is not supported (\"json_schema\" is)"));
    }
    const auto schema = content->find("json_schema");
    HR_RETURN_IF_ERROR(AddStructure(t, schema != content->end() ? &*schema : nullptr, path,
                                    absl::StrCat(path, ".content.json_schema")));
  }
  for (const auto& [key, flag] : {std::pair{"at_least_one", &tag_->at_least_one_},
                                  std::pair{"stop_after_first", &tag_->stop_after_first_}}) {
    const auto value = format.find(key);
    if (value == format.end()) continue;
    if (!value->is_boolean()) return Bad(absl::StrCat("format.", key, " must be a boolean"));
    *flag = value->get<bool>();
  }
  return ReadTriggers(format, "format.triggers");
}

absl::Status StructuralTagReader::AddStructure(const Json& s, const Json* schema,
                                               const std::string& path,
                                               const std::string& schema_path) {
  StructuralTag::Structure structure;
  absl::StatusOr<std::string> begin = NonEmptyString(s, "begin", path);
  if (!begin.ok()) return begin.status();
  structure.begin = *std::move(begin);
  const auto end = s.find("end");
  if (end == s.end() || !end->is_string()) return Bad(absl::StrCat(path, ".end must be a string"));
  structure.end = end->get<std::string>();
  if (schema == nullptr || !(schema->is_object() || schema->is_boolean())) {
    return Bad(absl::StrCat(schema_path, " must be a JSON schema (an object)"));
  }
  absl::StatusOr<std::shared_ptr<const JsonSchema>> compiled = JsonSchema::Compile(schema->dump());
  if (!compiled.ok()) return Bad(absl::StrCat(schema_path, ": ", compiled.status().message()));
  structure.schema = *std::move(compiled);
  tag_->structures_.push_back(std::move(structure));
  paths_.push_back(path);
  return absl::OkStatus();
}

absl::Status StructuralTagReader::ReadTriggers(const Json& parent, const std::string& path) {
  const auto triggers = parent.find("triggers");
  if (triggers == parent.end() || !triggers->is_array() || triggers->empty()) {
    return Bad(absl::StrCat(path, " must be a non-empty array of strings"));
  }
  if (triggers->size() > StructuralTag::kMaxTriggers) {
    return Bad(absl::StrCat("at most ", StructuralTag::kMaxTriggers,
                            " triggers are supported, got ", triggers->size()));
  }
  size_t trigger_bytes = 0;
  for (size_t i = 0; i < triggers->size(); ++i) {
    const Json& t = (*triggers)[i];
    if (!t.is_string() || t.get_ref<const std::string&>().empty()) {
      return Bad(absl::StrCat(path, "[", i, "] must be a non-empty string"));
    }
    tag_->triggers_.push_back(t.get<std::string>());
    trigger_bytes += tag_->triggers_.back().size();
  }
  if (trigger_bytes > StructuralTag::kMaxTriggerBytes) {
    return Bad(absl::StrCat("the triggers add up to ", trigger_bytes, " bytes; at most ",
                            StructuralTag::kMaxTriggerBytes, " are supported"));
  }
  trigger_path_ = path;
  return absl::OkStatus();
}

absl::Status StructuralTagReader::CheckTriggers() {
  for (size_t i = 0; i < tag_->triggers_.size(); ++i) {
    for (size_t j = 0; j < tag_->triggers_.size(); ++j) {
      if (i != j && tag_->triggers_[j].find(tag_->triggers_[i]) != std::string::npos) {
        return Bad(absl::StrCat(trigger_path_, "[", i, "] ", Quoted(tag_->triggers_[i]),
                                " is part of ", trigger_path_, "[", j, "] ",
                                Quoted(tag_->triggers_[j]),
                                "; which one a text holding both would start is ambiguous"));
      }
    }
  }
  // Each structure under the trigger its begin starts with (at most one: none holds another).
  tag_->by_trigger_.resize(tag_->triggers_.size());
  for (size_t s = 0; s < tag_->structures_.size(); ++s) {
    const std::string& begin = tag_->structures_[s].begin;
    const auto t =
        std::find_if(tag_->triggers_.begin(), tag_->triggers_.end(),
                     [&](const std::string& trigger) { return begin.starts_with(trigger); });
    if (t == tag_->triggers_.end()) {
      return Bad(absl::StrCat(paths_[s], ".begin ", Quoted(begin),
                              " does not start with any of the triggers"));
    }
    tag_->by_trigger_[static_cast<size_t>(t - tag_->triggers_.begin())].push_back(
        static_cast<int32_t>(s));
  }
  return absl::OkStatus();
}

void StructuralTag::BuildAutomaton() {
  // Bytes that no trigger holds all lead back to the root alike: one class.
  for (const std::string& t : triggers_) {
    for (const char c : t) {
      uint16_t& cls = byte_class_[static_cast<uint8_t>(c)];
      if (cls == 0) cls = static_cast<uint16_t>(num_classes_++);
    }
  }
  // The trie of the triggers, then its failure links breadth first (Aho-Corasick), filling in
  // every missing edge so that Next is one lookup.
  std::vector<std::vector<int32_t>> edges(1, std::vector<int32_t>(num_classes_, -1));
  fired_.assign(1, -1);
  for (size_t t = 0; t < triggers_.size(); ++t) {
    int32_t node = 0;
    for (const char c : triggers_[t]) {
      int32_t& next = edges[static_cast<size_t>(node)][byte_class_[static_cast<uint8_t>(c)]];
      if (next < 0) {
        next = static_cast<int32_t>(edges.size());
        edges.emplace_back(num_classes_, -1);
        fired_.push_back(-1);
      }
      node = next;
    }
    fired_[static_cast<size_t>(node)] = static_cast<int32_t>(t);
  }
  std::vector<int32_t> fail(edges.size(), 0);
  std::deque<int32_t> queue;
  for (int32_t& next : edges[0]) {
    if (next < 0) {
      next = 0;
    } else {
      queue.push_back(next);
    }
  }
  while (!queue.empty()) {
    const int32_t node = queue.front();
    queue.pop_front();
    for (size_t c = 0; c < num_classes_; ++c) {
      int32_t& next = edges[static_cast<size_t>(node)][c];
      const int32_t via_fail = edges[static_cast<size_t>(fail[static_cast<size_t>(node)])][c];
      if (next < 0) {
        next = via_fail;
      } else {
        fail[static_cast<size_t>(next)] = via_fail;
        queue.push_back(next);
      }
    }
  }
  delta_.reserve(edges.size() * num_classes_);
  for (const std::vector<int32_t>& row : edges) delta_.insert(delta_.end(), row.begin(), row.end());
}

// --- StructuralTagMatcher ----------------------------------------------------------------------

StructuralTagMatcher::StructuralTagMatcher(const StructuralTag* tag) : tag_(tag) {
  if (!tag->at_least_one()) {
    ways_.push_back(Way{});
    return;
  }
  // The output starts with a structure: each begin from its first byte.
  for (size_t s = 0; s < tag->structures().size(); ++s) {
    ways_.push_back(Way{.mode = Mode::kBegin, .at = static_cast<int32_t>(s), .pos = 0});
  }
}

void StructuralTagMatcher::AddAfterStructure(Ways* out) const {
  if (!tag_->stop_after_first()) {
    AddFree(0, out);
    return;
  }
  for (const Way& w : *out) {
    if (w.mode == Mode::kDone) return;
  }
  out->push_back(Way{.mode = Mode::kDone});
}

void StructuralTagMatcher::AddFree(int32_t node, Ways* out) {
  for (const Way& w : *out) {
    if (w.mode == Mode::kFree && w.at == node) return;
  }
  out->push_back(Way{.mode = Mode::kFree, .at = node});
}

StructuralTagMatcher::Way StructuralTagMatcher::ValueOf(int32_t structure) const {
  return Way{
      .mode = Mode::kValue,
      .at = structure,
      .value = JsonSchemaMatcher(tag_->structures()[static_cast<size_t>(structure)].schema.get())};
}

void StructuralTagMatcher::AfterValue(int32_t structure, uint8_t byte, Ways* out) const {
  const std::string& end = tag_->structures()[static_cast<size_t>(structure)].end;
  if (end.empty()) {
    // What follows the structure reads the byte (after the first, nothing may follow).
    if (!tag_->stop_after_first()) FeedWay(Way{.mode = Mode::kFree, .at = 0}, byte, out);
  } else if (static_cast<uint8_t>(end[0]) == byte) {
    if (end.size() == 1) {
      AddAfterStructure(out);
    } else {
      out->push_back(Way{.mode = Mode::kEnd, .at = structure, .pos = 1});
    }
  }
}

void StructuralTagMatcher::FeedWay(const Way& way, uint8_t byte, Ways* out) const {
  switch (way.mode) {
    case Mode::kFree: {
      const int32_t node = tag_->Next(way.at, byte);
      const int32_t trigger = tag_->Fired(node);
      if (trigger < 0) {
        AddFree(node, out);
        return;
      }
      // A trigger forces a structure: each whose begin starts with it.
      const auto pos = static_cast<int32_t>(tag_->triggers()[static_cast<size_t>(trigger)].size());
      for (const int32_t s : tag_->StructuresOf(trigger)) {
        if (tag_->structures()[static_cast<size_t>(s)].begin.size() == static_cast<size_t>(pos)) {
          out->push_back(ValueOf(s));
        } else {
          out->push_back(Way{.mode = Mode::kBegin, .at = s, .pos = pos});
        }
      }
      return;
    }
    case Mode::kBegin: {
      const std::string& begin = tag_->structures()[static_cast<size_t>(way.at)].begin;
      if (static_cast<uint8_t>(begin[static_cast<size_t>(way.pos)]) != byte) return;
      if (static_cast<size_t>(way.pos) + 1 == begin.size()) {
        out->push_back(ValueOf(way.at));
      } else {
        out->push_back(Way{.mode = Mode::kBegin, .at = way.at, .pos = way.pos + 1});
      }
      return;
    }
    case Mode::kValue: {
      // No whitespace before the value (xgrammar's schema grammars start at its first byte; the
      // matcher takes none after it either).
      if (way.started || !IsJsonWhitespace(byte)) {
        Way next = way;
        if (next.value->Feed(byte)) {
          next.started = true;
          out->push_back(std::move(next));
        }
      }
      // The value ended before this byte (as well, where a number may go on: "1" then "2"; a
      // fresh matcher cannot end).
      if (way.value->CanEnd()) AfterValue(way.at, byte, out);
      return;
    }
    case Mode::kEnd: {
      const std::string& end = tag_->structures()[static_cast<size_t>(way.at)].end;
      if (static_cast<uint8_t>(end[static_cast<size_t>(way.pos)]) != byte) return;
      if (static_cast<size_t>(way.pos) + 1 == end.size()) {
        AddAfterStructure(out);
      } else {
        out->push_back(Way{.mode = Mode::kEnd, .at = way.at, .pos = way.pos + 1});
      }
      return;
    }
    case Mode::kDone:
      return;
  }
}

bool StructuralTagMatcher::Feed(uint8_t byte) {
  // The common case, one way in free text, in place.
  if (ways_.size() == 1 && ways_[0].mode == Mode::kFree) {
    const int32_t node = tag_->Next(ways_[0].at, byte);
    if (tag_->Fired(node) < 0) {
      ways_[0].at = node;
      return true;
    }
  }
  Ways next;
  for (const Way& way : ways_) FeedWay(way, byte, &next);
  ways_ = std::move(next);
  return !ways_.empty();
}

bool StructuralTagMatcher::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (!Feed(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool StructuralTagMatcher::CanEnd() const {
  return std::any_of(ways_.begin(), ways_.end(), [this](const Way& w) {
    return w.mode == Mode::kFree || w.mode == Mode::kDone ||
           (w.mode == Mode::kValue && w.value->CanEnd() &&
            tag_->structures()[static_cast<size_t>(w.at)].end.empty());
  });
}

bool StructuralTagMatcher::Complete() const {
  // Only after the first structure, where nothing may follow, and only where no way goes on.
  if (!tag_->stop_after_first() || ways_.empty()) return false;
  return std::all_of(ways_.begin(), ways_.end(), [this](const Way& w) {
    return w.mode == Mode::kDone || (w.mode == Mode::kValue && w.value->Complete() &&
                                     tag_->structures()[static_cast<size_t>(w.at)].end.empty());
  });
}

bool StructuralTagMatcher::AtStringText() const {
  return std::any_of(ways_.begin(), ways_.end(), [](const Way& w) {
    return w.mode == Mode::kValue && w.value->AtStringText();
  });
}

void StructuralTagMatcher::AppendStateKey(std::string* key) const {
  AppendKeyBytes(key, ways_.size());
  for (const Way& w : ways_) {
    AppendKeyBytes(key, w.mode);
    AppendKeyBytes(key, w.at);
    AppendKeyBytes(key, w.pos);
    AppendKeyBytes(key, w.started);
    if (w.mode != Mode::kValue) continue;
    // The value's key, after its length (each way's key must end where the next one's begins).
    const size_t at = key->size();
    AppendKeyBytes(key, size_t{0});
    w.value->AppendStateKey(key);
    const size_t length = key->size() - at - sizeof(size_t);
    key->replace(at, sizeof length, reinterpret_cast<const char*>(&length), sizeof length);
  }
}

}  // namespace headroom::worker
