#include "router/openai/reasoning_parser.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router::openai {
namespace {

// The tags that open and close a parser's reasoning (granite's are its sentences, below).
struct ThinkTags {
  std::string_view start;
  std::string_view end;
};
ThinkTags TagsOf(ReasoningParser parser) {
  if (parser == ReasoningParser::kSeedOss) return {"<seed:think>", "</seed:think>"};
  return {"<think>", "</think>"};
}

// Granite's sentences, each in both spellings vLLM matches.
constexpr std::string_view kGraniteThinkStarts[] = {"Here is my thought process:",
                                                    "Here's my thought process:"};
constexpr std::string_view kGraniteResponseStarts[] = {"Here is my response:",
                                                       "Here's my response:"};

// Where the reasoning starts in `held` (after the parser's opening), kNone when the reply does
// not open with it, or kUnknown when `held` is still a beginning of it.
constexpr size_t kNone = std::string::npos;
constexpr size_t kUnknown = std::string::npos - 1;
size_t ReasoningStart(ReasoningParser parser, std::string_view held, bool last) {
  // GLM writes a line break before <think>: whitespace there goes with the tag.
  const size_t lead = parser == ReasoningParser::kGlm45
                          ? std::min(held.find_first_not_of(" \t\r\n"), held.size())
                          : 0;
  const std::string_view reply = held.substr(lead);
  bool partial = false;
  const auto try_open = [&](std::string_view open) -> size_t {
    if (reply.starts_with(open)) return lead + open.size();
    if (open.starts_with(reply)) partial = true;
    return kNone;
  };
  if (parser == ReasoningParser::kGranite) {
    for (const std::string_view open : kGraniteThinkStarts) {
      if (const size_t at = try_open(open); at != kNone) return at;
    }
  } else if (const size_t at = try_open(TagsOf(parser).start); at != kNone) {
    return at;
  }
  return partial && !last ? kUnknown : kNone;
}

// The reasoning's end in `held`: {where it starts, its length}, or {npos, bytes at the end that
// may begin it}.
std::pair<size_t, size_t> ReasoningEndIn(ReasoningParser parser, std::string_view held) {
  if (parser != ReasoningParser::kGranite) {
    const std::string_view tag = TagsOf(parser).end;
    const size_t end = held.find(tag);
    if (end != std::string_view::npos) return {end, tag.size()};
    return {std::string_view::npos, PartialAtEnd(held, tag)};
  }
  std::pair<size_t, size_t> first = {std::string_view::npos, 0};
  size_t partial = 0;
  for (const std::string_view end : kGraniteResponseStarts) {
    const size_t at = held.find(end);
    if (at < first.first) first = {at, end.size()};
    partial = std::max(partial, PartialAtEnd(held, end));
  }
  return first.first != std::string_view::npos ? first : std::pair{std::string_view::npos, partial};
}

}  // namespace

std::string_view ReasoningEndOf(ReasoningParser parser) {
  return parser == ReasoningParser::kGranite ? kGraniteResponseStarts[0] : TagsOf(parser).end;
}

absl::StatusOr<ReasoningParser> ParseReasoningParserName(std::string_view name) {
  if (name == "deepseek_r1") return ReasoningParser::kDeepSeekR1;
  if (name == "qwen3") return ReasoningParser::kQwen3;
  if (name == "granite") return ReasoningParser::kGranite;
  if (name == "glm45" || name == "glm47") return ReasoningParser::kGlm45;
  if (name == "seed_oss") return ReasoningParser::kSeedOss;
  return absl::InvalidArgumentError(absl::StrCat("unknown reasoning parser \"", Sv(name),
                                                 "\" (supported: ", kReasoningParserNames, ")"));
}

PromptReasoning ReasoningInPrompt(std::string_view prompt, ReasoningParser parser) {
  const size_t end = prompt.find_last_not_of(" \t\n\r");
  if (end == std::string_view::npos) return PromptReasoning::kNone;
  const std::string_view text = prompt.substr(0, end + 1);
  const auto ends_with = [&](std::string_view tag) {
    return text.size() >= tag.size() && text.substr(text.size() - tag.size()) == tag;
  };
  if (ends_with(TagsOf(parser).end)) return PromptReasoning::kClosed;
  if (ends_with(TagsOf(parser).start)) return PromptReasoning::kOpened;
  return PromptReasoning::kNone;
}

void ReasoningSplitter::Feed(std::string_view piece, bool last, std::string* reasoning,
                             std::string* content) {
  held_.append(piece);
  if (phase_ == Phase::kStart) {
    // Does the reply open the reasoning? Wait while it may still, until it does or differs.
    const size_t start = ReasoningStart(parser_, held_, last);
    if (start == kUnknown) return;
    const bool thinks = start != kNone;
    if (thinks) held_.erase(0, start);
    // deepseek_r1 and seed_oss think from the reply's start whether or not it writes the tag.
    const bool always =
        parser_ == ReasoningParser::kDeepSeekR1 || parser_ == ReasoningParser::kSeedOss;
    phase_ = thinks || always ? Phase::kReasoning : Phase::kContent;
  }
  if (phase_ == Phase::kReasoning) {
    const auto [end, length] = ReasoningEndIn(parser_, held_);
    if (end == std::string::npos) {
      // All reasoning so far, but for a tail that may begin the end.
      const size_t keep = last ? 0 : length;
      reasoning->append(held_, 0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return;
    }
    reasoning->append(held_, 0, end);
    held_.erase(0, end + length);
    phase_ = Phase::kContent;
  }
  content->append(held_);
  held_.clear();
}

}  // namespace headroom::router::openai
