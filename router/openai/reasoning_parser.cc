#include "router/openai/reasoning_parser.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router::openai {
namespace {

constexpr std::string_view kThinkStart = "<think>";
constexpr std::string_view kThinkEnd = kReasoningEnd;

}  // namespace

absl::StatusOr<ReasoningParser> ParseReasoningParserName(std::string_view name) {
  if (name == "deepseek_r1") return ReasoningParser::kDeepSeekR1;
  if (name == "qwen3") return ReasoningParser::kQwen3;
  return absl::InvalidArgumentError(absl::StrCat("unknown reasoning parser \"", Sv(name),
                                                 "\" (supported: ", kReasoningParserNames, ")"));
}

PromptReasoning ReasoningInPrompt(std::string_view prompt) {
  const size_t end = prompt.find_last_not_of(" \t\n\r");
  if (end == std::string_view::npos) return PromptReasoning::kNone;
  const std::string_view text = prompt.substr(0, end + 1);
  const auto ends_with = [&](std::string_view tag) {
    return text.size() >= tag.size() && text.substr(text.size() - tag.size()) == tag;
  };
  if (ends_with(kThinkEnd)) return PromptReasoning::kClosed;
  if (ends_with(kThinkStart)) return PromptReasoning::kOpened;
  return PromptReasoning::kNone;
}

void ReasoningSplitter::Feed(std::string_view piece, bool last, std::string* reasoning,
                             std::string* content) {
  held_.append(piece);
  if (phase_ == Phase::kStart) {
    // Does the reply open with <think>? Wait until it has as many bytes, or differs.
    const size_t n = std::min(held_.size(), kThinkStart.size());
    const bool opens = held_.compare(0, n, kThinkStart, 0, n) == 0;
    if (opens && held_.size() < kThinkStart.size() && !last) return;
    const bool thinks = opens && held_.size() >= kThinkStart.size();
    if (thinks) held_.erase(0, kThinkStart.size());
    phase_ =
        thinks || parser_ == ReasoningParser::kDeepSeekR1 ? Phase::kReasoning : Phase::kContent;
  }
  if (phase_ == Phase::kReasoning) {
    const size_t end = held_.find(kThinkEnd);
    if (end == std::string::npos) {
      // All reasoning so far, but for a tail that may begin </think>.
      const size_t keep = last ? 0 : PartialAtEnd(held_, kThinkEnd);
      reasoning->append(held_, 0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return;
    }
    reasoning->append(held_, 0, end);
    held_.erase(0, end + kThinkEnd.size());
    phase_ = Phase::kContent;
  }
  content->append(held_);
  held_.clear();
}

}  // namespace headroom::router::openai
