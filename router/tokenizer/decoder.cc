#include "router/tokenizer/decoder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/byte_level.h"
#include "router/tokenizer/regex_splitter.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router {
namespace {

using json_util::Json;

class ByteLevelDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      // A token that is not byte-level spelled (an added token, say) is kept as is.
      if (!byte_level::DecodeToken(t, bytes)) bytes.append(t);
    }
    tokens.assign(1, utf8::Lossy(bytes));
  }
  [[nodiscard]] bool UsesByteLevel() const override { return true; }
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      std::string out;
      out.reserve(t.size());
      size_t pos = 0;
      while (pos < t.size()) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          // `tokenizers` drops every replacement character of the first token, not just one.
          if (!(i == 0 && strip_first_)) out.push_back(' ');
          pos += replacement_.size();
        } else {
          out.push_back(t[pos++]);
        }
      }
      t = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<RegexMatcher> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::vector<ByteRange> matches;
    for (std::string& t : tokens) {
      matches.clear();
      pattern_->FindAll(t, matches);
      if (matches.empty()) continue;
      std::string out;
      size_t prev = 0;
      for (const ByteRange& m : matches) {
        out.append(t, prev, m.begin - prev);
        out.append(content_);
        prev = m.end;
      }
      out.append(t, prev, std::string::npos);
      t = std::move(out);
    }
  }

 private:
  std::unique_ptr<RegexMatcher> pattern_;
  std::string content_;
};

class ByteFallbackDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    auto flush = [&] {
      if (run.empty()) return;
      if (utf8::IsValid(run)) {
        out.push_back(run);
      } else {
        // The whole run is invalid: one U+FFFD per byte, as `tokenizers` does.
        for (size_t k = 0; k < run.size(); ++k) out.emplace_back(utf8::kReplacementChar);
      }
      run.clear();
    };
    for (std::string& t : tokens) {
      const int b = ByteFallbackValue(t);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
  [[nodiscard]] bool UsesByteFallback() const override { return true; }
};

class FuseDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all.append(t);
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      size_t begin = 0;
      for (size_t k = 0; k < start_ && t.compare(begin, content_.size(), content_) == 0; ++k) {
        begin += content_.size();
      }
      size_t end = t.size();
      for (size_t k = 0; k < stop_ && end >= begin + content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++k) {
        end -= content_.size();
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;  // one character
  size_t start_;
  size_t stop_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->DecodeChain(tokens);
  }
  [[nodiscard]] bool UsesByteFallback() const override {
    for (const auto& step : steps_) {
      if (step->UsesByteFallback()) return true;
    }
    return false;
  }
  [[nodiscard]] bool UsesByteLevel() const override {
    for (const auto& step : steps_) {
      if (step->UsesByteLevel()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

absl::StatusOr<std::string> ParseSingleChar(const Json& spec, std::string_view key,
                                            std::string_view path) {
  auto s = json_util::GetString(spec, key, path);
  if (!s.ok()) return s.status();
  if (s->empty() || utf8::ValidSequenceLength(*s, 0) != s->size()) {
    return json_util::Expected(json_util::Child(path, key), "a single character");
  }
  return s;
}

}  // namespace

int ByteFallbackValue(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return -1;
  // Rust's u8::from_str_radix accepts a leading '+' ("<0x+A>" is byte 10).
  if (token[3] == '+') return HexDigitValue(token[4]);
  const int hi = HexDigitValue(token[3]);
  const int lo = HexDigitValue(token[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const Json& spec, std::string_view path) {
  if (spec.is_null()) return std::unique_ptr<Decoder>();
  auto type = json_util::GetString(spec, "type", path);
  if (!type.ok()) return type.status();
  const std::string& t = *type;
  if (t == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (t == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (t == "Fuse") return std::make_unique<FuseDecoder>();
  if (t == "Metaspace") {
    auto replacement = ParseSingleChar(spec, "replacement", path);
    if (!replacement.ok()) return replacement.status();
    bool strip_first = true;
    auto scheme = json_util::GetOptionalString(spec, "prepend_scheme", path);
    if (!scheme.ok()) return scheme.status();
    if (scheme->has_value()) {
      if (**scheme != "always" && **scheme != "first" && **scheme != "never") {
        return absl::InvalidArgumentError(absl::StrCat(
            json_util::Child(path, "prepend_scheme"), ": unknown prepend scheme '", **scheme, "'"));
      }
      strip_first = **scheme != "never";
    } else {
      auto add = json_util::GetBool(spec, "add_prefix_space", path, true);
      if (!add.ok()) return add.status();
      strip_first = *add;
    }
    return std::make_unique<MetaspaceDecoder>(*std::move(replacement), strip_first);
  }
  if (t == "Replace") {
    const Json* pattern = json_util::Find(spec, "pattern");
    const std::string pattern_path = json_util::Child(path, "pattern");
    if (pattern == nullptr) return json_util::Expected(pattern_path, "a pattern");
    auto matcher = ParsePattern(*pattern, pattern_path);
    if (!matcher.ok()) return matcher.status();
    auto content = json_util::GetString(spec, "content", path);
    if (!content.ok()) return content.status();
    return std::make_unique<ReplaceDecoder>(*std::move(matcher), *std::move(content));
  }
  if (t == "Strip") {
    auto content = ParseSingleChar(spec, "content", path);
    if (!content.ok()) return content.status();
    auto start = json_util::GetInt(spec, "start", path, 0);
    if (!start.ok()) return start.status();
    auto stop = json_util::GetInt(spec, "stop", path, 0);
    if (!stop.ok()) return stop.status();
    if (*start < 0 || *stop < 0) return json_util::Expected(path, "non-negative start and stop");
    return std::make_unique<StripDecoder>(*std::move(content), static_cast<size_t>(*start),
                                          static_cast<size_t>(*stop));
  }
  if (t == "Sequence") {
    const Json* list = json_util::Find(spec, "decoders");
    const std::string list_path = json_util::Child(path, "decoders");
    if (list == nullptr || !list->is_array()) return json_util::Expected(list_path, "an array");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      auto step = ParseDecoder((*list)[i], json_util::Index(list_path, i));
      if (!step.ok()) return step.status();
      if (*step != nullptr) steps.push_back(*std::move(step));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Sv(path), ": unsupported decoder '", t,
                   "' (supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, "
                   "Sequence)"));
}

}  // namespace headroom::router
