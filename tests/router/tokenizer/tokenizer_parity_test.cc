// Parity with Hugging Face `tokenizers`: for every committed fixture, encoding the corpus gives the
// ids `tokenizers` gave, and decoding gives the same text (fixtures/<name>/expected.jsonl), and
// decoding random id sequences (biased to byte and special tokens) matches too (decode.jsonl); text
// pairs encode as transformers encodes them (pairs.json).
#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/tokenizer/tokenizer.h"
#include "router/tokenizer/utf8.h"
#include "tests/router/tokenizer/fixtures.h"

namespace headroom::router {
namespace {

using testing::FixtureDir;
using testing::Ids;
using testing::ReadJsonLines;

class ParityTest : public testing::FixtureTokenizerTest {};

TEST_P(ParityTest, EncodeMatchesTokenizers) {
  const auto rows = ReadJsonLines(FixtureDir(GetParam()) + "/expected.jsonl");
  ASSERT_GT(rows.size(), 150u);
  int mismatches = 0;
  for (const auto& row : rows) {
    const std::string text = row["text"];
    auto ids = tokenizer_->Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    if (*ids != Ids(row["ids"])) ++mismatches;
    EXPECT_EQ(*ids, Ids(row["ids"])) << "text: " << row["text"].dump();
    auto plain = tokenizer_->Encode(text, {.add_special_tokens = false});
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_EQ(*plain, Ids(row["ids_plain"])) << "text: " << row["text"].dump();
  }
  EXPECT_EQ(mismatches, 0) << "of " << rows.size();
}

TEST_P(ParityTest, DecodeOfEncodeMatchesTokenizers) {
  for (const auto& row : ReadJsonLines(FixtureDir(GetParam()) + "/expected.jsonl")) {
    const std::vector<int32_t> ids = Ids(row["ids"]);
    EXPECT_EQ(tokenizer_->Decode(ids), row["decoded"].get<std::string>())
        << "text: " << row["text"].dump();
    EXPECT_EQ(tokenizer_->Decode(ids, {.skip_special_tokens = false}),
              row["decoded_special"].get<std::string>())
        << "text: " << row["text"].dump();
  }
}

TEST_P(ParityTest, DecodeOfRandomIdsMatchesTokenizers) {
  const auto rows = ReadJsonLines(FixtureDir(GetParam()) + "/decode.jsonl");
  ASSERT_GT(rows.size(), 50u);
  for (const auto& row : rows) {
    const std::vector<int32_t> ids = Ids(row["ids"]);
    EXPECT_EQ(tokenizer_->Decode(ids), row["decoded"].get<std::string>())
        << "ids: " << row["ids"].dump();
    EXPECT_EQ(tokenizer_->Decode(ids, {.skip_special_tokens = false}),
              row["decoded_special"].get<std::string>())
        << "ids: " << row["ids"].dump();
  }
}

// TokenBytes: the first token as a text starts with it, then each later token's bytes, is the
// text `tokenizers` decodes for the whole sequence. Exactly, where that text is valid UTF-8; where
// it is not, `tokenizers` replaces a ByteFallback run as a whole (every byte of it, valid or not)
// while byte-level decoding replaces bytes as Lossy does: then only byte-level rows compare.
TEST_P(ParityTest, TokenBytesAddUpToTheDecodedText) {
  // Random ids (decode.jsonl) and the encodings of real texts (expected.jsonl).
  auto rows = ReadJsonLines(FixtureDir(GetParam()) + "/decode.jsonl");
  for (auto& row : ReadJsonLines(FixtureDir(GetParam()) + "/expected.jsonl")) {
    rows.push_back(std::move(row));
  }
  const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD
  int compared = 0;
  for (const auto& row : rows) {
    const std::vector<int32_t> ids = Ids(row["ids"]);
    const std::string expected = row["decoded_special"].get<std::string>();
    size_t first = 0;  // the first id in the vocabulary (decode skips the others)
    while (first < ids.size() && tokenizer_->TokenBytes(ids[first]).empty()) ++first;
    if (first == ids.size()) continue;
    // Its bytes, unless decoding drops something at the start of a text (Metaspace's and
    // Strip's leading space): then its decoded text.
    const std::string alone = tokenizer_->Decode(std::span<const int32_t>(&ids[first], 1),
                                                 {.skip_special_tokens = false});
    std::string bytes = tokenizer_->TokenBytes(ids[first]);
    if (utf8::Lossy(bytes) != alone) bytes = alone;
    for (size_t i = first + 1; i < ids.size(); ++i) bytes += tokenizer_->TokenBytes(ids[i]);
    if (expected.find(replacement) == std::string::npos) {
      EXPECT_EQ(bytes, expected) << "ids: " << row["ids"].dump();
      ++compared;
    } else if (!tokenizer_->IsByteFallbackToken(ids[first]) &&
               std::none_of(ids.begin(), ids.end(),
                            [&](int32_t id) { return tokenizer_->IsByteFallbackToken(id); })) {
      EXPECT_EQ(utf8::Lossy(bytes), expected) << "ids: " << row["ids"].dump();
      ++compared;
    }
  }
  EXPECT_GT(compared, 30) << "too few rows to compare";
}

// Text pairs as transformers' tokenizer(text, text_pair) encodes them (fixtures/pairs.json,
// scripts/gen_tokenizer_pair_fixtures.py): each text alone, in the pair template's special tokens
// (Llama 3's <bos> A <bos> B, the llama2 family's as transformers rebuilds it from
// tokenizer_config.json, none for the byte-level ones).
TEST_P(ParityTest, PairsEncodeAsTransformers) {
  std::ifstream file(FixtureDir("pairs.json"));
  ASSERT_TRUE(file.good()) << "cannot open pairs.json";
  const nlohmann::json cases = nlohmann::json::parse(file)["tokenizers"][GetParam()]["pairs"];
  ASSERT_GE(cases.size(), 5u);
  for (const nlohmann::json& c : cases) {
    const std::string first = c["first"];
    const std::string second = c["second"];
    auto ids = tokenizer_->EncodePair(first, second);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, Ids(c["ids"])) << first << " | " << second;
    auto plain = tokenizer_->EncodePair(first, second, {.add_special_tokens = false});
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_EQ(*plain, Ids(c["ids_plain"])) << first << " | " << second;
  }
}

// BERT's and RoBERTa's pair forms ([CLS] A [SEP] B [SEP]; <s> A </s></s> B </s>), against
// `tokenizers` on small tokenizers built with those post-processors (pairs.json's processors).
TEST(PairTest, BertAndRobertaPairsEncodeAsTokenizers) {
  std::ifstream file(FixtureDir("pairs.json"));
  ASSERT_TRUE(file.good()) << "cannot open pairs.json";
  const nlohmann::json processors = nlohmann::json::parse(file)["processors"];
  ASSERT_EQ(processors.size(), 2u);
  for (const auto& [name, entry] : processors.items()) {
    auto tokenizer =
        Tokenizer::FromJson(entry["tokenizer_json"].get<std::string>(), std::nullopt, name);
    ASSERT_TRUE(tokenizer.ok()) << name << ": " << tokenizer.status();
    for (const nlohmann::json& c : entry["pairs"]) {
      const std::string first = c["first"];
      const std::string second = c["second"];
      auto ids = (*tokenizer)->EncodePair(first, second);
      ASSERT_TRUE(ids.ok()) << ids.status();
      EXPECT_EQ(*ids, Ids(c["ids"])) << name << ": " << first << " | " << second;
      auto plain = (*tokenizer)->EncodePair(first, second, {.add_special_tokens = false});
      ASSERT_TRUE(plain.ok()) << plain.status();
      EXPECT_EQ(*plain, Ids(c["ids_plain"])) << name << ": " << first << " | " << second;
    }
  }
}

// A TemplateProcessing without a pair template cannot add special tokens to a pair (`tokenizers`
// fails too); without special tokens the pair is the two texts' ids.
TEST(PairTest, ATemplateWithoutPairRefusesSpecialTokens) {
  std::ifstream file(FixtureDir("pairs.json"));
  nlohmann::json spec = nlohmann::json::parse(
      nlohmann::json::parse(file)["processors"]["bert"]["tokenizer_json"].get<std::string>());
  spec["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", "[CLS] $A"},
      {"special_tokens", {{"[CLS]", {{"id", "[CLS]"}, {"ids", {0}}, {"tokens", {"[CLS]"}}}}}}};
  auto tokenizer = Tokenizer::FromJson(spec.dump());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto refused = (*tokenizer)->EncodePair("ab", "c");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("no pair template"), std::string::npos);
  const auto plain = (*tokenizer)->EncodePair("ab", "c", {.add_special_tokens = false});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(*plain, (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(*(*tokenizer)->Encode("ab"), (std::vector<int32_t>{0, 4, 5}));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ParityTest, ::testing::ValuesIn(testing::FixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(TokenizerConfigTest, LoadsSpecialTokensAndChatTemplate) {
  auto t = Tokenizer::FromDirectory(FixtureDir("llama3"));
  ASSERT_TRUE(t.ok()) << t.status();
  const TokenizerConfig& c = (*t)->config();
  EXPECT_EQ(c.bos_token, "<|begin_of_text|>");
  EXPECT_EQ(c.eos_token, "<|eot_id|>");
  ASSERT_TRUE(c.chat_template.has_value());
  EXPECT_NE(c.chat_template->find("<|start_header_id|>"), std::string::npos);
  EXPECT_EQ((*t)->bos_token_id(), (*t)->TokenToId("<|begin_of_text|>"));
  EXPECT_EQ((*t)->eos_token_id(), (*t)->TokenToId("<|eot_id|>"));
  EXPECT_TRUE((*t)->IsSpecialToken(*(*t)->eos_token_id()));
}

TEST(TokenizerConfigTest, AddBosTokenFalseOverridesPostProcessor) {
  auto t = Tokenizer::FromDirectory(FixtureDir("llama2"));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->special_token_wrap().prefix, std::vector<int32_t>{1});
  auto json = json_util::ReadFile(FixtureDir("llama2") + "/tokenizer.json");
  ASSERT_TRUE(json.ok());
  auto no_bos = Tokenizer::FromJson(*json, R"({"add_bos_token": false, "bos_token": "<s>",
                                              "eos_token": "</s>", "add_eos_token": true})");
  ASSERT_TRUE(no_bos.ok()) << no_bos.status();
  auto ids = (*no_bos)->Encode("hi");
  ASSERT_TRUE(ids.ok());
  EXPECT_NE(ids->front(), 1);
  EXPECT_EQ(ids->back(), 2);
}

TEST(TokenizerConfigTest, ChatTemplateListAndAddedTokenObjects) {
  auto c = ParseTokenizerConfig(R"({"bos_token": {"content": "<s>", "__type": "AddedToken"},
      "eos_token": null, "model_max_length": 1e30,
      "chat_template": [{"name": "default", "template": "A"}, {"name": "tool_use", "template": "B"}]})",
                                "cfg");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->bos_token, "<s>");
  EXPECT_FALSE(c->eos_token.has_value());
  EXPECT_FALSE(c->model_max_length.has_value());
  EXPECT_EQ(c->chat_template, "A");
  ASSERT_EQ(c->named_chat_templates.size(), 2u);
  EXPECT_EQ(c->named_chat_templates[1].second, "B");
}

}  // namespace
}  // namespace headroom::router
