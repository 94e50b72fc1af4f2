#include "router/service/request_validation.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/byte_tokenizer.h"

namespace headroom::router {
namespace {

class RequestValidationTest : public ::testing::Test {
 protected:
  void SetUp() override { tokenizer_ = *MakeByteTokenizer(256); }
  absl::Status Check(const v1::GenerateRequest& request, int32_t max_model_len = 100) {
    return ValidateGenerateRequest(request, *tokenizer_, max_model_len).status();
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(RequestValidationTest, TextIsTokenizedAndSamplingConverted) {
  v1::GenerateRequest request;
  request.set_text("hi");
  request.mutable_sampling()->set_temperature(0.5f);
  request.mutable_sampling()->set_top_k(-1);
  request.mutable_sampling()->add_stop("x");
  request.mutable_sampling()->add_stop_token_ids(3);
  request.mutable_sampling()->set_repetition_penalty(1.1f);
  request.mutable_sampling()->set_presence_penalty(-0.5f);
  request.mutable_sampling()->set_frequency_penalty(2.0f);
  request.mutable_sampling()->set_min_p(0.1f);
  request.mutable_sampling()->set_min_tokens(5);
  (*request.mutable_sampling()->mutable_logit_bias())[104] = 150.0f;  // clamped, as vLLM does
  (*request.mutable_sampling()->mutable_logit_bias())[7] = -2.5f;
  absl::StatusOr<ValidatedRequest> v = ValidateGenerateRequest(request, *tokenizer_, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->prompt, (std::vector<int32_t>{'h', 'i'}));
  EXPECT_EQ(v->max_tokens, kDefaultMaxTokens);
  EXPECT_EQ(v->max_total_tokens(), 2 + kDefaultMaxTokens);
  EXPECT_FLOAT_EQ(v->sampling.temperature(), 0.5f);
  EXPECT_EQ(v->sampling.top_k(), 0);
  EXPECT_EQ(v->sampling.max_tokens(), kDefaultMaxTokens);
  EXPECT_EQ(v->sampling.stop_token_ids_size(), 1);
  EXPECT_EQ(v->stop, std::vector<std::string>{"x"});
  ASSERT_TRUE(v->sampling.has_repetition_penalty());
  EXPECT_FLOAT_EQ(v->sampling.repetition_penalty(), 1.1f);
  EXPECT_FLOAT_EQ(v->sampling.presence_penalty(), -0.5f);
  EXPECT_FLOAT_EQ(v->sampling.frequency_penalty(), 2.0f);
  EXPECT_FLOAT_EQ(v->sampling.min_p(), 0.1f);
  EXPECT_EQ(v->sampling.min_tokens(), 5);
  EXPECT_EQ(v->min_tokens, 5);
  ASSERT_EQ(v->sampling.logit_bias_size(), 2);
  EXPECT_FLOAT_EQ(v->sampling.logit_bias().at(104), 100.0f);
  EXPECT_FLOAT_EQ(v->sampling.logit_bias().at(7), -2.5f);

  EXPECT_TRUE(v->sampling.has_top_k()) << "-1, all, is given: no default overrides it";

  // Unset stays unset, for the worker's defaults (its model's generation_config.json).
  request.mutable_sampling()->clear_repetition_penalty();
  request.mutable_sampling()->clear_top_k();
  request.mutable_sampling()->clear_min_p();
  request.mutable_sampling()->clear_temperature();
  v = ValidateGenerateRequest(request, *tokenizer_, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->sampling.has_repetition_penalty());
  EXPECT_FALSE(v->sampling.has_top_k());
  EXPECT_FALSE(v->sampling.has_min_p());
  EXPECT_FALSE(v->sampling.has_temperature());
}

// truncate_prompt_tokens keeps the last k tokens (vLLM truncates on the left); -1 keeps the last
// max_model_len; the length check sees the cut prompt. skip_special_tokens defaults to true.
TEST_F(RequestValidationTest, TruncationKeepsTheLastTokensAndSkipSpecialDefaultsOn) {
  v1::GenerateRequest request;
  request.set_text("abcdefgh");
  request.set_truncate_prompt_tokens(3);
  request.mutable_sampling()->set_max_tokens(98);  // 8 + 98 > 100, 3 + 98 > 100, 3 + 97 fits
  EXPECT_FALSE(Check(request).ok());
  request.mutable_sampling()->set_max_tokens(97);
  absl::StatusOr<ValidatedRequest> v = ValidateGenerateRequest(request, *tokenizer_, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->prompt, (std::vector<int32_t>{'f', 'g', 'h'}));
  EXPECT_TRUE(v->skip_special_tokens);

  request.set_truncate_prompt_tokens(20);  // longer than the prompt: all of it
  request.mutable_sampling()->set_max_tokens(4);
  request.mutable_sampling()->set_skip_special_tokens(false);
  v = ValidateGenerateRequest(request, *tokenizer_, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->prompt.size(), 8u);
  EXPECT_FALSE(v->skip_special_tokens);

  // -1: the last max_model_len tokens, which leave no room for an output (as in vLLM).
  request.set_truncate_prompt_tokens(-1);
  v = ValidateGenerateRequest(request, *tokenizer_, 6);
  EXPECT_EQ(v.status().message(),
            "prompt (6 tokens) + sampling.max_tokens (4) = 10 exceeds max_model_len 6 of the "
            "largest worker group");
  // With no group up (max_model_len 0) -1 keeps the whole prompt.
  v = ValidateGenerateRequest(request, *tokenizer_, 0);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->prompt.size(), 8u);
}

// guided_choice strings reach the worker tokenized without special tokens (the byte tokenizer of
// 258 entries would put <|bos|> first with them).
TEST_F(RequestValidationTest, GuidedChoicesAreTokenizedWithoutSpecialTokens) {
  std::unique_ptr<Tokenizer> with_bos = *MakeByteTokenizer(258);
  v1::GenerateRequest request;
  request.set_text("q");
  request.mutable_sampling()->add_guided_choice("yes");
  request.mutable_sampling()->add_guided_choice("no");
  absl::StatusOr<ValidatedRequest> v = ValidateGenerateRequest(request, *with_bos, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->sampling.guided_choice_size(), 2);
  const auto ids = [&](int i) {
    const auto& c = v->sampling.guided_choice(i).ids();
    return std::vector<int32_t>(c.begin(), c.end());
  };
  EXPECT_EQ(ids(0), (std::vector<int32_t>{'y', 'e', 's'}));
  EXPECT_EQ(ids(1), (std::vector<int32_t>{'n', 'o'}));
  EXPECT_EQ(v->prompt, (std::vector<int32_t>{256, 'q'})) << "the prompt still gets its BOS";
}

// A gRPC caller's guided_regex is checked here and reaches the worker as its regex.
TEST_F(RequestValidationTest, GuidedRegexIsPassedToTheWorker) {
  v1::GenerateRequest request;
  request.set_text("q");
  request.mutable_sampling()->set_guided_regex("[0-9]{3}");
  const std::unique_ptr<Tokenizer> tokenizer = *MakeByteTokenizer(256);
  absl::StatusOr<ValidatedRequest> v = ValidateGenerateRequest(request, *tokenizer, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->sampling.regex(), "[0-9]{3}");
  EXPECT_EQ(v->sampling.constraint_after(), "");

  // ...and one that waits for the reasoning's end reaches it with that text.
  request.mutable_sampling()->set_constraint_after("</think>");
  v = ValidateGenerateRequest(request, *tokenizer, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->sampling.constraint_after(), "</think>");
}

// A gRPC caller's JSON schema is checked here (the HTTP front checks its own) and passed on as is.
TEST_F(RequestValidationTest, JsonSchemaIsPassedToTheWorker) {
  v1::GenerateRequest request;
  request.set_text("q");
  const std::string schema = R"({"type":"object","properties":{"a":{"enum":[1,2]}}})";
  request.mutable_sampling()->set_json_schema(schema);
  const std::unique_ptr<Tokenizer> tokenizer = *MakeByteTokenizer(256);
  absl::StatusOr<ValidatedRequest> v = ValidateGenerateRequest(request, *tokenizer, 100);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->sampling.json_schema(), schema);
}

struct BadCase {
  const char* name;
  void (*mutate)(v1::GenerateRequest&);
  const char* expected;  // substring of the message
};

// An embedding: the prompt alone must fit max_model_len (it may fill it), pooling goes to the
// worker (normalize only when asked), and the worker runs one greedy pass; sampling is refused.
TEST_F(RequestValidationTest, EmbeddingsAdmitThePromptAloneAndRefuseSampling) {
  v1::GenerateRequest request;
  request.set_text("hi there");
  request.mutable_embedding()->set_dimensions(4);
  absl::StatusOr<ValidatedRequest> v = ValidateGenerateRequest(request, *tokenizer_, 8);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->max_total_tokens(), 8) << "no room held for output";
  ASSERT_TRUE(v->pooling.has_value());
  EXPECT_EQ(v->pooling->dimensions(), 4);
  EXPECT_FALSE(v->pooling->has_normalize()) << "unset: the model's default, the worker's to apply";
  EXPECT_EQ(v->sampling.max_tokens(), 1);
  EXPECT_FLOAT_EQ(v->sampling.temperature(), 0.0f);

  request.mutable_embedding()->set_normalize(false);
  const absl::StatusOr<ValidatedRequest> raw = ValidateGenerateRequest(request, *tokenizer_, 8);
  ASSERT_TRUE(raw->pooling->has_normalize());
  EXPECT_FALSE(raw->pooling->normalize());

  request.set_text("hi there!");
  absl::StatusOr<ValidatedRequest> long_prompt = ValidateGenerateRequest(request, *tokenizer_, 8);
  EXPECT_EQ(long_prompt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(long_prompt.status().message().find(
                "maximum context length is 8 tokens (the largest worker group's); the input to "
                "embed has 9 tokens"),
            std::string::npos)
      << long_prompt.status();

  request.set_text("hi");
  request.mutable_embedding()->set_dimensions(-1);
  EXPECT_NE(ValidateGenerateRequest(request, *tokenizer_, 8)
                .status()
                .message()
                .find("embedding.dimensions must be >= 1 (0 keeps all), got -1"),
            std::string::npos);
  request.mutable_embedding()->set_dimensions(0);
  request.mutable_sampling()->set_max_tokens(3);
  EXPECT_NE(ValidateGenerateRequest(request, *tokenizer_, 8)
                .status()
                .message()
                .find("sampling must be unset for an embedding request"),
            std::string::npos);

  v1::GenerateRequest plain;
  plain.set_text("hi");
  EXPECT_FALSE(ValidateGenerateRequest(plain, *tokenizer_, 100)->pooling.has_value());
}

TEST_F(RequestValidationTest, BadRequestsNameTheFieldAndTheNumbers) {
  const BadCase cases[] = {
      {"empty", [](v1::GenerateRequest& r) { r.set_text(""); }, "prompt is empty"},
      {"id", [](v1::GenerateRequest& r) { r.mutable_token_ids()->add_ids(300); },
       "token_ids.ids[0] = 300"},
      {"temperature", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_temperature(-1); },
       "sampling.temperature"},
      {"top_p", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_top_p(0); },
       "sampling.top_p"},
      {"top_k", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_top_k(-2); },
       "sampling.top_k"},
      {"max_tokens", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_max_tokens(0); },
       "sampling.max_tokens must be >= 1"},
      {"logprobs", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_logprobs(21); },
       "sampling.logprobs"},
      {"repetition_penalty",
       [](v1::GenerateRequest& r) { r.mutable_sampling()->set_repetition_penalty(0); },
       "sampling.repetition_penalty must be a finite number > 0, got 0"},
      {"frequency_penalty",
       [](v1::GenerateRequest& r) { r.mutable_sampling()->set_frequency_penalty(2.5f); },
       "sampling.frequency_penalty must be in [-2, 2], got 2.5"},
      {"presence_penalty",
       [](v1::GenerateRequest& r) { r.mutable_sampling()->set_presence_penalty(-3); },
       "sampling.presence_penalty must be in [-2, 2], got -3"},
      {"min_p", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_min_p(1.5f); },
       "sampling.min_p must be in [0, 1], got 1.5"},
      {"logit_bias id",
       [](v1::GenerateRequest& r) { (*r.mutable_sampling()->mutable_logit_bias())[256] = 1; },
       "sampling.logit_bias: token 256 is outside the vocabulary [0, 256)"},
      {"min_tokens", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_min_tokens(17); },
       "sampling.min_tokens must be in [0, max_tokens (16)], got 17"},
      {"allowed_token_ids id",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->add_allowed_token_ids(3);
         r.mutable_sampling()->add_allowed_token_ids(256);
       },
       "sampling.allowed_token_ids[1] = 256 is outside the vocabulary [0, 256)"},
      {"truncate_prompt_tokens 0", [](v1::GenerateRequest& r) { r.set_truncate_prompt_tokens(0); },
       "truncate_prompt_tokens must be -1 (max_model_len) or >= 1, got 0"},
      {"truncate_prompt_tokens -2",
       [](v1::GenerateRequest& r) { r.set_truncate_prompt_tokens(-2); }, "got -2"},
      {"truncate_prompt_tokens above max_model_len",
       [](v1::GenerateRequest& r) { r.set_truncate_prompt_tokens(101); },
       "truncate_prompt_tokens (101) exceeds max_model_len 100"},
      {"guided_choice empty string",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->add_guided_choice("yes");
         r.mutable_sampling()->add_guided_choice("");
       },
       "sampling.guided_choice[1] must not be empty"},
      {"guided_choice with allowed_token_ids",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->add_guided_choice("yes");
         r.mutable_sampling()->add_allowed_token_ids(3);
       },
       "at most one of sampling.guided_choice, sampling.allowed_token_ids, sampling.json_object, "
       "sampling.json_schema, sampling.guided_regex, sampling.guided_grammar and "
       "sampling.structural_tag may be set"},
      {"structural_tag with guided_grammar",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_guided_grammar("root ::= \"a\"");
         r.mutable_sampling()->set_structural_tag(
             R"({"structures": [{"begin": "<a>", "schema": {}, "end": ""}], "triggers": ["<"]})");
       },
       "at most one of"},
      {"structural_tag with a trigger inside another",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_structural_tag(
             R"({"structures": [{"begin": "<a>", "schema": {}, "end": ""}],
                 "triggers": ["<a", "<"]})");
       },
       "sampling.structural_tag: triggers[1] \"<\" is part of triggers[0] \"<a\""},
      {"structural_tag too long",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_structural_tag(std::string(kMaxStructuralTagBytes + 1, ' '));
       },
       "sampling.structural_tag is 262145 bytes, at most 262144 are accepted"},
      {"guided_grammar with guided_regex",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_guided_regex("a+");
         r.mutable_sampling()->set_guided_grammar("root ::= \"a\"");
       },
       "at most one of"},
      {"guided_grammar that does not parse",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_guided_grammar("root ::= \"a\"\nitem ::= [0-9]{3,2}");
       },
       "sampling.guided_grammar: EBNF parser error at line 2, column 15: the repetition {3,2} has "
       "its upper bound below its lower bound"},
      {"guided_grammar too long",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_guided_grammar(
             absl::StrCat("root ::= \"", std::string(kMaxGuidedGrammarBytes, 'a'), "\""));
       },
       "sampling.guided_grammar is 65547 bytes, at most 65536 are accepted"},
      {"guided_regex with json_schema",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_json_schema(R"({"type":"string"})");
         r.mutable_sampling()->set_guided_regex("a+");
       },
       "at most one of"},
      {"guided_regex not enforceable",
       [](v1::GenerateRequest& r) { r.mutable_sampling()->set_guided_regex("\\bword"); },
       "sampling.guided_regex: word boundaries (\\b) are not supported"},
      {"constraint_after without a constraint",
       [](v1::GenerateRequest& r) { r.mutable_sampling()->set_constraint_after("</think>"); },
       "sampling.constraint_after needs sampling.json_object, sampling.json_schema, "
       "sampling.guided_regex, sampling.guided_grammar or sampling.structural_tag"},
      {"constraint_after too long",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_json_object(true);
         r.mutable_sampling()->set_constraint_after(std::string(65, 'x'));
       },
       "sampling.constraint_after is 65 bytes, at most 64 are accepted"},
      {"guided_regex too long",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_guided_regex(std::string(kMaxGuidedRegexBytes + 1, 'a'));
       },
       "sampling.guided_regex is 4097 bytes, at most 4096 are accepted"},
      {"json_schema too long",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_json_schema(
             absl::StrCat(R"({"description":")", std::string(kMaxJsonSchemaBytes, 'x'), R"("})"));
       },
       "sampling.json_schema is 65554 bytes, at most 65536 are accepted"},
      {"json_schema with json_object",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_json_schema(R"({"type":"object"})");
         r.mutable_sampling()->set_json_object(true);
       },
       "at most one of"},
      {"json_schema not enforceable",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->set_json_schema(
             R"({"type":"object","properties":{"id":{"type":"integer","multipleOf":2}}})");
       },
       "sampling.json_schema: at /properties/id: multipleOf is not supported"},
      {"json_object with guided_choice",
       [](v1::GenerateRequest& r) {
         r.mutable_sampling()->add_guided_choice("yes");
         r.mutable_sampling()->set_json_object(true);
       },
       "at most one of"},
      {"guided_choice too many",
       [](v1::GenerateRequest& r) {
         for (int i = 0; i <= kMaxGuidedChoices; ++i) r.mutable_sampling()->add_guided_choice("a");
       },
       "sampling.guided_choice has 257 strings, at most 256"},
      {"guided_choice too long",
       [](v1::GenerateRequest& r) {
         for (int i = 0; i < 5; ++i) {
           r.mutable_sampling()->add_guided_choice(std::string(kMaxGuidedChoiceTokens / 4, 'a'));
         }
       },
       "sampling.guided_choice has more than 16384 tokens in all"},
      {"too long", [](v1::GenerateRequest& r) { r.mutable_sampling()->set_max_tokens(99); },
       "prompt (2 tokens) + sampling.max_tokens (99) = 101 exceeds max_model_len 100"},
  };
  for (const BadCase& c : cases) {
    v1::GenerateRequest request;
    request.set_text("ab");
    c.mutate(request);
    const absl::Status status = Check(request);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(std::string(status.message()).find(c.expected), std::string::npos)
        << c.name << ": " << status.message();
  }
}

}  // namespace
}  // namespace headroom::router
