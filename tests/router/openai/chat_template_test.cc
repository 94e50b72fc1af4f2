// ChatTemplate: the built-in and loaded templates render what transformers' apply_chat_template
// renders (fixtures/chat_templates.json, scripts/gen_chat_template_fixtures.py, and the real
// models' templates in tests/router/jinja/fixtures), templates are found where transformers
// saves them, and --chat-template takes what vLLM's does.
#include "router/openai/chat_template.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/openai/openai_protocol.h"
#include "router/openai/responses_api.h"
#include "tests/router/openai/template_fixture.h"

namespace headroom::router::openai {
namespace {

std::vector<ChatMessage> Messages(const nlohmann::ordered_json& list) {
  std::vector<ChatMessage> messages;
  for (const auto& m : list) {
    messages.push_back({m["role"].get<std::string>(), {m["content"].get<std::string>()}});
  }
  return messages;
}

TEST(ChatTemplateTest, BuiltinsRenderLikeTransformers) {
  const nlohmann::ordered_json fixture =
      LoadFixture("tests/router/openai/fixtures/chat_templates.json");
  ASSERT_TRUE(fixture.contains("templates"));
  int checked = 0;
  for (const auto& t : fixture["templates"]) {
    const std::string name = t["template_name"].get<std::string>();
    absl::StatusOr<ChatFormat> format = ParseChatFormatName(name);
    ASSERT_TRUE(format.ok()) << format.status();
    const ChatTemplateTokens tokens{.bos_token = t["bos_token"].get<std::string>()};
    // The built-in template, and the stored real text loaded as a model's template.
    const ChatTemplate builtin = ChatTemplate::Builtin(*format, tokens);
    absl::StatusOr<ChatTemplate> loaded =
        ChatTemplate::Create(t["template"].get<std::string>(), tokens);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    for (size_t i = 0; i < t["cases"].size(); ++i) {
      const auto& c = t["cases"][i];
      const bool add_generation_prompt = c["add_generation_prompt"].get<bool>();
      for (const ChatTemplate* tmpl : std::vector<const ChatTemplate*>{&builtin, &loaded.value()}) {
        absl::StatusOr<std::string> got =
            tmpl->Render(Messages(c["messages"]), add_generation_prompt);
        ASSERT_TRUE(got.ok()) << name << " case " << i << ": " << got.status();
        EXPECT_EQ(*got, c["expected"].get<std::string>()) << name << " case " << i;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 16);
}

// The jinja fixtures' generators froze strftime_now's clock at 2024-12-25 09:30:00.
jinja::RenderOptions FrozenClock() {
  jinja::RenderOptions frozen;
  frozen.now = std::tm{.tm_sec = 0,
                       .tm_min = 30,
                       .tm_hour = 9,
                       .tm_mday = 25,
                       .tm_mon = 11,
                       .tm_year = 124,
                       .tm_wday = 3,
                       .tm_yday = 359,
                       .tm_isdst = 0,
                       .tm_gmtoff = 0,
                       .tm_zone = nullptr};
  return frozen;
}

TEST(ChatTemplateTest, RealTemplatesRenderLikeTransformers) {
  // The ChatTemplate path (special tokens, messages with their tool_calls / tool_call_id / name,
  // tools, add_generation_prompt, kwargs) over the real models' templates and conversations.
  const nlohmann::ordered_json fixture =
      LoadFixture("tests/router/jinja/fixtures/jinja_chat_templates.json");
  ASSERT_TRUE(fixture.contains("templates"));
  int checked = 0;
  int parts = 0;
  for (const auto& t : fixture["templates"]) {
    absl::StatusOr<ChatTemplate> tmpl = FixtureTemplate(t);
    ASSERT_TRUE(tmpl.ok()) << t["name"] << ": " << tmpl.status();
    for (const auto& c : t["cases"]) {
      // Content given as a list of parts reaches templates as one string here (the text parts
      // joined, as vLLM's "string" content format); the interpreter's own test renders the list.
      if (std::any_of(c["messages"].begin(), c["messages"].end(),
                      [](const auto& m) { return !m["content"].is_string(); })) {
        ++parts;
        continue;
      }
      std::vector<ChatMessage> messages;
      for (const auto& m : c["messages"]) {
        ChatMessage message{.role = m["role"].get<std::string>(),
                            .parts = {m["content"].get<std::string>()}};
        for (const auto& [key, value] : m.items()) {
          if (key != "role" && key != "content") message.fields[key] = value;
        }
        messages.push_back(std::move(message));
      }
      absl::StatusOr<std::string> got =
          tmpl->Render(messages, c["add_generation_prompt"].get<bool>(),
                       c.value("tools", nlohmann::ordered_json()),
                       c.value("extra", nlohmann::ordered_json::object()), FrozenClock());
      const std::string where = t["name"].get<std::string>() + " / " + c["name"].get<std::string>();
      if (c.contains("expected")) {
        ASSERT_TRUE(got.ok()) << where << ": " << got.status();
        EXPECT_EQ(*got, c["expected"].get<std::string>()) << where;
      } else {
        // A template's own refusal is an InvalidArgument the client sees (HTTP 400). The fixture
        // records "ExceptionClass: message".
        ASSERT_FALSE(got.ok()) << where;
        EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
        std::string want = c.value("error_message", "");
        want = want.substr(want.find(": ") == std::string::npos ? 0 : want.find(": ") + 2);
        EXPECT_NE(got.status().message().find(want), std::string::npos) << got.status();
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 353);
  EXPECT_EQ(parts, 3);
}

// vLLM's continue_final_message against transformers 4.57's apply_chat_template(
// continue_final_message=True) (fixtures/continue_final_message.json,
// scripts/gen_continue_final_message_fixtures.py): the built-in and the real models' templates, a
// final assistant or user message, trailing whitespace a template keeps or trims, text that also
// appears earlier, an empty final message; a template's own refusal and a template that drops
// the final message are errors.
TEST(ChatTemplateTest, ContinueFinalMessageRendersLikeTransformers) {
  const nlohmann::ordered_json fixture =
      LoadFixture("tests/router/openai/fixtures/continue_final_message.json");
  ASSERT_TRUE(fixture.contains("templates"));
  int checked = 0;
  int errors = 0;
  for (const auto& t : fixture["templates"]) {
    absl::StatusOr<ChatTemplate> tmpl = FixtureTemplate(t);
    ASSERT_TRUE(tmpl.ok()) << t["name"] << ": " << tmpl.status();
    for (const auto& c : t["cases"]) {
      const std::string where = t["name"].get<std::string>() + " / " + c["name"].get<std::string>();
      absl::StatusOr<std::string> got = tmpl->RenderContinuingFinalMessage(
          Messages(c["messages"]), nullptr, nullptr, FrozenClock());
      if (c.contains("expected")) {
        ASSERT_TRUE(got.ok()) << where << ": " << got.status();
        EXPECT_EQ(*got, c["expected"].get<std::string>()) << where;
      } else {
        EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << where;
        ++errors;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 103);
  EXPECT_EQ(errors, 2);
  EXPECT_FALSE(ChatTemplate::Builtin(ChatFormat::kChatML, {}).RenderContinuingFinalMessage({}).ok())
      << "no messages to continue";
}

// One case of the real templates' fixture (jinja_chat_templates.json) with its template.
struct RealCase {
  nlohmann::ordered_json reference;  // {name, messages, tools, add_generation_prompt, expected}
  absl::StatusOr<ChatTemplate> tmpl = absl::NotFoundError("no such template");
};

RealCase LoadRealCase(const std::string& template_name, const std::string& case_name) {
  const nlohmann::ordered_json fixture =
      LoadFixture("tests/router/jinja/fixtures/jinja_chat_templates.json");
  RealCase out;
  for (const auto& t : fixture["templates"]) {
    if (t["name"] != template_name) continue;
    out.tmpl = FixtureTemplate(t);
    for (const auto& c : t["cases"]) {
      if (c["name"] == case_name) out.reference = c;
    }
  }
  EXPECT_TRUE(out.reference.contains("expected")) << template_name << " / " << case_name;
  return out;
}

// An assistant turn's reasoning sent back over HTTP (interleaved thinking) reaches the template
// whichever name the client uses: vLLM's `reasoning` or the older `reasoning_content` that
// Qwen3's template reads. The reference is transformers' render of Qwen3's real template for a
// message carrying reasoning_content (case "reasoning_content_field").
TEST(ChatTemplateTest, ReasoningSentBackReachesTheTemplateUnderEitherName) {
  const RealCase qwen3 = LoadRealCase("qwen3", "reasoning_content_field");
  ASSERT_TRUE(qwen3.tmpl.ok()) << qwen3.tmpl.status();
  const nlohmann::ordered_json& reference = qwen3.reference;
  const ChatTemplate* tmpl = &*qwen3.tmpl;
  ASSERT_EQ(reference["messages"].back()["reasoning_content"], "Capital of France.");
  const std::string& want = reference["expected"].get_ref<const std::string&>();
  ASSERT_NE(want.find("Capital of France."), std::string::npos) << "the reference renders it";

  for (const char* field : {"reasoning", "reasoning_content"}) {
    SCOPED_TRACE(field);
    nlohmann::ordered_json body = {{"messages", reference["messages"]}};
    nlohmann::ordered_json& reply = body["messages"].back();
    reply.erase("reasoning_content");
    reply[field] = "Capital of France.";
    absl::StatusOr<ParsedRequest> parsed = ParseChatObject(body);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<std::string> got =
        tmpl->Render(parsed->messages, reference["add_generation_prompt"].get<bool>(), nullptr,
                     nullptr, FrozenClock());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
  }

  // Reasoning that is not text is refused by name; a user's is not the model's and is ignored.
  absl::StatusOr<ParsedRequest> bad = ParseChatRequest(
      R"({"messages": [{"role": "user", "content": "a"},
                       {"role": "assistant", "content": "b", "reasoning": ["x"]}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "messages[1].reasoning must be a string, got array");
  absl::StatusOr<ParsedRequest> user =
      ParseChatRequest(R"({"messages": [{"role": "user", "content": "a", "reasoning": "r"}]})");
  ASSERT_TRUE(user.ok()) << user.status();
  EXPECT_FALSE(user->messages[0].fields.contains("reasoning"));
}

// The same turn sent back to the Responses API as output items (what a client appends to its
// input after a tool call): reasoning, function_call, function_call_output, reasoning, message.
// The items of one turn become one assistant message, reasoning included, as vLLM merges them;
// the prompt equals transformers' render of Qwen3's real template for that chat
// (case "reasoning_across_tool_calls").
TEST(ChatTemplateTest, ResponsesReasoningItemsReachTheTemplateWithTheirTurn) {
  const RealCase qwen3 = LoadRealCase("qwen3", "reasoning_across_tool_calls");
  ASSERT_TRUE(qwen3.tmpl.ok()) << qwen3.tmpl.status();
  const nlohmann::ordered_json& chat = qwen3.reference["messages"];
  ASSERT_EQ(chat.size(), 4u);
  const std::string& want = qwen3.reference["expected"].get_ref<const std::string&>();
  ASSERT_NE(want.find("I need the weather."), std::string::npos) << "the reference renders it";
  ASSERT_NE(want.find("It is sunny."), std::string::npos);

  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  for (const auto& tool : qwen3.reference["tools"]) {
    nlohmann::ordered_json flat = {{"type", "function"}};
    flat.update(tool["function"]);
    tools.push_back(std::move(flat));
  }
  const nlohmann::ordered_json& call = chat[1]["tool_calls"][0];
  // The first reasoning as content, the second as a summary (what OpenAI's own items carry).
  const nlohmann::ordered_json input = {
      {{"role", "user"}, {"content", chat[0]["content"]}},
      {{"type", "reasoning"},
       {"id", "rs_1"},
       {"summary", nlohmann::ordered_json::array()},
       {"content", {{{"type", "reasoning_text"}, {"text", chat[1]["reasoning_content"]}}}}},
      {{"type", "function_call"},
       {"call_id", call["id"]},
       {"name", call["function"]["name"]},
       {"arguments", call["function"]["arguments"]}},
      {{"type", "function_call_output"},
       {"call_id", chat[2]["tool_call_id"]},
       {"output", chat[2]["content"]}},
      {{"type", "reasoning"},
       {"id", "rs_2"},
       {"summary", {{{"type", "summary_text"}, {"text", chat[3]["reasoning_content"]}}}}},
      {{"type", "message"},
       {"role", "assistant"},
       {"content", {{{"type", "output_text"}, {"text", chat[3]["content"]}}}}}};
  absl::StatusOr<ResponsesRequest> responses = ParseResponsesRequest(
      nlohmann::ordered_json{{"model", "m"}, {"input", input}, {"tools", tools}}.dump());
  ASSERT_TRUE(responses.ok()) << responses.status();
  ASSERT_EQ(responses->chat["messages"].size(), 4u) << responses->chat["messages"].dump();
  absl::StatusOr<ParsedRequest> parsed = ParseChatObject(responses->chat);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<std::string> got =
      qwen3.tmpl->Render(parsed->messages, qwen3.reference["add_generation_prompt"].get<bool>(),
                         parsed->tools.tools, nullptr, FrozenClock());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, want);
}

TEST(ChatTemplateTest, EndOfTurnIsTheTemplatesTurnToken) {
  auto eot = [](const std::string& source) {
    return ChatTemplate::Create(source, {})->end_of_turn();
  };
  EXPECT_EQ(ChatTemplate::Builtin(ChatFormat::kChatML, {}).end_of_turn(), "<|im_end|>");
  EXPECT_EQ(ChatTemplate::Builtin(ChatFormat::kLlama3, {}).end_of_turn(), "<|eot_id|>");
  EXPECT_EQ(eot("{{ '<start_of_turn>user\n' + m + '<end_of_turn>\n' }}"), "<end_of_turn>");
  EXPECT_EQ(eot("{{ '<|user|>\n' + m + '<|end|>\n' }}"), "<|end|>");
  EXPECT_EQ(eot("{{ '[INST] ' + m + ' [/INST]' }}"), std::nullopt);  // EOS ends the turn
}

TEST(ChatTemplateTest, KwargsReachTheTemplate) {
  absl::StatusOr<ChatTemplate> t = ChatTemplate::Create(
      "{% for m in messages %}{{ m.content }}{% endfor %}"
      "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}"
      "{{ bos_token }}|{{ eos_token }}|{{ tools }}",
      {.bos_token = "<s>"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->Render({{"user", {"hi"}}}, true), "hi<s>||None");
  EXPECT_EQ(*t->Render({{"user", {"hi"}}}, true, nullptr,
                       nlohmann::ordered_json{{"enable_thinking", false}}),
            "hi<think></think><s>||None");
}

TEST(ChatTemplateTest, ParseChatFormatName) {
  EXPECT_EQ(*ParseChatFormatName("chatml"), ChatFormat::kChatML);
  EXPECT_EQ(*ParseChatFormatName("llama3"), ChatFormat::kLlama3);
  EXPECT_EQ(ParseChatFormatName("jinja").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChatFormatName(ChatFormat::kLlama3), "llama3");
}

class ChatTemplateFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("headroom_chat_template_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& file, const std::string& text) {
    std::ofstream(dir_ / file) << text;
  }
  std::string RenderLoaded() {
    absl::StatusOr<std::optional<ChatTemplate>> t = LoadChatTemplate(dir_.string());
    if (!t.ok()) return t.status().ToString();
    if (!t->has_value()) return "none";
    return (*t)->Render({{"user", {"hi"}}}, false).value_or("render failed");
  }
  std::filesystem::path dir_;
};

TEST_F(ChatTemplateFilesTest, AbsentIsNullopt) {
  EXPECT_EQ(RenderLoaded(), "none");
  Write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_EQ(RenderLoaded(), "none");
}

TEST_F(ChatTemplateFilesTest, ConfigStringNamedListAndJinjaFile) {
  Write("tokenizer_config.json",
        R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
            "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}{{ eos_token }}"})");
  EXPECT_EQ(RenderLoaded(), "<s>[hi]</s>");
  Write("tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "tools"},
                              {"name": "default", "template": "default {{ messages[0].role }}"}]})");
  EXPECT_EQ(RenderLoaded(), "default user");
  // chat_template.jinja wins over the config entry (transformers >= 4.43 saves it there).
  Write("chat_template.jinja", "file {{ messages | length }}\n");
  EXPECT_EQ(RenderLoaded(), "file 1");  // and Jinja drops the file's trailing newline
}

// Named templates, as transformers' get_chat_template picks them: "default" renders, "tool_use"
// renders requests that give tools, any is found by name; chat_template.jinja and
// additional_chat_templates/NAME.jinja replace the config's entries.
TEST_F(ChatTemplateFilesTest, NamedTemplatesAreFoundAsTransformersFindsThem) {
  Write("tokenizer_config.json",
        R"({"eos_token": "</s>", "chat_template": [
              {"name": "tool_use", "template": "tools {{ messages[0].content }}"},
              {"name": "default", "template": "default {{ messages[0].content }}"},
              {"name": "rag", "template": "rag {{ eos_token }}"}]})");
  absl::StatusOr<std::optional<ChatTemplate>> t = LoadChatTemplate(dir_.string());
  ASSERT_TRUE(t.ok() && t->has_value()) << t.status();
  const ChatTemplate& model = **t;
  const std::vector<ChatMessage> hi = {{"user", {"hi"}}};
  EXPECT_EQ(*model.Render(hi, false), "default hi");
  EXPECT_EQ(*model.ForRequest(/*gives_tools=*/false).Render(hi, false), "default hi");
  EXPECT_EQ(*model.ForRequest(/*gives_tools=*/true).Render(hi, false), "tools hi");
  ASSERT_NE(model.Named("rag"), nullptr);
  EXPECT_EQ(*model.Named("rag")->Render(hi, false), "rag </s>");  // the config's special tokens
  EXPECT_EQ(model.Named("summary"), nullptr);
  EXPECT_EQ(model.Named("default"), &model);
  // --chat-template-content-format holds for every one of them.
  ChatTemplate forced = model;
  forced.set_content_format(ContentFormat::kOpenAI);
  EXPECT_EQ(forced.ForRequest(true).content_format(), ContentFormat::kOpenAI);
  EXPECT_EQ(forced.Named("rag")->content_format(), ContentFormat::kOpenAI);

  // Without a tool_use template, tools render with the default one.
  Write("tokenizer_config.json", R"({"chat_template": "plain {{ messages[0].content }}"})");
  t = LoadChatTemplate(dir_.string());
  ASSERT_TRUE(t.ok() && t->has_value()) << t.status();
  EXPECT_EQ(*(*t)->ForRequest(true).Render(hi, false), "plain hi");
  EXPECT_EQ((*t)->Named("default"), nullptr);  // one template: "default" is template text

  // The files replace the config's entries, whatever their names.
  Write("tokenizer_config.json",
        R"({"chat_template": [{"name": "default", "template": "config"},
                              {"name": "tool_use", "template": "config tools"}]})");
  Write("chat_template.jinja", "file {{ messages[0].content }}");
  std::filesystem::create_directories(dir_ / "additional_chat_templates");
  Write("additional_chat_templates/tool_use.jinja", "file tools {{ messages[0].content }}");
  Write("additional_chat_templates/notes.txt", "not a template");
  t = LoadChatTemplate(dir_.string());
  ASSERT_TRUE(t.ok() && t->has_value()) << t.status();
  EXPECT_EQ(*(*t)->Render(hi, false), "file hi");
  EXPECT_EQ(*(*t)->ForRequest(true).Render(hi, false), "file tools hi");
  EXPECT_EQ((*t)->named().size(), 1u);

  // Named templates and none of them "default": refused, naming them (transformers refuses such
  // a model's requests that give no template name).
  std::filesystem::remove(dir_ / "chat_template.jinja");
  t = LoadChatTemplate(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("has chat templates named tool_use but none named "
                                      "\"default\""),
            std::string::npos)
      << t.status();
  // A named template that does not parse names its file.
  Write("additional_chat_templates/tool_use.jinja", "{% for m in messages %}");
  Write("chat_template.jinja", "ok");
  t = LoadChatTemplate(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("additional_chat_templates/tool_use.jinja"),
            std::string::npos)
      << t.status();
}

TEST_F(ChatTemplateFilesTest, BadTemplateOrFileNamesTheFile) {
  Write("tokenizer_config.json", R"({"chat_template": "{% for m in messages %}"})");
  absl::StatusOr<std::optional<ChatTemplate>> t = LoadChatTemplate(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("tokenizer_config.json"), std::string_view::npos);
  EXPECT_NE(t.status().message().find("endfor"), std::string_view::npos) << t.status();
  Write("tokenizer_config.json", "{not json");
  EXPECT_EQ(LoadChatTemplate(dir_.string()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ChatTemplateFilesTest, FlagTakesNamesFilesAndTemplateText) {
  const std::vector<ChatMessage> hi = {{"user", {"hi"}}};
  EXPECT_EQ(*ChatTemplateFromFlag("chatml", {})->Render(hi, false),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nhi<|im_end|>\n");
  Write("custom.jinja", "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}");
  EXPECT_EQ(*ChatTemplateFromFlag((dir_ / "custom.jinja").string(), {})->Render(hi, false),
            "<user>hi");
  EXPECT_EQ(*ChatTemplateFromFlag("{{ messages[0].content | upper }}", {})->Render(hi, false),
            "HI");
  absl::StatusOr<ChatTemplate> bad = ChatTemplateFromFlag("/no/such/template.jinja", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/no/such/template.jinja"), std::string_view::npos);
}

TEST(ChatTemplateTest, CommittedTokenizerFixturesLoad) {
  // Each tokenizer fixture that carries a template renders it (llama2 / mistral's [INST] ones
  // included, which the two native formats of before could not).
  for (const char* dir : {"qwen2", "llama3", "llama2", "mistral", "gemma", "phi4"}) {
    absl::StatusOr<std::optional<ChatTemplate>> t =
        LoadChatTemplate(SourceDir() + "/tests/router/tokenizer/fixtures/" + dir);
    ASSERT_TRUE(t.ok()) << dir << ": " << t.status();
    ASSERT_TRUE(t->has_value()) << dir;
    absl::StatusOr<std::string> out = (*t)->Render({{"user", {"hi"}}}, true);
    ASSERT_TRUE(out.ok()) << dir << ": " << out.status();
    EXPECT_NE(out->find("hi"), std::string::npos) << dir << ": " << *out;
  }
  // Gemma's template: the turn markers and the end-of-turn token, and its own refusal of a system
  // message (the HTTP front answers it with 400).
  absl::StatusOr<std::optional<ChatTemplate>> gemma =
      LoadChatTemplate(SourceDir() + "/tests/router/tokenizer/fixtures/gemma");
  ASSERT_TRUE(gemma.ok() && gemma->has_value()) << gemma.status();
  EXPECT_EQ(*(*gemma)->Render({{"user", {"hi"}}}, true),
            "<s><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ((*gemma)->end_of_turn(), "<end_of_turn>");
  const absl::StatusOr<std::string> system = (*gemma)->Render({{"system", {"be brief"}}}, true);
  EXPECT_EQ(system.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(system.status().message().find("System role not supported"), std::string_view::npos)
      << system.status();
  // Phi-4-mini's: no BOS, <|end|> closes each turn (and is the token a chat stops on), and
  // without a generation prompt the eos_token ends the text.
  absl::StatusOr<std::optional<ChatTemplate>> phi4 =
      LoadChatTemplate(SourceDir() + "/tests/router/tokenizer/fixtures/phi4");
  ASSERT_TRUE(phi4.ok() && phi4->has_value()) << phi4.status();
  EXPECT_EQ(*(*phi4)->Render({{"system", {"be brief"}}, {"user", {"hi"}}}, true),
            "<|system|>be brief<|end|><|user|>hi<|end|><|assistant|>");
  EXPECT_EQ(*(*phi4)->Render({{"user", {"hi"}}}, false), "<|user|>hi<|end|><|endoftext|>");
  EXPECT_EQ((*phi4)->end_of_turn(), "<|end|>");
}

}  // namespace
}  // namespace headroom::router::openai
