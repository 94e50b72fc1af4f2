#include "router/openai/openai_protocol.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {
namespace {

struct BadBody {
  const char* body;
  const char* param;     // expected ErrorParam ("" for none)
  const char* contains;  // expected in the message
};

void ExpectBad(const absl::StatusOr<ParsedRequest>& r, const BadBody& c) {
  ASSERT_FALSE(r.ok()) << c.body;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
  EXPECT_EQ(ErrorParam(r.status()), c.param) << c.body << " -> " << r.status();
  EXPECT_NE(r.status().message().find(c.contains), std::string::npos)
      << c.body << " -> " << r.status();
}

// A body and the EmbeddingParams.normalize it must set (use_activation and its older names).
struct NormalizeCase {
  const char* body;
  bool normalize;
};

template <typename Parse>
void ExpectNormalize(const Parse& parse, std::initializer_list<NormalizeCase> cases) {
  for (const NormalizeCase& c : cases) {
    absl::StatusOr<ParsedRequest> parsed = parse(c.body);
    ASSERT_TRUE(parsed.ok()) << parsed.status() << c.body;
    ASSERT_TRUE(parsed->generate.embedding().has_normalize()) << c.body;
    EXPECT_EQ(parsed->generate.embedding().normalize(), c.normalize) << c.body;
  }
}

TEST(OpenAiProtocolTest, BadCompletionBodies) {
  const std::vector<BadBody> cases = {
      {R"({"prompt": "hi", )", "", "invalid JSON: "},
      {"", "", "invalid JSON: "},
      {R"(["prompt"])", "", "must be a JSON object, got array"},
      {R"({})", "prompt", "prompt is required"},
      {R"({"prompt": 3})", "prompt", "prompt must be a string, an array"},
      {R"({"prompt": ["a", 3]})", "prompt[1]",
       "prompt[1] must be a string or an array of token ids, got number"},
      {R"({"prompt": [[1, 2], []]})", "prompt[1]", "prompt[1] must not be an empty array"},
      {R"({"prompt": [[1, 2], [3, "x"]]})", "prompt[1][1]",
       "prompt[1][1] must be a token id (integer), got string"},
      {R"({"prompt": ["a", "b", "c"], "n": 50})", "prompt",
       "prompts x n must be at most 128, got 3 prompts x n 50 = 150"},
      {R"({"prompt": []})", "prompt", "must not be an empty array"},
      {R"({"prompt": [1, "x"]})", "prompt[1]",
       "prompt[1] must be a token id (integer), got string"},
      {R"({"prompt": [1, 2.5]})", "prompt[1]", "must be an integer, got 2.5"},
      {R"({"prompt": [4294967296]})", "prompt[0]", "must fit in int32, got 4294967296"},
      {R"({"prompt": "x", "model": 7})", "model", "model must be a string, got number"},
      {R"({"prompt": "x", "temperature": "hot"})", "temperature",
       "temperature must be a number, got string"},
      {R"({"prompt": "x", "temperature": 1e300})", "temperature", "must be a finite number"},
      {R"({"prompt": "x", "top_p": true})", "top_p", "top_p must be a number, got boolean"},
      {R"({"prompt": "x", "top_k": 1.5})", "top_k", "top_k must be an integer, got 1.5"},
      {R"({"prompt": "x", "max_tokens": "16"})", "max_tokens",
       "max_tokens must be an integer, got string"},
      {R"({"prompt": "x", "max_tokens": 3000000000})", "max_tokens",
       "max_tokens must fit in int32, got 3000000000"},
      {R"({"prompt": "x", "seed": "1"})", "seed", "seed must be an integer, got string"},
      {R"({"prompt": "x", "stop": 5})", "stop", "stop must be a string or an array of strings"},
      {R"({"prompt": "x", "stop": ["a", 1]})", "stop[1]", "stop[1] must be a string, got number"},
      {R"({"prompt": "x", "stop": ""})", "stop", "must not contain an empty string"},
      {R"({"prompt": "x", "stop_token_ids": [1, "2"]})", "stop_token_ids[1]", "got string"},
      {R"({"prompt": "x", "stop_token_ids": 2})", "stop_token_ids", "an array of integers"},
      {R"({"prompt": "x", "ignore_eos": 1})", "ignore_eos", "ignore_eos must be a boolean"},
      {R"({"prompt": "x", "include_stop_str_in_output": "yes"})", "include_stop_str_in_output",
       "must be a boolean"},
      {R"({"prompt": "x", "cache_salt": 1})", "cache_salt", "cache_salt must be a string"},
      {R"({"prompt": "x", "priority": "high"})", "priority",
       "priority must be an integer, got string"},
      {R"({"prompt": "x", "stream": "true"})", "stream", "stream must be a boolean, got string"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options",
       "only allowed when stream is true"},
      {R"({"prompt": "x", "stream": true, "stream_options": 1})", "stream_options",
       "must be an object"},
      {R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage", "must be a boolean"},
      {R"({"prompt": "x", "stream": true, "stream_options": {"continuous_usage_stats": "y"}})",
       "stream_options.continuous_usage_stats", "must be a boolean, got string"},
      {R"({"prompt": "x", "n": 0})", "n", "n must be in [1, 128], got 0"},
      {R"({"prompt": "x", "n": 129})", "n", "n must be in [1, 128], got 129"},
      {R"({"prompt": "x", "n": "1"})", "n", "n must be an integer"},
      {R"({"prompt": "x", "best_of": 3})", "best_of",
       "best_of > n is not supported (every sample is returned), got best_of 3 with n 1"},
      {R"({"prompt": "x", "echo": 1})", "echo", "echo must be a boolean"},
      {R"({"prompt": "x", "return_token_ids": "yes"})", "return_token_ids",
       "return_token_ids must be a boolean"},
      {R"({"prompt": "x", "use_beam_search": true, "n": 11})", "n",
       "n is the beam width with use_beam_search and must be at most 10"},
      {R"({"prompt": "x", "use_beam_search": true, "stop": "y"})", "stop",
       "use_beam_search cannot be combined with stop"},
      {R"({"prompt": "x", "use_beam_search": true, "logit_bias": {"3": 1}})", "logit_bias",
       "use_beam_search cannot be combined with logit_bias"},
      {R"({"prompt": "x", "use_beam_search": true, "truncate_prompt_tokens": 3})",
       "truncate_prompt_tokens", "use_beam_search cannot be combined with truncate_prompt_tokens"},
      {R"({"prompt": "x", "length_penalty": "long"})", "length_penalty",
       "length_penalty must be a number"},
      {R"({"prompt": "x", "return_tokens_as_token_ids": 0})", "return_tokens_as_token_ids",
       "return_tokens_as_token_ids must be a boolean"},
      {R"({"prompt": "x", "use_beam_search": 1})", "use_beam_search",
       "use_beam_search must be a boolean"},
      {R"({"prompt": "x", "prompt_logprobs": 21})", "prompt_logprobs",
       "prompt_logprobs must be in [0, 20], got 21"},
      {R"({"prompt": "x", "prompt_logprobs": 1, "stream": true})", "prompt_logprobs",
       "prompt_logprobs are not available when stream is true"},
      {R"({"prompt": "x", "presence_penalty": "0.5"})", "presence_penalty",
       "presence_penalty must be a number, got string"},
      {R"({"prompt": "x", "repetition_penalty": true})", "repetition_penalty", "must be a number"},
      {R"({"prompt": "x", "min_tokens": 4.5})", "min_tokens", "min_tokens must be an integer"},
      {R"({"prompt": "x", "logit_bias": {"five": 1}})", "logit_bias",
       "logit_bias keys must be token ids, got \"five\""},
      {R"({"prompt": "x", "logit_bias": {"5": "up"}})", "logit_bias.5", "must be a number"},
      {R"({"prompt": "x", "suffix": "end"})", "suffix", "suffix is not supported"},
      {R"({"prompt": "x", "logprobs": 21})", "logprobs", "logprobs must be in [0, 20], got 21"},
      {R"({"prompt": "x", "logprobs": -1})", "logprobs", "must be in [0, 20], got -1"},
      {R"({"prompt": "x", "logprobs": true})", "logprobs", "logprobs must be an integer"},
      {R"({"prompt": "x", "allowed_token_ids": []})", "allowed_token_ids",
       "allowed_token_ids must not be empty"},
      {R"({"prompt": "x", "allowed_token_ids": 5})", "allowed_token_ids", "an array of integers"},
      {R"({"prompt": "x", "allowed_token_ids": [5, "6"]})", "allowed_token_ids[1]", "got string"},
      {R"({"prompt": "x", "skip_special_tokens": "no"})", "skip_special_tokens",
       "must be a boolean"},
      {R"({"prompt": "x", "truncate_prompt_tokens": 2.5})", "truncate_prompt_tokens",
       "must be an integer"},
      {R"({"prompt": "x", "echo": true, "truncate_prompt_tokens": 4})", "echo",
       "echo is not supported with truncate_prompt_tokens"},
      {R"({"prompt": "x", "guided_grammar": "root ::= \"a\" b"})", "guided_grammar",
       "guided_grammar: EBNF parser error at line 1, column 14: rule \"b\" is not defined"},
      {R"({"prompt": "x", "guided_grammar": "start: \"a\" x"})", "guided_grammar",
       "guided_grammar: Lark grammar error at line 1, column 12: 'x' is not defined"},
      {R"({"prompt": "x", "guided_grammar": 5})", "guided_grammar",
       "guided_grammar must be a string (an EBNF or Lark grammar), got number"},
      {R"({"prompt": "x", "guided_grammar": "root ::= \"a\"",
           "structured_outputs": {"grammar": "root ::= \"b\""}})",
       "structured_outputs.grammar", "give one grammar"},
      {R"({"prompt": "x", "guided_regex": "(?=a)a"})", "guided_regex",
       "guided_regex: lookahead is not supported"},
      {R"({"prompt": "x", "guided_regex": 5})", "guided_regex",
       "guided_regex must be a string (a regular expression), got number"},
      {R"({"prompt": "x", "guided_regex": ""})", "guided_regex", "must not be empty"},
      {R"({"prompt": "x", "guided_regex": "a", "structured_outputs": {"regex": "b"}})",
       "structured_outputs.regex", "give one regex"},
      {R"({"prompt": "x", "guided_json": {"type": "integer", "multipleOf": 2}})", "guided_json",
       "guided_json: at the root: multipleOf is not supported"},
      {R"({"prompt": "x", "guided_json": 5})", "guided_json",
       "guided_json must be a JSON schema (an object), got number"},
      {R"({"prompt": "x", "guided_json": "{\"type\":"})", "guided_json",
       "guided_json: the schema is not valid JSON"},
      {R"({"prompt": "x", "structured_outputs": {"json": {"$ref": "#/nowhere"}}})",
       "structured_outputs.json",
       "structured_outputs.json: at the root: $ref \"#/nowhere\" points"},
      {R"({"prompt": "x", "guided_json": {}, "structured_outputs": {"json": {}}})",
       "structured_outputs.json", "give one JSON schema"},
      {R"({"prompt": "x", "structured_outputs": {"regex": "[a-z]{300}"}})",
       "structured_outputs.regex",
       "structured_outputs.regex: the pattern needs more than 256 automaton states"},
      {R"({"prompt": "x", "structured_outputs": {"grammar": "root ::= x"}})",
       "structured_outputs.grammar",
       "structured_outputs.grammar: EBNF parser error at line 1, column 10: rule \"x\" is not "
       "defined"},
      {R"({"prompt": "x", "structured_outputs": {"structural_tag": {}}})",
       "structured_outputs.structural_tag",
       "structured_outputs.structural_tag: structures must be a non-empty array of {\"begin\", "
       "\"schema\", \"end\"}"},
      {R"({"prompt": "x", "structured_outputs": {"structural_tag": "{\"structures\": [{\"begin\": \"<a>\", \"schema\": {}, \"end\": \"\"}], \"triggers\": [\"<b\"]}"}})",
       "structured_outputs.structural_tag",
       "structured_outputs.structural_tag: structures[0].begin \"<a>\" does not start with any of "
       "the triggers"},
      {R"({"prompt": "x", "response_format": {"type": "structural_tag", "format": {"type": "any_text"}}})",
       "response_format",
       "response_format: format.type \"any_text\" is not supported (\"triggered_tags\" is)"},
      {R"({"prompt": "x", "structured_outputs": {"structural_tag": 3}})",
       "structured_outputs.structural_tag", "must be a structural tag (an object)"},
      {R"({"prompt": "x", "structured_outputs": {"frobnicate": 1}})",
       "structured_outputs.frobnicate",
       "structured_outputs.frobnicate is not supported (choice, json, regex, grammar, json_object "
       "and structural_tag are)"},
      {R"({"prompt": "x", "guided_choice": []})", "guided_choice",
       "guided_choice must be a non-empty array of strings"},
      {R"({"prompt": "x", "guided_choice": ["a", 2]})", "guided_choice[1]", "must be a string"},
      {R"({"prompt": "x", "structured_outputs": {"choice": "a"}})", "structured_outputs.choice",
       "must be a non-empty array"},
      {R"({"prompt": "x", "guided_choice": ["a"], "structured_outputs": {"choice": ["b"]}})",
       "structured_outputs", "not both"},
      {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {}}})",
       "response_format.json_schema.schema",
       "response_format.json_schema.schema (the JSON "
       "schema) is required"},
      {R"({"prompt": "x", "response_format": {"type": "json_schema"}})",
       "response_format.json_schema", "must be an object with the schema in \"schema\""},
      {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "p",
           "schema": {"type": "object", "properties": {"age": {"type": "integer",
           "multipleOf": 5}}}}}})",
       "response_format.json_schema.schema",
       "response_format.json_schema.schema: at /properties/age: multipleOf is not supported"},
  };
  for (const BadBody& c : cases) ExpectBad(ParseCompletionRequest(c.body), c);
}

TEST(OpenAiProtocolTest, BadEmbeddingBodies) {
  std::string many = R"({"input": [)";
  for (int i = 0; i < 2049; ++i) absl::StrAppend(&many, i > 0 ? "," : "", R"("x")");
  many += "]}";
  const std::vector<BadBody> cases = {
      {R"({})", "input", "input is required"},
      {R"({"input": {}})", "input", "input must be a string, an array"},
      {R"({"input": []})", "input", "input must not be an empty array"},
      {R"({"input": ["a", 3]})", "input[1]", "input[1] must be a string or an array of token ids"},
      {R"({"input": [[1], []]})", "input[1]", "input[1] must not be an empty array"},
      {many.c_str(), "input", "input may hold at most 2048 inputs, got 2049"},
      {R"({"input": "a", "dimensions": 0})", "dimensions", "dimensions must be at least 1, got 0"},
      {R"({"input": "a", "dimensions": "8"})", "dimensions", "dimensions must be an integer"},
      {R"({"input": "a", "encoding_format": "bytes"})", "encoding_format",
       "encoding_format must be \"float\" or \"base64\", got \"bytes\""},
      {R"({"input": "a", "normalize": 1})", "normalize", "normalize must be a boolean"},
      {R"({"input": "a", "user": 5})", "user", "user must be a string"},
      {R"({"input": "a", "add_special_tokens": "no"})", "add_special_tokens",
       "add_special_tokens must be a boolean"},
  };
  for (const BadBody& c : cases) ExpectBad(ParseEmbeddingRequest(c.body), c);
}

// Every input becomes one choice holding the embedding parameters and no sampling.
TEST(OpenAiProtocolTest, EmbeddingFieldsMapToGenerateRequests) {
  absl::StatusOr<ParsedRequest> r = ParseEmbeddingRequest(
      R"({"model": "m", "input": ["a b", [5, 6]], "dimensions": 32, "normalize": false,
          "encoding_format": "base64", "user": "u", "priority": -2,
          "truncate_prompt_tokens": 100, "add_special_tokens": false})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->endpoint, Endpoint::kEmbeddings);
  EXPECT_TRUE(r->embedding_base64);
  EXPECT_FALSE(r->add_special_tokens);
  ASSERT_EQ(ChoiceCount(*r), 2);
  const v1::GenerateRequest first = ChoiceRequest(*r, 0);
  const v1::GenerateRequest second = ChoiceRequest(*r, 1);
  EXPECT_EQ(first.text(), "a b");
  EXPECT_EQ(second.token_ids().ids_size(), 2);
  for (const v1::GenerateRequest& g : {first, second}) {
    EXPECT_EQ(g.model(), "m");
    EXPECT_FALSE(g.has_sampling());
    EXPECT_EQ(g.embedding().dimensions(), 32);
    ASSERT_TRUE(g.embedding().has_normalize());
    EXPECT_FALSE(g.embedding().normalize());
    EXPECT_EQ(g.priority(), -2);
    EXPECT_EQ(g.truncate_prompt_tokens(), 100);
  }
  absl::StatusOr<ParsedRequest> plain = ParseEmbeddingRequest(R"({"input": [1, 2, 3]})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->embedding_base64);
  EXPECT_TRUE(plain->add_special_tokens);
  EXPECT_EQ(ChoiceCount(*plain), 1);
  EXPECT_EQ(plain->generate.token_ids().ids_size(), 3);
  EXPECT_FALSE(plain->generate.embedding().has_normalize()) << "unset: the router's default";
  EXPECT_EQ(plain->generate.embedding().dimensions(), 0);
}

// vLLM's /classify: inputs as for embeddings, each a classification choice; use_activation and
// its older names (read first, as vLLM's get_use_activation does) set whether to activate.
TEST(OpenAiProtocolTest, ClassifyFieldsMapToGenerateRequests) {
  const auto parse = [](const std::string& body) {
    return ParseClassifyObject(nlohmann::ordered_json::parse(body));
  };
  absl::StatusOr<ParsedRequest> r = parse(
      R"({"model": "m", "input": ["a b", [5, 6]], "priority": 3, "truncate_prompt_tokens": 9,
          "add_special_tokens": false, "user": "u"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->endpoint, Endpoint::kClassify);
  EXPECT_FALSE(r->add_special_tokens);
  ASSERT_EQ(ChoiceCount(*r), 2);
  for (int32_t i : {0, 1}) {
    const v1::GenerateRequest g = ChoiceRequest(*r, i);
    EXPECT_EQ(g.model(), "m");
    EXPECT_FALSE(g.has_sampling());
    EXPECT_TRUE(g.embedding().classify());
    EXPECT_FALSE(g.embedding().has_normalize()) << "unset: the worker activates";
    EXPECT_EQ(g.embedding().dimensions(), 0);
    EXPECT_EQ(g.priority(), 3);
    EXPECT_EQ(g.truncate_prompt_tokens(), 9);
  }
  EXPECT_EQ(ChoiceRequest(*r, 1).token_ids().ids_size(), 2);
  ExpectNormalize(parse, {{R"({"input": "a", "use_activation": false})", false},
                          {R"({"input": "a", "activation": false, "use_activation": true})", false},
                          {R"({"input": "a", "softmax": true, "activation": false})", true},
                          {R"({"input": "a", "softmax": null, "use_activation": true})", true}});
  const std::vector<BadBody> bad = {
      {R"({})", "input", "input is required"},
      {R"({"input": "a", "use_activation": "yes"})", "use_activation",
       "use_activation must be a boolean"},
      {R"({"input": "a", "softmax": 1})", "softmax", "softmax must be a boolean"},
  };
  for (const BadBody& c : bad) ExpectBad(parse(c.body), c);
}

// /v1/embeddings takes vLLM's newer use_activation for normalize, normalize read first (as
// vLLM's get_use_activation reads the deprecated name first).
TEST(OpenAiProtocolTest, EmbeddingsTakeUseActivationForNormalize) {
  ExpectNormalize(ParseEmbeddingRequest,
                  {{R"({"input": "a", "use_activation": false})", false},
                   {R"({"input": "a", "normalize": true, "use_activation": false})", true},
                   {R"({"input": "a", "normalize": null, "use_activation": true})", true}});
  ExpectBad(ParseEmbeddingRequest(R"({"input": "a", "use_activation": 0})"),
            {"", "use_activation", "use_activation must be a boolean"});
}

// vLLM's /pooling: the served model's one task (embed, or classify for a classifier), parsed as
// that endpoint parses it, with encoding_format for both; another task and dimensions are 400s.
TEST(OpenAiProtocolTest, PoolingTakesTheModelsTask) {
  const auto parse = [](const std::string& body, bool classifier) {
    return ParsePoolingObject(nlohmann::ordered_json::parse(body), classifier);
  };
  absl::StatusOr<ParsedRequest> embed =
      parse(R"({"model": "m", "input": ["a", [5, 6]], "use_activation": false,
                "encoding_format": "base64", "priority": 2})",
            /*classifier=*/false);
  ASSERT_TRUE(embed.ok()) << embed.status();
  EXPECT_EQ(embed->endpoint, Endpoint::kPooling);
  EXPECT_TRUE(embed->embedding_base64);
  ASSERT_EQ(ChoiceCount(*embed), 2);
  for (int32_t i : {0, 1}) {
    const v1::GenerateRequest g = ChoiceRequest(*embed, i);
    EXPECT_EQ(g.model(), "m");
    EXPECT_FALSE(g.embedding().classify());
    ASSERT_TRUE(g.embedding().has_normalize());
    EXPECT_FALSE(g.embedding().normalize());
    EXPECT_EQ(g.priority(), 2);
  }
  absl::StatusOr<ParsedRequest> classify =
      parse(R"({"input": "a", "task": "classify", "softmax": false, "encoding_format": "base64"})",
            /*classifier=*/true);
  ASSERT_TRUE(classify.ok()) << classify.status();
  EXPECT_EQ(classify->endpoint, Endpoint::kPooling);
  EXPECT_TRUE(classify->embedding_base64) << "base64 for a classifier's scores too";
  EXPECT_TRUE(classify->generate.embedding().classify());
  EXPECT_FALSE(classify->generate.embedding().normalize());
  absl::StatusOr<ParsedRequest> defaulted = parse(R"({"input": [1], "task": null})", true);
  ASSERT_TRUE(defaulted.ok()) << defaulted.status();
  EXPECT_TRUE(defaulted->generate.embedding().classify()) << "a classifier's task is classify";
  EXPECT_FALSE(defaulted->generate.embedding().has_normalize());
  absl::StatusOr<ParsedRequest> embed_task = parse(R"({"input": [1], "task": "embed"})", false);
  ASSERT_TRUE(embed_task.ok()) << embed_task.status();
  EXPECT_FALSE(embed_task->generate.embedding().classify());

  ExpectBad(parse(R"({"input": "a", "task": "classify"})", false),
            {"", "task", "unsupported task: \"classify\"; this model's pooling task is \"embed\""});
  ExpectBad(parse(R"({"input": "a", "task": "embed"})", true),
            {"", "task", "this model's pooling task is \"classify\""});
  ExpectBad(parse(R"({"input": "a", "task": "token_embed"})", false),
            {"", "task", "token_embed and token_classify, are not served"});
  ExpectBad(parse(R"({"input": "a", "task": 3})", false), {"", "task", "task must be a string"});
  ExpectBad(parse(R"({"input": "a", "dimensions": 8})", false),
            {"", "dimensions", "dimensions is currently not supported"});
  ExpectBad(parse(R"({"input": "a", "encoding_format": "bytes"})", true),
            {"", "encoding_format", "encoding_format must be \"float\" or \"base64\""});
  ExpectBad(parse(R"({"task": "embed"})", false), {"", "input", "input is required"});
}

// A classifier scores each pair as one classification (of the two texts joined, for vLLM's LLM
// as reranker), in the answer's order, named after both texts.
TEST(OpenAiProtocolTest, JoinScorePairsClassifiesEachPairJoined) {
  absl::StatusOr<ParsedRequest> score =
      ParseScoreRequest(R"({"text_1": "q ", "text_2": ["a", "b"], "priority": 2})");
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_EQ(JoinScorePairs(*score),
            (std::vector<std::pair<std::string, std::string>>{{"q ", "a"}, {"q ", "b"}}))
      << "each choice's two texts, for a pair template";
  EXPECT_TRUE(score->cross_encoder);
  EXPECT_TRUE(score->score_pairs.empty());
  ASSERT_EQ(ChoiceCount(*score), 2);
  EXPECT_EQ(ChoiceRequest(*score, 0).text(), "q a");
  EXPECT_EQ(ChoiceRequest(*score, 1).text(), "q b");
  EXPECT_EQ(score->choice_names,
            (std::vector<std::string>{"text_1 + text_2[0]", "text_1 + text_2[1]"}));
  for (int32_t i : {0, 1}) {
    const v1::GenerateRequest g = ChoiceRequest(*score, i);
    EXPECT_TRUE(g.embedding().classify());
    EXPECT_TRUE(g.embedding().score_pair()) << "vLLM's score task";
    EXPECT_FALSE(g.embedding().has_normalize()) << "the classifier's activation applies";
    EXPECT_EQ(g.priority(), 2);
  }
  absl::StatusOr<ParsedRequest> pairwise =
      ParseScoreRequest(R"({"text_1": ["1", "2"], "text_2": ["x", "y"]})");
  ASSERT_TRUE(pairwise.ok()) << pairwise.status();
  JoinScorePairs(*pairwise);
  ASSERT_EQ(ChoiceCount(*pairwise), 2);
  EXPECT_EQ(ChoiceRequest(*pairwise, 1).text(), "2y");
  absl::StatusOr<ParsedRequest> rerank =
      ParseRerankRequest(R"({"query": "Q:", "documents": ["d0", "d1", "d2"], "top_n": 2})");
  ASSERT_TRUE(rerank.ok()) << rerank.status();
  JoinScorePairs(*rerank);
  ASSERT_EQ(ChoiceCount(*rerank), 3);
  EXPECT_EQ(ChoiceRequest(*rerank, 2).text(), "Q:d2");
  EXPECT_EQ(rerank->choice_names[2], "query + documents[2]");
  EXPECT_EQ(rerank->documents.size(), 3u);
  EXPECT_EQ(rerank->top_n, 2);
}

// vLLM's /score pairing: 1:1, 1:N (text_1 against each), N:N (pairwise); every text one
// embedding choice named for errors, none normalized.
TEST(OpenAiProtocolTest, ScorePairsTheTexts) {
  struct Case {
    const char* body;
    std::vector<std::pair<int32_t, int32_t>> pairs;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases = {
      {R"({"text_1": "a", "text_2": "b"})", {{0, 1}}, {"text_1", "text_2"}},
      {R"({"text_1": "a", "text_2": ["b", "c"]})",
       {{0, 1}, {0, 2}},
       {"text_1", "text_2[0]", "text_2[1]"}},
      {R"({"text_1": ["a"], "text_2": ["b", "c"]})",
       {{0, 1}, {0, 2}},
       {"text_1[0]", "text_2[0]", "text_2[1]"}},
      {R"({"text_1": ["a", "b"], "text_2": ["c", "d"]})",
       {{0, 2}, {1, 3}},
       {"text_1[0]", "text_1[1]", "text_2[0]", "text_2[1]"}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ParsedRequest> r = ParseScoreRequest(c.body);
    ASSERT_TRUE(r.ok()) << c.body << " -> " << r.status();
    EXPECT_EQ(r->endpoint, Endpoint::kScore);
    EXPECT_EQ(r->score_pairs, c.pairs) << c.body;
    EXPECT_EQ(r->choice_names, c.names) << c.body;
    ASSERT_EQ(ChoiceCount(*r), static_cast<int32_t>(c.names.size()));
    EXPECT_EQ(ChoiceRequest(*r, 0).text(), "a");
    EXPECT_TRUE(ChoiceRequest(*r, 1).embedding().has_normalize());
    EXPECT_FALSE(ChoiceRequest(*r, 1).embedding().normalize());
  }
  const std::vector<BadBody> bad = {
      {R"({"text_2": "b"})", "text_1", "text_1 is required"},
      {R"({"text_1": "a", "text_2": []})", "text_2", "text_2 must not be empty"},
      {R"({"text_1": "a", "text_2": [1]})", "text_2[0]", "text_2[0] must be a string"},
      {R"({"text_1": ["a", "b"], "text_2": ["c", "d", "e"]})", "text_1",
       "text_1 has 2 texts and text_2 3: give 1:1, 1:N or N:N"},
  };
  for (const BadBody& c : bad) ExpectBad(ParseScoreRequest(c.body), c);
}

TEST(OpenAiProtocolTest, RerankScoresEachDocumentAgainstTheQuery) {
  absl::StatusOr<ParsedRequest> r = ParseRerankRequest(
      R"({"model": "m", "query": "q", "documents": ["x", "y", "z"], "top_n": 2})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->endpoint, Endpoint::kRerank);
  EXPECT_EQ(r->top_n, 2);
  EXPECT_EQ(r->documents, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(r->score_pairs, (std::vector<std::pair<int32_t, int32_t>>{{0, 1}, {0, 2}, {0, 3}}));
  EXPECT_EQ(r->choice_names,
            (std::vector<std::string>{"query", "documents[0]", "documents[1]", "documents[2]"}));
  EXPECT_EQ(ChoiceRequest(*r, 0).text(), "q");
  EXPECT_EQ(ChoiceRequest(*r, 3).text(), "z");
  EXPECT_EQ(ChoiceRequest(*r, 3).model(), "m");
  const std::vector<BadBody> bad = {
      {R"({"documents": ["x"]})", "query", "query is required"},
      {R"({"query": ["q"], "documents": ["x"]})", "query", "query must be a string"},
      {R"({"query": "q", "documents": "x"})", "documents", "documents must be an array of strings"},
      {R"({"query": "q", "documents": []})", "documents", "documents must not be empty"},
      {R"({"query": "q", "documents": ["x"], "top_n": -1})", "top_n",
       "top_n must be >= 0 (0 returns all), got -1"},
  };
  for (const BadBody& c : bad) ExpectBad(ParseRerankRequest(c.body), c);
}

TEST(OpenAiProtocolTest, BadChatBodies) {
  const std::vector<BadBody> cases = {
      {R"({"model": "m"})", "messages", "messages is required"},
      {R"({"messages": {}})", "messages", "messages must be an array, got object"},
      {R"({"messages": []})", "messages", "messages must not be empty"},
      {R"({"messages": ["hi"]})", "messages[0]", "messages[0] must be an object, got string"},
      {R"({"messages": [{"content": "hi"}]})", "messages[0].role", "messages[0].role is required"},
      {R"({"messages": [{"role": "user", "content": "a"}, {"role": "developer", "content": "b"}]})",
       "messages[1].role", "is not supported (system, user, assistant or tool)"},
      {R"({"messages": [{"role": 1, "content": "a"}]})", "messages[0].role", "must be a string"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content",
       "messages[0].content must be a string or an array of text parts, got number"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type",
       "\"image_url\" is not supported (text parts only: text, input_text, output_text, refusal "
       "or thinking)"},
      {R"({"messages": [{"role": "assistant", "content": [{"type": "refusal"}]}]})",
       "messages[0].content[0].refusal", "messages[0].content[0].refusal is required"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
       "messages[0].content[0].text", "messages[0].content[0].text is required"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]})",
       "messages[0].content[0].text", "must be a string, got number"},
      {R"({"messages": [{"role": "user", "content": [7]}]})", "messages[0].content[0]",
       "messages[0].content[0] must be a string or an object, got number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": "5"})",
       "max_completion_tokens", "max_completion_tokens must be an integer, got string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})", "logprobs",
       "logprobs must be a boolean, got number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})",
       "continue_final_message",
       "Cannot set both continue_final_message and add_generation_prompt to true"},
      {R"({"messages": [{"role": "user", "content": "x"}], "request_id": ""})", "request_id",
       "request_id must be 1 to 256 bytes, got 0"},
      {R"({"messages": [{"role": "user", "content": "x"}], "request_id": 7})", "request_id",
       "request_id must be a string, got number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})",
       "top_logprobs", "top_logprobs must be in [0, 20], got 21"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs",
       "requires logprobs to be true"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
       "tools[0].function", "tools[0].function is required"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"description": "no name"}}]})",
       "tools[0].function.name", "must be a non-empty string"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "retrieval", "function": {"name": "f"}}]})",
       "tools[0].type", "must be \"function\", got \"retrieval\""},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": 1, "function": {"name": "f"}}]})",
       "tools[0].type", "must be \"function\", got 1"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"function": {"name": "f", "parameters": "{}"}}],
           "tool_choice": "required"})",
       "tools[0].function.parameters", "must be a JSON schema (an object), got string"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"function": {"name": "f"}}, {"function": {"name": "f"}}],
           "tool_choice": "required"})",
       "tools[1]", "repeats function name \"f\""},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"})", "tool_choice",
       "tool_choice needs tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "f"}}],
           "tool_choice": "sometimes"})",
       "tool_choice", "got \"sometimes\""},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "f"}}],
           "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       "tool_choice", "\"g\", which is not in tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "f"}}],
           "tool_choice": {"type": "function"}})",
       "tool_choice", "tool_choice must name a function"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "f"}}],
           "tool_choice": "required", "response_format": {"type": "json_object"}})",
       "tool_choice", "cannot be combined with response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "tools": [{"function": {"name": "f", "parameters": {"type": "object",
             "properties": {"n": {"type": "number", "multipleOf": 2}}}}}],
           "tool_choice": "required"})",
       "tools", "multipleOf"},
      {R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [
             {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{nope"}}]}]})",
       "messages[0].tool_calls[0].function.arguments", "is not valid JSON"},
      {R"({"messages": [{"role": "tool", "content": "r", "tool_call_id": 7}]})",
       "messages[0].tool_call_id", "must be a string, got number"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "response_format": {"type": "yaml"}})",
       "response_format",
       "response_format.type must be \"text\", \"json_object\", \"json_schema\" or "
       "\"structural_tag\""},
      {R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": "no"})",
       "add_generation_prompt", "must be a boolean"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": [1]})",
       "chat_template_kwargs", "chat_template_kwargs must be an object, got array"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "chat_template_kwargs": {"messages": []}})",
       "chat_template_kwargs.messages", "cannot replace the request's messages"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": {"text": "a"}})",
       "documents", "documents must be an array of objects, got object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [{"text": "a"}, "b"]})",
       "documents[1]", "documents[1] must be an object, got string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [],
           "chat_template_kwargs": {"documents": []}})",
       "documents", "give documents or chat_template_kwargs.documents, not both"},
      {R"({"messages": [{"role": "user", "content": "x"}], "echo": true,
           "tools": [{"type": "function", "function": {"name": "f"}}]})",
       "echo", "echo is not supported with tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": -3})", "n",
       "n must be in [1, 128], got -3"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": [1]})", "temperature",
       "temperature must be a number, got array"},
  };
  for (const BadBody& c : cases) ExpectBad(ParseChatRequest(c.body), c);
}

// use_beam_search: n is the beam width; sampling fields mean nothing to it and are accepted.
TEST(OpenAiProtocolTest, BeamSearchTakesNAsItsWidth) {
  for (const auto parse : {ParseCompletionRequest, ParseChatRequest}) {
    absl::StatusOr<ParsedRequest> r = parse(R"({
      "prompt": "x", "messages": [{"role": "user", "content": "x"}], "use_beam_search": true,
      "n": 4, "length_penalty": 2, "temperature": 0.7, "top_p": 0.5, "seed": 3,
      "stop_token_ids": [5], "ignore_eos": true})");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->beam_search);
    EXPECT_EQ(r->n, 4);
    EXPECT_EQ(r->length_penalty, 2.0);
  }
}

TEST(OpenAiProtocolTest, CompletionFieldsMapToGenerateRequest) {
  absl::StatusOr<ParsedRequest> r = ParseCompletionRequest(R"({
    "model": "llama", "prompt": "Hello", "max_tokens": 32, "temperature": 0, "top_p": 0.9,
    "top_k": 40, "seed": 7, "stop": "\n\n", "stop_token_ids": [2, 3], "ignore_eos": true,
    "include_stop_str_in_output": true, "cache_salt": "tenant-a", "stream": true,
    "stream_options": {"include_usage": true, "continuous_usage_stats": true}, "n": 1,
    "best_of": 1, "presence_penalty": 0.5,
    "frequency_penalty": -0.25, "repetition_penalty": 1.2, "min_p": 0.05, "min_tokens": 4, "logprobs": 3,
    "logit_bias": {"5": 1.5, "70": -100},
    "echo": false, "user": "u-1", "unknown_field": [1], "priority": -3,
    "allowed_token_ids": [9, 4], "skip_special_tokens": false, "truncate_prompt_tokens": 12,
    "guided_choice": ["yes", "no"], "return_token_ids": true, "use_beam_search": false, "length_penalty": 0.5,
    "return_tokens_as_token_ids": true,
    "response_format": {"type": "text"}
  })");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->endpoint, Endpoint::kCompletions);
  const v1::GenerateRequest& g = r->generate;
  EXPECT_TRUE(r->return_token_ids);
  EXPECT_TRUE(r->return_tokens_as_token_ids);
  EXPECT_FALSE(r->beam_search);
  EXPECT_EQ(r->length_penalty, 0.5);
  EXPECT_TRUE(g.return_prompt_token_ids());
  EXPECT_EQ(g.model(), "llama");
  EXPECT_EQ(g.text(), "Hello");
  const v1::SamplingParams& s = g.sampling();
  ASSERT_TRUE(s.has_max_tokens());
  EXPECT_EQ(s.max_tokens(), 32);
  ASSERT_TRUE(s.has_temperature());  // 0 is set, not "unset"
  EXPECT_EQ(s.temperature(), 0.0f);
  ASSERT_TRUE(s.has_top_p());
  EXPECT_FLOAT_EQ(s.top_p(), 0.9f);
  EXPECT_EQ(s.top_k(), 40);
  ASSERT_TRUE(s.has_seed());
  EXPECT_EQ(s.seed(), 7u);
  ASSERT_EQ(s.stop_size(), 1);
  EXPECT_EQ(s.stop(0), "\n\n");
  ASSERT_EQ(s.stop_token_ids_size(), 2);
  EXPECT_EQ(s.stop_token_ids(1), 3);
  EXPECT_TRUE(s.ignore_eos());
  EXPECT_TRUE(s.include_stop_str_in_output());
  EXPECT_EQ(s.logprobs(), 3);
  EXPECT_FLOAT_EQ(s.presence_penalty(), 0.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty(), -0.25f);
  ASSERT_TRUE(s.has_repetition_penalty());
  EXPECT_FLOAT_EQ(s.repetition_penalty(), 1.2f);
  EXPECT_FLOAT_EQ(s.min_p(), 0.05f);
  EXPECT_EQ(s.min_tokens(), 4);
  ASSERT_EQ(s.logit_bias_size(), 2);
  EXPECT_FLOAT_EQ(s.logit_bias().at(5), 1.5f);
  EXPECT_FLOAT_EQ(s.logit_bias().at(70), -100.0f);
  EXPECT_EQ(g.cache_salt(), "tenant-a");
  EXPECT_EQ(g.priority(), -3);
  EXPECT_EQ(std::vector<int32_t>(s.allowed_token_ids().begin(), s.allowed_token_ids().end()),
            (std::vector<int32_t>{9, 4}));
  ASSERT_TRUE(s.has_skip_special_tokens());
  EXPECT_FALSE(s.skip_special_tokens());
  EXPECT_EQ(std::vector<std::string>(s.guided_choice().begin(), s.guided_choice().end()),
            (std::vector<std::string>{"yes", "no"}));
  ASSERT_TRUE(g.has_truncate_prompt_tokens());
  EXPECT_EQ(g.truncate_prompt_tokens(), 12);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_TRUE(r->continuous_usage);
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 3);
}

TEST(OpenAiProtocolTest, CompletionDefaultsLeaveFieldsUnset) {
  absl::StatusOr<ParsedRequest> r =
      ParseCompletionRequest(R"({"prompt": "x", "temperature": null, "stop": null})");
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::SamplingParams& s = r->generate.sampling();
  EXPECT_FALSE(s.has_temperature());
  EXPECT_FALSE(s.has_top_p());
  EXPECT_FALSE(s.has_max_tokens());
  EXPECT_FALSE(s.has_seed());
  EXPECT_FALSE(s.has_repetition_penalty());
  EXPECT_EQ(s.stop_size(), 0);
  EXPECT_FALSE(s.has_skip_special_tokens());
  EXPECT_FALSE(r->generate.has_truncate_prompt_tokens());
  EXPECT_EQ(s.allowed_token_ids_size(), 0);
  EXPECT_EQ(r->generate.model(), "");
  EXPECT_FALSE(r->stream);
  EXPECT_FALSE(r->logprobs);
  EXPECT_EQ(s.logprobs(), 0);
}

TEST(OpenAiProtocolTest, PromptShapes) {
  absl::StatusOr<ParsedRequest> r = ParseCompletionRequest(R"({"prompt": [1, 2, 3]})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->generate.has_token_ids());
  EXPECT_EQ(std::vector<int32_t>(r->generate.token_ids().ids().begin(),
                                 r->generate.token_ids().ids().end()),
            (std::vector<int32_t>{1, 2, 3}));
  r = ParseCompletionRequest(R"({"prompt": [[5, 6]]})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->generate.token_ids().ids_size(), 2);
  r = ParseCompletionRequest(R"({"prompt": ["only one"]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.text(), "only one");
  // Range checks (negative ids, vocabulary) are request_validation's.
  r = ParseCompletionRequest(R"({"prompt": [-1], "max_tokens": -5, "temperature": -1})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().max_tokens(), -5);
}

// Choice i is sample i % n of prompt i / n; with a seed the samples are seeded seed + j.
TEST(OpenAiProtocolTest, ListsOfPromptsAndNExpandIntoChoices) {
  absl::StatusOr<ParsedRequest> r = ParseCompletionRequest(
      R"({"prompt": ["first", [7, 8], "third"], "n": 2, "seed": 18446744073709551615,
          "best_of": 2, "max_tokens": 5})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(ChoiceCount(*r), 6);
  const std::vector<std::string> texts = {"first", "", "third"};
  for (int32_t i = 0; i < 6; ++i) {
    const v1::GenerateRequest c = ChoiceRequest(*r, i);
    if (i / 2 == 1) {
      ASSERT_TRUE(c.has_token_ids()) << i;
      EXPECT_EQ(std::vector<int32_t>(c.token_ids().ids().begin(), c.token_ids().ids().end()),
                (std::vector<int32_t>{7, 8}));
    } else {
      EXPECT_EQ(c.text(), texts[static_cast<size_t>(i / 2)]) << i;
    }
    EXPECT_EQ(c.sampling().max_tokens(), 5) << i;
    // 2^64 - 1 + 1 wraps to 0.
    EXPECT_EQ(c.sampling().seed(), i % 2 == 0 ? 18446744073709551615u : 0u) << i;
  }
  // Without a seed the samples stay unseeded (the engine draws a fresh one for each).
  r = ParseCompletionRequest(R"({"prompt": "x", "n": 3})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(ChoiceCount(*r), 3);
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(ChoiceRequest(*r, i).sampling().has_seed());
    EXPECT_EQ(ChoiceRequest(*r, i).text(), "x");
  }
  r = ParseChatRequest(R"({"messages": [{"role": "user", "content": "x"}], "n": 4, "seed": 1})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(ChoiceCount(*r), 4);
  EXPECT_EQ(ChoiceRequest(*r, 3).sampling().seed(), 4u);
}

// echo with logprobs asks for the prompt's logprobs too (lm-eval's loglikelihood request).
TEST(OpenAiProtocolTest, EchoWithLogprobsAsksForPromptLogprobs) {
  absl::StatusOr<ParsedRequest> r =
      ParseCompletionRequest(R"({"prompt": "x", "echo": true, "logprobs": 2, "max_tokens": 1})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->echo);
  ASSERT_TRUE(r->generate.sampling().has_prompt_logprobs());
  EXPECT_EQ(r->generate.sampling().prompt_logprobs(), 2);
  r = ParseCompletionRequest(R"({"prompt": "x", "logprobs": 2})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->generate.sampling().has_prompt_logprobs());
  // vLLM's own field, on both endpoints; with echo + logprobs the larger N is computed.
  r = ParseChatRequest(R"({"messages": [{"role": "user", "content": "x"}], "prompt_logprobs": 0})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->prompt_logprobs, 0);
  EXPECT_EQ(r->generate.sampling().prompt_logprobs(), 0);
  r = ParseCompletionRequest(
      R"({"prompt": "x", "echo": true, "logprobs": 1, "prompt_logprobs": 4})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().prompt_logprobs(), 4);
}

TEST(OpenAiProtocolTest, StopArrayAndSeeds) {
  absl::StatusOr<ParsedRequest> r = ParseCompletionRequest(
      R"({"prompt": "x", "stop": ["a", "bc"], "seed": 18446744073709551615})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->generate.sampling().stop_size(), 2);
  EXPECT_EQ(r->generate.sampling().stop(1), "bc");
  EXPECT_EQ(r->generate.sampling().seed(), 18446744073709551615u);
  r = ParseCompletionRequest(R"({"prompt": "x", "seed": -1, "max_tokens": 8.0})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().seed(), 18446744073709551615u);
  EXPECT_EQ(r->generate.sampling().max_tokens(), 8);
}

// vLLM's two spellings of a regex constraint reach sampling.guided_regex as written.
TEST(OpenAiProtocolTest, GuidedRegexInEitherSpellingReachesTheSampling) {
  absl::StatusOr<ParsedRequest> r =
      ParseCompletionRequest(R"({"prompt": "x", "guided_regex": "\\d{3}-[a-z]+"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().guided_regex(), R"(\d{3}-[a-z]+)");
  r = ParseChatRequest(
      R"j({"messages": [{"role": "user", "content": "hi"}],
          "structured_outputs": {"regex": "(yes|no)", "json": null}})j");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().guided_regex(), "(yes|no)");
}

// vLLM's two spellings of a grammar constraint, in EBNF or Lark, reach sampling.guided_grammar as
// written.
TEST(OpenAiProtocolTest, GuidedGrammarInEitherSpellingReachesTheSampling) {
  absl::StatusOr<ParsedRequest> r = ParseCompletionRequest(
      R"({"prompt": "x", "guided_grammar": "root ::= (\"yes\" | \"no\") \".\""})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().guided_grammar(), R"(root ::= ("yes" | "no") ".")");
  r = ParseChatRequest(
      R"j({"messages": [{"role": "user", "content": "hi"}],
          "structured_outputs": {"grammar": "root ::= [0-9]+", "json": null}})j");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().guided_grammar(), "root ::= [0-9]+");
  // Lark's syntax (no `::=` line), as vLLM reads it: kept as written, translated by the worker.
  r = ParseCompletionRequest(R"({"prompt": "x", "guided_grammar": "start: \"a\"+\n"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().guided_grammar(), "start: \"a\"+\n");
}

// vLLM's structural tag, as its docs' example sends it (response_format) and as
// structured_outputs.structural_tag takes it (the JSON as a string): the worker gets the tag's
// JSON, which compiles to the same structures and triggers.
TEST(OpenAiProtocolTest, StructuralTagInEitherSpellingReachesTheSampling) {
  const std::string tag =
      R"({"structures": [{"begin": "<function=get_weather>", "schema": {"type": "object",
          "properties": {"city": {"type": "string"}}, "required": ["city"]},
          "end": "</function>"}], "triggers": ["<function="]})";
  absl::StatusOr<ParsedRequest> r = ParseChatRequest(absl::StrCat(
      R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": )",
      R"("structural_tag", )", tag.substr(1), "}"));
  ASSERT_TRUE(r.ok()) << r.status();
  const nlohmann::json from_format = nlohmann::json::parse(r->generate.sampling().structural_tag());
  EXPECT_EQ(from_format["triggers"], nlohmann::json::parse(tag)["triggers"]);
  EXPECT_EQ(from_format["structures"], nlohmann::json::parse(tag)["structures"]);
  EXPECT_TRUE(r->generate.sampling().json_schema().empty());

  r = ParseCompletionRequest(absl::StrCat(R"({"prompt": "x", "structured_outputs": )",
                                          R"({"structural_tag": )", nlohmann::json(tag).dump(),
                                          "}}"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().structural_tag(), tag);
}

TEST(OpenAiProtocolTest, ChatFieldsMapToGenerateRequest) {
  absl::StatusOr<ParsedRequest> r = ParseChatRequest(R"({
    "model": "qwen", "max_tokens": 10, "max_completion_tokens": 20, "logprobs": true,
    "top_logprobs": 5, "stream": false, "request_id": "trace-9",
    "documents": [{"doc_id": "1", "text": "Paris."}],
    "structured_outputs": {"choice": ["positive", "negative"], "json": null},
    "response_format": {"type": "text"}, "chat_template_kwargs": {"enable_thinking": false},
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}]},
      {"role": "assistant", "content": null},
      {"role": "user", "content": "again", "name": "bob"},
      {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."},
                                        {"type": "thinking", "thinking": "Hmm."}]},
      {"role": "user", "content": ["plain", {"type": "input_text", "text": "in"},
                                   {"type": "output_text", "text": "out"}]}]
  })");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->endpoint, Endpoint::kChat);
  EXPECT_EQ(r->generate.model(), "qwen");
  EXPECT_EQ(r->request_id, "trace-9");
  // vLLM's documents reach the template as its `documents`, beside the other kwargs.
  EXPECT_EQ(r->chat_template_kwargs.dump(),
            R"({"enable_thinking":false,"documents":[{"doc_id":"1","text":"Paris."}]})");
  ASSERT_EQ(r->generate.sampling().guided_choice_size(), 2);
  EXPECT_EQ(r->generate.sampling().guided_choice(1), "negative");
  EXPECT_EQ(r->generate.prompt_case(), v1::GenerateRequest::PROMPT_NOT_SET);
  EXPECT_EQ(r->generate.sampling().max_tokens(), 20);  // max_completion_tokens wins
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 5);
  EXPECT_EQ(r->generate.sampling().logprobs(), 5);
  EXPECT_TRUE(r->add_generation_prompt);
  ASSERT_EQ(r->messages.size(), 6u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].parts, (std::vector<std::string>{"Hel", "lo"}));
  EXPECT_EQ(r->messages[1].Text(), "Hel\nlo");  // text parts joined with "\n", as vLLM does
  EXPECT_EQ(r->messages[2].role, "assistant");
  EXPECT_TRUE(r->messages[2].parts.empty());  // null content: no parts
  EXPECT_EQ(r->messages[2].Text(), "");
  EXPECT_EQ(r->messages[3].parts, std::vector<std::string>{"again"});
  // The part types vLLM reads as text: a refusal's and a thinking part's own field, a plain
  // string, input_text and output_text (the Responses API's names).
  EXPECT_EQ(r->messages[4].parts, (std::vector<std::string>{"I can't.", "Hmm."}));
  EXPECT_EQ(r->messages[5].parts, (std::vector<std::string>{"plain", "in", "out"}));
}

// JSON mode is OpenAI's response_format json_object or vLLM's structured_outputs.json_object.
TEST(OpenAiProtocolTest, JsonObjectFromEitherField) {
  for (const char* body : {R"({"prompt": "x", "response_format": {"type": "json_object"}})",
                           R"({"prompt": "x", "structured_outputs": {"json_object": true}})"}) {
    absl::StatusOr<ParsedRequest> r = ParseCompletionRequest(body);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->generate.sampling().json_object()) << body;
  }
  absl::StatusOr<ParsedRequest> plain =
      ParseCompletionRequest(R"({"prompt": "x", "response_format": {"type": "text"}})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->generate.sampling().json_object());
  EXPECT_FALSE(
      ParseCompletionRequest(R"({"prompt": "x", "structured_outputs": {"json_object": 1}})").ok());
}

// A JSON schema comes as OpenAI's response_format json_schema, vLLM's guided_json (an object or
// JSON text) or structured_outputs.json, and reaches the router as the schema's JSON text.
TEST(OpenAiProtocolTest, JsonSchemaFromEveryField) {
  const char* schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  const std::vector<std::string> bodies = {
      absl::StrCat(R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema":)",
                   R"( {"name": "A", "strict": true, "schema": )", schema, "}}}"),
      absl::StrCat(R"({"prompt": "x", "guided_json": )", schema, "}"),
      absl::StrCat(R"({"prompt": "x", "guided_json": )", nlohmann::json(schema).dump(), "}"),
      absl::StrCat(R"({"prompt": "x", "structured_outputs": {"json": )", schema, "}}")};
  for (const std::string& body : bodies) {
    absl::StatusOr<ParsedRequest> r = ParseCompletionRequest(body);
    ASSERT_TRUE(r.ok()) << r.status() << " " << body;
    EXPECT_EQ(nlohmann::json::parse(r->generate.sampling().json_schema()),
              nlohmann::json::parse(schema))
        << body;
    EXPECT_FALSE(r->generate.sampling().json_object());
  }
  absl::StatusOr<ParsedRequest> chat = ParseChatRequest(absl::StrCat(
      R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type":)",
      R"( "json_schema", "json_schema": {"name": "A", "schema": )", schema, "}}}"));
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_FALSE(chat->generate.sampling().json_schema().empty());
}

TEST(OpenAiProtocolTest, ChatMaxTokensAloneAndNoLogprobs) {
  absl::StatusOr<ParsedRequest> r = ParseChatRequest(
      R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 12, "logprobs": false,
          "top_logprobs": 0, "add_generation_prompt": false, "tools": [], "response_format":
          {"type": "text"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generate.sampling().max_tokens(), 12);
  EXPECT_FALSE(r->logprobs);
  EXPECT_EQ(r->generate.sampling().logprobs(), 0);
  EXPECT_FALSE(r->add_generation_prompt);
}

TEST(OpenAiProtocolTest, ErrorParamEmptyForOtherStatuses) {
  EXPECT_EQ(ErrorParam(absl::OkStatus()), "");
  EXPECT_EQ(ErrorParam(absl::InvalidArgumentError("x")), "");
}

}  // namespace
}  // namespace headroom::router::openai
