#include "worker/engine/constraint_compiler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/lark_grammar.h"
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

template <typename T, typename CompileText, typename Share>
absl::Status ConstraintCompiler::Build(Kept<T>& kept, const std::string& text, const char* what,
                                       CompileText compile, Share share, std::shared_ptr<T>* out) {
  if (text.empty() || *out != nullptr) return absl::OkStatus();
  typename Kept<T>::Result built = kept.Get(text, [&]() -> typename Kept<T>::Result {
    auto compiled = compile(text);
    if (!compiled.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", compiled.status().message()));
    }
    return share(*std::move(compiled));
  });
  if (!built.ok()) return built.status();
  *out = *std::move(built);
  return absl::OkStatus();
}

absl::Status ConstraintCompiler::Compile(const SamplingParams& params, CompiledConstraints* out) {
  if ((params.json_object || !params.json_schema.empty() || !params.regex.empty() ||
       !params.grammar.empty() || !params.structural_tag.empty()) &&
      vocabulary_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        params.json_object               ? "response_format json_object"
        : !params.regex.empty()          ? "guided_regex"
        : !params.grammar.empty()        ? "guided_grammar"
        : !params.structural_tag.empty() ? "structural_tag"
                                         : "response_format json_schema",
        " needs the tokenizer's vocabulary, and this worker has none (its model directory has no "
        "tokenizer.json)"));
  }
  HR_RETURN_IF_ERROR(Build(
      schemas_, params.json_schema, "json_schema",
      [](const std::string& text) { return JsonSchema::Compile(text); },
      [](std::shared_ptr<const JsonSchema> c) { return std::make_shared<SharedJsonSchema>(c); },
      &out->schema));
  HR_RETURN_IF_ERROR(Build(
      regexes_, params.regex, "regex", CompileGuidedRegex,
      [&](JsonRegex c) { return std::make_shared<SharedGuidedRegex>(std::move(c), *vocabulary_); },
      &out->regex));
  HR_RETURN_IF_ERROR(Build(
      grammars_, params.grammar, "grammar",
      [](const std::string& text) { return CompileGuidedGrammar(text); },
      [&](std::shared_ptr<const EbnfGrammar> c) {
        return std::make_shared<SharedGrammar>(std::move(c), *vocabulary_);
      },
      &out->grammar));
  HR_RETURN_IF_ERROR(Build(
      tags_, params.structural_tag, "structural_tag",
      [](const std::string& text) { return StructuralTag::Compile(text); },
      [](std::shared_ptr<const StructuralTag> c) {
        return std::make_shared<SharedStructuralTag>(std::move(c));
      },
      &out->structural_tag));
  return absl::OkStatus();
}

}  // namespace headroom::worker
