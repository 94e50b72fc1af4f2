// /v1/embeddings end to end: a real router and two real workers serving the llama-gqa fixture,
// checked against Hugging Face transformers' last hidden states (tests/worker/fixtures/llama-gqa/
// embeddings.json, scripts/gen_embedding_fixtures.py), in OpenAI's shapes (float and base64), for
// lists longer than the router's window of calls in flight, over gRPC too, and with the refusals
// a vLLM user would get (400 naming the field and the numbers).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "http_cluster.h"
#include "nlohmann/json.hpp"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;

struct Reference {
  std::vector<int32_t> ids;
  std::vector<double> last_hidden;
  std::vector<double> normalized;
  std::vector<double> mean;   // the last hidden state's mean over the positions (mean pooling)
  std::vector<double> first;  // its first position's (CLS pooling)
};

std::vector<Reference> References() {
  std::ifstream file(worker::testdata::FixtureDir("llama-gqa") / "embeddings.json");
  const Json doc = Json::parse(file);
  std::vector<Reference> out;
  for (const Json& p : doc["prompts"]) {
    out.push_back({.ids = p["ids"].get<std::vector<int32_t>>(),
                   .last_hidden = p["last_hidden"].get<std::vector<double>>(),
                   .normalized = p["normalized"].get<std::vector<double>>(),
                   .mean = p["mean"].get<std::vector<double>>(),
                   .first = p["first"].get<std::vector<double>>()});
  }
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << what << " value " << i;
  }
}

std::vector<float> DecodeFloat32Base64(const std::string& text) {
  std::string bytes;
  EXPECT_TRUE(absl::Base64Unescape(text, &bytes)) << text;
  EXPECT_EQ(bytes.size() % 4, 0u);
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t bits = 0;
    for (int b = 3; b >= 0; --b) {  // little-endian
      bits = (bits << 8) | static_cast<unsigned char>(bytes[i * 4 + static_cast<size_t>(b)]);
    }
    std::memcpy(&out[i], &bits, sizeof(bits));
  }
  return out;
}

class EmbeddingsE2eTest : public SharedClusterTest<EmbeddingsE2eTest> {};

// A list of token id inputs: one entry per input in order, each transformers' vector normalized
// (or raw with normalize false), with usage counting the inputs' tokens.
TEST_F(EmbeddingsE2eTest, TokenIdInputsMatchTransformers) {
  const std::vector<Reference> refs = References();
  Json inputs = Json::array();
  size_t tokens = 0;
  for (const Reference& r : refs) {
    inputs.push_back(r.ids);
    tokens += r.ids.size();
  }
  for (const bool normalize : {true, false}) {
    const HttpResponse response =
        cluster_->Post("/v1/embeddings", Json{{"input", inputs}, {"normalize", normalize}}.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    const Json body = Json::parse(response.body);
    EXPECT_EQ(body["object"], "list");
    EXPECT_EQ(body["id"].get<std::string>().rfind("embd-", 0), 0u) << body["id"];
    EXPECT_FALSE(body["model"].get<std::string>().empty());
    EXPECT_EQ(body["usage"]["prompt_tokens"], tokens);
    EXPECT_EQ(body["usage"]["total_tokens"], tokens);
    ASSERT_EQ(body["data"].size(), refs.size());
    for (size_t i = 0; i < refs.size(); ++i) {
      const Json& entry = body["data"][i];
      EXPECT_EQ(entry["object"], "embedding");
      EXPECT_EQ(entry["index"], i);
      ExpectNear(entry["embedding"].get<std::vector<double>>(),
                 normalize ? refs[i].normalized : refs[i].last_hidden,
                 "input " + std::to_string(i) + (normalize ? " normalized" : " raw"));
    }
  }
}

// encoding_format base64 carries the float32 values, little-endian (as the openai client
// decodes them: tests/e2e/openai_client_check.py reads them through the real client).
TEST_F(EmbeddingsE2eTest, Base64CarriesTheSameFloats) {
  const std::vector<Reference> refs = References();
  const Json request = {{"input", refs[2].ids}};
  const HttpResponse floats = cluster_->Post("/v1/embeddings", request.dump());
  Json base64_request = request;
  base64_request["encoding_format"] = "base64";
  const HttpResponse base64 = cluster_->Post("/v1/embeddings", base64_request.dump());
  ASSERT_EQ(floats.status, 200) << floats.body;
  ASSERT_EQ(base64.status, 200) << base64.body;
  const std::vector<double> want =
      Json::parse(floats.body)["data"][0]["embedding"].get<std::vector<double>>();
  const std::vector<float> got =
      DecodeFloat32Base64(Json::parse(base64.body)["data"][0]["embedding"].get<std::string>());
  // Two runs of one input agree to float rounding, not bit for bit: the second may read the
  // first's blocks from the prefix cache, or share its step with other requests.
  ExpectNear(std::vector<double>(got.begin(), got.end()), want, "base64");
}

// A text input is tokenized as /tokenize tokenizes it, and embeds as those ids do.
TEST_F(EmbeddingsE2eTest, TextInputEmbedsAsItsTokens) {
  const std::string text = "headroom never runs out of memory";
  const HttpResponse tokenized = cluster_->Post("/tokenize", Json{{"prompt", text}}.dump());
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  const Json ids = Json::parse(tokenized.body)["tokens"];
  const HttpResponse by_text = cluster_->Post("/v1/embeddings", Json{{"input", text}}.dump());
  const HttpResponse by_ids = cluster_->Post("/v1/embeddings", Json{{"input", ids}}.dump());
  ASSERT_EQ(by_text.status, 200) << by_text.body;
  ASSERT_EQ(by_ids.status, 200) << by_ids.body;
  const Json text_body = Json::parse(by_text.body);
  EXPECT_EQ(text_body["usage"]["prompt_tokens"], ids.size());
  ExpectNear(text_body["data"][0]["embedding"].get<std::vector<double>>(),
             Json::parse(by_ids.body)["data"][0]["embedding"].get<std::vector<double>>(),
             "text against its ids");
}

// vLLM's chat form: {"messages"} in place of "input" embeds the prompt the chat template renders
// (Qwen2-Instruct's ChatML, the byte tokenizer's default, as transformers renders it), without
// the generation prompt and without special tokens on top unless asked, as vLLM's
// EmbeddingChatRequest defaults are; continue_final_message leaves the last message open.
TEST_F(EmbeddingsE2eTest, MessagesEmbedTheRenderedChat) {
  const std::string turns =
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nSay hi"
      "<|im_end|>\n";
  const Json messages = {{{"role", "user"}, {"content", "Say hi"}}};
  const auto embed = [](const Json& body) {
    const HttpResponse response = cluster_->Post("/v1/embeddings", body.dump());
    EXPECT_EQ(response.status, 200) << response.body;
    return Json::parse(response.body);
  };
  const Json chat = embed({{"messages", messages}});
  const Json text = embed({{"input", turns}, {"add_special_tokens", false}});
  EXPECT_EQ(chat["usage"]["prompt_tokens"], static_cast<int>(turns.size()));
  ExpectNear(chat["data"][0]["embedding"].get<std::vector<double>>(),
             text["data"][0]["embedding"].get<std::vector<double>>(), "messages against text");
  // vLLM's /invocations takes the embedding request too (its "input").
  const HttpResponse invoked =
      cluster_->Post("/invocations", Json{{"input", turns}, {"add_special_tokens", false}}.dump());
  ASSERT_EQ(invoked.status, 200) << invoked.body;
  ExpectNear(Json::parse(invoked.body)["data"][0]["embedding"].get<std::vector<double>>(),
             text["data"][0]["embedding"].get<std::vector<double>>(), "/invocations against text");
  // add_generation_prompt: the assistant header follows.
  const Json with_header = embed({{"messages", messages}, {"add_generation_prompt", true}});
  const Json header_text =
      embed({{"input", turns + "<|im_start|>assistant\n"}, {"add_special_tokens", false}});
  ExpectNear(with_header["data"][0]["embedding"].get<std::vector<double>>(),
             header_text["data"][0]["embedding"].get<std::vector<double>>(),
             "messages with the generation prompt");
  // continue_final_message: the prompt ends inside the last message (transformers' rendering,
  // tests/router/openai/fixtures/continue_final_message.json, for ChatML: cut after its content).
  const Json open_turn = embed({{"messages", messages}, {"continue_final_message", true}});
  const Json open_text =
      embed({{"input", turns.substr(0, turns.size() - std::string_view("<|im_end|>\n").size())},
             {"add_special_tokens", false}});
  ExpectNear(open_turn["data"][0]["embedding"].get<std::vector<double>>(),
             open_text["data"][0]["embedding"].get<std::vector<double>>(),
             "messages continuing the final one");
  // null is "not given", as everywhere in the API.
  const Json null_header = embed({{"messages", messages}, {"add_generation_prompt", nullptr}});
  ExpectNear(null_header["data"][0]["embedding"].get<std::vector<double>>(),
             text["data"][0]["embedding"].get<std::vector<double>>(), "a null generation prompt");
  // A body nested deeper than the parser allows is refused before it is parsed, messages or not.
  const std::string deep =
      "{\"messages\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const HttpResponse nested = cluster_->Post("/v1/embeddings", deep);
  EXPECT_EQ(nested.status, 400) << nested.body;
  EXPECT_NE(nested.body.find("nests"), std::string::npos) << nested.body;
  // The other fields still apply (dimensions is refused: the fixture is not Matryoshka).
  const Json base64 = embed({{"messages", messages}, {"encoding_format", "base64"}});
  EXPECT_TRUE(base64["data"][0]["embedding"].is_string());
  for (const auto& [body, field] : std::vector<std::pair<Json, std::string>>{
           {{{"messages", messages}, {"input", "x"}}, "input"},
           {{{"messages", messages}, {"chat_template", "{{ 1 }}"}}, "chat_template"},
           {{{"messages", messages},
             {"continue_final_message", true},
             {"add_generation_prompt", true}},
            "continue_final_message"},
           {{{"messages", "hi"}}, "messages"},
           {{{"messages", messages}, {"add_special_tokens", 1}}, "add_special_tokens"}}) {
    const HttpResponse response = cluster_->Post("/v1/embeddings", body.dump());
    EXPECT_EQ(response.status, 400) << body.dump();
    EXPECT_EQ(Json::parse(response.body)["error"]["param"], field) << response.body;
  }
}

// 300 inputs, more than the 128 calls a request keeps in flight: every one comes back, in order.
TEST_F(EmbeddingsE2eTest, LongListsComeBackWholeAndInOrder) {
  const std::vector<Reference> refs = References();
  constexpr size_t kInputs = 300;
  Json inputs = Json::array();
  for (size_t i = 0; i < kInputs; ++i) inputs.push_back(refs[i % refs.size()].ids);
  const HttpResponse response = cluster_->Post("/v1/embeddings", Json{{"input", inputs}}.dump());
  ASSERT_EQ(response.status, 200) << response.body.substr(0, 500);
  const Json body = Json::parse(response.body);
  ASSERT_EQ(body["data"].size(), kInputs);
  for (size_t i = 0; i < kInputs; ++i) {
    ASSERT_EQ(body["data"][i]["index"], i);
    ExpectNear(body["data"][i]["embedding"].get<std::vector<double>>(),
               refs[i % refs.size()].normalized, "input " + std::to_string(i));
  }
}

// An embedding's prompt may fill max_model_len (256 here): it generates nothing.
TEST_F(EmbeddingsE2eTest, InputMayFillMaxModelLenButNotMore) {
  std::vector<int32_t> ids(256);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(3 + i % 250);
  const HttpResponse full = cluster_->Post("/v1/embeddings", Json{{"input", ids}}.dump());
  ASSERT_EQ(full.status, 200) << full.body;
  EXPECT_EQ(Json::parse(full.body)["data"][0]["embedding"].size(), 64u);
  ids.push_back(5);
  const HttpResponse over = cluster_->Post("/v1/embeddings", Json{{"input", ids}}.dump());
  EXPECT_EQ(over.status, 400) << over.body;
  EXPECT_NE(over.body.find("maximum context length is 256 tokens"), std::string::npos) << over.body;
  EXPECT_NE(over.body.find("the input to embed has 257 tokens"), std::string::npos) << over.body;
}

// Refusals name the field and the reason, as vLLM's do; nothing is run for them.
TEST_F(EmbeddingsE2eTest, BadRequestsAre400NamingTheField) {
  const std::vector<Reference> refs = References();
  struct Case {
    Json body;
    std::string param;
    std::string says;
  };
  Json too_many = Json::array();
  for (int i = 0; i < 2049; ++i) too_many.push_back("x");
  const std::vector<Case> cases = {
      {Json::object(), "input", "input is required"},
      {{{"input", Json::array()}}, "input", "input must not be an empty array"},
      {{{"input", 7}}, "input", "input must be a string, an array of token ids"},
      {{{"input", too_many}}, "input", "at most 2048 inputs, got 2049"},
      {{{"input", {refs[0].ids, {1, 999}}}}, "input", "input[1]: token_ids.ids[1] = 999"},
      {{{"input", "x"}, {"encoding_format", "hex"}},
       "encoding_format",
       "encoding_format must be \"float\" or \"base64\", got \"hex\""},
      {{{"input", "x"}, {"dimensions", 0}}, "dimensions", "dimensions must be at least 1, got 0"},
      // The fixture's config.json does not say it was trained for truncation.
      {{{"input", "x"}, {"dimensions", 16}}, "", "does not support matryoshka representation"},
  };
  for (const Case& c : cases) {
    const HttpResponse response = cluster_->Post("/v1/embeddings", c.body.dump());
    EXPECT_EQ(response.status, 400) << c.body.dump() << " -> " << response.body;
    const Json error = Json::parse(response.body)["error"];
    EXPECT_NE(error["message"].get<std::string>().find(c.says), std::string::npos)
        << c.body.dump() << " -> " << response.body;
    if (!c.param.empty()) {
      EXPECT_EQ(error["param"], c.param) << response.body;
    }
  }
}

// /classify needs a sequence classifier; this cluster's model is a causal LM: 400 saying so.
TEST_F(EmbeddingsE2eTest, ClassifyOnAGeneratorSaysWhy) {
  const HttpResponse response = cluster_->Post("/classify", Json{{"input", "x"}}.dump());
  ASSERT_EQ(response.status, 400) << response.body;
  EXPECT_NE(response.body.find("is not a sequence classifier (LlamaForCausalLM): classification "
                               "needs a *ForSequenceClassification checkpoint"),
            std::string::npos)
      << response.body;
}

// vLLM's /pooling on an embedding model: its task is embed, each entry's data transformers'
// vector (normalized by default, raw with use_activation false, base64 too); a classification
// is a 400 naming the task.
TEST_F(EmbeddingsE2eTest, PoolingEmbeds) {
  const std::vector<Reference> refs = References();
  const Json inputs = {refs[0].ids, refs[3].ids};
  for (const bool activate : {true, false}) {
    const HttpResponse response =
        cluster_->Post("/pooling", Json{{"input", inputs}, {"use_activation", activate}}.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    const Json body = Json::parse(response.body);
    EXPECT_EQ(body["id"].get<std::string>().rfind("pooling-", 0), 0u) << body["id"];
    EXPECT_EQ(body["object"], "list");
    EXPECT_EQ(body["usage"]["prompt_tokens"], refs[0].ids.size() + refs[3].ids.size());
    ASSERT_EQ(body["data"].size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const Reference& ref = refs[i == 0 ? 0 : 3];
      EXPECT_EQ(body["data"][i]["object"], "pooling");
      EXPECT_EQ(body["data"][i]["index"], i);
      ExpectNear(body["data"][i]["data"].get<std::vector<double>>(),
                 activate ? ref.normalized : ref.last_hidden,
                 "pooling " + std::to_string(i) + (activate ? " normalized" : " raw"));
    }
  }
  const HttpResponse base64 = cluster_->Post(
      "/pooling", Json{{"input", refs[1].ids}, {"encoding_format", "base64"}}.dump());
  ASSERT_EQ(base64.status, 200) << base64.body;
  const std::vector<float> got =
      DecodeFloat32Base64(Json::parse(base64.body)["data"][0]["data"].get<std::string>());
  ExpectNear(std::vector<double>(got.begin(), got.end()), refs[1].normalized, "base64");

  const HttpResponse wrong_task =
      cluster_->Post("/pooling", Json{{"input", "x"}, {"task", "classify"}}.dump());
  ASSERT_EQ(wrong_task.status, 400) << wrong_task.body;
  const Json error = Json::parse(wrong_task.body)["error"];
  EXPECT_EQ(error["param"], "task");
  EXPECT_NE(error["message"].get<std::string>().find("this model's pooling task is \"embed\""),
            std::string::npos)
      << wrong_task.body;
}

// gRPC clients ask with GenerateRequest.embedding: one message, the vector and the usage.
TEST_F(EmbeddingsE2eTest, GrpcGenerateWithEmbeddingAnswersOneMessage) {
  const std::vector<Reference> refs = References();
  v1::GenerateRequest request;
  request.mutable_token_ids()->mutable_ids()->Assign(refs[1].ids.begin(), refs[1].ids.end());
  request.mutable_embedding()->set_normalize(false);
  const auto [messages, status] = GenerateAll(*cluster_->stub, request);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].token_ids_size(), 0);
  EXPECT_EQ(messages[0].usage().prompt_tokens(), static_cast<int32_t>(refs[1].ids.size()));
  EXPECT_EQ(messages[0].usage().completion_tokens(), 0);
  ExpectNear(std::vector<double>(messages[0].embedding().begin(), messages[0].embedding().end()),
             refs[1].last_hidden, "gRPC");

  // Sampling has no meaning for an embedding: refused rather than ignored.
  request.mutable_sampling()->set_temperature(0.5f);
  const grpc::Status refusal = GenerateAll(*cluster_->stub, request).status;
  EXPECT_EQ(refusal.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refusal.error_message().find("sampling must be unset for an embedding request"),
            std::string::npos)
      << refusal.error_message();
}

// The embedding of `text` as /v1/embeddings answers it.
std::vector<double> EmbeddingOf(const Cluster& cluster, const std::string& text) {
  const HttpResponse r = cluster.Post("/v1/embeddings", Json{{"input", text}}.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return {};
  return Json::parse(r.body)["data"][0]["embedding"].get<std::vector<double>>();
}

double Cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return dot / std::sqrt(aa * bb);
}

const std::vector<std::string> kTexts = {"the cat sat on the mat", "a dog ran in the park",
                                         "paged attention", "kv cache blocks"};

// vLLM's /score over an embedding model: the cosine similarity of the two texts' embeddings as
// /v1/embeddings gives them, for 1:N and N:N, under /score and /v1/score.
TEST_F(EmbeddingsE2eTest, ScoreIsTheCosineOfTheEmbeddings) {
  std::vector<std::vector<double>> vectors;
  for (const std::string& text : kTexts) vectors.push_back(EmbeddingOf(*cluster_, text));
  const HttpResponse one_to_many = cluster_->Post(
      "/score", Json{{"text_1", kTexts[0]}, {"text_2", {kTexts[1], kTexts[2], kTexts[3]}}}.dump());
  ASSERT_EQ(one_to_many.status, 200) << one_to_many.body;
  const Json body = Json::parse(one_to_many.body);
  EXPECT_EQ(body["id"].get<std::string>().rfind("score-", 0), 0u);
  ASSERT_EQ(body["data"].size(), 3u);
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(body["data"][j]["object"], "score");
    EXPECT_NEAR(body["data"][j]["score"].get<double>(), Cosine(vectors[0], vectors[1 + j]), 1e-4)
        << "pair " << j;
  }
  const HttpResponse pairwise = cluster_->Post(
      "/v1/score",
      Json{{"text_1", {kTexts[0], kTexts[2]}}, {"text_2", {kTexts[1], kTexts[3]}}}.dump());
  ASSERT_EQ(pairwise.status, 200) << pairwise.body;
  const Json pairs = Json::parse(pairwise.body);
  EXPECT_NEAR(pairs["data"][0]["score"].get<double>(), Cosine(vectors[0], vectors[1]), 1e-4);
  EXPECT_NEAR(pairs["data"][1]["score"].get<double>(), Cosine(vectors[2], vectors[3]), 1e-4);
  EXPECT_GT(pairs["usage"]["prompt_tokens"].get<int>(), 0);
}

// vLLM's /rerank (also /v1 and /v2): documents best first by that cosine, cut to top_n, each
// with its text; a text that cannot run names itself.
TEST_F(EmbeddingsE2eTest, RerankOrdersTheDocumentsByTheirScore) {
  std::vector<double> scores;
  const std::vector<double> query = EmbeddingOf(*cluster_, kTexts[0]);
  for (size_t j = 1; j < kTexts.size(); ++j) {
    scores.push_back(Cosine(query, EmbeddingOf(*cluster_, kTexts[j])));
  }
  const Json documents = {kTexts[1], kTexts[2], kTexts[3]};
  for (const std::string route : {"/rerank", "/v1/rerank", "/v2/rerank"}) {
    const HttpResponse r = cluster_->Post(
        route, Json{{"query", kTexts[0]}, {"documents", documents}, {"top_n", 2}}.dump());
    ASSERT_EQ(r.status, 200) << route << " " << r.body;
    const Json body = Json::parse(r.body);
    EXPECT_EQ(body["id"].get<std::string>().rfind("rerank-", 0), 0u);
    ASSERT_EQ(body["results"].size(), 2u) << route;
    double previous = 2;
    for (const Json& result : body["results"]) {
      const auto index = result["index"].get<size_t>();
      EXPECT_EQ(result["document"]["text"], documents[index]);
      EXPECT_NEAR(result["relevance_score"].get<double>(), scores[index], 1e-4);
      EXPECT_LE(result["relevance_score"].get<double>(), previous) << "best first";
      previous = result["relevance_score"].get<double>();
    }
    const size_t worst =
        static_cast<size_t>(std::min_element(scores.begin(), scores.end()) - scores.begin());
    for (const Json& result : body["results"]) EXPECT_NE(result["index"], worst) << "cut by top_n";
  }
  const HttpResponse too_long = cluster_->Post(
      "/rerank", Json{{"query", "q"}, {"documents", {"fine", std::string(300, 'x')}}}.dump());
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_NE(too_long.body.find("documents[1]: this model's maximum context length is 256"),
            std::string::npos)
      << too_long.body;
}

// A router in front of one worker started with `flags`; http_port stays 0 unless both came up
// and the router sees the worker.
struct OneGroup {
  explicit OneGroup(const std::vector<std::string>& flags) : worker("worker", flags) {
    if (worker.address().empty()) return;
    router = std::make_unique<ChildProcess>(
        "router", std::vector<std::string>{"--grpc-port", "0", "--http-port", "0", "--workers",
                                           worker.address()});
    if (router->address().empty()) return;
    const auto stub = v1::Inference::NewStub(
        grpc::CreateChannel(router->address(), grpc::InsecureChannelCredentials()));
    if (GroupsUp(*stub, 1, std::chrono::seconds(10))) http_port = ReadHttpPort(*router);
  }

  ChildProcess worker;
  std::unique_ptr<ChildProcess> router;
  int http_port = 0;
};

// The embedding /v1/embeddings answers for the token ids `ids` (empty on an error, which fails
// the test).
std::vector<double> EmbedIds(int http_port, const std::vector<int32_t>& ids) {
  const HttpResponse response =
      HttpRequestTo(http_port, "POST", "/v1/embeddings", Json{{"input", ids}}.dump(), {});
  EXPECT_EQ(response.status, 200) << response.body;
  if (response.status != 200) return {};
  return Json::parse(response.body)["data"][0]["embedding"].get<std::vector<double>>();
}

// A checkpoint whose sentence-transformers files say it pools by mean (and has no Normalize
// module): its worker embeds by the mean of the prompt's hidden states, unnormalized, as
// transformers computes it, and still generates.
TEST(EmbeddingsPoolingE2eTest, AMeanPoolingModelEmbedsByTheMeanAndStillGenerates) {
  const std::filesystem::path fixture = worker::testdata::FixtureDir("llama-gqa");
  const std::filesystem::path model = std::filesystem::temp_directory_path() /
                                      ("headroom_mean_model_" + std::to_string(::getpid()));
  std::filesystem::remove_all(model);
  std::filesystem::create_directories(model / "1_Pooling");
  for (const auto& entry : std::filesystem::directory_iterator(fixture)) {
    std::filesystem::copy_file(entry.path(), model / entry.path().filename());
  }
  std::ofstream(model / "modules.json") << R"([
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
  std::ofstream(model / "1_Pooling" / "config.json")
      << R"({"word_embedding_dimension": 64, "pooling_mode_mean_tokens": true})";

  std::vector<std::string> flags = FixtureWorkerFlags(64);
  flags[1] = model.string();  // --model
  const OneGroup group(flags);
  ASSERT_NE(group.http_port, 0) << "the worker or the router did not come up";

  ExpectNear(EmbedIds(group.http_port, References()[3].ids), References()[3].mean, "mean pooling");
  const HttpResponse completion = HttpRequestTo(group.http_port, "POST", "/v1/completions",
                                                R"({"prompt": "hi", "max_tokens": 3})", {});
  EXPECT_EQ(completion.status, 200) << completion.body;
  std::filesystem::remove_all(model);
}

// vLLM's --pooler-config on a checkpoint without sentence-transformers files: CLS pooling,
// unnormalized, is transformers' first row; the older flag name is taken too.
TEST(EmbeddingsPoolingE2eTest, PoolerConfigChoosesThePooling) {
  std::vector<std::string> flags = FixtureWorkerFlags(64);
  flags.insert(flags.end(),
               {"--override-pooler-config", R"({"pooling_type": "CLS", "normalize": false})"});
  const OneGroup group(flags);
  ASSERT_NE(group.http_port, 0) << "the worker or the router did not come up";
  ExpectNear(EmbedIds(group.http_port, References()[3].ids), References()[3].first, "CLS pooling");
  // Both names at once is a start-up error.
  flags.insert(flags.end(), {"--pooler-config", R"({"pooling_type": "MEAN"})"});
  ChildProcess both("worker", flags);
  EXPECT_EQ(both.WaitExit(std::chrono::seconds(20)), 2);
}

}  // namespace
}  // namespace headroom::e2e
