// Reasoning outputs (vLLM's --reasoning-parser): a thinking model writes its reasoning between
// <think> and </think> before its answer, and the chat API returns the two apart, the reasoning as
// `reasoning_content` (and `reasoning`, vLLM's newer name) and the rest as `content`.
//   deepseek_r1  DeepSeek R1 and its distills, QwQ: the template opens <think> in the prompt, so
//                the reply is reasoning up to </think> (a <think> it writes itself is dropped);
//                a reply without </think> (cut by max_tokens) is all reasoning.
//   qwen3        Qwen3: the reply thinks only when it starts with <think> (enable_thinking false
//                leaves it out); then reasoning up to </think>, or all of it when cut before.
//                A reply that does not start with <think> is all content.
//   granite      Granite 3.2 / 3.3 with thinking on: no tags but sentences, "Here is my thought
//                process:" to open the reasoning and "Here is my response:" to end it ("Here's"
//                for either, as vLLM also accepts). The reply thinks only when it starts with
//                the first; then reasoning up to the second, or all of it when cut before. vLLM
//                answers a whole reply by a regex that finds the pair anywhere (dropping text
//                before it) and makes a reply without the second all content; its streaming, like
//                this splitter, only looks at the reply's start, and one rule for both keeps a
//                streamed and a whole reply split alike.
//   glm45        GLM-4.5 / 4.6: as qwen3, but the reply may write whitespace before <think> (its
//                template puts a line break there), which goes with the tag. Thinking is on
//                unless enable_thinking is false, whose prompt closes the reasoning. `glm47`
//                names the same splitter (vLLM's too): GLM-4.7's prompt opens <think> itself.
//   seed_oss     Seed-OSS: as deepseek_r1 with <seed:think> and </seed:think> (vLLM's
//                BaseThinkingReasoningParser): the reply is reasoning up to the end tag, a start
//                tag it writes is dropped; thinking_budget 0 closes the reasoning in the prompt.
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

enum class ReasoningParser : uint8_t { kDeepSeekR1, kQwen3, kGranite, kGlm45, kSeedOss };

// What ends `parser`'s reasoning, for structured output that starts after it (granite's first
// spelling; a reply that writes "Here's my response:" is not constrained).
std::string_view ReasoningEndOf(ReasoningParser parser);

// The names --reasoning-parser takes.
inline constexpr char kReasoningParserNames[] =
    "deepseek_r1, qwen3, granite, glm45, glm47, seed_oss";

// "deepseek_r1" -> kDeepSeekR1, ...; InvalidArgument naming the supported ones otherwise.
absl::StatusOr<ReasoningParser> ParseReasoningParserName(std::string_view name);

// Splits a reply, fed as it streams, into reasoning and content. A piece that may be the start of
// a tag is held back until the next one shows (or the reply ends); so the parts given out only
// grow, and fed whole or in any pieces the reply splits the same way.
// Where the rendered prompt leaves the reasoning: the template may open it (Qwen3.5 and others end
// the prompt with "<think>\n") or close it (Qwen3 with enable_thinking false ends it with
// "<think>\n\n</think>\n\n"); then the reply is reasoning, or content, from its first byte.
enum class PromptReasoning : uint8_t { kNone, kOpened, kClosed };
// By `parser`'s tags (<think> and </think> but for seed_oss's).
PromptReasoning ReasoningInPrompt(std::string_view prompt,
                                  ReasoningParser parser = ReasoningParser::kQwen3);

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
