// ConstraintChecks: whether a request's JSON schema, guided regex, grammar or structural tag
// compiles, for the router's early refusal (INVALID_ARGUMENT with the compiler's reason, before
// the request reaches a worker). The verdict is kept by text: an HTTP request is checked twice (the
// front end names the field in its 400, validation checks every gRPC request), and clients send the
// same schema request after request, while compiling a 43 KB grammar costs ~3 ms of a router thread
// (docs/performance.md). Only the verdict is kept; the worker compiles what it steps with
// (ConstraintCompiler).
//
// Thread-safe. Bounded: the kept texts add up to at most max_kept_bytes; past that the cache
// starts over. Two threads checking one new text may both compile it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace headroom::worker {

enum class ConstraintKind : uint8_t { kJsonSchema, kGuidedRegex, kGrammar, kStructuralTag };

class ConstraintChecks {
 public:
  static constexpr size_t kDefaultMaxKeptBytes = size_t{16} << 20;

  explicit ConstraintChecks(size_t max_kept_bytes = kDefaultMaxKeptBytes)
      : max_kept_bytes_(max_kept_bytes) {}

  // The process's, which the router's request parsing and validation share.
  static ConstraintChecks& Default();

  // OK when `text` compiles as a constraint of `kind`, else the compiler's InvalidArgument.
  absl::Status Check(ConstraintKind kind, std::string_view text);

  // Texts compiled so far (checks the kept verdicts did not answer).
  [[nodiscard]] int64_t compiles() const;
  // Bytes of text kept now.
  [[nodiscard]] size_t kept_bytes() const;

 private:
  const size_t max_kept_bytes_;
  mutable std::mutex mu_;
  // Each kind's, by text (looked up by string_view: a hit copies nothing).
  absl::flat_hash_map<std::string, absl::Status> verdicts_[4];
  size_t kept_bytes_ = 0;
  int64_t compiles_ = 0;
};

}  // namespace headroom::worker
