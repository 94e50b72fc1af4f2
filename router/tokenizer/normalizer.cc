#include "router/tokenizer/normalizer.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/regex_splitter.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"
#include "utf8proc.h"

namespace headroom::router {
namespace {

using json_util::Json;

bool IsAscii(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(int options) : options_(options) {}
  void Normalize(std::string& text) const override {
    if (IsAscii(text)) return;  // every form leaves ASCII unchanged
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &out,
                                            static_cast<utf8proc_option_t>(options_));
    if (n >= 0 && out != nullptr) {
      text.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    }
    std::free(out);
  }

 private:
  int options_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<RegexMatcher> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Normalize(std::string& text) const override {
    std::vector<ByteRange> matches;
    pattern_->FindAll(text, matches);
    if (matches.empty()) return;
    std::string out;
    out.reserve(text.size() + matches.size() * content_.size());
    size_t prev = 0;
    for (const ByteRange& m : matches) {
      out.append(text, prev, m.begin - prev);
      out.append(content_);
      prev = m.end;
    }
    out.append(text, prev, std::string::npos);
    text = std::move(out);
  }

 private:
  std::unique_ptr<RegexMatcher> pattern_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void Normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(std::string& text) const override {
    size_t begin = 0;
    size_t end = text.size();
    if (left_) {
      while (begin < end) {
        char32_t cp = 0;
        const size_t len = utf8::Decode(text, begin, &cp);
        if (!IsUnicodeWhitespace(cp)) break;
        begin += len;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        char32_t cp = 0;
        utf8::Decode(text, start, &cp);
        if (!IsUnicodeWhitespace(cp)) break;
        end = start;
      }
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_;
  bool right_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void Normalize(std::string& text) const override {
    for (const auto& step : steps_) step->Normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& spec,
                                                            std::string_view path) {
  if (spec.is_null()) return std::unique_ptr<Normalizer>();
  auto type = json_util::GetString(spec, "type", path);
  if (!type.ok()) return type.status();
  const std::string& t = *type;
  if (t == "NFC") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (t == "NFD") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  if (t == "NFKC") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE |
                                               UTF8PROC_COMPAT);
  }
  if (t == "NFKD") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE |
                                               UTF8PROC_COMPAT);
  }
  if (t == "Prepend") {
    auto prepend = json_util::GetString(spec, "prepend", path);
    if (!prepend.ok()) return prepend.status();
    return std::make_unique<PrependNormalizer>(*std::move(prepend));
  }
  if (t == "Replace") {
    const Json* pattern = json_util::Find(spec, "pattern");
    if (pattern == nullptr)
      return json_util::Expected(json_util::Child(path, "pattern"), "a pattern");
    auto matcher = ParsePattern(*pattern, json_util::Child(path, "pattern"));
    if (!matcher.ok()) return matcher.status();
    auto content = json_util::GetString(spec, "content", path);
    if (!content.ok()) return content.status();
    return std::make_unique<ReplaceNormalizer>(*std::move(matcher), *std::move(content));
  }
  if (t == "Strip") {
    auto left = json_util::GetBool(spec, "strip_left", path, true);
    if (!left.ok()) return left.status();
    auto right = json_util::GetBool(spec, "strip_right", path, true);
    if (!right.ok()) return right.status();
    return std::make_unique<StripNormalizer>(*left, *right);
  }
  if (t == "Sequence") {
    const Json* list = json_util::Find(spec, "normalizers");
    const std::string list_path = json_util::Child(path, "normalizers");
    if (list == nullptr || !list->is_array()) return json_util::Expected(list_path, "an array");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      auto step = ParseNormalizer((*list)[i], json_util::Index(list_path, i));
      if (!step.ok()) return step.status();
      if (*step != nullptr) steps.push_back(*std::move(step));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Sv(path), ": unsupported normalizer '", t,
                   "' (supported: NFC, NFD, NFKC, NFKD, Replace, Prepend, Strip, Sequence)"));
}

}  // namespace headroom::router
