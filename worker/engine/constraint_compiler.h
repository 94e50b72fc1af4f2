// ConstraintCompiler: turns a request's json_schema, guided regex, grammar and structural tag into
// what the engine steps with (a compiled schema, a regex with its vocabulary grouped, a grammar
// with its vocabulary in a trie, a tag's trigger automaton and schemas, and their token-list
// caches), on the thread that submits the request rather than the engine thread. Grouping a 128k
// vocabulary for a new pattern costs ~8 ms (docs/performance.md); done in the step loop, every
// running request would wait for it.
//
// Thread-safe. Schemas and patterns are kept by their text, shared by the requests that give the
// same one (so are the token lists of their states: TokenMaskCache); one submitted by many
// threads at once is built once, the others wait for it. At most kMaxKept of each are kept, then
// that cache starts over (requests keep the ones they hold).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/engine/grammar_tokens.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_schema.h"
#include "worker/engine/regex_tokens.h"
#include "worker/engine/request.h"
#include "worker/engine/structural_tag.h"
#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {

// A json_schema as the engine keeps it for all the requests that give the same text: compiled,
// and the token list of each state seen (keyed by JsonSchemaMatcher::AppendStateKey; the engine
// thread's: not thread-safe).
struct SharedJsonSchema {
  explicit SharedJsonSchema(std::shared_ptr<const JsonSchema> compiled)
      : schema(std::move(compiled)) {}

  std::shared_ptr<const JsonSchema> schema;
  TokenMaskCache<std::string> masks;
};

// A structural tag as the engine keeps it for all the requests that give the same text: compiled,
// and the token list of each state seen (keyed by StructuralTagMatcher::AppendStateKey; the engine
// thread's).
struct SharedStructuralTag {
  explicit SharedStructuralTag(std::shared_ptr<const StructuralTag> compiled)
      : tag(std::move(compiled)) {}

  std::shared_ptr<const StructuralTag> tag;
  TokenMaskCache<std::string> masks;
};

class ConstraintCompiler {
 public:
  static constexpr size_t kMaxKept = 32;

  // `vocabulary` may be null (a model without tokenizer.json): constraints are then refused.
  explicit ConstraintCompiler(std::shared_ptr<const JsonVocabulary> vocabulary)
      : vocabulary_(std::move(vocabulary)) {}

  // Fills what `out` lacks of what `params` asks for; INVALID_ARGUMENT with the reason when a
  // schema or a pattern does not compile, or when a constraint needs the vocabulary and there is
  // none.
  absl::Status Compile(const SamplingParams& params, CompiledConstraints* out);

  // Schemas and patterns compiled so far (a pattern's costs a pass over the vocabulary).
  [[nodiscard]] int64_t schema_builds() const { return schemas_.builds(); }
  [[nodiscard]] int64_t regex_builds() const { return regexes_.builds(); }
  [[nodiscard]] int64_t grammar_builds() const { return grammars_.builds(); }
  [[nodiscard]] int64_t structural_tag_builds() const { return tags_.builds(); }

 private:
  // Values built from a text, each once, the last kMaxKept kept.
  template <typename T>
  class Kept {
   public:
    using Result = absl::StatusOr<std::shared_ptr<T>>;
    Result Get(const std::string& text, const std::function<Result()>& build);
    [[nodiscard]] int64_t builds() const {
      std::lock_guard<std::mutex> lock(mu_);
      return builds_;
    }

   private:
    struct Entry {
      std::once_flag built;
      Result result = nullptr;
    };
    mutable std::mutex mu_;
    absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_;  // guarded by mu_
    int64_t builds_ = 0;                                                // guarded by mu_
  };

  // Fills *out, where `text` is given and *out is still null, with what `kept` holds for the text,
  // built on first use as share(compile(text)); a text that does not compile is
  // INVALID_ARGUMENT "<what>: <reason>".
  template <typename T, typename CompileText, typename Share>
  absl::Status Build(Kept<T>& kept, const std::string& text, const char* what, CompileText compile,
                     Share share, std::shared_ptr<T>* out);

  const std::shared_ptr<const JsonVocabulary> vocabulary_;
  Kept<SharedJsonSchema> schemas_;
  Kept<SharedGuidedRegex> regexes_;
  Kept<SharedGrammar> grammars_;
  Kept<SharedStructuralTag> tags_;
};

}  // namespace headroom::worker
