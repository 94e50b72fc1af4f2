#include "worker/engine/constraint_check.h"

#include "absl/strings/string_view.h"
#include "worker/engine/json_schema.h"
#include "worker/engine/lark_grammar.h"
#include "worker/engine/regex_matcher.h"
#include "worker/engine/structural_tag.h"

namespace headroom::worker {
namespace {

absl::Status Compile(ConstraintKind kind, std::string_view text) {
  switch (kind) {
    case ConstraintKind::kJsonSchema:
      return JsonSchema::Compile(text).status();
    case ConstraintKind::kGuidedRegex:
      return CompileGuidedRegex(text).status();
    case ConstraintKind::kGrammar:
      return CompileGuidedGrammar(text).status();
    case ConstraintKind::kStructuralTag:
      return StructuralTag::Compile(text).status();
  }
  return absl::InvalidArgumentError("unknown constraint kind");
}

}  // namespace

ConstraintChecks& ConstraintChecks::Default() {
  static ConstraintChecks* const checks = new ConstraintChecks();
  return *checks;
}

absl::Status ConstraintChecks::Check(ConstraintKind kind, std::string_view text) {
  absl::flat_hash_map<std::string, absl::Status>& verdicts = verdicts_[static_cast<size_t>(kind)];
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = verdicts.find(absl::string_view(text.data(), text.size()));
    if (it != verdicts.end()) return it->second;
  }
  // Compiled outside the lock: a large grammar takes milliseconds, other checks need not wait.
  absl::Status verdict = Compile(kind, text);
  std::lock_guard<std::mutex> lock(mu_);
  ++compiles_;
  if (text.size() > max_kept_bytes_) return verdict;
  if (kept_bytes_ + text.size() > max_kept_bytes_) {
    for (auto& kept : verdicts_) kept.clear();
    kept_bytes_ = 0;
  }
  if (verdicts.emplace(std::string(text), verdict).second) kept_bytes_ += text.size();
  return verdict;
}

int64_t ConstraintChecks::compiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compiles_;
}

size_t ConstraintChecks::kept_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_bytes_;
}

}  // namespace headroom::worker
