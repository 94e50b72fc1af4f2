#include "worker/engine/constraint_compiler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/engine/regex_matcher.h"
#include "worker/engine/request.h"

namespace headroom::worker {

absl::Status ConstraintCompiler::Compile(const SamplingParams& params, CompiledConstraints* out) {
  if ((params.json_object || !params.json_schema.empty() || !params.regex.empty()) &&
      vocabulary_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        params.json_object      ? "response_format json_object"
        : !params.regex.empty() ? "guided_regex"
                                : "response_format json_schema",
        " needs the tokenizer's vocabulary, and this worker has none (its model directory has no "
        "tokenizer.json)"));
  }
  if (!params.json_schema.empty() && out->schema == nullptr) {
    absl::StatusOr<std::shared_ptr<const JsonSchema>> schema =
        JsonSchema::Compile(params.json_schema);
    if (!schema.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("json_schema: ", schema.status().message()));
    }
    out->schema = *std::move(schema);
  }
  if (!params.regex.empty() && out->regex == nullptr) {
    absl::StatusOr<std::shared_ptr<SharedGuidedRegex>> regex = Regex(params.regex);
    if (!regex.ok()) return regex.status();
    out->regex = *std::move(regex);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<SharedGuidedRegex>> ConstraintCompiler::Regex(
    const std::string& pattern) {
  std::shared_ptr<RegexEntry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regexes_.find(pattern);
    if (it == regexes_.end()) {
      if (regexes_.size() >= kMaxPatterns) regexes_.clear();
      it = regexes_.emplace(pattern, std::make_shared<RegexEntry>()).first;
    }
    entry = it->second;
  }
  // Outside the lock: other patterns are looked up meanwhile; this one's other askers wait here.
  std::call_once(entry->built, [&] {
    absl::StatusOr<JsonRegex> regex = CompileGuidedRegex(pattern);
    if (!regex.ok()) {
      entry->regex = absl::InvalidArgumentError(absl::StrCat("regex: ", regex.status().message()));
      return;
    }
    entry->regex = std::make_shared<SharedGuidedRegex>(*std::move(regex), *vocabulary_);
    std::lock_guard<std::mutex> lock(mu_);
    ++regex_builds_;
  });
  return entry->regex;
}

int64_t ConstraintCompiler::regex_builds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return regex_builds_;
}

}  // namespace headroom::worker
