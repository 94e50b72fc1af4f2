// End to end over HTTP: two real `headroom worker` processes (the llama-gqa fixture, vocab 256,
// so the router's byte tokenizer fits it) and a real `headroom router` serving the OpenAI API,
// spoken to with a plain HTTP client and with the official `openai` Python client.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "child_process.h"
#include "fixtures.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "http_client.h"
#include "http_cluster.h"
#include "nlohmann/json.hpp"
#include "venv_python.h"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

// The served model id (the fixture directory the workers report).
std::string ModelId() { return worker::testdata::FixtureDir("llama-gqa").string(); }

// The text of a gRPC Generate of `text`: the reference the HTTP answers must equal. Greedy, or
// sampled at temperature 1 with `seed`; `penalties` sets frequency, presence and repetition
// penalty.
std::string GrpcText(v1::Inference::Stub& stub, const std::string& text, int max_tokens,
                     std::optional<std::array<float, 3>> penalties = std::nullopt,
                     std::optional<uint64_t> seed = std::nullopt) {
  v1::GenerateRequest request;
  request.set_text(text);
  if (penalties.has_value()) {
    request.mutable_sampling()->set_frequency_penalty((*penalties)[0]);
    request.mutable_sampling()->set_presence_penalty((*penalties)[1]);
    request.mutable_sampling()->set_repetition_penalty((*penalties)[2]);
  }
  request.mutable_sampling()->set_temperature(seed.has_value() ? 1.0f : 0.0f);
  if (seed.has_value()) request.mutable_sampling()->set_seed(*seed);
  request.mutable_sampling()->set_max_tokens(max_tokens);
  request.mutable_sampling()->set_ignore_eos(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + seconds(60));
  auto reader = stub.Generate(&context, request);
  v1::GenerateResponse response;
  std::string out;
  int32_t tokens = 0;
  while (reader->Read(&response)) {
    out += response.text();
    tokens += response.token_ids_size();
  }
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(tokens, max_tokens);
  return out;
}

// Concatenates choices[0].text (completions) or choices[0].delta.content (chat) of an SSE body;
// checks [DONE] comes last and exactly one chunk has a finish_reason, returned in `finish`.
std::string StreamedText(const HttpResponse& response, bool chat, std::string* finish) {
  const std::vector<std::string> events = response.Events();
  EXPECT_FALSE(events.empty());
  if (events.empty()) return "";
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  int finishes = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const Json chunk = Json::parse(events[i]);
    EXPECT_EQ(chunk["object"], chat ? "chat.completion.chunk" : "text_completion") << events[i];
    EXPECT_EQ(chunk["id"].get<std::string>().rfind(chat ? "chatcmpl-" : "cmpl-", 0), 0u)
        << events[i];
    if (chunk["choices"].empty()) continue;
    const Json& choice = chunk["choices"][0];
    if (chat) {
      if (choice["delta"].contains("content") && choice["delta"]["content"].is_string()) {
        text += choice["delta"]["content"].get<std::string>();
      }
      if (i == 0) {
        EXPECT_EQ(choice["delta"]["role"], "assistant") << events[i];
      }
    } else {
      text += choice["text"].get<std::string>();
    }
    if (!choice["finish_reason"].is_null()) {
      ++finishes;
      *finish = choice["finish_reason"].get<std::string>();
    }
  }
  EXPECT_EQ(finishes, 1);
  return text;
}

// The first prompt of the llama-gqa fixture that has transformers' logits: its ids and the
// logits of the token after it.
bool FixturePromptWithNextLogits(std::vector<int32_t>* ids, std::vector<double>* next) {
  std::ifstream in(worker::testdata::FixtureDir("llama-gqa") / "expected.json");
  const Json expected = Json::parse(in);
  for (const Json& prompt : expected["prompts"]) {
    if (!prompt.contains("logits")) continue;
    *ids = prompt["ids"].get<std::vector<int32_t>>();
    *next = prompt["logits"][ids->size() - 1].get<std::vector<double>>();
    return !ids->empty();
  }
  return false;
}

class HttpE2eTest : public SharedClusterTest<HttpE2eTest> {
 protected:
  // `chat` streamed gives `content` and finish_reason "stop".
  static void ExpectStreamedChatStopsWith(Json chat, const std::string& content) {
    chat["stream"] = true;
    const HttpResponse response = cluster_->Post("/v1/chat/completions", chat.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    std::string finish;
    EXPECT_EQ(StreamedText(response, /*chat=*/true, &finish), content);
    EXPECT_EQ(finish, "stop");
  }
};

TEST_F(HttpE2eTest, CompletionsStreamingAndNotEqualGrpcGenerate) {
  const std::string expected = GrpcText(*cluster_->stub, "Hello world", 24);
  const Json request = {{"model", ModelId()},
                        {"prompt", "Hello world"},
                        {"max_tokens", 24},
                        {"temperature", 0},
                        {"ignore_eos", true}};
  const HttpResponse whole = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json body = Json::parse(whole.body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["id"].get<std::string>().rfind("cmpl-", 0), 0u) << body["id"];
  EXPECT_EQ(body["model"], ModelId());
  EXPECT_EQ(body["choices"][0]["text"], expected);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 11);
  EXPECT_EQ(body["usage"]["completion_tokens"], 24);
  EXPECT_EQ(body["usage"]["total_tokens"], 35);

  Json stream_request = request;
  stream_request["stream"] = true;
  stream_request["stream_options"] = {{"include_usage", true}};
  const HttpResponse streamed = cluster_->Post("/v1/completions", stream_request.dump());
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_NE(streamed.Header("content-type").value_or("").find("text/event-stream"),
            std::string::npos);
  std::string finish;
  EXPECT_EQ(StreamedText(streamed, false, &finish), expected);
  EXPECT_EQ(finish, "length");
  const std::vector<std::string> events = streamed.Events();
  ASSERT_GE(events.size(), 3u);
  const Json usage = Json::parse(events[events.size() - 2]);  // include_usage: last before [DONE]
  EXPECT_TRUE(usage["choices"].empty()) << events[events.size() - 2];
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
}

// vLLM's continue_final_message: the prompt ends inside the final assistant message as
// transformers renders it (tests/router/openai/fixtures/continue_final_message.json; chatml is the
// router's built-in template for the byte tokenizer), and the reply continues it as a completion
// of that prompt does (with echo, after the message's own text). With the default
// add_generation_prompt it is refused, as in vLLM.
TEST_F(HttpE2eTest, ContinueFinalMessageEndsThePromptInsideTheLastMessage) {
  std::ifstream in(worker::testdata::SourceDir() / "tests/router/openai/fixtures" /
                   "continue_final_message.json");
  const Json fixture = Json::parse(in);
  const Json& chatml = fixture["templates"][0];
  ASSERT_EQ(chatml["name"], "chatml");
  const Json& c = chatml["cases"][0];
  ASSERT_EQ(c["name"], "assistant_prefix");
  const std::string expected = c["expected"];
  Json chat = {{"messages", c["messages"]},
               {"add_generation_prompt", false},
               {"continue_final_message", true},
               {"max_tokens", 6},
               {"temperature", 0},
               {"ignore_eos", true},
               {"return_token_ids", true}};
  const HttpResponse response = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const Json body = Json::parse(response.body);
  Json bytes = Json::array();
  for (const char ch : expected) bytes.push_back(static_cast<unsigned char>(ch));
  EXPECT_EQ(body["prompt_token_ids"], bytes);

  const Json completion = {{"prompt", bytes},
                           {"max_tokens", 6},
                           {"temperature", 0},
                           {"ignore_eos", true},
                           {"return_token_ids", true}};
  const HttpResponse completed = cluster_->Post("/v1/completions", completion.dump());
  ASSERT_EQ(completed.status, 200) << completed.body;
  EXPECT_EQ(body["choices"][0]["token_ids"],
            Json::parse(completed.body)["choices"][0]["token_ids"]);

  // vLLM's echo: the reply's content starts with the message it continues.
  chat["echo"] = true;
  const HttpResponse echoed = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(echoed.status, 200) << echoed.body;
  const Json echoed_body = Json::parse(echoed.body);
  const Json& message = echoed_body["choices"][0]["message"];
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_EQ(message["content"],
            c["messages"].back()["content"].get<std::string>() +
                Json::parse(completed.body)["choices"][0]["text"].get<std::string>());
  chat.erase("echo");

  chat.erase("add_generation_prompt");
  const HttpResponse refused = cluster_->Post("/v1/chat/completions", chat.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(Json::parse(refused.body)["error"]["param"], "continue_final_message");
}

// vLLM's /invocations (SageMaker's route): a body goes to the route its fields name and is
// answered as that route answers it; a body of no known shape is a 400.
TEST_F(HttpE2eTest, InvocationsGoToTheRouteTheBodyNames) {
  const Json completion = {
      {"prompt", "Hello"}, {"max_tokens", 5}, {"temperature", 0}, {"ignore_eos", true}};
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}},
                     {"max_tokens", 5},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  for (const auto& [body, route] :
       {std::pair{completion, "/v1/completions"}, std::pair{chat, "/v1/chat/completions"}}) {
    const HttpResponse direct = cluster_->Post(route, body.dump());
    const HttpResponse invoked = cluster_->Post("/invocations", body.dump());
    ASSERT_EQ(direct.status, 200) << direct.body;
    ASSERT_EQ(invoked.status, 200) << invoked.body;
    Json want = Json::parse(direct.body);
    Json got = Json::parse(invoked.body);
    for (Json* answer : {&want, &got}) {
      answer->erase("id");
      answer->erase("created");
    }
    EXPECT_EQ(got, want) << route;
  }
  for (const std::string body : {R"({"foo": 1})", "not json"}) {
    const HttpResponse refused = cluster_->Post("/invocations", body);
    EXPECT_EQ(refused.status, 400) << refused.body;
  }
  EXPECT_NE(cluster_->Post("/invocations", R"({"foo": 1})").body.find("suitable handler"),
            std::string::npos);
}

// vLLM's penalties reach the engine from the OpenAI API as from gRPC, and change the output.
TEST_F(HttpE2eTest, PenaltiesGiveTheSameTextAsGrpcAndChangeIt) {
  const std::string plain = GrpcText(*cluster_->stub, "Hello world", 32);
  const std::string penalized =
      GrpcText(*cluster_->stub, "Hello world", 32, std::array<float, 3>{1.0f, 0.5f, 1.3f});
  EXPECT_NE(penalized, plain);
  const Json request = {{"prompt", "Hello world"},  {"max_tokens", 32},
                        {"temperature", 0},         {"ignore_eos", true},
                        {"frequency_penalty", 1.0}, {"presence_penalty", 0.5},
                        {"repetition_penalty", 1.3}};
  const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(Json::parse(response.body)["choices"][0]["text"], penalized);
}

// Texts of a streamed response by choice index; checks each choice finishes exactly once.
std::vector<std::string> StreamedChoices(const HttpResponse& response, size_t choices) {
  std::vector<std::string> text(choices);
  std::vector<int> finishes(choices, 0);
  const std::vector<std::string> events = response.Events();
  EXPECT_FALSE(events.empty());
  if (events.empty()) return text;
  EXPECT_EQ(events.back(), "[DONE]");
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const Json chunk = Json::parse(events[i]);
    if (chunk["choices"].empty()) continue;
    EXPECT_EQ(chunk["choices"].size(), 1u) << events[i];
    const Json& choice = chunk["choices"][0];
    const auto index = choice["index"].get<size_t>();
    if (index >= choices) {
      ADD_FAILURE() << "choice index " << index << " of " << choices;
      continue;
    }
    text[index] += choice["text"].get<std::string>();
    if (!choice["finish_reason"].is_null()) ++finishes[index];
  }
  EXPECT_EQ(finishes, std::vector<int>(choices, 1));
  return text;
}

// n samples of one prompt are n requests seeded seed + j, as in vLLM: each equals the gRPC
// generation with that seed, streamed or not; the prompt counts once in usage.
TEST_F(HttpE2eTest, NSamplesEachEqualTheGrpcGenerationSeededSeedPlusIndex) {
  constexpr uint64_t kSeed = 1234;
  std::vector<std::string> expected;
  for (uint64_t j = 0; j < 3; ++j) {
    expected.push_back(GrpcText(*cluster_->stub, "Hello world", 12, std::nullopt, kSeed + j));
  }
  // The samples differ, so a response that repeated one seed would not pass.
  EXPECT_NE(expected[0], expected[1]);
  EXPECT_NE(expected[1], expected[2]);
  const Json request = {{"prompt", "Hello world"}, {"max_tokens", 12}, {"temperature", 1.0},
                        {"seed", kSeed},           {"n", 3},           {"ignore_eos", true}};
  const HttpResponse whole = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json body = Json::parse(whole.body);
  ASSERT_EQ(body["choices"].size(), 3u) << whole.body;
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(body["choices"][j]["index"], j);
    EXPECT_EQ(body["choices"][j]["text"], expected[j]) << j;
    EXPECT_EQ(body["choices"][j]["finish_reason"], "length");
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"], 11);
  EXPECT_EQ(body["usage"]["completion_tokens"], 36);

  Json stream_request = request;
  stream_request["stream"] = true;
  stream_request["stream_options"] = {{"include_usage", true}};
  const HttpResponse streamed = cluster_->Post("/v1/completions", stream_request.dump());
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(StreamedChoices(streamed, 3), expected);
  const std::vector<std::string> events = streamed.Events();
  ASSERT_GE(events.size(), 2u);
  const Json usage = Json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 11) << events[events.size() - 2];
  EXPECT_EQ(usage["usage"]["completion_tokens"], 36);
}

// vLLM's stream_options.continuous_usage_stats: every chunk's usage is its own choice's so far,
// counted here by the per-token logprobs each chunk carries; the prompt is its 11 bytes.
TEST_F(HttpE2eTest, ContinuousUsageCountsEachChoicesTokensSoFar) {
  const Json request = {
      {"prompt", "Hello world"},
      {"max_tokens", 12},
      {"temperature", 1.0},
      {"seed", 99},
      {"n", 2},
      {"logprobs", 0},
      {"ignore_eos", true},
      {"stream", true},
      {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}};
  const HttpResponse streamed = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  const std::vector<std::string> events = streamed.Events();
  ASSERT_GE(events.size(), 3u);
  std::array<size_t, 2> tokens = {0, 0};
  for (size_t i = 0; i + 2 < events.size(); ++i) {  // the usage event and [DONE] are last
    const Json chunk = Json::parse(events[i]);
    ASSERT_EQ(chunk["choices"].size(), 1u) << events[i];
    const auto c = chunk["choices"][0]["index"].get<size_t>();
    ASSERT_LT(c, 2u);
    tokens[c] += chunk["choices"][0]["logprobs"]["tokens"].size();
    EXPECT_EQ(chunk["usage"]["prompt_tokens"], 11) << events[i];
    EXPECT_EQ(chunk["usage"]["completion_tokens"], tokens[c]) << events[i];
    EXPECT_EQ(chunk["usage"]["total_tokens"], 11 + tokens[c]) << events[i];
  }
  EXPECT_EQ(tokens, (std::array<size_t, 2>{12, 12}));
  const Json usage = Json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 11);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
}

// Tokens whose text is held back still make chunks, as in vLLM: here every "a" may begin the stop
// string, so the text waits for the end, yet each chunk with a choice brings its tokens (its
// usage grows) with empty text. The first token is always a message of its own (the worker
// writes it at once), so the first chunk holds exactly it.
TEST_F(HttpE2eTest, HeldBackTextStillStreamsAChunkPerMessage) {
  const Json request = {
      {"prompt", "Hello world"},
      {"max_tokens", 6},
      {"temperature", 0},
      {"logit_bias", {{std::to_string('a'), 100}}},
      {"stop", {"aaaaaaaaaa"}},
      {"stream", true},
      {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}};
  const HttpResponse streamed = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  const std::vector<std::string> events = streamed.Events();
  ASSERT_GE(events.size(), 4u) << streamed.body;  // >= 2 chunks, the usage, [DONE]
  std::string text;
  int64_t tokens = 0;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const Json chunk = Json::parse(events[i]);
    ASSERT_EQ(chunk["choices"].size(), 1u) << events[i];
    const Json& choice = chunk["choices"][0];
    const bool last = i + 3 == events.size();
    EXPECT_EQ(choice["finish_reason"].is_null(), !last) << events[i];
    if (!last) {
      EXPECT_EQ(choice["text"], "") << events[i];
    }
    text += choice["text"].get<std::string>();
    const int64_t so_far = chunk["usage"]["completion_tokens"].get<int64_t>();
    EXPECT_GT(so_far, tokens) << events[i];
    if (i == 0) {
      EXPECT_EQ(so_far, 1) << events[i];
    }
    tokens = so_far;
  }
  EXPECT_EQ(tokens, 6);
  EXPECT_EQ(text, "aaaaaa");
  EXPECT_EQ(Json::parse(events[events.size() - 3])["choices"][0]["finish_reason"], "length");

  // Chat streams the same way; its content joins to the same text.
  Json chat = request;
  chat.erase("prompt");
  chat["messages"] = {{{"role", "user"}, {"content", "Hello world"}}};
  std::string finish;
  EXPECT_EQ(StreamedText(cluster_->Post("/v1/chat/completions", chat.dump()), true, &finish),
            "aaaaaa");
  EXPECT_EQ(finish, "length");
}

// /v1/responses runs as the chat request it describes: its text and usage are the chat reply's
// to the same message, streamed too; it is authenticated like the rest; what it cannot do is a
// 400 naming the field, and a stored response (nothing is stored) a 404. (The official client
// reads it in tests/e2e/openai_client_check.py.)
TEST_F(HttpE2eTest, ResponsesApiAnswersWhatChatAnswers) {
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Hello world"}}}},
                     {"max_tokens", 6},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  const HttpResponse chat_answer = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(chat_answer.status, 200) << chat_answer.body;
  const Json chat_body = Json::parse(chat_answer.body);
  const Json request = {
      {"input", "Hello world"}, {"max_output_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}};
  const HttpResponse answer = cluster_->Post("/v1/responses", request.dump());
  ASSERT_EQ(answer.status, 200) << answer.body;
  const Json body = Json::parse(answer.body);
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["id"].get<std::string>().rfind("resp_", 0), 0u) << body["id"];
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");
  ASSERT_EQ(body["output"].size(), 1u) << answer.body;
  EXPECT_EQ(body["output"][0]["content"][0]["text"], chat_body["choices"][0]["message"]["content"]);
  EXPECT_EQ(body["usage"]["input_tokens"], chat_body["usage"]["prompt_tokens"]);
  EXPECT_EQ(body["usage"]["output_tokens"], 6);

  Json streamed = request;
  streamed["stream"] = true;
  const HttpResponse stream = cluster_->Post("/v1/responses", streamed.dump());
  ASSERT_EQ(stream.status, 200) << stream.body;
  std::string text;
  Json last;
  for (size_t pos = 0; (pos = stream.body.find("data: ", pos)) != std::string::npos; ++pos) {
    last = Json::parse(stream.body.substr(pos + 6, stream.body.find("\n\n", pos) - pos - 6));
    if (last["type"] == "response.output_text.delta") text += last["delta"].get<std::string>();
  }
  EXPECT_EQ(text, body["output"][0]["content"][0]["text"]);
  EXPECT_EQ(last["type"], "response.completed");
  EXPECT_EQ(last["response"]["output"][0]["content"], body["output"][0]["content"]);
  EXPECT_EQ(last["response"]["usage"], body["usage"]);

  EXPECT_EQ(HttpRequestTo(cluster_->http_port, "POST", "/v1/responses", request.dump()).status,
            401);
  Json web = request;
  web["tools"] = {{{"type", "web_search_preview"}}};
  const HttpResponse refused = cluster_->Post("/v1/responses", web.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(Json::parse(refused.body)["error"]["param"], "tools[0].type");
  Json previous = request;
  previous["previous_response_id"] = body["id"];
  const HttpResponse missing = cluster_->Post("/v1/responses", previous.dump());
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_EQ(Json::parse(missing.body)["error"]["param"], "previous_response_id");
}

// The router exports vLLM's request-level n metrics: one observation per request (per prompt of a
// list), with its n and the most tokens one of its samples generated; a gRPC Generate is a request
// with n = 1, and the n calls of an OpenAI request are not counted again as requests of their own.
TEST_F(HttpE2eTest, RequestParamsNCountsEachPromptOnceWithItsN) {
  const std::string model = "{model_name=\"" + ModelId() + "\"";
  const auto sample = [&](const std::string& name, const std::string& le = "") {
    const std::string body = HttpRequestTo(cluster_->http_port, "GET", "/metrics").body;
    return MetricSample(body, name + model + (le.empty() ? "}" : ",le=\"" + le + "\"}"));
  };
  const auto read = [&] {
    return std::array<double, 5>{
        sample("vllm:request_params_n_count"), sample("vllm:request_params_n_sum"),
        sample("vllm:request_params_n_bucket", "1"), sample("vllm:request_params_n_bucket", "2"),
        sample("vllm:request_max_num_generation_tokens_sum")};
  };
  // Series appear with their first observation: start from one request (the cluster is shared by
  // the file's tests, so others may have counted before: only differences are checked).
  GrpcText(*cluster_->stub, "Hello", 4);
  const std::array<double, 5> before = read();
  ASSERT_GE(before[0], 1) << "the gRPC request is counted";

  GrpcText(*cluster_->stub, "Hello", 4);
  ASSERT_EQ(
      cluster_
          ->Post("/v1/completions",
                 Json({{"prompt", "Hi"}, {"n", 3}, {"max_tokens", 6}, {"ignore_eos", true}}).dump())
          .status,
      200);
  ASSERT_EQ(
      cluster_
          ->Post("/v1/completions",
                 Json({{"prompt", {"a", "b"}}, {"n", 2}, {"max_tokens", 5}, {"ignore_eos", true}})
                     .dump())
          .status,
      200);
  const std::array<double, 5> after = read();
  EXPECT_EQ(after[0] - before[0], 4) << "gRPC 1, n = 3 once, two prompts of n = 2";
  EXPECT_EQ(after[1] - before[1], 1 + 3 + 2 + 2);
  EXPECT_EQ(after[2] - before[2], 1) << "n <= 1";
  EXPECT_EQ(after[3] - before[3], 3) << "n <= 2";
  EXPECT_EQ(after[4] - before[4], 4 + 6 + 5 + 5);
}

// Chat with n = 2, streamed: each choice opens with its own assistant role chunk and finishes
// once; seeded samples differ.
TEST_F(HttpE2eTest, ChatNSamplesStreamEachChoiceWithItsOwnRole) {
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Say hi"}}}},
                     {"max_tokens", 8},
                     {"temperature", 1.0},
                     {"seed", 5},
                     {"n", 2},
                     {"stream", true},
                     {"ignore_eos", true}};
  const HttpResponse response = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  std::vector<int> roles(2, 0), finishes(2, 0);
  std::vector<std::string> text(2);
  for (const std::string& event : response.Events()) {
    if (event == "[DONE]") continue;
    const Json chunk = Json::parse(event);
    ASSERT_EQ(chunk["choices"].size(), 1u) << event;
    const Json& choice = chunk["choices"][0];
    const auto index = choice["index"].get<size_t>();
    ASSERT_LT(index, 2u);
    if (choice["delta"].contains("role")) ++roles[index];
    if (choice["delta"].contains("content")) text[index] += choice["delta"]["content"];
    if (!choice["finish_reason"].is_null()) ++finishes[index];
  }
  EXPECT_EQ(roles, (std::vector<int>{1, 1}));
  EXPECT_EQ(finishes, (std::vector<int>{1, 1}));
  EXPECT_NE(text[0], text[1]);
}

// A list of prompts with n = 2: choice i is sample i % 2 of prompt i / 2.
TEST_F(HttpE2eTest, AListOfPromptsGivesEachPromptItsChoicesInOrder) {
  const std::vector<std::string> prompts = {"Hello world", "Bye", "abc def"};
  std::vector<std::string> expected;
  for (const std::string& p : prompts) expected.push_back(GrpcText(*cluster_->stub, p, 10));
  for (const bool stream : {false, true}) {
    const Json request = {{"prompt", prompts}, {"max_tokens", 10},  {"temperature", 0}, {"n", 2},
                          {"stream", stream},  {"ignore_eos", true}};
    const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    std::vector<std::string> texts;
    if (stream) {
      texts = StreamedChoices(response, 6);
    } else {
      const Json body = Json::parse(response.body);
      ASSERT_EQ(body["choices"].size(), 6u) << response.body;
      for (const Json& choice : body["choices"]) texts.push_back(choice["text"]);
      EXPECT_EQ(body["usage"]["prompt_tokens"], 11 + 3 + 7);
      EXPECT_EQ(body["usage"]["completion_tokens"], 60);
    }
    ASSERT_EQ(texts.size(), 6u);
    for (size_t i = 0; i < 6; ++i)
      EXPECT_EQ(texts[i], expected[i / 2]) << i << " stream " << stream;
  }
}

// echo: the prompt, then the same completion as without it, streamed or not.
TEST_F(HttpE2eTest, EchoPrependsThePromptToTheCompletion) {
  const std::string expected = "Hello world" + GrpcText(*cluster_->stub, "Hello world", 8);
  for (const bool stream : {false, true}) {
    const Json request = {{"prompt", "Hello world"}, {"max_tokens", 8},
                          {"temperature", 0},        {"echo", true},
                          {"stream", stream},        {"ignore_eos", true}};
    const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    if (stream) {
      EXPECT_EQ(StreamedChoices(response, 1)[0], expected);
    } else {
      const Json body = Json::parse(response.body);
      EXPECT_EQ(body["choices"][0]["text"], expected);
      EXPECT_EQ(body["usage"]["completion_tokens"], 8);
    }
  }
}

// vLLM's return_token_ids: a greedy request's ids are transformers' greedy tokens (the fixture's
// expected.json), streamed or not, beside the prompt's ids; a text prompt's ids are its tokens as
// the router's /tokenize gives them, after truncate_prompt_tokens.
TEST_F(HttpE2eTest, ReturnTokenIdsAreTransformersGreedyTokens) {
  std::ifstream in(worker::testdata::FixtureDir("llama-gqa") / "expected.json");
  const Json expected = Json::parse(in);
  const Json& prompt = expected["prompts"][1];
  ASSERT_TRUE(expected["ignore_eos"].get<bool>());
  const auto ids = prompt["ids"].get<std::vector<int32_t>>();
  auto greedy = prompt["greedy"].get<std::vector<int32_t>>();
  greedy.resize(12);

  Json request = {{"prompt", ids},
                  {"max_tokens", 12},
                  {"temperature", 0},
                  {"ignore_eos", true},
                  {"return_token_ids", true}};
  HttpResponse response = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  Json choice = Json::parse(response.body)["choices"][0];
  EXPECT_EQ(choice["token_ids"].get<std::vector<int32_t>>(), greedy) << choice.dump();
  EXPECT_EQ(choice["prompt_token_ids"].get<std::vector<int32_t>>(), ids);

  request["stream"] = true;
  response = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  std::vector<int32_t> streamed;
  int prompts_sent = 0;
  for (const std::string& event : response.Events()) {
    if (event == "[DONE]") continue;
    const Json chunk = Json::parse(event);
    for (const Json& id : chunk["choices"][0]["token_ids"]) streamed.push_back(id.get<int32_t>());
    if (chunk["choices"][0].contains("prompt_token_ids")) {
      ++prompts_sent;
      EXPECT_EQ(chunk["choices"][0]["prompt_token_ids"].get<std::vector<int32_t>>(), ids);
    }
  }
  EXPECT_EQ(streamed, greedy);
  EXPECT_EQ(prompts_sent, 1);

  const std::string text = "paged attention keeps blocks";
  response = cluster_->Post("/tokenize", Json{{"prompt", text}}.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  auto tokens = Json::parse(response.body)["tokens"].get<std::vector<int32_t>>();
  ASSERT_GT(tokens.size(), 5u);
  tokens.erase(tokens.begin(), tokens.end() - 5);
  response = cluster_->Post("/v1/completions", Json{{"prompt", text},
                                                    {"max_tokens", 2},
                                                    {"truncate_prompt_tokens", 5},
                                                    {"return_token_ids", true}}
                                                   .dump());
  ASSERT_EQ(response.status, 200) << response.body;
  choice = Json::parse(response.body)["choices"][0];
  EXPECT_EQ(choice["prompt_token_ids"].get<std::vector<int32_t>>(), tokens);
  EXPECT_EQ(choice["token_ids"].size(), 2u);
}

// echo + logprobs (how lm-eval-harness scores text) and gRPC prompt_logprobs: each prompt
// token's logprob given the ones before it equals log_softmax of transformers' prompt logits
// (the fixture's expected.json).
TEST_F(HttpE2eTest, PromptLogprobsMatchTransformersOverHttpAndGrpc) {
  std::ifstream in(worker::testdata::FixtureDir("llama-gqa") / "expected.json");
  const Json expected = Json::parse(in);
  std::vector<int32_t> ids;
  std::vector<double> reference;  // entry p - 1: prompt token p
  for (const Json& prompt : expected["prompts"]) {
    if (!prompt.contains("logits")) continue;
    ids = prompt["ids"].get<std::vector<int32_t>>();
    for (size_t p = 1; p < ids.size(); ++p) {
      double lse = 0.0;
      for (const Json& l : prompt["logits"][p - 1]) lse += std::exp(l.get<double>());
      reference.push_back(prompt["logits"][p - 1][static_cast<size_t>(ids[p])].get<double>() -
                          std::log(lse));
    }
    break;
  }
  ASSERT_GE(ids.size(), 2u) << "the fixture has no prompt logits";
  const auto near = [](double got, double want) {
    return std::fabs(got - want) <= 2e-4 + 2e-4 * std::fabs(want);
  };

  const Json request = {{"prompt", ids},   {"echo", true},     {"logprobs", 1},
                        {"max_tokens", 1}, {"temperature", 0}, {"ignore_eos", true}};
  const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const Json lp = Json::parse(response.body)["choices"][0]["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), ids.size() + 1) << lp.dump();
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  for (size_t p = 1; p < ids.size(); ++p) {
    EXPECT_TRUE(near(lp["token_logprobs"][p].get<double>(), reference[p - 1]))
        << "token " << p << ": " << lp["token_logprobs"][p] << " vs " << reference[p - 1];
  }

  // vLLM's prompt_logprobs field: {"id": {logprob, rank, decoded_token}} per prompt token.
  const Json vllm = {{"prompt", ids}, {"prompt_logprobs", 2}, {"max_tokens", 1}};
  const HttpResponse vllm_response = cluster_->Post("/v1/completions", vllm.dump());
  ASSERT_EQ(vllm_response.status, 200) << vllm_response.body;
  const Json prompt_lp = Json::parse(vllm_response.body)["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(prompt_lp.size(), ids.size()) << prompt_lp.dump();
  EXPECT_TRUE(prompt_lp[0].is_null());
  for (size_t p = 1; p < ids.size(); ++p) {
    const Json& entry = prompt_lp[p][std::to_string(ids[p])];
    EXPECT_TRUE(near(entry["logprob"].get<double>(), reference[p - 1])) << entry.dump();
    EXPECT_GE(entry["rank"].get<int>(), 1);
    EXPECT_GE(prompt_lp[p].size(), 2u);  // the token and up to 2 alternatives (it may be one)
    EXPECT_LE(prompt_lp[p].size(), 3u);
  }

  v1::GenerateRequest grpc_request;
  grpc_request.mutable_token_ids()->mutable_ids()->Assign(ids.begin(), ids.end());
  grpc_request.mutable_sampling()->set_max_tokens(2);
  grpc_request.mutable_sampling()->set_prompt_logprobs(0);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + seconds(30));
  auto reader = cluster_->stub->Generate(&context, grpc_request);
  v1::GenerateResponse message;
  ASSERT_TRUE(reader->Read(&message));
  EXPECT_EQ(
      std::vector<int32_t>(message.prompt_token_ids().begin(), message.prompt_token_ids().end()),
      ids);
  ASSERT_EQ(static_cast<size_t>(message.prompt_logprobs_size()), ids.size() - 1);
  for (size_t p = 1; p < ids.size(); ++p) {
    const v1::Logprob& got = message.prompt_logprobs(static_cast<int>(p - 1));
    EXPECT_EQ(got.token_id(), ids[p]);
    EXPECT_TRUE(near(got.logprob(), reference[p - 1])) << "token " << p;
  }
  while (reader->Read(&message)) EXPECT_EQ(message.prompt_logprobs_size(), 0);
  EXPECT_TRUE(reader->Finish().ok());
}

// vLLM's allowed_token_ids: greedy picks the allowed token transformers ranks highest (the
// model's top two are left out), every later token is allowed too, and the logprob reported is
// the unrestricted distribution's; the HTTP field gives the same text as the gRPC one.
TEST_F(HttpE2eTest, AllowedTokenIdsChooseAmongThemAsTransformersRanksThem) {
  std::vector<int32_t> ids;
  std::vector<double> next;  // transformers' logits of the token after the prompt
  ASSERT_TRUE(FixturePromptWithNextLogits(&ids, &next)) << "the fixture has no prompt logits";
  std::vector<int32_t> order(next.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return next[static_cast<size_t>(a)] > next[static_cast<size_t>(b)];
  });
  const std::vector<int32_t> allowed = {order[7], order[2], order[4]};
  ASSERT_GT(next[static_cast<size_t>(order[2])] - next[static_cast<size_t>(order[4])], 1e-3)
      << "the fixture's ranks 3 and 5 are too close to tell apart";
  double lse = 0.0;
  for (double l : next) lse += std::exp(l);
  const double raw_logprob = next[static_cast<size_t>(order[2])] - std::log(lse);

  v1::GenerateRequest request;
  request.mutable_token_ids()->mutable_ids()->Assign(ids.begin(), ids.end());
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(6);
  request.mutable_sampling()->set_ignore_eos(true);
  request.mutable_sampling()->mutable_allowed_token_ids()->Assign(allowed.begin(), allowed.end());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + seconds(30));
  auto reader = cluster_->stub->Generate(&context, request);
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::string grpc_text;
  v1::GenerateResponse message;
  while (reader->Read(&message)) {
    tokens.insert(tokens.end(), message.token_ids().begin(), message.token_ids().end());
    for (const v1::Logprob& l : message.logprobs()) logprobs.push_back(l.logprob());
    grpc_text += message.text();
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(tokens.size(), 6u);
  EXPECT_EQ(tokens[0], order[2]);
  for (int32_t t : tokens) {
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), t), allowed.end()) << "token " << t;
  }
  ASSERT_FALSE(logprobs.empty());
  EXPECT_NEAR(logprobs[0], raw_logprob, 2e-4 + 2e-4 * std::fabs(raw_logprob));

  const Json http = {{"prompt", ids},
                     {"max_tokens", 6},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"allowed_token_ids", allowed}};
  const HttpResponse response = cluster_->Post("/v1/completions", http.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(Json::parse(response.body)["choices"][0]["text"], grpc_text);
}

// vLLM's guided_choice: the answer is the choice whose first token transformers ranks higher
// (later tokens are forced), ending with finish_reason "stop"; sampled answers are each a whole
// choice; chat takes structured_outputs.choice.
TEST_F(HttpE2eTest, GuidedChoiceAnswersTheChoiceTransformersPrefers) {
  std::vector<int32_t> ids;
  std::vector<double> next;  // transformers' logits of the token after the prompt
  ASSERT_TRUE(FixturePromptWithNextLogits(&ids, &next)) << "the fixture has no prompt logits";
  // The two printable ASCII bytes (one token each) transformers ranks highest.
  std::vector<int32_t> printable;
  for (int32_t t = 'a'; t <= 'z'; ++t) printable.push_back(t);
  std::sort(printable.begin(), printable.end(), [&](int32_t a, int32_t b) {
    return next[static_cast<size_t>(a)] > next[static_cast<size_t>(b)];
  });
  const int32_t better = printable[0], worse = printable[1];
  ASSERT_GT(next[static_cast<size_t>(better)] - next[static_cast<size_t>(worse)], 1e-3);
  const std::string preferred = std::string(1, static_cast<char>(better)) + "es";
  const std::string other = std::string(1, static_cast<char>(worse)) + "o";

  const Json greedy = {{"prompt", ids},
                       {"max_tokens", 10},
                       {"temperature", 0},
                       {"guided_choice", {other, preferred}}};
  HttpResponse response = cluster_->Post("/v1/completions", greedy.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  Json choice = Json::parse(response.body)["choices"][0];
  EXPECT_EQ(choice["text"], preferred);
  EXPECT_EQ(choice["finish_reason"], "stop");

  const Json sampled = {{"prompt", ids},
                        {"max_tokens", 10},
                        {"temperature", 1.5},
                        {"n", 8},
                        {"seed", 3},
                        {"ignore_eos", true},
                        {"guided_choice", {other, preferred, "zz"}}};
  response = cluster_->Post("/v1/completions", sampled.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const Json samples = Json::parse(response.body);  // a range-for would not keep a temporary
  ASSERT_EQ(samples["choices"].size(), 8u);
  for (const Json& c : samples["choices"]) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_TRUE(text == other || text == preferred || text == "zz") << text;
    EXPECT_EQ(c["finish_reason"], "stop");
  }

  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Pick one"}}}},
                     {"temperature", 0},
                     {"structured_outputs", {{"choice", {"left", "right"}}}}};
  response = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  choice = Json::parse(response.body)["choices"][0];
  const std::string content = choice["message"]["content"].get<std::string>();
  EXPECT_TRUE(content == "left" || content == "right") << content;
  EXPECT_EQ(choice["finish_reason"], "stop");
}

// OpenAI's response_format json_object: the reply is one JSON object (nlohmann reads it), ending
// with finish_reason "stop" as it closes, streamed or not; the logit_bias nudges this small
// random model to close what it opens within max_tokens.
TEST_F(HttpE2eTest, JsonObjectResponseFormatAnswersAnObject) {
  const Json bias = {{std::to_string('"'), 6}, {std::to_string(':'), 6}, {std::to_string('}'), 8}};
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Answer in JSON"}}}},
                     {"temperature", 0},
                     {"max_tokens", 64},
                     {"logit_bias", bias},
                     {"response_format", {{"type", "json_object"}}}};
  HttpResponse response = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const Json reply = Json::parse(response.body)["choices"][0];
  const std::string content = reply["message"]["content"].get<std::string>();
  EXPECT_TRUE(Json::parse(content, nullptr, false).is_object()) << content;
  EXPECT_EQ(reply["finish_reason"], "stop");
  ExpectStreamedChatStopsWith(chat, content);
}

// OpenAI's response_format json_schema: the reply has exactly the schema's keys with values of
// their kinds (read here with nlohmann), ends with finish_reason "stop" as the object closes,
// streamed or not; a schema headroom cannot enforce is a 400 naming the field and the keyword.
// (tests/e2e/openai_client_check.py validates sampled replies with jsonschema and pydantic.)
TEST_F(HttpE2eTest, JsonSchemaResponseFormatAnswersWhatTheSchemaDescribes) {
  // This random model likes tabs and newlines (the matcher allows runs of 16 between tokens).
  const Json bias = {{std::to_string('"'), 4},
                     {std::to_string(','), 4},
                     {std::to_string('}'), 6},
                     {std::to_string('\t'), -4},
                     {std::to_string('\n'), -4}};
  const Json schema = {{"type", "object"},
                       {"properties",
                        {{"answer", {{"enum", {"yes", "no"}}}},
                         {"score", {{"type", "integer"}}},
                         {"sure", {{"type", "boolean"}}}}},
                       {"required", {"answer", "score", "sure"}},
                       {"additionalProperties", false}};
  Json chat = {
      {"messages", {{{"role", "user"}, {"content", "Answer in JSON"}}}},
      {"temperature", 0},
      {"max_tokens", 128},
      {"logit_bias", bias},
      {"response_format",
       {{"type", "json_schema"}, {"json_schema", {{"name", "verdict"}, {"schema", schema}}}}}};
  HttpResponse response = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const Json reply = Json::parse(response.body)["choices"][0];
  const std::string content = reply["message"]["content"].get<std::string>();
  const Json value = Json::parse(content, nullptr, false);
  ASSERT_TRUE(value.is_object()) << content;
  EXPECT_EQ(value.size(), 3u) << content;
  EXPECT_TRUE(value["answer"] == "yes" || value["answer"] == "no") << content;
  EXPECT_TRUE(value["score"].is_number_integer()) << content;
  EXPECT_TRUE(value["sure"].is_boolean()) << content;
  EXPECT_EQ(reply["finish_reason"], "stop");
  ExpectStreamedChatStopsWith(chat, content);

  chat["response_format"]["json_schema"]["schema"]["properties"]["answer"] = {
      {"type", "string"}, {"pattern", "^(?!no)"}};
  response = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(response.status, 400) << response.body;
  const Json error = Json::parse(response.body)["error"];
  EXPECT_EQ(error["param"], "response_format.json_schema.schema");
  EXPECT_NE(error["message"].get<std::string>().find(
                "at /properties/answer: pattern: lookahead is not supported"),
            std::string::npos)
      << error;
}

// vLLM's truncate_prompt_tokens keeps the prompt's last k tokens: the answer is the one for
// those k tokens alone, usage counts k, and a prompt too long for max_model_len fits once cut.
TEST_F(HttpE2eTest, TruncatePromptTokensAnswersForTheLastKTokens) {
  std::vector<int32_t> prompt;
  for (int i = 0; i < 300; ++i) prompt.push_back((i * 37 + 11) % 256);
  const std::vector<int32_t> tail(prompt.end() - 40, prompt.end());
  const auto complete = [&](const Json& body) {
    const HttpResponse response = cluster_->Post("/v1/completions", body.dump());
    EXPECT_EQ(response.status, 200) << response.body;
    return Json::parse(response.body, nullptr, false);
  };
  const Json cut = complete({{"prompt", prompt},
                             {"truncate_prompt_tokens", 40},
                             {"max_tokens", 8},
                             {"temperature", 0},
                             {"ignore_eos", true}});
  const Json alone =
      complete({{"prompt", tail}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}});
  ASSERT_TRUE(cut.is_object() && alone.is_object());
  EXPECT_EQ(cut["usage"]["prompt_tokens"], 40);
  EXPECT_EQ(cut["choices"][0]["text"], alone["choices"][0]["text"]);
  EXPECT_EQ(cluster_->Post("/v1/completions", Json({{"prompt", prompt}, {"max_tokens", 8}}).dump())
                .status,
            400)
      << "300 + 8 tokens do not fit max_model_len 256 uncut";
}

// One bad prompt of a list fails the whole request with a real 400 naming it, streamed or not:
// no partial answer, and the other prompts' calls are cancelled.
TEST_F(HttpE2eTest, OneBadPromptOfAListFailsTheWholeRequestWithA400NamingIt) {
  for (const bool stream : {false, true}) {
    const Json request = {{"prompt", Json::array({Json("Hello world"), Json::array({5, 9999})})},
                          {"max_tokens", 50},
                          {"n", 2},
                          {"stream", stream}};
    const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
    ASSERT_EQ(response.status, 400) << response.body;
    const Json body = Json::parse(response.body);
    const std::string message = body["error"]["message"];
    EXPECT_EQ(message.rfind("prompt[1]: ", 0), 0u) << message;
    EXPECT_NE(message.find("9999"), std::string::npos) << message;
    EXPECT_EQ(body["error"]["param"], "prompt");
  }
}

TEST_F(HttpE2eTest, ChatEqualsCompletionOfTheChatMlRenderedPrompt) {
  // Qwen2-Instruct's ChatML template (the byte tokenizer's default format) adds this system turn.
  const std::string rendered =
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nSay hi"
      "<|im_end|>\n<|im_start|>assistant\n";
  const Json completion = {
      {"prompt", rendered}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  const HttpResponse reference = cluster_->Post("/v1/completions", completion.dump());
  ASSERT_EQ(reference.status, 200) << reference.body;
  const std::string expected = Json::parse(reference.body)["choices"][0]["text"];

  const Json chat = {{"model", ModelId()},
                     {"messages", {{{"role", "user"}, {"content", "Say hi"}}}},
                     {"max_tokens", 12},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  const HttpResponse whole = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json body = Json::parse(whole.body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["id"].get<std::string>().rfind("chatcmpl-", 0), 0u) << body["id"];
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], expected);
  EXPECT_EQ(body["usage"]["prompt_tokens"], static_cast<int>(rendered.size()));

  Json stream_chat = chat;
  stream_chat["stream"] = true;
  const HttpResponse streamed = cluster_->Post("/v1/chat/completions", stream_chat.dump());
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  std::string finish;
  EXPECT_EQ(StreamedText(streamed, true, &finish), expected);
  EXPECT_EQ(finish, "length");
}

// Without max_tokens a chat reply may fill the context (vLLM's default), while a completion
// stops at 16 tokens (OpenAI's and vLLM's completions default).
TEST_F(HttpE2eTest, MaxTokensDefaultsToTheRestOfTheContextForChatAnd16ForCompletions) {
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Say hi"}}}},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  const HttpResponse reply = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json body = Json::parse(reply.body);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  const int prompt_tokens = body["usage"]["prompt_tokens"];
  EXPECT_GT(prompt_tokens, 0);
  EXPECT_EQ(body["usage"]["completion_tokens"], 256 - prompt_tokens);  // max_model_len 256

  const Json completion = {{"prompt", "Say hi"}, {"temperature", 0}, {"ignore_eos", true}};
  const HttpResponse text = cluster_->Post("/v1/completions", completion.dump());
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_EQ(Json::parse(text.body)["usage"]["completion_tokens"], 16);
}

TEST_F(HttpE2eTest, ChatWithoutATemplateIs400NamingTheWayOut) {
  // A second router over the same workers, told the model has no chat template.
  const ExtraRouter router = StartRouterOver(*cluster_, {"--chat-template", "none"});
  const int port = router.http_port;
  ASSERT_NE(port, 0) << "the router did not start";
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Say hi"}}}}, {"max_tokens", 4}};
  const HttpResponse response = HttpRequestTo(port, "POST", "/v1/chat/completions", chat.dump());
  EXPECT_EQ(response.status, 400) << response.body;
  const Json body = Json::parse(response.body, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("error")) << response.body;
  const std::string message = body["error"]["message"].get<std::string>();
  for (const char* part : {"chat template", "/v1/completions", "--chat-template"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
  }
  EXPECT_EQ(body["error"]["param"], "messages");
}

// The random fixture model, made to write a call in the parser's format by a guided_regex: the
// router reads it as a model's decision to call (tool_calls, finish_reason "tool_calls"), whole
// and streamed.
void ExpectForcedCallIsRead(int port, Json chat, const std::string& call_regex,
                            int max_tokens = 96) {
  chat["max_tokens"] = max_tokens;
  chat["guided_regex"] = call_regex;
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    chat["stream"] = stream;
    const HttpResponse response = HttpRequestTo(port, "POST", "/v1/chat/completions", chat.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    Json calls = Json::array();
    std::string finish;
    std::string content;
    if (stream) {
      for (const std::string& event : response.Events()) {
        if (event == "[DONE]") continue;
        const Json choice = Json::parse(event)["choices"][0];
        const Json& delta = choice["delta"];
        // Joined by index as a client joins them: a call's first delta has its id and name,
        // later ones pieces of its arguments.
        for (const Json& piece : delta.value("tool_calls", Json::array())) {
          const size_t k = piece["index"].get<size_t>();
          if (k == calls.size()) {
            calls.push_back(piece);
          } else {
            ASSERT_LT(k, calls.size()) << response.body;
            EXPECT_FALSE(piece["function"].contains("name")) << response.body;
            calls[k]["function"]["arguments"] =
                calls[k]["function"]["arguments"].get<std::string>() +
                piece["function"]["arguments"].get<std::string>();
          }
        }
        if (delta.contains("content") && delta["content"].is_string()) {
          content += delta["content"].get<std::string>();
        }
        if (choice["finish_reason"].is_string()) finish = choice["finish_reason"];
      }
    } else {
      const Json choice = Json::parse(response.body)["choices"][0];
      calls = choice["message"]["tool_calls"];
      finish = choice["finish_reason"];
      content = choice["message"]["content"].is_string() ? choice["message"]["content"] : "";
    }
    EXPECT_EQ(finish, "tool_calls") << response.body;
    EXPECT_EQ(content, "") << "the reply was only the call";
    ASSERT_TRUE(calls.is_array() && calls.size() == 1) << response.body;
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    const Json arguments = Json::parse(calls[0]["function"]["arguments"].get<std::string>());
    EXPECT_TRUE(arguments == Json({{"city", "Paris"}}) || arguments == Json({{"city", "Oslo"}}))
        << arguments;
  }
}

// tool_choice "auto" (the default with tools) is served only by a router started with
// --enable-auto-tool-choice --tool-call-parser hermes (vLLM's flags): the shared router refuses it
// saying so, this one answers (the fixture model writes no call, so the reply is content), and a
// call it is made to write is read, whole and streamed; so is one in each other parser's format
// (llama3_json, mistral, pythonic, qwen3_coder, granite, phi4_mini_json, glm45, glm47,
// seed_oss) by a router using it.
TEST_F(HttpE2eTest, AutoToolChoiceNeedsTheParserFlags) {
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Weather?"}}}},
                     {"max_tokens", 4},
                     {"tools", {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}};
  HttpResponse refused = cluster_->Post("/v1/chat/completions", chat.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("--enable-auto-tool-choice --tool-call-parser"), std::string::npos)
      << refused.body;

  const ExtraRouter router =
      StartRouterOver(*cluster_, {"--enable-auto-tool-choice", "--tool-call-parser", "hermes"});
  const int port = router.http_port;
  ASSERT_NE(port, 0) << "the router did not start";
  const HttpResponse answered = HttpRequestTo(port, "POST", "/v1/chat/completions", chat.dump());
  ASSERT_EQ(answered.status, 200) << answered.body;
  const Json message = Json::parse(answered.body)["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_string()) << answered.body;
  ExpectForcedCallIsRead(
      port, chat,
      R"re(<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "(Paris|Oslo)"\}\}\n</tool_call>)re");
  router.process->Signal(SIGTERM);
  EXPECT_EQ(router.process->WaitExit(std::chrono::seconds(20)), 0);

  // Llama 3's format, by a router with --tool-call-parser llama3_json.
  const ExtraRouter llama = StartRouterOver(
      *cluster_, {"--enable-auto-tool-choice", "--tool-call-parser", "llama3_json"});
  ASSERT_NE(llama.http_port, 0) << "the router did not start";
  ExpectForcedCallIsRead(
      llama.http_port, chat,
      R"re(\{"name": "get_weather", "parameters": \{"city": "(Paris|Oslo)"\}\})re");
  llama.process->Signal(SIGTERM);
  EXPECT_EQ(llama.process->WaitExit(std::chrono::seconds(20)), 0);

  // Every other parser, each reading a call forced in its family's format.
  const std::string call_object =
      R"re(\{"name": "get_weather", "arguments": \{"city": "(Paris|Oslo)"\}\})re";
  const std::vector<std::pair<std::string, std::string>> formats = {
      {"mistral", "\\[TOOL_CALLS\\]\\[" + call_object + "\\]"},
      {"pythonic", R"re(\[get_weather\(city="(Paris|Oslo)"\)\])re"},
      {"qwen3_coder",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\n(Paris|Oslo)\n</parameter>\n"
       "</function>\n</tool_call>"},
      {"granite", "<tool_call>\\[" + call_object + "\\]"},
      {"phi4_mini_json", "functools\\[" + call_object + "\\]"},
      {"glm45",
       "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>(Paris|Oslo)</arg_value>\n"
       "</tool_call>"},
      {"seed_oss",
       "<seed:tool_call>\n<function=get_weather>\n<parameter=city>(Paris|Oslo)</parameter>\n"
       "</function>\n</seed:tool_call>"},
      {"glm47",
       "<tool_call>get_weather<arg_key>city</arg_key><arg_value>(Paris|Oslo)</arg_value></"
       "tool_call>"}};
  for (const auto& [parser, call_regex] : formats) {
    SCOPED_TRACE(parser);
    const ExtraRouter other =
        StartRouterOver(*cluster_, {"--enable-auto-tool-choice", "--tool-call-parser", parser});
    ASSERT_NE(other.http_port, 0) << "the router did not start";
    ExpectForcedCallIsRead(other.http_port, chat, call_regex, 100);
    other.process->Signal(SIGTERM);
    EXPECT_EQ(other.process->WaitExit(std::chrono::seconds(20)), 0);
  }
}

// --reasoning-parser qwen3, with a template whose end (a chat_template_kwargs variable) opens or
// closes the reasoning, as Qwen3.5's and Qwen3's enable_thinking=false do:
//   - closed: the reply is the answer; a guided_regex holds it from the first token, and the
//     message's reasoning_content and reasoning are null;
//   - opened: the reply is reasoning from its first byte, and a guided_regex waits for </think>
//     (which the fixture model never writes): the reply is free text, all of it reasoning, and
//     content is null.
// And --reasoning-parser seed_oss reads the prompt's end by Seed-OSS's own tags.
// (Splitting at </think> itself is tested on the response builder, tests/router/openai/
// reasoning_parser_test.cc, and the constraint's start in the engine, engine_test.)
TEST_F(HttpE2eTest, ReasoningParserSplitsAsThePromptLeftTheReasoning) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("headroom_e2e_reasoning_" + std::to_string(::getpid()) + ".jinja");
  std::ofstream(file) << "{%- for m in messages %}[{{ m.role }}]{{ m.content }}\n"
                         "{%- endfor %}[assistant]{{ think | default('') }}";
  const ExtraRouter router =
      StartRouterOver(*cluster_, {"--chat-template", file.string(), "--reasoning-parser", "qwen3"});
  std::filesystem::remove(file);  // read at startup
  ASSERT_NE(router.http_port, 0) << "the router did not start";
  const auto ask = [&](const std::string& think, bool guided) {
    Json chat = {{"messages", {{{"role", "user"}, {"content", "2+2?"}}}},
                 {"max_tokens", 8},
                 {"chat_template_kwargs", {{"think", think}}}};
    if (guided) chat["guided_regex"] = "[a-c]{4}";
    const HttpResponse response =
        HttpRequestTo(router.http_port, "POST", "/v1/chat/completions", chat.dump());
    EXPECT_EQ(response.status, 200) << response.body;
    return Json::parse(response.body)["choices"][0]["message"];
  };
  const Json answered = ask("<think>\n\n</think>\n\n", true);
  ASSERT_TRUE(answered["content"].is_string()) << answered;
  const std::string answer = answered["content"].get<std::string>();
  EXPECT_TRUE(answer.size() == 4 && answer.find_first_not_of("abc") == std::string::npos)
      << answered;
  EXPECT_TRUE(answered["reasoning_content"].is_null()) << answered;
  EXPECT_TRUE(answered["reasoning"].is_null()) << answered;

  for (const bool guided : {false, true}) {
    const Json thinking = ask("<think>\n", guided);
    EXPECT_TRUE(thinking["content"].is_null()) << thinking;
    ASSERT_TRUE(thinking["reasoning_content"].is_string()) << thinking;
    EXPECT_FALSE(thinking["reasoning_content"].get<std::string>().empty()) << thinking;
    EXPECT_EQ(thinking["reasoning"], thinking["reasoning_content"]);
    const std::string reasoning = thinking["reasoning_content"].get<std::string>();
    EXPECT_FALSE(reasoning.size() == 4 && reasoning.find_first_not_of("abc") == std::string::npos)
        << "the regex held the reasoning: " << thinking;
  }
  router.process->Signal(SIGTERM);
  EXPECT_EQ(router.process->WaitExit(std::chrono::seconds(20)), 0);

  // --reasoning-parser seed_oss reads the prompt by its own tags: a prompt that closes
  // </seed:think> (Seed-OSS's thinking_budget 0) leaves the reply content, where seed_oss would
  // otherwise take a reply without its end tag as all reasoning.
  std::ofstream(file) << "{%- for m in messages %}[{{ m.role }}]{{ m.content }}\n"
                         "{%- endfor %}[assistant]{{ think | default('') }}";
  const ExtraRouter seed = StartRouterOver(
      *cluster_, {"--chat-template", file.string(), "--reasoning-parser", "seed_oss"});
  std::filesystem::remove(file);
  ASSERT_NE(seed.http_port, 0) << "the router did not start";
  const auto ask_seed = [&](const std::string& think) {
    const Json chat = {{"messages", {{{"role", "user"}, {"content", "2+2?"}}}},
                       {"max_tokens", 8},
                       {"chat_template_kwargs", {{"think", think}}}};
    const HttpResponse response =
        HttpRequestTo(seed.http_port, "POST", "/v1/chat/completions", chat.dump());
    EXPECT_EQ(response.status, 200) << response.body;
    return Json::parse(response.body)["choices"][0]["message"];
  };
  const Json closed = ask_seed("<seed:think>\n</seed:think>\n");
  EXPECT_TRUE(closed["content"].is_string()) << closed;
  EXPECT_TRUE(closed["reasoning_content"].is_null()) << closed;
  const Json open = ask_seed("");
  EXPECT_TRUE(open["content"].is_null()) << open;
  EXPECT_TRUE(open["reasoning_content"].is_string()) << open;
  seed.process->Signal(SIGTERM);
  EXPECT_EQ(seed.process->WaitExit(std::chrono::seconds(20)), 0);
}

// --chat-template FILE: the router renders the file's Jinja (the prompt is what it wrote: the
// byte tokenizer counts one token per byte, and /tokenize with messages shows it), passes
// chat_template_kwargs, tools and tool messages to it, and a template's raise_exception is a 400
// carrying its message.
TEST_F(HttpE2eTest, ChatRendersAJinjaTemplateFileAndItsRefusals) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("headroom_e2e_template_" + std::to_string(::getpid()) + ".jinja");
  std::ofstream(file) << "{%- if messages[0].role == 'system' -%}\n"
                         "  {{- raise_exception('System role not supported') -}}\n"
                         "{%- endif -%}\n"
                         "{{- prefix | default('') -}}\n"
                         "{%- for m in messages %}[{{ m.role }}]{{ m.content }}\n"
                         "  {%- if m.tool_calls %}{{ m.tool_calls[0].function.arguments | tojson }}"
                         "{% endif %}\n"
                         "  {%- if m.tool_call_id %}#{{ m.tool_call_id }}{% endif %}\n"
                         "{%- endfor -%}\n"
                         "{%- if tools %}{{ tools | tojson }}{% endif -%}\n";
  const ExtraRouter router = StartRouterOver(*cluster_, {"--chat-template", file.string()});
  std::filesystem::remove(file);  // read at startup
  const int port = router.http_port;
  ASSERT_NE(port, 0) << "the router did not start";
  auto chat = [&](Json body) {
    body["max_tokens"] = 2;
    body["ignore_eos"] = true;
    return HttpRequestTo(port, "POST", "/v1/chat/completions", body.dump());
  };
  const Json say_hi = {{{"role", "user"}, {"content", "Say hi"}}};
  HttpResponse r = chat({{"messages", say_hi}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["usage"]["prompt_tokens"], std::string("[user]Say hi").size());

  r = chat({{"messages", say_hi}, {"chat_template_kwargs", {{"prefix", ">>"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["usage"]["prompt_tokens"], std::string(">>[user]Say hi").size());

  // Tools reach the template as vLLM gives them (type, function {name, description or null,
  // parameters}); a call's arguments as an object; a tool result with its call's id.
  // /tokenize with messages (vLLM's chat form) gives the prompt the chat request would get.
  r = HttpRequestTo(port, "POST", "/tokenize", Json{{"messages", say_hi}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<int32_t> bytes;
  for (char c : std::string("[user]Say hi")) bytes.push_back(static_cast<unsigned char>(c));
  EXPECT_EQ(Json::parse(r.body)["tokens"], Json(bytes));
  r = HttpRequestTo(port, "POST", "/tokenize",
                    Json{{"messages", {{{"role", "system"}, {"content", "x"}}}}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("System role not supported"), std::string::npos) << r.body;

  const std::string tool_body = R"({
      "messages": [{"role": "user", "content": "Say hi"},
                   {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                     "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "r"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                 "properties": {"x": {"type": "integer"}}}}}],
      "tool_choice": "none"})";
  r = chat(Json::parse(tool_body));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string prompt =
      R"([user]Say hi[assistant]{"x": 1}[tool]r#c1[{"type": "function", "function": {"name": )"
      R"("f", "description": null, "parameters": {"type": "object", "properties": {"x": )"
      R"({"type": "integer"}}}}}])";
  EXPECT_EQ(Json::parse(r.body)["usage"]["prompt_tokens"], prompt.size());
  // Byte for byte, from the body as written (the parameters keep the client's key order: "type"
  // before "properties", which a key-sorting parse would swap).
  r = HttpRequestTo(port, "POST", "/tokenize", tool_body);
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<int32_t> prompt_bytes;
  for (char c : prompt) prompt_bytes.push_back(static_cast<unsigned char>(c));
  EXPECT_EQ(Json::parse(r.body)["tokens"], Json(prompt_bytes));

  r = chat({{"messages",
             {{{"role", "system"}, {"content", "Be brief."}},
              {{"role", "user"}, {"content", "Say hi"}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  const Json body = Json::parse(r.body, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("error")) << r.body;
  EXPECT_NE(body["error"]["message"].get<std::string>().find("System role not supported"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(body["error"]["param"], "messages");
}

// --chat-template-content-format: a template that loops over a message's content gets text parts
// as a list by default (auto; a tool result stays a string), one joined string with "string",
// and the flag holds for a request's own chat_template too. /tokenize shows the prompt (one byte
// token per byte).
TEST_F(HttpE2eTest, ContentReachesTheTemplateInTheFormatAsked) {
  const std::string source =
      "{%- for m in messages %}[{{ m.role }}]{% if m.content is string %}S:{{ m.content }}"
      "{% else %}{% for p in m.content %}P:{{ p.text }};{% endfor %}{% endif %}{% endfor %}";
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("headroom_e2e_parts_" + std::to_string(::getpid()) + ".jinja");
  std::ofstream(file) << source;
  const ExtraRouter automatic = StartRouterOver(
      *cluster_, {"--chat-template", file.string(), "--trust-request-chat-template"});
  const ExtraRouter joined =
      StartRouterOver(*cluster_, {"--chat-template", file.string(), "--trust-request-chat-template",
                                  "--chat-template-content-format", "string"});
  std::filesystem::remove(file);  // read at startup
  ASSERT_NE(automatic.http_port, 0) << "the router did not start";
  ASSERT_NE(joined.http_port, 0) << "the router did not start";
  const Json messages = Json::parse(R"([
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "r"}]}])");
  auto prompt = [&](int port, Json body) -> std::string {
    body["messages"] = messages;
    const HttpResponse r = HttpRequestTo(port, "POST", "/tokenize", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    const Json tokens = Json::parse(r.body)["tokens"];
    std::string text;
    for (const Json& id : tokens) text += static_cast<char>(id.get<int>());
    return text;
  };
  EXPECT_EQ(prompt(automatic.http_port, Json::object()), "[user]P:a;P:b;[tool]S:r");
  EXPECT_EQ(prompt(joined.http_port, Json::object()), "[user]S:a\nb[tool]S:r");
  // A request's template is detected on its own (here it prints content as given) and the flag
  // holds for it too.
  const Json own = {{"chat_template", "{% for m in messages %}{{ m.content }}|{% endfor %}"}};
  EXPECT_EQ(prompt(automatic.http_port, own), "a\nb|r|");
  const Json own_loop = {{"chat_template", source}};
  EXPECT_EQ(prompt(automatic.http_port, own_loop), "[user]P:a;P:b;[tool]S:r");
  EXPECT_EQ(prompt(joined.http_port, own_loop), "[user]S:a\nb[tool]S:r");
  for (const ExtraRouter* r : {&automatic, &joined}) {
    r->process->Signal(SIGTERM);
    EXPECT_EQ(r->process->WaitExit(std::chrono::seconds(20)), 0);
  }
}

struct BadCase {
  std::string name;
  std::string path;
  std::string body;
  int status;
  std::vector<std::string> in_message;  // substrings of error.message
  std::vector<std::string> headers = {kAuth};
  std::string param = "";  // error.param, when not empty
};

TEST_F(HttpE2eTest, BadInputGetsTheRightStatusAndAMessageNamingTheFieldAndLimit) {
  const std::string long_prompt(300, 'a');
  // 400 KB of nesting: walking it recursively overflowed a router thread's stack (the router
  // died); the cases after these find it still serving.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::vector<BadCase> cases = {
      {"a body nested 200000 deep",
       "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"x": )" +
           deep + "}}",
       400,
       {"the request body nests arrays and objects more than 128 levels deep"}},
      {"a /tokenize body nested 200000 deep",
       "/tokenize",
       R"({"prompt": "hi", "x": )" + deep + "}",
       400,
       {"the request body nests arrays and objects more than 128 levels deep"}},
      {"malformed JSON", "/v1/completions", R"({"prompt": "hi",)", 400, {"JSON"}},
      {"body not an object", "/v1/completions", R"(["hi"])", 400, {"object"}},
      {"temperature of the wrong type",
       "/v1/completions",
       R"({"prompt": "hi", "temperature": "hot"})",
       400,
       {"temperature"}},
      {"max_tokens of the wrong type",
       "/v1/completions",
       R"({"prompt": "hi", "max_tokens": "ten"})",
       400,
       {"max_tokens"}},
      {"prompt of the wrong type",
       "/v1/completions",
       R"({"prompt": {"text": "hi"}})",
       400,
       {"prompt"}},
      {"unknown model", "/v1/completions", R"({"model": "gpt-9", "prompt": "hi"})", 404, {"gpt-9"}},
      {"empty prompt", "/v1/completions", R"({"prompt": ""})", 400, {"prompt"}},
      {"prompt longer than max_model_len",
       "/v1/completions",
       Json({{"prompt", long_prompt}, {"max_tokens", 1}}).dump(),
       400,
       {"300", "256"}},
      {"max_tokens 0",
       "/v1/completions",
       R"({"prompt": "hi", "max_tokens": 0})",
       400,
       {"max_tokens", "0"}},
      {"max_tokens negative",
       "/v1/completions",
       R"({"prompt": "hi", "max_tokens": -3})",
       400,
       {"max_tokens", "-3"}},
      {"max_tokens beyond the limit",
       "/v1/completions",
       R"({"prompt": "hi", "max_tokens": 1000})",
       400,
       {"max_tokens", "1000", "256"}},
      {"temperature below 0",
       "/v1/completions",
       R"({"prompt": "hi", "temperature": -0.5})",
       400,
       {"temperature", "-0.5"}},
      {"top_p above 1",
       "/v1/completions",
       R"({"prompt": "hi", "top_p": 1.5})",
       400,
       {"top_p", "1.5"}},
      {"top_p of 0", "/v1/completions", R"({"prompt": "hi", "top_p": 0})", 400, {"top_p"}},
      {"presence_penalty above 2",
       "/v1/completions",
       R"({"prompt": "hi", "presence_penalty": 3})",
       400,
       {"presence_penalty", "[-2, 2]", "3"},
       {kAuth},
       "presence_penalty"},
      // The workers schedule first come, first served: they refuse a priority.
      {"priority on fcfs workers",
       "/v1/completions",
       R"({"prompt": "hi", "priority": 2})",
       400,
       {"priority 2", "--scheduling-policy priority"},
       {kAuth},
       "priority"},
      {"logit_bias id outside the vocabulary",
       "/v1/completions",
       R"({"prompt": "hi", "logit_bias": {"999": 5}})",
       400,
       {"logit_bias", "999", "256"},
       {kAuth},
       "logit_bias"},
      {"allowed_token_ids id outside the vocabulary",
       "/v1/completions",
       R"({"prompt": "hi", "allowed_token_ids": [3, 256]})",
       400,
       {"allowed_token_ids[1]", "256"},
       {kAuth},
       "allowed_token_ids"},
      {"allowed_token_ids empty",
       "/v1/completions",
       R"({"prompt": "hi", "allowed_token_ids": []})",
       400,
       {"allowed_token_ids", "empty"},
       {kAuth},
       "allowed_token_ids"},
      {"truncate_prompt_tokens of 0",
       "/v1/completions",
       R"({"prompt": "hi", "truncate_prompt_tokens": 0})",
       400,
       {"truncate_prompt_tokens", "0"},
       {kAuth},
       "truncate_prompt_tokens"},
      {"truncate_prompt_tokens above max_model_len",
       "/v1/completions",
       R"({"prompt": "hi", "truncate_prompt_tokens": 300})",
       400,
       {"truncate_prompt_tokens", "300", "256"},
       {kAuth},
       "truncate_prompt_tokens"},
      {"guided_choice with an empty string",
       "/v1/completions",
       R"({"prompt": "hi", "guided_choice": ["yes", ""]})",
       400,
       {"guided_choice[1]", "empty"},
       {kAuth},
       "guided_choice"},
      {"vLLM's guided_grammar with an undefined rule",
       "/v1/completions",
       R"({"prompt": "hi", "guided_grammar": "root ::= \"a\" b"})",
       400,
       {"guided_grammar: EBNF parser error at line 1, column 14", "rule \"b\" is not defined"},
       {kAuth},
       "guided_grammar"},
      {"vLLM's beam search (chat) wider than 10",
       "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "use_beam_search": true, "n": 12})",
       400,
       {"beam width", "at most 10", "got 12"},
       {kAuth},
       "n"},
      {"guided_regex with a backreference",
       "/v1/completions",
       R"({"prompt": "hi", "guided_regex": "(a)\\1"})",
       400,
       {"guided_regex: backreferences are not supported"},
       {kAuth},
       "guided_regex"},
      {"guided_json with a keyword headroom cannot enforce",
       "/v1/completions",
       R"({"prompt": "hi", "guided_json": {"type": "integer", "multipleOf": 2}})",
       400,
       {"guided_json: at the root: multipleOf is not supported"},
       {kAuth},
       "guided_json"},
      {"json_schema response_format without the schema",
       "/v1/completions",
       R"({"prompt": "hi", "response_format": {"type": "json_schema", "json_schema": {}}})",
       400,
       {"response_format.json_schema.schema", "is required"},
       {kAuth},
       "response_format.json_schema.schema"},
      {"min_tokens above max_tokens",
       "/v1/completions",
       R"({"prompt": "hi", "max_tokens": 4, "min_tokens": 5})",
       400,
       {"min_tokens", "4", "5"},
       {kAuth},
       "min_tokens"},
      {"repetition_penalty of 0",
       "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "repetition_penalty": 0})",
       400,
       {"repetition_penalty", "> 0"},
       {kAuth},
       "repetition_penalty"},
      {"invalid UTF-8", "/v1/completions", "{\"prompt\": \"h\xff\xfei\"}", 400, {"UTF-8"}},
      {"chat without messages", "/v1/chat/completions", R"({"messages": []})", 400, {"messages"}},
      {"chat with an unknown role",
       "/v1/chat/completions",
       R"({"messages": [{"role": "wizard", "content": "hi"}]})",
       400,
       {"role"}},
      {"n above 128", "/v1/completions", R"({"prompt": "hi", "n": 129})", 400, {"n", "128"}},
      {"missing API key", "/v1/completions", R"({"prompt": "hi"})", 401, {"API key"}, {}},
      {"wrong API key",
       "/v1/completions",
       R"({"prompt": "hi"})",
       401,
       {"API key"},
       {"Authorization: Bearer nope"}},
      {"unknown route",
       "/v1/audio/transcriptions",
       R"({"file": "x"})",
       404,
       {"/v1/audio/transcriptions"}},
      {"oversized body",
       "/v1/completions",
       Json({{"prompt", std::string(3 << 20, 'a')}}).dump(),
       413,
       {"bytes"}},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const HttpResponse response =
        HttpRequestTo(cluster_->http_port, "POST", c.path, c.body, c.headers);
    EXPECT_EQ(response.status, c.status) << response.body;
    const Json body = Json::parse(response.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << response.body;
    const std::string message = body["error"]["message"].get<std::string>();
    for (const std::string& part : c.in_message) {
      EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
    }
    EXPECT_FALSE(body["error"]["type"].get<std::string>().empty());
    if (!c.param.empty()) {
      EXPECT_EQ(body["error"]["param"], c.param);
    }
  }
  // Nothing above reached a worker or broke the router: a good request still completes.
  const HttpResponse good =
      cluster_->Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 2, "temperature": 0})");
  EXPECT_EQ(good.status, 200) << good.body;
}

// --max-connections: a connection past the limit gets the OpenAI error JSON with 429 and
// Retry-After at once (not a wait in the kernel's accept queue); a closed connection makes room.
// A limit the open-file limit cannot hold is refused at start.
TEST_F(HttpE2eTest, ConnectionsPastMaxConnectionsGet429AtOnce) {
  const ExtraRouter router = StartRouterOver(*cluster_, {"--max-connections", "2"});
  ASSERT_NE(router.http_port, 0) << "the router did not start";
  std::vector<int> idle = {ConnectLoopback(router.http_port), ConnectLoopback(router.http_port)};
  ASSERT_GE(idle[0], 0);
  ASSERT_GE(idle[1], 0);
  // Served until the router has accepted both idle connections, then refused.
  HttpResponse refused;
  for (int attempt = 0; attempt < 100 && refused.status != 429; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    refused = HttpRequestTo(router.http_port, "GET", "/health", "", {}, 10);
  }
  ASSERT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.Header("retry-after"), "1");
  const Json error = Json::parse(refused.body, nullptr, false);
  ASSERT_TRUE(error.is_object()) << refused.body;
  EXPECT_NE(error["error"]["message"].get<std::string>().find("2 open connections"),
            std::string::npos)
      << refused.body;
  // Once idle[0] is closed, the next request is served; until the router noticed the close (and
  // that of refused connections, which linger), one may be refused too, and is counted.
  close(idle[0]);
  int refusals = 1;
  const auto get = [&](const std::string& path) {
    HttpResponse r;
    for (int attempt = 0; attempt < 100; ++attempt) {
      r = HttpRequestTo(router.http_port, "GET", path, "", {}, 10);
      if (r.status != 429) break;
      ++refusals;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return r;
  };
  EXPECT_EQ(get("/health").status, 200);
  close(idle[1]);
  const HttpResponse metrics = get("/metrics");
  EXPECT_EQ(MetricSample(metrics.body, "headroom:router_refusals_total{reason=\"connections\"}"),
            refusals)
      << metrics.body;

  ChildProcess too_many(
      "router", {"--grpc-port", "0", "--http-port", "0", "--workers", cluster_->worker_a->address(),
                 "--max-connections", "1000000000"});
  EXPECT_EQ(too_many.WaitExit(seconds(20)), 2);
}

// CORS as vLLM serves it (its defaults: every origin, method and header): a browser's preflight
// is answered without the API key, and every answer to a request with Origin, errors (the HTTP
// server's own 413 too) and streams included, carries Access-Control-Allow-Origin. A router with
// listed origins and
// --allow-credentials refuses other origins' preflights and names the allowed one.
TEST_F(HttpE2eTest, CorsPreflightsAndHeadersAsVllmsDefaults) {
  const std::string origin = "Origin: https://app.example";
  const HttpResponse preflight =
      HttpRequestTo(cluster_->http_port, "OPTIONS", "/v1/chat/completions", "",
                    {origin, "Access-Control-Request-Method: POST",
                     "Access-Control-Request-Headers: authorization, content-type"});
  EXPECT_EQ(preflight.status, 200) << preflight.body;
  EXPECT_EQ(preflight.body, "OK");
  EXPECT_EQ(preflight.Header("access-control-allow-origin"), "*");
  EXPECT_EQ(preflight.Header("access-control-allow-headers"), "authorization, content-type");
  EXPECT_NE(preflight.Header("access-control-allow-methods").value_or("").find("POST"),
            std::string::npos);

  const Json request = {{"prompt", "Hi"}, {"max_tokens", 3}, {"stream", true}};
  const HttpResponse streamed = HttpRequestTo(cluster_->http_port, "POST", "/v1/completions",
                                              request.dump(), {kAuth, origin});
  EXPECT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(streamed.Header("access-control-allow-origin"), "*");
  const HttpResponse unauthorized =
      HttpRequestTo(cluster_->http_port, "POST", "/v1/completions", request.dump(), {origin});
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(unauthorized.Header("access-control-allow-origin"), "*");
  EXPECT_FALSE(cluster_->Get("/v1/models").Header("access-control-allow-origin").has_value());
  // The HTTP server's own 413 (the body is never read) carries them too, so a browser sees it.
  const HttpResponse too_large =
      HttpRequestTo(cluster_->http_port, "POST", "/v1/completions",
                    Json{{"prompt", std::string(2 << 20, 'x')}}.dump(), {kAuth, origin});
  EXPECT_EQ(too_large.status, 413) << too_large.body.substr(0, 200);
  EXPECT_EQ(too_large.Header("access-control-allow-origin"), "*");

  const ExtraRouter listed = StartRouterOver(
      *cluster_, {"--allowed-origins", R"(["https://app.example"])", "--allow-credentials"});
  ASSERT_NE(listed.http_port, 0) << "the router did not start";
  const HttpResponse refused =
      HttpRequestTo(listed.http_port, "OPTIONS", "/v1/completions", "",
                    {"Origin: https://evil.example", "Access-Control-Request-Method: POST"});
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body, "Disallowed CORS origin");
  const HttpResponse allowed =
      HttpRequestTo(listed.http_port, "POST", "/v1/completions",
                    Json{{"prompt", "Hi"}, {"max_tokens", 2}}.dump(), {origin});
  EXPECT_EQ(allowed.status, 200) << allowed.body;
  EXPECT_EQ(allowed.Header("access-control-allow-origin"), "https://app.example");
  EXPECT_EQ(allowed.Header("access-control-allow-credentials"), "true");
  EXPECT_EQ(allowed.Header("vary"), "Origin");

  ChildProcess bad(
      "router", {"--grpc-port", "0", "--http-port", "0", "--workers", cluster_->worker_a->address(),
                 "--allowed-origins", "https://app.example"});
  EXPECT_EQ(bad.WaitExit(seconds(20)), 2);
}

TEST_F(HttpE2eTest, ModelsHealthAndMetricsShowTheCluster) {
  const HttpResponse models = cluster_->Get("/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  const Json list = Json::parse(models.body);
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], ModelId());
  EXPECT_EQ(list["data"][0]["max_model_len"], 256);
  EXPECT_EQ(HttpRequestTo(cluster_->http_port, "GET", "/v1/models").status, 401);

  EXPECT_EQ(HttpRequestTo(cluster_->http_port, "GET", "/health").status, 200);  // no key needed
  // vLLM's /ping (SageMaker's health route) answers GET and POST; /version the release, which is
  // the Helm chart's appVersion.
  EXPECT_EQ(HttpRequestTo(cluster_->http_port, "GET", "/ping").status, 200);
  EXPECT_EQ(HttpRequestTo(cluster_->http_port, "POST", "/ping").status, 200);
  const HttpResponse version = HttpRequestTo(cluster_->http_port, "GET", "/version");
  ASSERT_EQ(version.status, 200) << version.body;
  std::ifstream chart(std::string(HEADROOM_SOURCE_DIR) + "/helm/headroom/Chart.yaml");
  std::string line, app_version;
  while (std::getline(chart, line)) {
    if (line.rfind("appVersion:", 0) == 0) {
      app_version = line.substr(line.find('"') + 1, line.rfind('"') - line.find('"') - 1);
    }
  }
  ASSERT_FALSE(app_version.empty()) << "no appVersion in helm/headroom/Chart.yaml";
  EXPECT_EQ(Json::parse(version.body)["version"], app_version);
  const HttpResponse metrics = HttpRequestTo(cluster_->http_port, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  for (const std::unique_ptr<ChildProcess>* w : {&cluster_->worker_a, &cluster_->worker_b}) {
    const std::string group = "{group=\"" + (*w)->address() + "\"}";
    EXPECT_EQ(MetricSample(metrics.body, "headroom:group_up" + group), 1) << metrics.body;
    EXPECT_EQ(MetricSample(metrics.body, "headroom:group_kv_blocks_total" + group), 63);
  }
  EXPECT_EQ(MetricSample(metrics.body, "headroom:router_queue_depth"), 0);
  EXPECT_GE(MetricSample(metrics.body, "headroom:router_refusals_total{reason=\"queue_full\"}"), 0);

  const HttpResponse tokenized =
      cluster_->Post("/tokenize", R"({"prompt": "Hello", "add_special_tokens": false})");
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  const Json tokens = Json::parse(tokenized.body);
  EXPECT_EQ(tokens["tokens"], Json({72, 101, 108, 108, 111}));  // bytes of "Hello"
  EXPECT_EQ(tokens["count"], 5);
  const HttpResponse text = cluster_->Post("/detokenize", R"({"tokens": [72, 105]})");
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_EQ(Json::parse(text.body)["prompt"], "Hi");
}

TEST_F(HttpE2eTest, OfficialOpenAiPythonClientCompletesChatsAndStreams) {
  const std::string source = HEADROOM_SOURCE_DIR;
  const std::string python = VenvPython(source);
  if (const std::optional<std::string> missing = VenvPythonMissing(python, "openai, jsonschema")) {
    GTEST_SKIP() << *missing;
  }
  const std::string command = python + " " + source + "/tests/e2e/openai_client_check.py " +
                              "http://127.0.0.1:" + std::to_string(cluster_->http_port) + "/v1 " +
                              kApiKey + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_NE(output.find("openai client: all checks passed"), std::string::npos) << output;
}

TEST(HttpOverloadE2eTest, EveryRequestCompletesOrGets429WithRetryAfterAndMetricsCountThem) {
  // 8 usable blocks per group; each request needs 5 (20 + 60 tokens): one per group at a time,
  // and the router queues at most 4: most of the 40 concurrent requests are refused.
  Cluster cluster;
  ASSERT_TRUE(cluster.Start(9, {"--max-queue-len", "4"}));
  constexpr int kRequests = 40;
  std::vector<HttpResponse> responses(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      const Json request = {{"prompt", std::string(20, static_cast<char>('A' + i % 20))},
                            {"max_tokens", 60},
                            {"temperature", 0},
                            {"ignore_eos", true},
                            {"stream", i % 2 == 0}};
      responses[static_cast<size_t>(i)] = cluster.Post("/v1/completions", request.dump());
    });
  }
  for (std::thread& t : threads) t.join();
  int ok = 0, refused = 0;
  for (const HttpResponse& r : responses) {
    if (r.status == 200) {
      ++ok;
      std::string finish;
      const bool streamed =
          r.Header("content-type").value_or("").find("event-stream") != std::string::npos;
      if (streamed) {
        StreamedText(r, false, &finish);
      } else {
        finish = Json::parse(r.body)["choices"][0]["finish_reason"];
        EXPECT_EQ(Json::parse(r.body)["usage"]["completion_tokens"], 60);
      }
      EXPECT_EQ(finish, "length");
    } else {
      EXPECT_EQ(r.status, 429) << r.body;
      EXPECT_TRUE(r.Header("retry-after").has_value());
      EXPECT_NE(r.body.find("retry after"), std::string::npos) << r.body;
      ++refused;
    }
  }
  EXPECT_EQ(ok + refused, kRequests);  // none lost, none hung (the client has a deadline)
  EXPECT_GE(ok, 2);
  EXPECT_GE(refused, 1);
  const HttpResponse metrics = HttpRequestTo(cluster.http_port, "GET", "/metrics");
  EXPECT_EQ(MetricSample(metrics.body, "headroom:router_refusals_total{reason=\"queue_full\"}"),
            refused)
      << metrics.body;
  EXPECT_EQ(MetricSample(metrics.body, "headroom:router_queue_depth"), 0);
  EXPECT_EQ(MetricSample(metrics.body, "headroom:router_placement_latency_seconds_count"), ok);
}

// vLLM's GET /load (no key needed): the generation requests the router holds, one per HTTP
// request whatever its n, plus each gRPC Generate of its own clients. The workers are stopped
// (SIGSTOP) so the requests certainly stay open until they are let go.
TEST(HttpLoadE2eTest, LoadCountsTheOpenHttpAndGrpcRequestsAndFallsBackToZero) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start(64));
  const auto load = [&cluster] {
    const HttpResponse r = HttpRequestTo(cluster.http_port, "GET", "/load");
    EXPECT_EQ(r.status, 200) << r.body;
    const Json body = Json::parse(r.body, nullptr, false);
    return body.is_object() ? body.value("server_load", int64_t{-1}) : int64_t{-1};
  };
  // Polls /load until it reads `want` (the requests reach the router on other threads) or 10 s.
  const auto await_load = [&load](int64_t want) {
    int64_t got = load();
    for (int i = 0; i < 200 && got != want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      got = load();
    }
    return got;
  };
  EXPECT_EQ(load(), 0);

  cluster.worker_a->Signal(SIGSTOP);
  cluster.worker_b->Signal(SIGSTOP);
  std::vector<HttpResponse> http(2);
  std::vector<grpc::Status> grpc_status(2);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      // Three samples of one prompt, and two prompts: still one request each.
      const Json request =
          i == 0 ? Json{{"prompt", "Hello"}, {"max_tokens", 4}, {"n", 3}, {"stream", true}}
                 : Json{{"prompt", {"one", "two"}}, {"max_tokens", 4}};
      http[i] = cluster.Post("/v1/completions", request.dump());
    });
    threads.emplace_back([&, i] {
      v1::GenerateRequest request;
      request.set_text(i == 0 ? "first" : "second");
      request.mutable_sampling()->set_max_tokens(4);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + seconds(60));
      std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader =
          cluster.stub->Generate(&context, request);
      v1::GenerateResponse response;
      while (reader->Read(&response)) {
      }
      grpc_status[i] = reader->Finish();
    });
  }
  EXPECT_EQ(await_load(4), 4);
  cluster.worker_a->Signal(SIGCONT);
  cluster.worker_b->Signal(SIGCONT);
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(http[i].status, 200) << http[i].body;
    EXPECT_TRUE(grpc_status[i].ok()) << grpc_status[i].error_message();
  }
  EXPECT_EQ(await_load(0), 0);
}

TEST(HttpShutdownE2eTest, RequestsCutByTheShutdownDeadlineGet503WithRetryAfter) {
  // Requests still open when the router's shutdown deadline passes are ended by the router's own
  // gRPC server: CANCELLED after a deadline of 1 s, a closed transport for 0 s. Neither is the
  // client's doing and another replica can serve them: 503 + Retry-After, never 499. The workers
  // are stopped (SIGSTOP) so that every request is certainly still open at the deadline.
  for (const char* shutdown_timeout_s : {"0", "1"}) {
    SCOPED_TRACE(absl::StrCat("--shutdown-timeout-s ", shutdown_timeout_s));
    Cluster cluster;
    ASSERT_TRUE(cluster.Start(64, {"--shutdown-timeout-s", shutdown_timeout_s}));
    cluster.worker_a->Signal(SIGSTOP);
    cluster.worker_b->Signal(SIGSTOP);
    constexpr int kRequests = 4;
    std::vector<HttpResponse> responses(kRequests);
    std::vector<std::thread> threads;
    for (int i = 0; i < kRequests; ++i) {
      threads.emplace_back([&, i] {
        const Json request = {{"prompt", std::string(20, static_cast<char>('a' + i))},
                              {"max_tokens", 8},
                              {"temperature", 0},
                              {"stream", i % 2 == 1}};
        responses[static_cast<size_t>(i)] = cluster.Post("/v1/completions", request.dump());
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // all four are in the router
    cluster.router->Signal(SIGTERM);
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(cluster.router->WaitExit(seconds(20)), 0);
    cluster.worker_a->Signal(SIGCONT);
    cluster.worker_b->Signal(SIGCONT);

    for (int i = 0; i < kRequests; ++i) {
      const HttpResponse& r = responses[static_cast<size_t>(i)];
      EXPECT_EQ(r.status, 503) << "request " << i << ": " << r.body;
      EXPECT_EQ(r.Header("retry-after"), "1") << "request " << i;
      const Json body = Json::parse(r.body, nullptr, false);
      ASSERT_TRUE(body.is_object()) << r.body;
      EXPECT_EQ(body["error"]["code"], "service_unavailable") << r.body;
      const std::string message = body["error"]["message"];
      EXPECT_TRUE(message.starts_with("the router shut down before the request finished"))
          << message;
      EXPECT_TRUE(message.ends_with("retry on another replica")) << message;
    }
  }
}

}  // namespace
}  // namespace headroom::e2e
