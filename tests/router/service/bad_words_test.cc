// vLLM's bad_words tokenized by the router (BadWordsTokenIds) against Hugging Face `tokenizers`
// with vLLM's rule (tests/router/tokenizer/fixtures/bad_words.json, scripts/
// gen_bad_words_fixtures.py): for every tokenizer fixture, words at the start and in mid-text,
// leading Unicode whitespace Python strips, and the fixture's own added token.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/service/request_validation.h"
#include "router/tokenizer/byte_tokenizer.h"
#include "tests/router/tokenizer/fixtures.h"

namespace headroom::router {
namespace {

using Sequences = std::vector<std::vector<int32_t>>;

const nlohmann::json& Reference() {
  static const nlohmann::json reference = [] {
    std::ifstream in(testing::FixtureDir("bad_words.json"));
    EXPECT_TRUE(in.good()) << "cannot open bad_words.json (is HEADROOM_SOURCE_DIR set?)";
    return nlohmann::json::parse(in);
  }();
  return reference;
}

absl::StatusOr<Sequences> TokenIds(const std::vector<std::string>& words,
                                   const Tokenizer& tokenizer) {
  v1::SamplingParams s;
  for (const std::string& w : words) s.add_bad_words(w);
  return BadWordsTokenIds(s, tokenizer);
}

class BadWordsTest : public testing::FixtureTokenizerTest {};

TEST_P(BadWordsTest, EachWordGivesTheSequencesVllmGivesWithTokenizers) {
  const nlohmann::json& cases = Reference()["tokenizers_cases"][GetParam()];
  ASSERT_GE(cases.size(), 10u);
  std::vector<std::string> words;
  Sequences all;
  for (const nlohmann::json& c : cases) {
    const std::string word = c["word"].get<std::string>();
    const Sequences want = c["ids"].get<Sequences>();
    absl::StatusOr<Sequences> got = TokenIds({word}, *tokenizer_);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want) << "word \"" << word << "\"";
    words.push_back(word);
    all.insert(all.end(), want.begin(), want.end());
  }
  // All at once: the words' sequences in order.
  absl::StatusOr<Sequences> together = TokenIds(words, *tokenizer_);
  ASSERT_TRUE(together.ok()) << together.status();
  EXPECT_EQ(*together, all);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BadWordsTest, ::testing::ValuesIn(testing::FixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Through ValidateGenerateRequest: the worker gets the sequences; a word that is whitespace only
// and more sequences or tokens than vLLM allows are refused with the numbers.
TEST(BadWordsValidationTest, SequencesReachTheWorkerAndLimitsAreRefused) {
  const std::unique_ptr<Tokenizer> bytes = *MakeByteTokenizer(256);
  v1::GenerateRequest request;
  request.set_text("hi");
  request.mutable_sampling()->add_bad_words(" ab");
  request.mutable_sampling()->add_bad_words("c");
  absl::StatusOr<ValidatedRequest> v = ValidateGenerateRequest(request, *bytes, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->sampling.bad_words_size(), 2);
  EXPECT_EQ(std::vector<int32_t>(v->sampling.bad_words(0).ids().begin(),
                                 v->sampling.bad_words(0).ids().end()),
            (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ(std::vector<int32_t>(v->sampling.bad_words(1).ids().begin(),
                                 v->sampling.bad_words(1).ids().end()),
            std::vector<int32_t>{'c'});

  request.mutable_sampling()->add_bad_words(" \t\u3000");
  absl::Status st = ValidateGenerateRequest(request, *bytes, 100).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "sampling.bad_words[2] must contain a character other than whitespace");

  v1::SamplingParams many;
  for (int i = 0; i < kMaxBadWordSequences; ++i) many.add_bad_words("x");
  EXPECT_TRUE(BadWordsTokenIds(many, *bytes).ok());
  many.add_bad_words("y");
  st = BadWordsTokenIds(many, *bytes).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("the first 129 words give 129 sequences of 129 tokens"),
            std::string::npos)
      << st;

  v1::SamplingParams long_words;
  long_words.add_bad_words(std::string(kMaxBadWordTokens, 'z'));
  EXPECT_TRUE(BadWordsTokenIds(long_words, *bytes).ok());
  long_words.add_bad_words("q");
  st = BadWordsTokenIds(long_words, *bytes).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("give 2 sequences of 1025 tokens"), std::string::npos) << st;
}

}  // namespace
}  // namespace headroom::router
