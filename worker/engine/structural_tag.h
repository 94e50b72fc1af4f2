// vLLM's structural tag (response_format {"type": "structural_tag", "structures": [{"begin",
// "schema", "end"}], "triggers": [...]}, structured_outputs.structural_tag), read as xgrammar's
// TagDispatch reads it (vLLM's default backend, Grammar.from_structural_tag):
//   - the output is free text until it shows a trigger;
//   - from a trigger on it must continue with the rest of the `begin` of a structure whose begin
//     starts with that trigger, then a JSON value valid against that structure's schema (no
//     whitespace before it or after it), then the structure's `end`;
//   - then it is free text again, and may show a trigger again.
// The output may end anywhere in free text (even inside a trigger's first bytes), nowhere else.
// xgrammar's newer form says the same as {"format": {"type": "triggered_tags", "triggers",
// "tags": [{"begin", "content": {"type": "json_schema", "json_schema"}, "end"}]}}, with two flags:
// at_least_one (the output starts with a structure) and stop_after_first (nothing follows the
// first structure; the output is then complete).
//
// StructuralTag compiles the JSON text: an automaton over the triggers (Aho-Corasick, the bytes
// no trigger holds in one class) and each structure's schema (JsonSchema). Refused, with the
// path: no structures, no triggers, more than kMaxStructures / kMaxTriggers, an empty trigger or
// begin, a begin that starts with no trigger (xgrammar's rule), a trigger inside another one
// (xgrammar dispatches to one of them where both end on the same byte; which one is not
// documented), a schema headroom cannot enforce, and in the newer form any other format or
// content type (sequence, or, any_text, regex, grammar, const_string, ...).
//
// StructuralTagMatcher reads the output one byte at a time, as JsonSchemaMatcher does (the same
// Feed / Complete / CanEnd / AtStringText / AppendStateKey, so JsonAllowedTokens and
// TokenMaskCache serve it). It keeps every way of reading the text so far: structures may share a
// begin, one begin may be the start of another, and a value that may end (a number) may also go
// on; each way is free text at a trigger-automaton node, a begin's bytes read, a value being read,
// an end's bytes read, or done (after the first structure, with stop_after_first).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "worker/engine/json_schema.h"

namespace headroom::worker {

class StructuralTag {
 public:
  // OpenAI's limit on a request's tools, one structure per tool being the use.
  static constexpr size_t kMaxStructures = 128;
  static constexpr size_t kMaxTriggers = 64;
  // The triggers' bytes together (the automaton: a row of 4-byte entries per byte, one entry per
  // distinct byte: at most ~1 MB).
  static constexpr size_t kMaxTriggerBytes = 1024;
  // The whole text (schemas included).
  static constexpr size_t kMaxBytes = size_t{256} << 10;

  struct Structure {
    std::string begin;
    std::shared_ptr<const JsonSchema> schema;
    std::string end;
  };

  // `text` is the structural tag as JSON: {"structures": [...], "triggers": [...]} or {"format":
  // {...}} (a "type" member is ignored). Errors are InvalidArgument naming the part
  // ("structures[1].begin ...", "format.tags[0].content.type ...").
  static absl::StatusOr<std::shared_ptr<const StructuralTag>> Compile(std::string_view text);

  [[nodiscard]] const std::vector<Structure>& structures() const { return structures_; }
  [[nodiscard]] const std::vector<std::string>& triggers() const { return triggers_; }
  [[nodiscard]] bool at_least_one() const { return at_least_one_; }
  [[nodiscard]] bool stop_after_first() const { return stop_after_first_; }

  // The trigger automaton: node 0 is free text with no trigger begun.
  [[nodiscard]] int32_t Next(int32_t node, uint8_t byte) const {
    return delta_[static_cast<size_t>(node) * num_classes_ + byte_class_[byte]];
  }
  // The trigger whose last byte `node` is (-1: none).
  [[nodiscard]] int32_t Fired(int32_t node) const { return fired_[static_cast<size_t>(node)]; }
  // The structures whose begin starts with trigger `t`.
  [[nodiscard]] const std::vector<int32_t>& StructuresOf(int32_t t) const {
    return by_trigger_[static_cast<size_t>(t)];
  }

 private:
  friend class StructuralTagReader;
  StructuralTag() = default;
  void BuildAutomaton();

  std::vector<Structure> structures_;
  std::vector<std::string> triggers_;
  // xgrammar's newer form's flags: the output starts with a structure (no free text before the
  // first); the output ends after the first structure.
  bool at_least_one_ = false;
  bool stop_after_first_ = false;
  std::vector<std::vector<int32_t>> by_trigger_;
  uint16_t byte_class_[256] = {};  // 0: the bytes no trigger holds
  size_t num_classes_ = 1;
  std::vector<int32_t> delta_;  // [node][class]
  std::vector<int32_t> fired_;  // [node]
};

class StructuralTagMatcher {
 public:
  // `tag` must outlive the matcher (copied per token tried: a pointer, not an owner).
  explicit StructuralTagMatcher(const StructuralTag* tag);

  // Reads `byte`; false when no way of reading the output continues with it (the matcher is
  // then unusable: callers try bytes on a copy).
  [[nodiscard]] bool Feed(uint8_t byte);
  [[nodiscard]] bool Feed(std::string_view bytes);

  // Nothing may follow (only with stop_after_first, once the first structure is whole).
  [[nodiscard]] bool Complete() const;
  // The output may end here (a way is in free text or done, or ends a value whose structure has
  // no end).
  [[nodiscard]] bool CanEnd() const;
  // Some way is between the characters of a string that takes any text (JsonVocabulary's fast
  // path: such text is allowed, whatever the other ways make of it).
  [[nodiscard]] bool AtStringText() const;
  // Matchers of the same tag with the same key accept the same bytes.
  void AppendStateKey(std::string* key) const;

 private:
  enum class Mode : uint8_t { kFree, kBegin, kValue, kEnd, kDone };
  struct Way {
    Mode mode = Mode::kFree;
    // kFree: the trigger-automaton node; otherwise the structure.
    int32_t at = 0;
    // kBegin / kEnd: the bytes of the begin / end read.
    int32_t pos = 0;
    // kValue: whether a byte of the value was read, and what they read as.
    bool started = false;
    std::optional<JsonSchemaMatcher> value = std::nullopt;
  };
  using Ways = absl::InlinedVector<Way, 1>;

  // Adds what `way` becomes after `byte` to `out`.
  void FeedWay(const Way& way, uint8_t byte, Ways* out) const;
  // `way` moved to free text at `node`, unless `out` has that way already.
  static void AddFree(int32_t node, Ways* out);
  // What follows a structure's end: free text, or (stop_after_first) nothing.
  void AddAfterStructure(Ways* out) const;
  // The ways after a structure's begin was read whole.
  Way ValueOf(int32_t structure) const;
  // A value of `structure` ended before `byte`: the end's first byte, or free text.
  void AfterValue(int32_t structure, uint8_t byte, Ways* out) const;

  const StructuralTag* tag_;
  Ways ways_;
};

}  // namespace headroom::worker
