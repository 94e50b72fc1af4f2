// Reasoning outputs (vLLM's --reasoning-parser): a thinking model writes its reasoning between
// <think> and </think> before its answer, and the chat API returns the two apart, the reasoning as
// `reasoning_content` (and `reasoning`, vLLM's newer name) and the rest as `content`.
//   deepseek_r1  DeepSeek R1 and its distills, QwQ: the template opens <think> in the prompt, so
//                the reply is reasoning up to </think> (a <think> it writes itself is dropped);
//                a reply without </think> (cut by max_tokens) is all reasoning.
//   qwen3        Qwen3: the reply thinks only when it starts with <think> (enable_thinking false
//                leaves it out); then reasoning up to </think>, or all of it when cut before.
//                A reply that does not start with <think> is all content.
// Either way a prompt that already opened or closed the reasoning decides where the reply starts
// (ReasoningInPrompt). The tags themselves are in neither part; the text after </think> is content
// as written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace headroom::router::openai {

enum class ReasoningParser : uint8_t { kDeepSeekR1, kQwen3 };

// The tag that ends the reasoning (both parsers).
inline constexpr std::string_view kReasoningEnd = "</think>";

// The names --reasoning-parser takes.
inline constexpr char kReasoningParserNames[] = "deepseek_r1, qwen3";

// "deepseek_r1" -> kDeepSeekR1, ...; InvalidArgument naming the supported ones otherwise.
absl::StatusOr<ReasoningParser> ParseReasoningParserName(std::string_view name);

// Splits a reply, fed as it streams, into reasoning and content. A piece that may be the start of
// a tag is held back until the next one shows (or the reply ends); so the parts given out only
// grow, and fed whole or in any pieces the reply splits the same way.
// Where the rendered prompt leaves the reasoning: the template may open it (Qwen3.5 and others end
// the prompt with "<think>\n") or close it (Qwen3 with enable_thinking false ends it with
// "<think>\n\n</think>\n\n"); then the reply is reasoning, or content, from its first byte.
enum class PromptReasoning : uint8_t { kNone, kOpened, kClosed };
PromptReasoning ReasoningInPrompt(std::string_view prompt);

class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(ReasoningParser parser,
                             PromptReasoning prompt = PromptReasoning::kNone)
      : parser_(parser),
        phase_(prompt == PromptReasoning::kClosed   ? Phase::kContent
               : prompt == PromptReasoning::kOpened ? Phase::kReasoning
                                                    : Phase::kStart) {}

  // Reads `piece` (`last`: the reply ends with it) and appends to `reasoning` and `content` what
  // is now known to be each.
  void Feed(std::string_view piece, bool last, std::string* reasoning, std::string* content);

 private:
  enum class Phase : uint8_t { kStart, kReasoning, kContent };

  const ReasoningParser parser_;
  Phase phase_;
  std::string held_;  // read, not yet given out
};

}  // namespace headroom::router::openai
