// Reasoning outputs (vLLM's --reasoning-parser): a reply is split into reasoning and content the
// same way fed whole or in pieces of any size, tags split across pieces included; and the chat
// response carries them as vLLM does (reasoning_content / reasoning, content), whole and
// streamed, with tool calls read from the content only.
#include "router/openai/reasoning_parser.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "tests/router/openai/template_fixture.h"

namespace headroom::router::openai {
namespace {

using Json = nlohmann::ordered_json;

struct Split {
  std::string reasoning;
  std::string content;
};

Split Feed(ReasoningParser parser, const std::string& reply, size_t step,
           PromptReasoning prompt = PromptReasoning::kNone) {
  ReasoningSplitter splitter(parser, prompt);
  Split out;
  for (size_t at = 0; at < reply.size(); at += step) {
    const size_t before_reasoning = out.reasoning.size();
    const size_t before_content = out.content.size();
    splitter.Feed(std::string_view(reply).substr(at, step), at + step >= reply.size(),
                  &out.reasoning, &out.content);
    EXPECT_GE(out.reasoning.size(), before_reasoning);
    EXPECT_GE(out.content.size(), before_content);
  }
  if (reply.empty()) splitter.Feed("", true, &out.reasoning, &out.content);
  return out;
}

struct Case {
  ReasoningParser parser;
  std::string reply;
  std::string reasoning;
  std::string content;
};

TEST(ReasoningParserTest, SplitsAtTheTagsWhateverThePieces) {
  using P = ReasoningParser;
  const std::vector<Case> cases = {
      // Qwen3 thinks only when the reply opens with <think>.
      {P::kQwen3, "<think>\nSum 2 and 2.\n</think>\n\n4", "\nSum 2 and 2.\n", "\n\n4"},
      {P::kQwen3, "4, no thinking", "", "4, no thinking"},
      {P::kQwen3, "<think>cut off by max_tok", "cut off by max_tok", ""},
      {P::kQwen3, "<thing>not a tag", "", "<thing>not a tag"},
      {P::kQwen3, "<thi", "", "<thi"},
      {P::kQwen3, "a</think>b", "", "a</think>b"},
      {P::kQwen3, "", "", ""},
      // DeepSeek R1's template opens <think> in the prompt: the reply thinks until </think>.
      {P::kDeepSeekR1, "Sum 2 and 2.</think>4", "Sum 2 and 2.", "4"},
      {P::kDeepSeekR1, "<think>Sum.</think>\n4", "Sum.", "\n4"},
      {P::kDeepSeekR1, "no end tag, cut off", "no end tag, cut off", ""},
      {P::kDeepSeekR1, "a </th b</think>c </think>", "a </th b", "c </think>"},
      // GLM-4.5 writes a line break before <think>; otherwise as Qwen3.
      {P::kGlm45, "\n<think>Sum 2 and 2.</think>\n4", "Sum 2 and 2.", "\n4"},
      {P::kGlm45, "<think>no line break</think>4", "no line break", "4"},
      {P::kGlm45, " \n\t<think>cut off", "cut off", ""},
      {P::kGlm45, "\n4, no thinking", "", "\n4, no thinking"},
      {P::kGlm45, "\n\n", "", "\n\n"},
      {P::kGlm45, "\n<thi", "", "\n<thi"},
      {P::kGlm45, "x<think>a</think>b", "", "x<think>a</think>b"},
      // Seed-OSS: deepseek_r1's rule with its own tags.
      {P::kSeedOss, "<seed:think>Sum.</seed:think>\n4", "Sum.", "\n4"},
      {P::kSeedOss, "Sum.</seed:think>4", "Sum.", "4"},
      {P::kSeedOss, "<seed:think>cut off", "cut off", ""},
      {P::kSeedOss, "a </think> b", "a </think> b", ""},
      {P::kSeedOss, "a </seed:thi b</seed:think>", "a </seed:thi b", ""},
  };
  for (const Case& c : cases) {
    for (size_t step = 1; step <= 9; ++step) {
      const Split split = Feed(c.parser, c.reply, step);
      EXPECT_EQ(split.reasoning, c.reasoning) << c.reply << " in pieces of " << step;
      EXPECT_EQ(split.content, c.content) << c.reply << " in pieces of " << step;
    }
  }
  EXPECT_EQ(ParseReasoningParserName("qwen3").value(), ReasoningParser::kQwen3);
  EXPECT_EQ(ParseReasoningParserName("kimi_k2").status().message(),
            "unknown reasoning parser \"kimi_k2\" (supported: deepseek_r1, qwen3, granite, glm45, "
            "glm47, seed_oss)");
}

// Granite 3.2 / 3.3: the reasoning opens with "Here is my thought process:" and ends with "Here
// is my response:" ("Here's" for either). Expected splits are vLLM's regex
// `(?:Here's|Here is) my thought process:(.*?)(?:Here's|Here is) my response:(.*)` on replies that
// start with the first sentence and hold the second; the other rows are the cases where this
// splitter (like vLLM's streaming) differs from that regex on a whole reply.
TEST(ReasoningParserTest, GraniteSplitsAtItsSentences) {
  using P = ReasoningParser;
  const Case cases[] = {
      {P::kGranite, "Here is my thought process: 2 + 2 is 4. Here is my response: 4",
       " 2 + 2 is 4. ", " 4"},
      {P::kGranite, "Here's my thought process:\nsum it\nHere's my response:\nIt is 4.",
       "\nsum it\n", "\nIt is 4."},
      {P::kGranite, "Here is my thought process:a Here's my response:b Here is my response:c", "a ",
       "b Here is my response:c"},
      {P::kGranite,
       "Here is my thought process: Here is my thought process: x Here is my response:",
       " Here is my thought process: x ", ""},
      // Differences from the whole-reply regex, on purpose (see reasoning_parser.h): a reply cut
      // before the response is reasoning (the regex: all content), and text before the first
      // sentence makes the reply content (the regex drops that text).
      {P::kGranite, "Here is my thought process: still thinking", " still thinking", ""},
      {P::kGranite, "Here is my thought process: Here is my response", " Here is my response", ""},
      {P::kGranite, "Sure. Here is my thought process: x Here is my response: y", "",
       "Sure. Here is my thought process: x Here is my response: y"},
      {P::kGranite, "Here is my answer: 4", "", "Here is my answer: 4"},
      {P::kGranite, "Here", "", "Here"},
      {P::kGranite, "", "", ""},
  };
  for (const Case& c : cases) {
    for (size_t step = 1; step <= 9; ++step) {
      const Split split = Feed(c.parser, c.reply, step);
      EXPECT_EQ(split.reasoning, c.reasoning) << c.reply << " in pieces of " << step;
      EXPECT_EQ(split.content, c.content) << c.reply << " in pieces of " << step;
    }
  }
  EXPECT_EQ(ParseReasoningParserName("granite").value(), ReasoningParser::kGranite);
  EXPECT_EQ(ReasoningEndOf(ReasoningParser::kGranite), "Here is my response:");
  EXPECT_EQ(ReasoningEndOf(ReasoningParser::kQwen3), "</think>");
}

// A template that opened the reasoning in the prompt (Qwen3.5, R1) makes the reply reasoning from
// its first byte; one that closed it (Qwen3 with enable_thinking false) makes it content.
TEST(ReasoningParserTest, ThePromptCanOpenOrCloseTheReasoning) {
  EXPECT_EQ(ReasoningInPrompt("<|im_start|>assistant\n<think>\n"), PromptReasoning::kOpened);
  EXPECT_EQ(ReasoningInPrompt("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
            PromptReasoning::kClosed);
  EXPECT_EQ(ReasoningInPrompt("<|im_start|>assistant\n"), PromptReasoning::kNone);
  EXPECT_EQ(ReasoningInPrompt("<think>x</think> earlier turn<|im_start|>assistant\n"),
            PromptReasoning::kNone);
  EXPECT_EQ(ReasoningInPrompt(""), PromptReasoning::kNone);
  for (const ReasoningParser parser : {ReasoningParser::kQwen3, ReasoningParser::kDeepSeekR1}) {
    for (size_t step = 1; step <= 5; ++step) {
      ReasoningSplitter opened(parser, PromptReasoning::kOpened);
      ReasoningSplitter closed(parser, PromptReasoning::kClosed);
      Split a;
      Split b;
      const std::string reply = "Two and two.</think>Four.";
      for (size_t at = 0; at < reply.size(); at += step) {
        const std::string_view piece = std::string_view(reply).substr(at, step);
        opened.Feed(piece, at + step >= reply.size(), &a.reasoning, &a.content);
        closed.Feed(piece, at + step >= reply.size(), &b.reasoning, &b.content);
      }
      EXPECT_EQ(a.reasoning, "Two and two.");
      EXPECT_EQ(a.content, "Four.");
      EXPECT_EQ(b.reasoning, "");
      EXPECT_EQ(b.content, reply) << "a closed reasoning does not open again";
    }
  }
}

// GLM-4.5's chat template (the fixture transformers rendered, tests/router/jinja/fixtures) writes
// an assistant turn that reasoned as "\n<think>" + reasoning + "</think>\n" + content after
// <|assistant|>; GLM-4.7's writes "<think>" + reasoning + "</think>" + content, and its prompt
// ends by opening <think>, so the reply is the turn without it. Split by glm45, such a turn gives
// back the message's reasoning and content. With enable_thinking false both prompts close the
// reasoning; with thinking on GLM-4.5's leaves it to the reply and GLM-4.7's opens it.
TEST(ReasoningParserTest, Glm45SplitsTheTurnsGlmTemplatesWrite) {
  int checked = 0;
  for (const char* template_name : {"glm4.5", "glm4.7"}) {
    const bool glm47 = std::string_view(template_name) == "glm4.7";
    const PromptReasoning thinking = glm47 ? PromptReasoning::kOpened : PromptReasoning::kNone;
    for (const Json& c : TemplateCases(template_name)) {
      const std::string name = std::string(template_name) + " / " + c["name"].get<std::string>();
      const std::string text = c.value("expected", "");
      if (c["name"] == "enable_thinking_false") {
        EXPECT_EQ(ReasoningInPrompt(text), PromptReasoning::kClosed) << name;
        ++checked;
      }
      if (c["name"] == "enable_thinking_true" || c["name"] == "single_user") {
        EXPECT_EQ(ReasoningInPrompt(text), thinking) << name;
        ++checked;
      }
      if (c["name"] != "reasoning_content_field" && c["name"] != "think_after_last_query_is_kept") {
        continue;
      }
      const Json& message = c["messages"].back();
      std::string reply = text.substr(text.rfind("<|assistant|>") + 13);
      if (glm47) reply.erase(0, std::string_view("<think>").size());
      // The template strips the reasoning and the answer; GLM-4.5 writes a line break before the
      // answer.
      const std::string content = message.contains("reasoning_content")
                                      ? message["content"].get<std::string>()
                                      : std::string("Paris.");
      const std::string reasoning =
          message.value("reasoning_content", "The user asks about France.");
      for (size_t step = 1; step <= 9; step += 4) {
        const Split split = Feed(ReasoningParser::kGlm45, reply, step, thinking);
        EXPECT_EQ(split.reasoning, reasoning) << name;
        EXPECT_EQ(split.content, (glm47 ? "" : "\n") + content) << name;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10);
  EXPECT_EQ(ParseReasoningParserName("glm45").value(), ReasoningParser::kGlm45);
  EXPECT_EQ(ParseReasoningParserName("glm47").value(), ReasoningParser::kGlm45);
}

// Seed-OSS's template closes the reasoning in the prompt for thinking_budget 0 (by its own tags,
// which <think>'s rule does not see), leaves it to the reply otherwise; the turn it writes for a
// message that reasoned splits back into the message's reasoning (trimmed, as the template
// trims it) and its content.
TEST(ReasoningParserTest, SeedOssSplitsTheTurnsItsTemplateWrites) {
  int checked = 0;
  for (const Json& c : TemplateCases("seed-oss")) {
    const std::string name = c["name"].get<std::string>();
    const std::string text = c.value("expected", "");
    if (name == "thinking_budget_0") {
      EXPECT_EQ(ReasoningInPrompt(text, ReasoningParser::kSeedOss), PromptReasoning::kClosed);
      EXPECT_EQ(ReasoningInPrompt(text), PromptReasoning::kNone) << "not <think>'s tags";
      ++checked;
    }
    if (name == "single_user" || name == "thinking_budget_512") {
      EXPECT_EQ(ReasoningInPrompt(text, ReasoningParser::kSeedOss), PromptReasoning::kNone) << name;
      ++checked;
    }
    if (name != "reasoning_content_field") continue;
    const std::string reply = text.substr(text.rfind("<seed:bos>assistant\n") + 20);
    for (size_t step = 1; step <= 9; step += 4) {
      const Split split = Feed(ReasoningParser::kSeedOss, reply, step);
      EXPECT_EQ(split.reasoning, "Capital of France.") << reply;
      EXPECT_EQ(split.content, "\nParis.<seed:eos>") << reply;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4);
  EXPECT_EQ(ReasoningEndOf(ReasoningParser::kSeedOss), "</seed:think>");
  EXPECT_EQ(ParseReasoningParserName("seed_oss").value(), ReasoningParser::kSeedOss);
}

v1::GenerateResponse Piece(const std::string& text, bool last) {
  v1::GenerateResponse m;
  m.set_text(text);
  if (last) {
    m.set_finish_reason(v1::FINISH_REASON_STOP);
    m.mutable_usage()->set_prompt_tokens(3);
    m.mutable_usage()->set_completion_tokens(9);
  }
  return m;
}

ParsedRequest Chat(const std::string& extra) {
  absl::StatusOr<ParsedRequest> r =
      ParseChatRequest(R"({"messages": [{"role": "user", "content": "2+2?"}])" + extra + "}");
  EXPECT_TRUE(r.ok()) << r.status();
  ParsedRequest out = r.ok() ? *std::move(r) : ParsedRequest{};
  out.reasoning_parser = ReasoningParser::kQwen3;  // what the HTTP front sets
  return out;
}

// The reply whole, and streamed in pieces of `step` bytes: the streamed deltas' reasoning and
// content, joined, are the whole response's; reasoning comes before content.
void ExpectStreamMatchesWhole(const ParsedRequest& request, const std::string& reply) {
  ResponseBuilder whole(request, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  whole.Accumulate(0, Piece(reply, true));
  const Json message = Json::parse(whole.Body())["choices"][0]["message"];
  EXPECT_EQ(message["reasoning"], message["reasoning_content"]);
  for (size_t step = 1; step <= 7; step += 3) {
    ParsedRequest streamed = request;
    streamed.stream = true;
    ResponseBuilder stream(streamed, "chatcmpl-00000000000000aa", 1, "m", nullptr);
    std::string sse;
    for (size_t at = 0; at < reply.size(); at += step) {
      sse += stream.StreamEvents(0, Piece(reply.substr(at, step), at + step >= reply.size()));
    }
    std::string reasoning;
    std::string content;
    for (size_t pos = 0; (pos = sse.find("data: {", pos)) != std::string::npos; ++pos) {
      const Json delta =
          Json::parse(sse.substr(pos + 6, sse.find("\n\n", pos) - pos - 6))["choices"][0]["delta"];
      if (delta.contains("reasoning_content")) {
        EXPECT_EQ(delta["reasoning"], delta["reasoning_content"]);
        EXPECT_EQ(content, "") << "reasoning after content: " << sse;
        reasoning += delta["reasoning_content"].get<std::string>();
      }
      if (delta.contains("content") && delta["content"].is_string()) {
        content += delta["content"].get<std::string>();
      }
    }
    EXPECT_EQ(reasoning, message["reasoning_content"].is_null()
                             ? ""
                             : message["reasoning_content"].get<std::string>())
        << sse;
    EXPECT_EQ(content, message["content"].is_null() ? "" : message["content"].get<std::string>())
        << sse;
  }
}

TEST(ReasoningParserTest, ChatRepliesCarryReasoningApartFromContent) {
  const ParsedRequest r = Chat("");
  ResponseBuilder whole(r, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  whole.Accumulate(0, Piece("<think>\nTwo and two.\n", false));
  whole.Accumulate(0, Piece("</think>\n\nFour.", true));
  const Json message = Json::parse(whole.Body())["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "\nTwo and two.\n");
  EXPECT_EQ(message["reasoning"], "\nTwo and two.\n");
  EXPECT_EQ(message["content"], "\n\nFour.");
  ExpectStreamMatchesWhole(r, "<think>\nTwo and two.\n</think>\n\nFour.");

  // No thinking (enable_thinking false): all content, reasoning null.
  ResponseBuilder plain(r, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  plain.Accumulate(0, Piece("Four.", true));
  const Json answer = Json::parse(plain.Body())["choices"][0]["message"];
  EXPECT_TRUE(answer["reasoning_content"].is_null());
  EXPECT_EQ(answer["content"], "Four.");
  ExpectStreamMatchesWhole(r, "Four.");

  // Cut while thinking: reasoning, and null content.
  ResponseBuilder cut(r, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  cut.Accumulate(0, Piece("<think>Two and", true));
  const Json thinking = Json::parse(cut.Body())["choices"][0]["message"];
  EXPECT_EQ(thinking["reasoning_content"], "Two and");
  EXPECT_TRUE(thinking["content"].is_null());

  // Without a parser the reply is content as written, and there is no reasoning field.
  ParsedRequest unsplit = r;
  unsplit.reasoning_parser.reset();
  ResponseBuilder raw(unsplit, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  raw.Accumulate(0, Piece("<think>x</think>y", true));
  const Json as_written = Json::parse(raw.Body())["choices"][0]["message"];
  EXPECT_EQ(as_written["content"], "<think>x</think>y");
  EXPECT_FALSE(as_written.contains("reasoning_content"));
}

// Tool calls are read from the content only: a <tool_call> the model thinks about is reasoning.
TEST(ReasoningParserTest, ToolCallsAreReadFromTheContent) {
  ParsedRequest r = Chat(R"(, "tools": [{"type": "function", "function": {"name": "get_time"}}])");
  r.tools.choice.parser = ToolCallParser::kHermes;
  const std::string reply =
      "<think>I could write <tool_call> here.</think>\n<tool_call>\n{\"name\": \"get_time\", "
      "\"arguments\": {}}\n</tool_call>";
  ResponseBuilder whole(r, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  whole.Accumulate(0, Piece(reply, true));
  const Json choice = Json::parse(whole.Body())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["reasoning_content"], "I could write <tool_call> here.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << choice.dump();
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_time");
  ExpectStreamMatchesWhole(r, reply);
}

}  // namespace
}  // namespace headroom::router::openai
