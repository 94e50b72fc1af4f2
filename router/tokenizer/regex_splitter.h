// Regex matching for pre-tokenizers and normalizers. Hugging Face `tokenizers` compiles patterns
// with Oniguruma; headroom uses RE2, so patterns are translated first:
//   - `\s`, `\S`, `\d`, `\D`, `\w`, `\W` get Oniguruma's Unicode meaning (RE2's are ASCII-only).
//   - `\uHHHH` becomes `\x{HHHH}`.
//   - The lookahead `\s+(?!\S)|\s+` that ends the GPT-2, Llama-3 and Qwen2 patterns (RE2 has no
//     lookahead) becomes a named group `\s+`; when that group matched two or more whitespace
//     characters followed by a non-whitespace character, the match gives back its last character,
//     which is exactly what the backtracking engine does (see RegexMatcher::FindAll).
//   - Any other lookaround or atomic group is rejected with an error that names it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/tokenizer/json_util.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace headroom::router {

// A half-open byte range [begin, end) of a string.
struct ByteRange {
  size_t begin = 0;
  size_t end = 0;
};

class RegexMatcher {
 public:
  // Compiles an Oniguruma-style pattern (as found in tokenizer.json).
  static absl::StatusOr<std::unique_ptr<RegexMatcher>> Create(std::string_view pattern);
  // Matches the literal string `literal` (a `{"String": ...}` pattern).
  static absl::StatusOr<std::unique_ptr<RegexMatcher>> CreateLiteral(std::string_view literal);

  ~RegexMatcher();
  RegexMatcher(const RegexMatcher&) = delete;
  RegexMatcher& operator=(const RegexMatcher&) = delete;

  // Appends every non-overlapping, non-empty match of `text`, left to right, to `out`.
  void FindAll(std::string_view text, std::vector<ByteRange>& out) const;

  // The RE2 pattern this matcher runs (for tests and error messages).
  [[nodiscard]] const std::string& translated() const { return translated_; }

 private:
  RegexMatcher() = default;

  std::unique_ptr<re2::RE2> re_;
  std::string translated_;
  std::string literal_;        // for CreateLiteral: matched with std::string_view::find, not RE2
  int whitespace_group_ = -1;  // capture index of the rewritten `\s+(?!\S)|\s+`, or -1
};

// Translates an Oniguruma pattern to RE2 syntax (exposed for tests). `*whitespace_lookahead` is
// set when the `\s+(?!\S)|\s+` tail was rewritten into the group named kWhitespaceGroup.
absl::StatusOr<std::string> TranslateOnigurumaPattern(std::string_view pattern,
                                                      bool* whitespace_lookahead);

inline constexpr std::string_view kWhitespaceGroup = "hr_ws";

// Parses a tokenizer.json pattern object: `{"String": literal}` or `{"Regex": pattern}`.
absl::StatusOr<std::unique_ptr<RegexMatcher>> ParsePattern(const json_util::Json& spec,
                                                           std::string_view path);

// True for the code points Oniguruma's `\s` matches (Unicode White_Space).
[[nodiscard]] bool IsUnicodeWhitespace(char32_t cp);

}  // namespace headroom::router
