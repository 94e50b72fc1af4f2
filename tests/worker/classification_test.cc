// Sequence classifiers against Hugging Face transformers: classification.json
// (scripts/gen_classification_fixtures.py) holds, for each prompt of the llama-classify (3 labels,
// softmax) and qwen2-reward (1 label, sigmoid) fixtures, transformers' logits, the activations
// vLLM applies and the top label. The engine must answer those scores however the prompts are
// batched and chunked, pick vLLM's activation from config.json's problem_type, and refuse what a
// classifier cannot do (and classification on a model that is not one) with the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "drive_engine.h"
#include "fixture_model.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"
#include "worker/engine/engine.h"
#include "worker/engine/follower.h"
#include "worker/model/checkpoint.h"
#include "worker/model/model_config.h"

namespace headroom::worker {
namespace {

using nlohmann::json;
using testing::HasSubstr;

struct Reference {
  std::vector<int32_t> ids;
  std::vector<double> logits;
  std::vector<double> softmax;
  std::vector<double> sigmoid;
  std::vector<double> probs;  // vLLM's activation for the config
  std::string label;
};

json FixtureDoc(const std::string& model) {
  std::ifstream file(testdata::FixtureDir(model) / "classification.json");
  return json::parse(file);
}

std::vector<Reference> References(const std::string& model) {
  const json doc = FixtureDoc(model);
  std::vector<Reference> out;
  for (const json& p : doc["prompts"]) {
    out.push_back({.ids = p["ids"].get<std::vector<int32_t>>(),
                   .logits = p["logits"].get<std::vector<double>>(),
                   .softmax = p["softmax"].get<std::vector<double>>(),
                   .sigmoid = p["sigmoid"].get<std::vector<double>>(),
                   .probs = p["probs"].get<std::vector<double>>(),
                   .label = p["label"].get<std::string>()});
  }
  return out;
}

void ExpectScoresNear(const std::vector<float>& got, const std::vector<double>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    // Both sides compute in float32 from the same stored weights; logits reach ~8.
    EXPECT_NEAR(got[i], want[i], 2e-4 + 1e-4 * std::fabs(want[i])) << what << " score " << i;
  }
}

Request Classify(int64_t id, const std::vector<int32_t>& prompt, std::optional<bool> activate) {
  Request r;
  r.id = RequestId{id};
  r.prompt = prompt;
  r.embedding = EmbeddingParams{.normalize = activate, .classify = true};
  return r;
}

struct Classified {
  std::vector<float> scores;
  std::string label;
};

// Runs `requests` to the end on the fixture's engine (with `config`, which may differ from the
// fixture's own by its problem_type); every request must answer once, with scores.
std::map<int64_t, Classified> RunClassifier(const std::string& model, const ModelConfig& config,
                                            const std::vector<Request>& requests,
                                            EngineOptions options, bool one_at_a_time) {
  CpuBackend backend(1);
  auto engine =
      Engine::Create(config, testdata::LoadFixtureModel(model).weights, options, &backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  std::map<int64_t, Classified> out;
  if (!engine.ok()) return out;
  testdata::DriveEngine(**engine, requests, one_at_a_time, [&out](StepToken& t) {
    EXPECT_FALSE(out.contains(t.id.value())) << "answered twice";
    EXPECT_NE(t.finish, FinishReason::kNone) << "a classification ends with its scores";
    out[t.id.value()] = {std::move(t.embedding), std::move(t.label)};
  });
  EXPECT_EQ(out.size(), requests.size());
  return out;
}

EngineOptions Options() {
  EngineOptions options = testdata::SmallEngineOptions();
  options.max_model_len = 256;  // the longest prompt has 150 tokens
  return options;
}

class ClassificationParityTest : public testing::TestWithParam<std::string> {};

// transformers' config.json becomes the decoder's architecture with the classifier's labels and
// activation, and no LM head.
TEST_P(ClassificationParityTest, ConfigReadsTheLabelsAndTheActivation) {
  const json doc = FixtureDoc(GetParam());
  const ModelConfig& config = testdata::LoadFixtureModel(GetParam()).config;
  ASSERT_TRUE(config.classifier.has_value());
  EXPECT_EQ(config.classifier->architecture, doc["architecture"]);
  EXPECT_EQ(config.architecture,
            GetParam() == "llama-classify" ? "LlamaForCausalLM" : "Qwen2ForCausalLM");
  EXPECT_EQ(config.classifier->labels, doc["id2label"].get<std::vector<std::string>>());
  EXPECT_EQ(config.classifier->activation, doc["activation"] == "softmax"
                                               ? ClassifierActivation::kSoftmax
                                               : ClassifierActivation::kSigmoid);
  EXPECT_TRUE(config.tie_word_embeddings) << "a classifier has no LM head to load";
  const ModelWeights& weights = testdata::LoadFixtureModel(GetParam()).weights;
  EXPECT_EQ(weights.score.shape,
            (std::vector<int64_t>{doc["num_labels"].get<int64_t>(), config.hidden_size}));
  EXPECT_TRUE(weights.lm_head.empty());
}

// Every prompt, activated and raw, in one batch of 32-token steps (the longest prompt takes five):
// the scores are transformers' and the label its argmax's id2label.
TEST_P(ClassificationParityTest, ScoresMatchTransformersInChunkedBatches) {
  const std::vector<Reference> refs = References(GetParam());
  const ModelConfig& config = testdata::LoadFixtureModel(GetParam()).config;
  std::vector<Request> requests;
  for (size_t i = 0; i < refs.size(); ++i) {
    const auto id = static_cast<int64_t>(i);
    requests.push_back(Classify(100 + id, refs[i].ids, std::nullopt));
    requests.push_back(Classify(200 + id, refs[i].ids, false));
  }
  EngineOptions options = Options();
  options.max_num_batched_tokens = 32;
  const auto run = RunClassifier(GetParam(), config, requests, options, /*one_at_a_time=*/false);
  for (size_t i = 0; i < refs.size(); ++i) {
    const auto id = static_cast<int64_t>(i);
    ExpectScoresNear(run.at(100 + id).scores, refs[i].probs, absl::StrCat("prompt ", i));
    EXPECT_EQ(run.at(100 + id).label, refs[i].label) << "prompt " << i;
    ExpectScoresNear(run.at(200 + id).scores, refs[i].logits, absl::StrCat("raw, prompt ", i));
    EXPECT_EQ(run.at(200 + id).label, refs[i].label) << "raw, prompt " << i;
  }
}

// A prompt already in the prefix cache still computes its last token, so it still classifies.
TEST_P(ClassificationParityTest, CachedPromptsClassifyTheSame) {
  const std::vector<Reference> refs = References(GetParam());
  const ModelConfig& config = testdata::LoadFixtureModel(GetParam()).config;
  std::vector<Request> requests;
  for (int copy = 0; copy < 2; ++copy) {
    for (size_t i = 0; i < refs.size(); ++i) {
      requests.push_back(Classify(copy * 10 + static_cast<int64_t>(i), refs[i].ids, {}));
    }
  }
  const auto run = RunClassifier(GetParam(), config, requests, Options(), /*one_at_a_time=*/true);
  for (const auto& [id, got] : run) {
    ExpectScoresNear(got.scores, refs[static_cast<size_t>(id % 10)].probs,
                     absl::StrCat("request ", id));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ClassificationParityTest,
                         testing::Values("llama-classify", "qwen2-reward"),
                         [](const testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// A tensor-parallel group of two (leader and follower threads over Gloo): rank 0 holds half of
// each sharded tensor and the whole score head, and reads the last hidden state whole after the
// last all-reduce, so the scores are still transformers'.
TEST(ClassificationTest, AGroupOfTwoClassifiesAsOneRank) {
  const std::vector<Reference> refs = References("llama-classify");
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-classify");
  EngineOptions options = Options();
  options.max_num_batched_tokens = 32;
  InMemoryRendezvousStore store;
  std::thread follower_thread([&] {
    auto comm = GlooCommunicator::Create(
        {.rank = 1, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
    ASSERT_TRUE(comm.ok()) << comm.status();
    const ModelWeights shard = testdata::LoadFixtureShard("llama-classify", 2, 1);
    CpuBackend backend(1);
    auto follower = Follower::Create(m.config, shard, options, &backend, comm->get());
    ASSERT_TRUE(follower.ok()) << follower.status();
    const absl::Status run = (*follower)->Run();
    EXPECT_TRUE(run.ok()) << run;
  });
  auto comm = GlooCommunicator::Create(
      {.rank = 0, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
  ASSERT_TRUE(comm.ok()) << comm.status();
  const ModelWeights shard = testdata::LoadFixtureShard("llama-classify", 2, 0);
  EXPECT_EQ(shard.score.data, m.weights.score.data) << "every rank holds the whole head";
  CpuBackend backend(1);
  auto leader = Engine::Create(m.config, shard, options, &backend, comm->get());
  ASSERT_TRUE(leader.ok()) << leader.status();
  std::vector<Request> requests;
  for (size_t i = 0; i < refs.size(); ++i) {
    requests.push_back(Classify(static_cast<int64_t>(i), refs[i].ids, {}));
  }
  std::map<int64_t, Classified> got;
  testdata::DriveEngine(**leader, requests, /*one_at_a_time=*/false, [&got](StepToken& t) {
    got[t.id.value()] = {std::move(t.embedding), std::move(t.label)};
  });
  ASSERT_TRUE((*leader)->StopFollowers().ok());
  follower_thread.join();
  ASSERT_EQ(got.size(), refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    ExpectScoresNear(got.at(static_cast<int64_t>(i)).scores, refs[i].probs,
                     absl::StrCat("tp 2, prompt ", i));
    EXPECT_EQ(got.at(static_cast<int64_t>(i)).label, refs[i].label);
  }
}

// config.json's problem_type picks vLLM's activation over three labels: a sigmoid per label for
// multi_label_classification, none for regression.
TEST(ClassificationTest, ProblemTypePicksTheActivation) {
  const std::vector<Reference> refs = References("llama-classify");
  const std::string dir = testdata::FixtureDir("llama-classify").string();
  for (const char* type : {"multi_label_classification", "regression"}) {
    absl::StatusOr<ModelConfig> config =
        LoadModelConfig(dir, absl::StrCat(R"({"problem_type": ")", type, R"("})"));
    ASSERT_TRUE(config.ok()) << config.status();
    std::vector<Request> requests;
    for (size_t i = 0; i < refs.size(); ++i) {
      requests.push_back(Classify(static_cast<int64_t>(i), refs[i].ids, {}));
    }
    const auto run = RunClassifier("llama-classify", *config, requests, Options(), false);
    const bool regression = std::string(type) == "regression";
    for (size_t i = 0; i < refs.size(); ++i) {
      const Classified& got = run.at(static_cast<int64_t>(i));
      ExpectScoresNear(got.scores, regression ? refs[i].logits : refs[i].sigmoid,
                       absl::StrCat(type, " prompt ", i));
    }
  }
}

// vLLM's LLM-as-reranker conversion of a causal LM (config.json through --hf-overrides): the head
// is built from the LM head's rows of the tokens (the untied lm_head.weight of llama-gqa, the
// embedding of llama-tied), and the scores are transformers' logits of those tokens, the 2-way
// softmax of the second for from_2_way_softmax (also as Qwen3-Reranker's
// is_original_qwen3_reranker asks it), a softmax over the three for no_post_processing.
TEST(ClassificationTest, FromTokenConversionMatchesTransformers) {
  // The byte tokenizer's vocabulary: each of these one-letter tokens is its byte.
  const auto byte_id = [](std::string_view token) -> std::optional<int32_t> {
    if (token.size() != 1) return std::nullopt;
    return static_cast<int32_t>(static_cast<unsigned char>(token[0]));
  };
  struct Case {
    const char* overrides;
    bool two_way;
  };
  const std::vector<Case> cases = {
      {R"({"architectures": ["LlamaForSequenceClassification"],
           "classifier_from_token": ["a", "b"], "method": "from_2_way_softmax"})",
       true},
      {R"({"architectures": ["LlamaForSequenceClassification"],
           "classifier_from_token": ["a", "b"], "is_original_qwen3_reranker": true})",
       true},
      {R"({"architectures": ["LlamaForSequenceClassification"],
           "classifier_from_token": ["x", "y", "z"], "method": "no_post_processing"})",
       false},
  };
  for (const char* fixture : {"llama-gqa", "llama-tied"}) {
    std::ifstream file(testdata::FixtureDir(fixture) / "classification_from_token.json");
    const json doc = json::parse(file);
    const std::string dir = testdata::FixtureDir(fixture).string();
    for (const Case& c : cases) {
      SCOPED_TRACE(absl::StrCat(fixture, " ", c.overrides));
      absl::StatusOr<ModelConfig> config = LoadModelConfig(dir, c.overrides);
      ASSERT_TRUE(config.ok()) << config.status();
      ASSERT_TRUE(ResolveClassifierTokens(byte_id, config->vocab_size, *config->classifier).ok());
      EXPECT_EQ(config->classifier->num_labels(), c.two_way ? 1 : 3);
      absl::StatusOr<ModelWeights> weights = LoadWeights(*config, dir);
      ASSERT_TRUE(weights.ok()) << weights.status();
      EXPECT_TRUE(weights->lm_head.empty()) << "the LM head is not loaded whole";
      CpuBackend backend(1);
      auto engine = Engine::Create(*config, *weights, Options(), &backend);
      ASSERT_TRUE(engine.ok()) << engine.status();
      std::vector<Request> requests;
      const json& prompts = doc["prompts"];
      for (size_t i = 0; i < prompts.size(); ++i) {
        const auto ids = prompts[i]["ids"].get<std::vector<int32_t>>();
        requests.push_back(Classify(static_cast<int64_t>(i), ids, {}));
        requests.push_back(Classify(100 + static_cast<int64_t>(i), ids, false));
      }
      std::map<int64_t, Classified> got;
      testdata::DriveEngine(**engine, requests, false, [&got](StepToken& t) {
        got[t.id.value()] = {std::move(t.embedding), std::move(t.label)};
      });
      ASSERT_EQ(got.size(), requests.size());
      for (size_t i = 0; i < prompts.size(); ++i) {
        const auto id = static_cast<int64_t>(i);
        const json& p = prompts[i];
        if (c.two_way) {
          const auto logits = p["two_way_logits"].get<std::vector<double>>();
          ExpectScoresNear(got.at(id).scores, {p["two_way_score"].get<double>()},
                           absl::StrCat("prompt ", i));
          ExpectScoresNear(got.at(100 + id).scores, {logits[1] - logits[0]},
                           absl::StrCat("raw, prompt ", i));
        } else {
          ExpectScoresNear(got.at(id).scores, p["per_token_probs"].get<std::vector<double>>(),
                           absl::StrCat("prompt ", i));
          ExpectScoresNear(got.at(100 + id).scores,
                           p["per_token_logits"].get<std::vector<double>>(),
                           absl::StrCat("raw, prompt ", i));
        }
      }
    }
  }
}

// A pair's score (vLLM's score task) takes the cross-encoder activation config.json names:
// sbert_ce_default_activation_function Identity answers the raw score, sentence_transformers'
// activation_fn Tanh its tanh; classification keeps its sigmoid either way.
TEST(ClassificationTest, ScorePairsTakeTheCrossEncoderActivation) {
  const std::vector<Reference> refs = References("qwen2-reward");
  const std::string dir = testdata::FixtureDir("qwen2-reward").string();
  for (const char* overrides :
       {R"({"sbert_ce_default_activation_function": "torch.nn.modules.linear.Identity"})",
        R"({"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Tanh"}})"}) {
    SCOPED_TRACE(overrides);
    absl::StatusOr<ModelConfig> config = LoadModelConfig(dir, overrides);
    ASSERT_TRUE(config.ok()) << config.status();
    const bool tanh = std::string(overrides).find("Tanh") != std::string::npos;
    std::vector<Request> requests;
    for (size_t i = 0; i < refs.size(); ++i) {
      requests.push_back(Classify(static_cast<int64_t>(i), refs[i].ids, {}));
      Request pair = Classify(100 + static_cast<int64_t>(i), refs[i].ids, {});
      pair.embedding->score_pair = true;
      requests.push_back(pair);
    }
    const auto run = RunClassifier("qwen2-reward", *config, requests, Options(), false);
    for (size_t i = 0; i < refs.size(); ++i) {
      const auto id = static_cast<int64_t>(i);
      ExpectScoresNear(run.at(id).scores, refs[i].probs, absl::StrCat("classify ", i));
      const double logit = refs[i].logits[0];
      ExpectScoresNear(run.at(100 + id).scores, {tanh ? std::tanh(logit) : logit},
                       absl::StrCat("score ", i));
    }
  }
  const absl::Status other =
      LoadModelConfig(
          dir, R"({"sbert_ce_default_activation_function": "torch.nn.modules.activation.ReLU"})")
          .status();
  EXPECT_EQ(other.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.message(), HasSubstr("sbert_ce_default_activation_function"));
  EXPECT_THAT(other.message(), HasSubstr("ReLU"));
}

// What a classifier cannot do, and classification where the model is no classifier: refused
// before anything runs, saying why.
TEST(ClassificationTest, RefusalsSayWhy) {
  CpuBackend backend(1);
  const testdata::FixtureModel& classifier = testdata::LoadFixtureModel("llama-classify");
  auto engine = Engine::Create(classifier.config, classifier.weights, Options(), &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const std::vector<int32_t> prompt = {72, 105};

  Request generate;
  generate.id = RequestId{1};
  generate.prompt = prompt;
  generate.sampling.max_tokens = 4;
  absl::Status st = (*engine)->AddRequest(generate);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("LlamaForSequenceClassification"));
  EXPECT_THAT(st.message(), HasSubstr("not generation"));

  Request embed = Classify(2, prompt, {});
  embed.embedding->classify = false;
  st = (*engine)->AddRequest(embed);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("not embeddings"));

  Request shaped = Classify(3, prompt, {});
  shaped.embedding->dimensions = 2;
  st = (*engine)->AddRequest(shaped);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("dimensions (2)"));
  EXPECT_THAT(st.message(), HasSubstr("(3)"));  // the labels
  EXPECT_FALSE((*engine)->HasWork());

  const testdata::FixtureModel& causal = testdata::LoadFixtureModel("llama-gqa");
  auto generator = Engine::Create(causal.config, causal.weights, Options(), &backend);
  ASSERT_TRUE(generator.ok()) << generator.status();
  st = (*generator)->AddRequest(Classify(4, prompt, {}));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("not a sequence classifier (LlamaForCausalLM)"));
}

// A classifier checkpoint without its head: the missing tensor is named.
TEST(ClassificationTest, MissingScoreHeadIsNamed) {
  const std::string dir = testdata::FixtureDir("llama-gqa").string();
  absl::StatusOr<ModelConfig> config =
      LoadModelConfig(dir, R"({"architectures": ["LlamaForSequenceClassification"]})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->classifier->labels, (std::vector<std::string>{"LABEL_0", "LABEL_1"}))
      << "transformers' default labels";
  const absl::StatusOr<ModelWeights> weights = LoadWeights(*config, dir);
  ASSERT_FALSE(weights.ok());
  EXPECT_THAT(weights.status().message(), HasSubstr("score.weight"));
}

ModelConfig ParseWith(const std::string& extra) {
  const std::string text = absl::StrCat(
      R"({"architectures": ["Qwen2ForSequenceClassification"], "vocab_size": 256,
          "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "max_position_embeddings": 256)",
      extra, "}");
  absl::StatusOr<ModelConfig> config = ParseModelConfigJson(text, "config.json");
  EXPECT_TRUE(config.ok()) << config.status() << " for " << extra;
  return config.ok() ? *config : ModelConfig{};
}

absl::Status ParseError(const std::string& architecture, const std::string& extra) {
  const std::string text =
      absl::StrCat(R"({"architectures": [")", architecture, R"("], "vocab_size": 256,
          "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "max_position_embeddings": 256)",
                   extra, "}");
  return ParseModelConfigJson(text, "config.json").status();
}

TEST(ClassifierConfigTest, LabelsAndActivationAsTransformersAndVllmReadThem) {
  const ModelConfig counted = ParseWith(R"(, "num_labels": 4)");
  ASSERT_TRUE(counted.classifier.has_value());
  EXPECT_EQ(counted.classifier->num_labels(), 4);
  EXPECT_EQ(counted.classifier->labels.back(), "LABEL_3");
  EXPECT_EQ(counted.classifier->activation, ClassifierActivation::kSoftmax);
  // id2label decides over num_labels (transformers keeps id2label), in id order.
  const ModelConfig named = ParseWith(R"(, "num_labels": 4, "id2label": {"1": "yes", "0": "no"},
                   "problem_type": "single_label_classification")");
  EXPECT_EQ(named.classifier->labels, (std::vector<std::string>{"no", "yes"}));
  EXPECT_EQ(named.classifier->activation, ClassifierActivation::kSoftmax);
  EXPECT_EQ(ParseWith(R"(, "num_labels": 1)").classifier->activation,
            ClassifierActivation::kSigmoid);
  EXPECT_EQ(ParseWith(R"(, "problem_type": "regression")").classifier->activation,
            ClassifierActivation::kNone);
  EXPECT_FALSE(ParseWith("").classifier->problem_type.size() > 0);
}

TEST(ClassifierConfigTest, RefusalsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(, "id2label": {"0": "a", "2": "b"})", "id2label"},
      {R"(, "id2label": {"0": "a", "00": "b"})", "names id 0 twice"},
      {R"(, "id2label": {"0": 7})", "not a string"},
      {R"(, "id2label": {})", "id2label"},
      {R"(, "id2label": ["a", "b"])", "id2label"},
      {R"(, "num_labels": 0)", "num_labels"},
      {R"(, "problem_type": "ranking")", "ranking"},
  };
  for (const auto& [extra, needle] : cases) {
    const absl::Status st = ParseError("Qwen2ForSequenceClassification", extra);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << extra;
    EXPECT_THAT(st.message(), HasSubstr(needle)) << extra;
  }
  for (const char* architecture : {"Gemma3ForSequenceClassification",
                                   "BertForSequenceClassification", "ForSequenceClassification"}) {
    const absl::Status st = ParseError(architecture, "");
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << architecture;
    EXPECT_THAT(st.message(), HasSubstr(absl::StrCat("unsupported architecture \"", architecture)));
  }
}

// The conversion's keys are checked as vLLM checks them, and a token the tokenizer lacks is named.
TEST(ClassifierConfigTest, ConversionRefusalsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(, "method": "from_2_way_softmax")", "classifier_from_token\" is missing"},
      {R"(, "classifier_from_token": ["no", "yes"])", "method\" is missing"},
      {R"(, "classifier_from_token": ["a", "b", "c"], "method": "from_2_way_softmax")",
       "has 3 tokens; from_2_way_softmax takes two"},
      {R"(, "classifier_from_token": ["a"], "method": "pooled")", "is \"pooled\""},
      {R"(, "classifier_from_token": "yes", "method": "no_post_processing")", "must be a list"},
      {R"(, "classifier_from_token": ["a"], "is_original_qwen3_reranker": "yes")",
       "must be a boolean"},
      {R"(, "classifier_from_token": ["a"], "is_original_qwen3_reranker": true)",
       "from_2_way_softmax takes two"},
  };
  for (const auto& [extra, needle] : cases) {
    const absl::Status st = ParseError("Qwen2ForSequenceClassification", extra);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << extra;
    EXPECT_THAT(st.message(), HasSubstr(needle)) << extra;
  }
  ModelConfig config = ParseWith(R"(, "classifier_from_token": ["no", "yes"],
                                    "method": "no_post_processing", "id2label": {"0": "only"})");
  EXPECT_EQ(config.classifier->labels, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
  const absl::Status unknown = ResolveClassifierTokens(
      [](std::string_view token) -> std::optional<int32_t> {
        if (token == "no") return 5;
        return std::nullopt;
      },
      256, *config.classifier);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("\"yes\" is not a token of the model's tokenizer"));
  const absl::Status outside = ResolveClassifierTokens(
      [](std::string_view) -> std::optional<int32_t> { return 300; }, 256, *config.classifier);
  EXPECT_THAT(outside.message(), HasSubstr("is id 300, outside the model's vocabulary of 256"));
}

}  // namespace
}  // namespace headroom::worker
