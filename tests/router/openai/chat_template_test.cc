// RenderChat against what transformers' apply_chat_template renders for the reference templates
// (fixtures/chat_templates.json, scripts/gen_chat_template_fixtures.py), byte for byte.
#include "router/openai/chat_template.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {
namespace {

std::string SourceDir() {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  return root != nullptr ? root : ".";
}

nlohmann::json LoadFixture() {
  const std::string path = SourceDir() + "/tests/router/openai/fixtures/chat_templates.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path << " (is HEADROOM_SOURCE_DIR set?)";
  if (!in.good()) return nlohmann::json::object();
  return nlohmann::json::parse(in);
}

TEST(ChatTemplateTest, RendersLikeTransformers) {
  const nlohmann::json fixture = LoadFixture();
  ASSERT_TRUE(fixture.contains("templates"));
  int checked = 0;
  for (const auto& t : fixture["templates"]) {
    const std::string name = t["template_name"].get<std::string>();
    absl::StatusOr<ChatFormat> format = ParseChatFormatName(name);
    ASSERT_TRUE(format.ok()) << format.status();
    // The stored (real) template text is recognised as that format.
    absl::StatusOr<ChatFormat> detected = DetectChatFormat(t["template"].get<std::string>());
    ASSERT_TRUE(detected.ok()) << detected.status();
    EXPECT_EQ(*detected, *format) << name;
    const std::string bos = t["bos_token"].get<std::string>();
    for (size_t i = 0; i < t["cases"].size(); ++i) {
      const auto& c = t["cases"][i];
      std::vector<ChatMessage> messages;
      for (const auto& m : c["messages"]) {
        messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
      }
      const std::string got =
          RenderChat(*format, messages, c["add_generation_prompt"].get<bool>(), bos);
      EXPECT_EQ(got, c["expected"].get<std::string>()) << name << " case " << i;
      ++checked;
    }
  }
  EXPECT_GE(checked, 16);
}

TEST(ChatTemplateTest, DetectRefusesOtherTemplates) {
  const std::string mistral =
      "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
      "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}{% endfor %}";
  absl::StatusOr<ChatFormat> f = DetectChatFormat(mistral);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(f.status().message().find("supported: chatml, llama3"), std::string::npos);
}

TEST(ChatTemplateTest, ParseChatFormatName) {
  EXPECT_EQ(*ParseChatFormatName("chatml"), ChatFormat::kChatML);
  EXPECT_EQ(*ParseChatFormatName("llama3"), ChatFormat::kLlama3);
  EXPECT_EQ(ParseChatFormatName("jinja").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChatFormatName(ChatFormat::kLlama3), "llama3");
  EXPECT_EQ(ChatEndOfTurn(ChatFormat::kChatML), "<|im_end|>");
  EXPECT_EQ(ChatEndOfTurn(ChatFormat::kLlama3), "<|eot_id|>");
}

TEST(ChatTemplateTest, PyStripMatchesPythonWhitespace) {
  EXPECT_EQ(PyStrip("  a b \n"), "a b");
  EXPECT_EQ(PyStrip("\xE3\x80\x80x\xC2\xA0"), "x");                              // U+3000, U+00A0
  EXPECT_EQ(PyStrip("\x1c\x1fx\xC2\x85"), "x");                                  // separators, NEL
  EXPECT_EQ(PyStrip("\xE2\x80\x8Bx\xE2\x80\x8B"), "\xE2\x80\x8Bx\xE2\x80\x8B");  // ZWSP is not
  EXPECT_EQ(PyStrip(" \t "), "");
  EXPECT_EQ(PyStrip("\xFF x \xC2"), "\xFF x \xC2");  // invalid UTF-8 is never whitespace
}

class LoadChatFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("headroom_chat_format_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void WriteConfig(const std::string& text) {
    std::ofstream(dir_ / "tokenizer_config.json") << text;
  }
  std::filesystem::path dir_;
};

TEST_F(LoadChatFormatTest, AbsentFileOrKeyIsNullopt) {
  absl::StatusOr<std::optional<ChatFormat>> f = LoadChatFormat(dir_.string());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(f->has_value());
  WriteConfig(R"({"bos_token": "<s>"})");
  f = LoadChatFormat(dir_.string());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(f->has_value());
}

TEST_F(LoadChatFormatTest, StringAndNamedList) {
  WriteConfig(R"({"chat_template": "{{ '<|im_start|>' + message['role'] }}"})");
  absl::StatusOr<std::optional<ChatFormat>> f = LoadChatFormat(dir_.string());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, ChatFormat::kChatML);
  WriteConfig(R"({"chat_template": [{"name": "tool_use", "template": "<|im_start|>"},
                                    {"name": "default", "template": "<|start_header_id|>"}]})");
  f = LoadChatFormat(dir_.string());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, ChatFormat::kLlama3);
}

TEST_F(LoadChatFormatTest, UnsupportedTemplateAndBadFile) {
  WriteConfig(R"({"chat_template": "[INST] {{ messages }}"})");
  EXPECT_EQ(LoadChatFormat(dir_.string()).status().code(), absl::StatusCode::kFailedPrecondition);
  WriteConfig("{not json");
  EXPECT_EQ(LoadChatFormat(dir_.string()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChatTemplateTest, CommittedTokenizerFixturesDetect) {
  // The tokenizer fixtures carry simplified chatml / llama3 templates.
  for (const auto& [dir, want] : {std::pair<std::string, ChatFormat>{"qwen2", ChatFormat::kChatML},
                                  {"llama3", ChatFormat::kLlama3}}) {
    absl::StatusOr<std::optional<ChatFormat>> f =
        LoadChatFormat(SourceDir() + "/tests/router/tokenizer/fixtures/" + dir);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(*f, want) << dir;
  }
}

}  // namespace
}  // namespace headroom::router::openai
