// vLLM's /classify end to end: a real router and two real workers serving the llama-classify
// fixture (a LlamaForSequenceClassification with 3 named labels), checked against Hugging Face
// transformers' scores (tests/worker/fixtures/llama-classify/classification.json,
// scripts/gen_classification_fixtures.py) in vLLM's response shape, over gRPC too, with the
// refusals a vLLM user gets from a classifier (400 saying why).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "http_cluster.h"
#include "nlohmann/json.hpp"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;

struct Reference {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<double> logits;
  std::vector<double> probs;
  std::string label;
};

std::vector<Reference> References() {
  std::ifstream file(worker::testdata::FixtureDir("llama-classify") / "classification.json");
  const Json doc = Json::parse(file);
  std::vector<Reference> out;
  for (const Json& p : doc["prompts"]) {
    out.push_back({.text = p["text"].get<std::string>(),
                   .ids = p["ids"].get<std::vector<int32_t>>(),
                   .logits = p["logits"].get<std::vector<double>>(),
                   .probs = p["probs"].get<std::vector<double>>(),
                   .label = p["label"].get<std::string>()});
  }
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 2e-4 + 1e-4 * std::fabs(want[i])) << what << " score " << i;
  }
}

// The message of a 400 answer (an empty string when the answer is not a 400).
std::string BadRequestMessage(const HttpResponse& response) {
  EXPECT_EQ(response.status, 400) << response.body;
  if (response.status != 400) return "";
  return Json::parse(response.body)["error"]["message"].get<std::string>();
}

class ClassifyE2eTest : public SharedClusterTest<ClassifyE2eTest> {
 public:
  static std::vector<std::string> ExtraWorkerFlags() {
    return {"--model", worker::testdata::FixtureDir("llama-classify").string()};
  }
};

// Text inputs (the byte tokenizer's ids are the fixture's) on both routes: one entry per input in
// order with transformers' softmax, its top label and the label count; usage counts the tokens.
TEST_F(ClassifyE2eTest, TextInputsMatchTransformers) {
  const std::vector<Reference> refs = References();
  Json inputs = Json::array();
  size_t tokens = 0;
  for (const Reference& r : refs) {
    inputs.push_back(r.text);
    tokens += r.ids.size();
  }
  for (const char* path : {"/classify", "/v1/classify"}) {
    const HttpResponse response = cluster_->Post(path, Json{{"input", inputs}}.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    const Json body = Json::parse(response.body);
    EXPECT_EQ(body["object"], "list");
    EXPECT_EQ(body["id"].get<std::string>().rfind("classify-", 0), 0u) << body["id"];
    EXPECT_FALSE(body["model"].get<std::string>().empty());
    EXPECT_EQ(body["usage"]["prompt_tokens"], tokens);
    EXPECT_EQ(body["usage"]["total_tokens"], tokens);
    EXPECT_EQ(body["usage"]["completion_tokens"], 0);
    ASSERT_EQ(body["data"].size(), refs.size());
    for (size_t i = 0; i < refs.size(); ++i) {
      const Json& entry = body["data"][i];
      EXPECT_EQ(entry["index"], i);
      EXPECT_EQ(entry["label"], refs[i].label) << path << " input " << i;
      EXPECT_EQ(entry["num_classes"], 3);
      ExpectNear(entry["probs"].get<std::vector<double>>(), refs[i].probs,
                 std::string(path) + " input " + std::to_string(i));
    }
  }
}

// use_activation false answers the raw scores (token-id inputs this time); the label is still
// the top one.
TEST_F(ClassifyE2eTest, RawScoresWithoutActivation) {
  const std::vector<Reference> refs = References();
  const HttpResponse response =
      cluster_->Post("/classify", Json{{"input", refs[2].ids}, {"use_activation", false}}.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const Json entry = Json::parse(response.body)["data"][0];
  ExpectNear(entry["probs"].get<std::vector<double>>(), refs[2].logits, "raw");
  EXPECT_EQ(entry["label"], refs[2].label);
}

// vLLM's /invocations on a classifier (its groups report LoadReport.classifier): "input" and
// "messages" bodies are classifications, answered as /classify answers them.
TEST_F(ClassifyE2eTest, InvocationsClassify) {
  const std::vector<Reference> refs = References();
  const Json messages = Json::array({Json{{"role", "user"}, {"content", refs[0].text}}});
  for (const Json& body : {Json{{"input", refs[3].text}}, Json{{"messages", messages}}}) {
    const HttpResponse direct = cluster_->Post("/classify", body.dump());
    const HttpResponse invoked = cluster_->Post("/invocations", body.dump());
    ASSERT_EQ(direct.status, 200) << direct.body;
    ASSERT_EQ(invoked.status, 200) << invoked.body;
    const Json want = Json::parse(direct.body);
    const Json got = Json::parse(invoked.body);
    EXPECT_EQ(got["id"].get<std::string>().rfind("classify-", 0), 0u) << got["id"];
    ASSERT_EQ(got["data"].size(), 1u) << invoked.body;
    EXPECT_EQ(got["data"][0]["label"], want["data"][0]["label"]) << body.dump();
    // Not bit-equal: the second may find the prompt in a group's prefix cache, and a matrix
    // product of another height rounds differently.
    ExpectNear(got["data"][0]["probs"].get<std::vector<double>>(),
               want["data"][0]["probs"].get<std::vector<double>>(), body.dump());
    EXPECT_EQ(got["usage"], want["usage"]) << body.dump();
  }
  ExpectNear(Json::parse(cluster_->Post("/invocations", Json{{"input", refs[3].text}}.dump())
                             .body)["data"][0]["probs"]
                 .get<std::vector<double>>(),
             refs[3].probs, "/invocations");
}

// vLLM's /pooling on a classifier: its task is classify, each entry's data transformers'
// softmax (the raw scores with use_activation false); the chat form too; an embedding is a 400.
TEST_F(ClassifyE2eTest, PoolingClassifies) {
  const std::vector<Reference> refs = References();
  for (const bool activate : {true, false}) {
    const HttpResponse response = cluster_->Post(
        "/pooling",
        Json{{"input", {refs[1].text, refs[4].text}}, {"use_activation", activate}}.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    const Json body = Json::parse(response.body);
    EXPECT_EQ(body["id"].get<std::string>().rfind("pooling-", 0), 0u) << body["id"];
    EXPECT_EQ(body["usage"]["prompt_tokens"], refs[1].ids.size() + refs[4].ids.size());
    ASSERT_EQ(body["data"].size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const Reference& ref = refs[i == 0 ? 1 : 4];
      EXPECT_EQ(body["data"][i],
                (Json{{"index", i}, {"object", "pooling"}, {"data", body["data"][i]["data"]}}))
          << "vLLM's PoolingResponseData fields only";
      ExpectNear(body["data"][i]["data"].get<std::vector<double>>(),
                 activate ? ref.probs : ref.logits, "pooling " + std::to_string(i));
    }
  }
  const Json messages = Json::array({Json{{"role", "user"}, {"content", refs[0].text}}});
  const HttpResponse chat = cluster_->Post("/pooling", Json{{"messages", messages}}.dump());
  const HttpResponse classified = cluster_->Post("/classify", Json{{"messages", messages}}.dump());
  ASSERT_EQ(chat.status, 200) << chat.body;
  ASSERT_EQ(classified.status, 200) << classified.body;
  ExpectNear(Json::parse(chat.body)["data"][0]["data"].get<std::vector<double>>(),
             Json::parse(classified.body)["data"][0]["probs"].get<std::vector<double>>(),
             "chat form");
  const std::string message =
      BadRequestMessage(cluster_->Post("/pooling", Json{{"input", "x"}, {"task", "embed"}}.dump()));
  EXPECT_NE(message.find("this model's pooling task is \"classify\""), std::string::npos)
      << message;
}

// gRPC clients classify with GenerateRequest.embedding.classify: one message, the scores in
// `embedding` and the label.
TEST_F(ClassifyE2eTest, GrpcGenerateClassifies) {
  const std::vector<Reference> refs = References();
  v1::GenerateRequest request;
  request.set_text(refs[4].text);
  request.mutable_embedding()->set_classify(true);
  const auto [messages, status] = GenerateAll(*cluster_->stub, request);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].token_ids_size(), 0);
  EXPECT_EQ(messages[0].label(), refs[4].label);
  EXPECT_EQ(messages[0].usage().prompt_tokens(), static_cast<int32_t>(refs[4].ids.size()));
  ExpectNear(std::vector<double>(messages[0].embedding().begin(), messages[0].embedding().end()),
             refs[4].probs, "gRPC");
}

// A classifier neither generates nor embeds, and a prompt past max_model_len is not classified:
// 400s that say so, and the cluster still classifies afterwards.
TEST_F(ClassifyE2eTest, WhatAClassifierRefuses) {
  EXPECT_NE(BadRequestMessage(
                cluster_->Post("/v1/completions", Json{{"prompt", "hi"}, {"max_tokens", 2}}.dump()))
                .find("it answers classification requests (/classify), not generation"),
            std::string::npos);
  EXPECT_NE(
      BadRequestMessage(cluster_->Post("/v1/embeddings", Json{{"input", "hi"}}.dump()))
          .find("LlamaForSequenceClassification): it answers classification requests (/classify), "
                "not embeddings"),
      std::string::npos);
  EXPECT_NE(BadRequestMessage(
                cluster_->Post("/classify", Json{{"input", "hi"}, {"softmax", "yes"}}.dump()))
                .find("softmax must be a boolean"),
            std::string::npos);
  EXPECT_NE(
      BadRequestMessage(cluster_->Post("/classify", Json{{"input", std::string(300, 'a')}}.dump()))
          .find("the input to classify has 300 tokens"),
      std::string::npos);
  // A pair's score is one label's: three labels cannot score, as in vLLM.
  EXPECT_NE(
      BadRequestMessage(cluster_->Post("/score", Json{{"text_1", "a"}, {"text_2", "b"}}.dump()))
          .find("classifies into 3 labels; scoring a pair needs a classifier of one label"),
      std::string::npos);
  const HttpResponse after = cluster_->Post("/classify", Json{{"input", "x"}}.dump());
  EXPECT_EQ(after.status, 200) << after.body;
}

struct PairReference {
  std::string text;
  double score;
};

// Checks a one-label classifier's pair scoring against `refs` (a text and its score): /score of
// each text split in two (text_1 the head, text_2 the rest) scores the whole text (the reranker
// joins the pair; the byte tokenizer's pair is the two texts' bytes), /invocations routes the
// pairs there too, and /rerank orders the texts by score (an empty query keeps each whole).
void ExpectPairsScoreTheirText(const Cluster& cluster, const std::vector<PairReference>& refs) {
  Json heads = Json::array();
  Json rests = Json::array();
  for (const PairReference& r : refs) {
    size_t cut = r.text.size() / 2;
    // At a character's start, so each half is UTF-8 (JSON text).
    while (cut > 0 && (static_cast<unsigned char>(r.text[cut]) & 0xC0) == 0x80) --cut;
    heads.push_back(r.text.substr(0, cut));
    rests.push_back(r.text.substr(cut));
  }
  for (const char* path : {"/score", "/invocations"}) {
    const HttpResponse scored =
        cluster.Post(path, Json{{"text_1", heads}, {"text_2", rests}}.dump());
    ASSERT_EQ(scored.status, 200) << scored.body;
    const Json body = Json::parse(scored.body);
    ASSERT_EQ(body["data"].size(), refs.size());
    for (size_t i = 0; i < refs.size(); ++i) {
      EXPECT_EQ(body["data"][i]["index"], i);
      ExpectNear({body["data"][i]["score"].get<double>()}, {refs[i].score},
                 std::string(path) + " pair " + std::to_string(i));
    }
  }
  Json documents = Json::array();
  for (const PairReference& r : refs) documents.push_back(r.text);
  const HttpResponse reranked =
      cluster.Post("/rerank", Json{{"query", ""}, {"documents", documents}}.dump());
  ASSERT_EQ(reranked.status, 200) << reranked.body;
  const Json results = Json::parse(reranked.body)["results"];
  ASSERT_EQ(results.size(), refs.size());
  double previous = 2;
  for (const Json& result : results) {
    const auto index = result["index"].get<size_t>();
    const double score = result["relevance_score"].get<double>();
    ExpectNear({score}, {refs[index].score}, "rerank document " + std::to_string(index));
    EXPECT_EQ(result["document"]["text"], refs[index].text);
    EXPECT_LE(score, previous) << "best first";
    previous = score;
  }
}

// vLLM's LLM-as-reranker: the llama-gqa causal LM served with Qwen3-Reranker's --hf-overrides
// shape (tokens "a" and "b", the byte tokenizer's, as the negative and positive answers). A text
// scores the 2-way softmax of "b" at its last position
// (tests/worker/fixtures/llama-gqa/classification_from_token.json, transformers' logits).
class RerankerE2eTest : public SharedClusterTest<RerankerE2eTest> {
 public:
  static std::vector<std::string> ExtraWorkerFlags() {
    return {"--hf-overrides",
            R"({"architectures": ["LlamaForSequenceClassification"],
                "classifier_from_token": ["a", "b"], "is_original_qwen3_reranker": true})"};
  }
};

TEST_F(RerankerE2eTest, PairsScoreTheirJoinedText) {
  std::ifstream file(worker::testdata::FixtureDir("llama-gqa") / "classification_from_token.json");
  const Json doc = Json::parse(file);
  std::vector<PairReference> refs;
  for (const Json& p : doc["prompts"]) {
    refs.push_back({p["text"].get<std::string>(), p["two_way_score"].get<double>()});
  }
  const HttpResponse classified = cluster_->Post("/classify", Json{{"input", refs[0].text}}.dump());
  ASSERT_EQ(classified.status, 200) << classified.body;
  const Json entry = Json::parse(classified.body)["data"][0];
  EXPECT_EQ(entry["label"], "LABEL_0");
  ExpectNear(entry["probs"].get<std::vector<double>>(), {refs[0].score}, "/classify");
  ExpectPairsScoreTheirText(*cluster_, refs);
}

// A native one-label classifier (the qwen2-reward fixture, a Qwen2ForSequenceClassification)
// scores pairs as a cross-encoder, each pair encoded with the tokenizer's pair template (the byte
// tokenizer has none: the two texts' bytes), its score transformers' sigmoid of the text.
class CrossEncoderE2eTest : public SharedClusterTest<CrossEncoderE2eTest> {
 public:
  static std::vector<std::string> ExtraWorkerFlags() {
    return {"--model", worker::testdata::FixtureDir("qwen2-reward").string()};
  }
};

TEST_F(CrossEncoderE2eTest, PairsScoreTheirText) {
  std::ifstream file(worker::testdata::FixtureDir("qwen2-reward") / "classification.json");
  const Json doc = Json::parse(file);
  std::vector<PairReference> refs;
  for (const Json& p : doc["prompts"]) {
    refs.push_back({p["text"].get<std::string>(), p["probs"][0].get<double>()});
  }
  ExpectPairsScoreTheirText(*cluster_, refs);
}

}  // namespace
}  // namespace headroom::e2e
