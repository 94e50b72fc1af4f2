#include "worker/engine/constraint_compiler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/engine/regex_matcher.h"

namespace headroom::worker {

template <typename T>
typename ConstraintCompiler::Kept<T>::Result ConstraintCompiler::Kept<T>::Get(
    const std::string& text, const std::function<Result()>& build) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(text);
    if (it == entries_.end()) {
      if (entries_.size() >= kMaxKept) entries_.clear();
      it = entries_.emplace(text, std::make_shared<Entry>()).first;
    }
    entry = it->second;
  }
  // Outside the lock: other texts are looked up meanwhile; this one's other askers wait here.
  std::call_once(entry->built, [&] {
    entry->result = build();
    std::lock_guard<std::mutex> lock(mu_);
    ++builds_;
  });
  return entry->result;
}

absl::Status ConstraintCompiler::Compile(const SamplingParams& params, CompiledConstraints* out) {
  if ((params.json_object || !params.json_schema.empty() || !params.regex.empty() ||
       !params.grammar.empty()) &&
      vocabulary_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        params.json_object        ? "response_format json_object"
        : !params.regex.empty()   ? "guided_regex"
        : !params.grammar.empty() ? "guided_grammar"
                                  : "response_format json_schema",
        " needs the tokenizer's vocabulary, and this worker has none (its model directory has no "
        "tokenizer.json)"));
  }
  if (!params.json_schema.empty() && out->schema == nullptr) {
    Kept<SharedJsonSchema>::Result schema =
        schemas_.Get(params.json_schema, [&]() -> Kept<SharedJsonSchema>::Result {
          absl::StatusOr<std::shared_ptr<const JsonSchema>> compiled =
              JsonSchema::Compile(params.json_schema);
          if (!compiled.ok()) {
            return absl::InvalidArgumentError(
                absl::StrCat("json_schema: ", compiled.status().message()));
          }
          return std::make_shared<SharedJsonSchema>(*std::move(compiled));
        });
    if (!schema.ok()) return schema.status();
    out->schema = *std::move(schema);
  }
  if (!params.regex.empty() && out->regex == nullptr) {
    Kept<SharedGuidedRegex>::Result regex =
        regexes_.Get(params.regex, [&]() -> Kept<SharedGuidedRegex>::Result {
          absl::StatusOr<JsonRegex> compiled = CompileGuidedRegex(params.regex);
          if (!compiled.ok()) {
            return absl::InvalidArgumentError(absl::StrCat("regex: ", compiled.status().message()));
          }
          return std::make_shared<SharedGuidedRegex>(*std::move(compiled), *vocabulary_);
        });
    if (!regex.ok()) return regex.status();
    out->regex = *std::move(regex);
  }
  if (!params.grammar.empty() && out->grammar == nullptr) {
    Kept<SharedGrammar>::Result grammar =
        grammars_.Get(params.grammar, [&]() -> Kept<SharedGrammar>::Result {
          absl::StatusOr<std::shared_ptr<const EbnfGrammar>> compiled =
              EbnfGrammar::Compile(params.grammar);
          if (!compiled.ok()) {
            return absl::InvalidArgumentError(
                absl::StrCat("grammar: ", compiled.status().message()));
          }
          return std::make_shared<SharedGrammar>(*std::move(compiled), *vocabulary_);
        });
    if (!grammar.ok()) return grammar.status();
    out->grammar = *std::move(grammar);
  }
  return absl::OkStatus();
}

}  // namespace headroom::worker
