// ConstraintCompiler: turns a request's json_schema and guided regex into what the engine steps
// with (a compiled schema; a regex with its vocabulary groups and state masks), on the thread
// that submits the request rather than the engine thread. Grouping a 128k vocabulary for a new
// pattern costs ~8 ms (docs/performance.md); done in the step loop, every running request would
// wait for it.
//
// Thread-safe. Guided regexes are kept by pattern, shared by the requests that give the same one
// (their masks are the same); a pattern submitted by many threads at once is built once, the
// others wait for it. At most kMaxPatterns are kept, then the cache starts over (requests keep the
// ones they hold).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_schema.h"
#include "worker/engine/regex_tokens.h"
#include "worker/engine/request.h"

namespace headroom::worker {

class ConstraintCompiler {
 public:
  static constexpr size_t kMaxPatterns = 32;

  // `vocabulary` may be null (a model without tokenizer.json): constraints are then refused.
  explicit ConstraintCompiler(std::shared_ptr<const JsonVocabulary> vocabulary)
      : vocabulary_(std::move(vocabulary)) {}

  // Fills `out` with what `params` asks for; INVALID_ARGUMENT with the reason when a schema or a
  // pattern does not compile, or when a constraint needs the vocabulary and there is none.
  absl::Status Compile(const SamplingParams& params, CompiledConstraints* out);

  // Patterns grouped so far (each costs one pass over the vocabulary).
  [[nodiscard]] int64_t regex_builds() const;

 private:
  struct RegexEntry {
    std::once_flag built;
    absl::StatusOr<std::shared_ptr<SharedGuidedRegex>> regex = nullptr;
  };

  absl::StatusOr<std::shared_ptr<SharedGuidedRegex>> Regex(const std::string& pattern);

  const std::shared_ptr<const JsonVocabulary> vocabulary_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<RegexEntry>> regexes_;  // guarded by mu_
  int64_t regex_builds_ = 0;                                               // guarded by mu_
};

}  // namespace headroom::worker
