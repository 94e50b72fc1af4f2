#include "router/tokenizer/pre_tokenizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/byte_level.h"
#include "router/tokenizer/string_util.h"
#include "router/tokenizer/utf8.h"

namespace headroom::router {
namespace {

using json_util::Json;

struct Segment {
  ByteRange range;
  bool is_match = false;
};

// Applies one of the delimiter behaviors to the alternating match / non-match segments, as
// `tokenizers`' NormalizedString::split does.
std::vector<Segment> ApplyBehavior(std::vector<Segment> segments, SplitBehavior behavior) {
  std::vector<Segment> out;
  out.reserve(segments.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      return segments;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.is_match) out.push_back(s);
      }
      return out;
    case SplitBehavior::kMergedWithPrevious:
      for (const Segment& s : segments) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().range.end = s.range.end;
        } else {
          out.push_back(s);
        }
        previous_match = s.is_match;
      }
      return out;
    case SplitBehavior::kMergedWithNext:
      for (size_t k = segments.size(); k-- > 0;) {
        const Segment& s = segments[k];
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().range.begin = s.range.begin;
        } else {
          out.push_back(s);
        }
        previous_match = s.is_match;
      }
      return std::vector<Segment>(out.rbegin(), out.rend());
    case SplitBehavior::kContiguous:
      for (const Segment& s : segments) {
        if (s.is_match == previous_match && !out.empty()) {
          out.back().range.end = s.range.end;
        } else {
          out.push_back(s);
        }
        previous_match = s.is_match;
      }
      return out;
  }
  return segments;
}

void ForEachPiece(std::vector<Piece>& pieces, const auto& split) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (const Piece& p : pieces) split(p, out);
  pieces = std::move(out);
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<RegexMatcher> pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void PreTokenize(std::vector<Piece>& pieces) const override {
    std::vector<ByteRange> matches;
    ForEachPiece(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      matches.clear();
      pattern_->FindAll(p.text, matches);
      SplitPiece(p, matches, behavior_, invert_, out);
    });
  }

 private:
  std::unique_ptr<RegexMatcher> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::unique_ptr<RegexMatcher> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  void PreTokenize(std::vector<Piece>& pieces) const override {
    std::vector<ByteRange> matches;
    ForEachPiece(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      Piece prefixed;
      const Piece* src = &p;
      if (add_prefix_space_ && (p.text.empty() || p.text[0] != ' ')) {
        prefixed = Piece{absl::StrCat(" ", p.text), p.at_start};
        src = &prefixed;
      }
      if (regex_ == nullptr) {
        out.push_back(*src);
      } else {
        matches.clear();
        regex_->FindAll(src->text, matches);
        SplitPiece(*src, matches, SplitBehavior::kIsolated, false, out);
      }
    });
    for (Piece& p : pieces) {
      std::string mapped;
      mapped.reserve(p.text.size() * 2);
      byte_level::Encode(p.text, mapped);
      p.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<RegexMatcher> regex_;  // null when use_regex is false
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void PreTokenize(std::vector<Piece>& pieces) const override {
    std::vector<ByteRange> matches;
    ForEachPiece(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      Piece q{std::string(), p.at_start};
      q.text.reserve(p.text.size() + replacement_.size() * 4);
      for (const char c : p.text) {
        if (c == ' ') {
          q.text.append(replacement_);
        } else {
          q.text.push_back(c);
        }
      }
      const bool starts = q.text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts &&
          (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.at_start))) {
        q.text.insert(0, replacement_);
      }
      if (!split_) {
        if (!q.text.empty()) out.push_back(std::move(q));
        return;
      }
      matches.clear();
      for (size_t pos = q.text.find(replacement_); pos != std::string::npos;
           pos = q.text.find(replacement_, pos + replacement_.size())) {
        matches.push_back({pos, pos + replacement_.size()});
      }
      SplitPiece(q, matches, SplitBehavior::kMergedWithNext, false, out);
    });
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void PreTokenize(std::vector<Piece>& pieces) const override {
    for (const auto& step : steps_) step->PreTokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

absl::StatusOr<SplitBehavior> ParseBehavior(const Json& spec, std::string_view path) {
  auto name = json_util::GetString(spec, "behavior", path);
  if (!name.ok()) return name.status();
  if (*name == "Removed") return SplitBehavior::kRemoved;
  if (*name == "Isolated") return SplitBehavior::kIsolated;
  if (*name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (*name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (*name == "Contiguous") return SplitBehavior::kContiguous;
  return absl::InvalidArgumentError(
      absl::StrCat(json_util::Child(path, "behavior"), ": unknown split behavior '", *name, "'"));
}

// Metaspace's prepend scheme; files written before tokenizers 0.19 carry add_prefix_space.
absl::StatusOr<PrependScheme> ParsePrependScheme(const Json& spec, std::string_view path) {
  auto scheme = json_util::GetOptionalString(spec, "prepend_scheme", path);
  if (!scheme.ok()) return scheme.status();
  if (!scheme->has_value()) {
    auto add = json_util::GetBool(spec, "add_prefix_space", path, true);
    if (!add.ok()) return add.status();
    return *add ? PrependScheme::kAlways : PrependScheme::kNever;
  }
  const std::string& s = **scheme;
  if (s == "always") return PrependScheme::kAlways;
  if (s == "first") return PrependScheme::kFirst;
  if (s == "never") return PrependScheme::kNever;
  return absl::InvalidArgumentError(
      absl::StrCat(json_util::Child(path, "prepend_scheme"), ": unknown prepend scheme '", s, "'"));
}

}  // namespace

void SplitPiece(const Piece& piece, const std::vector<ByteRange>& matches, SplitBehavior behavior,
                bool invert, std::vector<Piece>& out) {
  const std::string& text = piece.text;
  std::vector<Segment> segments;
  segments.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const ByteRange& m : matches) {
    if (prev != m.begin) segments.push_back({{prev, m.begin}, invert});
    segments.push_back({m, !invert});
    prev = m.end;
  }
  if (prev != text.size()) segments.push_back({{prev, text.size()}, invert});
  for (const Segment& s : ApplyBehavior(std::move(segments), behavior)) {
    if (s.range.end <= s.range.begin) continue;
    out.push_back(Piece{text.substr(s.range.begin, s.range.end - s.range.begin),
                        piece.at_start && s.range.begin == 0});
  }
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& spec,
                                                                std::string_view path) {
  if (spec.is_null()) return std::unique_ptr<PreTokenizer>();
  auto type = json_util::GetString(spec, "type", path);
  if (!type.ok()) return type.status();
  const std::string& t = *type;
  if (t == "ByteLevel") {
    auto add_prefix_space = json_util::GetBool(spec, "add_prefix_space", path, true);
    if (!add_prefix_space.ok()) return add_prefix_space.status();
    auto use_regex = json_util::GetBool(spec, "use_regex", path, true);
    if (!use_regex.ok()) return use_regex.status();
    std::unique_ptr<RegexMatcher> regex;
    if (*use_regex) {
      auto compiled = RegexMatcher::Create(kGpt2Pattern);
      if (!compiled.ok()) return compiled.status();
      regex = *std::move(compiled);
    }
    return std::make_unique<ByteLevelPreTokenizer>(*add_prefix_space, std::move(regex));
  }
  if (t == "Split") {
    const Json* pattern = json_util::Find(spec, "pattern");
    const std::string pattern_path = json_util::Child(path, "pattern");
    if (pattern == nullptr) return json_util::Expected(pattern_path, "a pattern");
    auto matcher = ParsePattern(*pattern, pattern_path);
    if (!matcher.ok()) return matcher.status();
    auto behavior = ParseBehavior(spec, path);
    if (!behavior.ok()) return behavior.status();
    auto invert = json_util::GetBool(spec, "invert", path, false);
    if (!invert.ok()) return invert.status();
    return std::make_unique<SplitPreTokenizer>(*std::move(matcher), *behavior, *invert);
  }
  if (t == "Metaspace") {
    auto replacement = json_util::GetString(spec, "replacement", path);
    if (!replacement.ok()) return replacement.status();
    if (replacement->empty() || utf8::ValidSequenceLength(*replacement, 0) != replacement->size()) {
      return json_util::Expected(json_util::Child(path, "replacement"), "a single character");
    }
    auto scheme = ParsePrependScheme(spec, path);
    if (!scheme.ok()) return scheme.status();
    auto split = json_util::GetBool(spec, "split", path, true);
    if (!split.ok()) return split.status();
    return std::make_unique<MetaspacePreTokenizer>(*std::move(replacement), *scheme, *split);
  }
  if (t == "Sequence") {
    const Json* list = json_util::Find(spec, "pretokenizers");
    const std::string list_path = json_util::Child(path, "pretokenizers");
    if (list == nullptr || !list->is_array()) return json_util::Expected(list_path, "an array");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      auto step = ParsePreTokenizer((*list)[i], json_util::Index(list_path, i));
      if (!step.ok()) return step.status();
      if (*step != nullptr) steps.push_back(*std::move(step));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Sv(path), ": unsupported pre-tokenizer '", t,
                   "' (supported: ByteLevel, Split, Metaspace, Sequence)"));
}

}  // namespace headroom::router
