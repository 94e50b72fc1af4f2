// HttpFrontend's threading: the POST routes run on its HandlerPool, not on the calling (HTTP
// event) thread, and a full pool answers 429 at once (and reports it). The routes themselves are
// tested end to end (tests/e2e/http_e2e_test.cc).
#include "router/frontend/http_frontend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "router/tokenizer/byte_tokenizer.h"
#include "tests/router/tokenizer/fixtures.h"

namespace headroom::router {
namespace {

// Records the one response and the thread that gave it.
class RecordingWriter final : public http::ResponseWriter {
 public:
  void Respond(int status, std::string /*content_type*/, std::string body,
               std::vector<std::pair<std::string, std::string>> extra_headers) override {
    status_ = status;
    body_ = std::move(body);
    headers_ = std::move(extra_headers);
    thread_ = std::this_thread::get_id();
    done_.set_value();
  }
  void StartStream(int, std::string, std::vector<std::pair<std::string, std::string>>) override {
    ADD_FAILURE() << "no stream expected";
  }
  bool Write(std::string) override { return false; }
  void End() override {}
  void OnDisconnect(std::function<void()>) override {}

  // Waits (at most 10 s) for the response.
  bool Wait() {
    return done_.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }

  int status_ = 0;
  std::string body_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::thread::id thread_;

 private:
  std::promise<void> done_;
};

http::HttpRequest Post(std::string path, std::string body) {
  http::HttpRequest request;
  request.method = "POST";
  request.path = std::move(path);
  request.body = std::move(body);
  return request;
}

// An Inference service that records the Generate requests it gets and answers each with one
// finished token.
class RecordingInference final : public v1::Inference::Service {
 public:
  grpc::Status Generate(grpc::ServerContext*, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(*request);
    }
    v1::GenerateResponse response;
    response.set_text("x");
    response.set_finish_reason(v1::FINISH_REASON_LENGTH);
    writer->Write(response);
    return grpc::Status::OK;
  }

  std::mutex mu_;
  std::vector<v1::GenerateRequest> requests_;
};

class HttpFrontendTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpFrontend> Make(size_t max_queued,
                                     std::shared_ptr<grpc::Channel> channel = nullptr,
                                     bool request_id_headers = false,
                                     bool trust_request_chat_template = false,
                                     ServedClassifier served = {}) {
    return std::make_unique<HttpFrontend>(HttpFrontendOptions{
        // Never dialled unless given: /tokenize needs no worker.
        .channel = channel != nullptr
                       ? channel
                       : grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()),
        .tokenizer = tokenizer_.get(),
        .chat_template = chat_template_,
        .api_key = "",
        .registry = &registry_,
        .healthy = [] { return true; },
        .model_name = [] { return std::string("m"); },
        .max_model_len = [] { return 256; },
        .served_classifier = [served] { return served; },
        .list_models = nullptr,
        .update_lora = nullptr,
        .handler_threads = 1,
        .max_queued_requests = max_queued,
        .on_busy = [this] { ++busy_; },
        .on_request_finished = nullptr,
        .grpc_load = nullptr,
        .cors = std::nullopt,
        .request_id_headers = request_id_headers,
        .trust_request_chat_template = trust_request_chat_template,
        .exclude_tools_when_tool_choice_none = exclude_tools_when_tool_choice_none_});
  }

  // Meta-Llama-3's tokenizer (the test fixture) for the frontends made after.
  void UseLlama3Tokenizer() {
    absl::StatusOr<std::unique_ptr<Tokenizer>> llama3 =
        Tokenizer::FromFiles(testing::FixtureDir("llama3") + "/tokenizer.json",
                             testing::FixtureDir("llama3") + "/tokenizer_config.json");
    ASSERT_TRUE(llama3.ok()) << llama3.status();
    tokenizer_ = *std::move(llama3);
  }

  // Serves `service` on a free loopback port, which channel_ then dials; null if it did not start.
  std::unique_ptr<grpc::Server> Serve(RecordingInference& service) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (port == 0) return nullptr;
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    return server;
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::optional<openai::ChatTemplate> chat_template_;  // the model's, for frontends made after
  bool exclude_tools_when_tool_choice_none_ = false;   // the flag, for frontends made after
  std::unique_ptr<Tokenizer> tokenizer_ = *MakeByteTokenizer(256);
  metrics::Registry registry_;
  std::atomic<int> busy_{0};  // on_busy calls
};

TEST_F(HttpFrontendTest, PostRoutesRunOnThePoolNotOnTheCallingThread) {
  std::unique_ptr<HttpFrontend> frontend = Make(16);
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(Post("/tokenize", R"({"prompt": "hi"})"), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->status_, 200) << writer->body_;
  EXPECT_EQ(nlohmann::json::parse(writer->body_)["tokens"], nlohmann::json::array({'h', 'i'}));
  EXPECT_NE(writer->thread_, std::this_thread::get_id());
  EXPECT_EQ(busy_, 0);
}

TEST_F(HttpFrontendTest, AFullPoolAnswers429AtOnceAndCheapRoutesStillAnswer) {
  std::unique_ptr<HttpFrontend> frontend = Make(0);  // no request may wait
  auto refused = std::make_shared<RecordingWriter>();
  frontend->Handle(Post("/tokenize", R"({"prompt": "hi"})"), refused);
  ASSERT_TRUE(refused->Wait());
  EXPECT_EQ(refused->status_, 429);
  EXPECT_EQ(refused->thread_, std::this_thread::get_id());
  EXPECT_EQ(refused->headers_,
            (std::vector<std::pair<std::string, std::string>>{{"Retry-After", "1"}}));
  EXPECT_NE(refused->body_.find("requests wait to be parsed and tokenized"), std::string::npos)
      << refused->body_;
  EXPECT_EQ(busy_, 1) << "the refusal is reported for the router's metrics";

  http::HttpRequest health;
  health.method = "GET";
  health.path = "/health";
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(std::move(health), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->status_, 200);
}

// The n samples of a text prompt reach the Inference service as token ids, tokenized once by the
// front (not n times by the service's own pool); the echoed text stays the prompt as sent.
TEST_F(HttpFrontendTest, NSamplesOfATextPromptAreTokenizedOnceByTheFront) {
  RecordingInference service;
  std::unique_ptr<grpc::Server> server = Serve(service);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<HttpFrontend> frontend = Make(16, channel_);
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(
      Post("/v1/completions", R"({"prompt": ["hi", "yo"], "n": 3, "seed": 7, "echo": true})"),
      writer);
  ASSERT_TRUE(writer->Wait());
  ASSERT_EQ(writer->status_, 200) << writer->body_;
  const nlohmann::json body = nlohmann::json::parse(writer->body_);
  ASSERT_EQ(body["choices"].size(), 6u);
  EXPECT_EQ(body["choices"][4]["text"], "yox");
  std::lock_guard<std::mutex> lock(service.mu_);
  ASSERT_EQ(service.requests_.size(), 6u);
  // Each prompt's three samples carry its ids and seeds 7, 8, 9 (calls arrive in any order).
  std::map<std::vector<int32_t>, std::set<uint64_t>> seeds_by_prompt;
  for (const v1::GenerateRequest& r : service.requests_) {
    ASSERT_TRUE(r.has_token_ids()) << r.DebugString();
    const std::vector<int32_t> ids(r.token_ids().ids().begin(), r.token_ids().ids().end());
    EXPECT_TRUE(ids == (std::vector<int32_t>{'h', 'i'}) || ids == (std::vector<int32_t>{'y', 'o'}));
    seeds_by_prompt[ids].insert(r.sampling().seed());
  }
  const std::set<uint64_t> seeds = {7, 8, 9};
  EXPECT_EQ(seeds_by_prompt[(std::vector<int32_t>{'h', 'i'})], seeds);
  EXPECT_EQ(seeds_by_prompt[(std::vector<int32_t>{'y', 'o'})], seeds);
  frontend->BeginShutdown();
  EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
  server->Shutdown();
}

// /score with a one-label classifier: a native one sends each pair encoded with the tokenizer's
// pair template (Llama 3's <bos> A <bos> B, as transformers' tokenizer(text, text_pair) gives it:
// tests/router/tokenizer/fixtures/pairs.json), a reranker the two texts joined and encoded as one;
// a classifier of three labels cannot score.
TEST_F(HttpFrontendTest, ScoreSendsClassifiersTheirPairs) {
  ASSERT_NO_FATAL_FAILURE(UseLlama3Tokenizer());
  std::ifstream file(testing::FixtureDir("pairs.json"));
  const nlohmann::json pairs = nlohmann::json::parse(file);
  const nlohmann::json& pair = pairs["tokenizers"]["llama3"]["pairs"][0];
  const std::string first = pair["first"];
  const std::string second = pair["second"];
  const nlohmann::json body = {{"text_1", first}, {"text_2", {second}}};

  RecordingInference service;
  std::unique_ptr<grpc::Server> server = Serve(service);
  ASSERT_NE(server, nullptr);
  struct Case {
    ServedClassifier served;
    std::vector<int32_t> ids;
  };
  const std::vector<Case> cases = {{{.classifier = true, .reranker = false, .num_labels = 1},
                                    pair["ids"].get<std::vector<int32_t>>()},
                                   {{.classifier = true, .reranker = true, .num_labels = 1},
                                    *tokenizer_->Encode(first + second)}};
  for (const Case& c : cases) {
    std::unique_ptr<HttpFrontend> frontend = Make(16, channel_, false, false, c.served);
    auto writer = std::make_shared<RecordingWriter>();
    frontend->Handle(Post("/score", body.dump()), writer);
    ASSERT_TRUE(writer->Wait());
    ASSERT_EQ(writer->status_, 200) << writer->body_;
    frontend->BeginShutdown();
    // The reply is written before the gRPC call ends: the frontend outlives its calls.
    EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
    std::lock_guard<std::mutex> lock(service.mu_);
    ASSERT_EQ(service.requests_.size(), 1u);
    const v1::GenerateRequest& r = service.requests_[0];
    EXPECT_TRUE(r.embedding().classify());
    EXPECT_EQ(std::vector<int32_t>(r.token_ids().ids().begin(), r.token_ids().ids().end()), c.ids)
        << (c.served.reranker ? "reranker" : "native");
    service.requests_.clear();
  }
  std::unique_ptr<HttpFrontend> three =
      Make(16, channel_, false, false, {.classifier = true, .reranker = false, .num_labels = 3});
  auto writer = std::make_shared<RecordingWriter>();
  three->Handle(Post("/rerank", R"({"query": "q", "documents": ["d"]})"), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->status_, 400);
  EXPECT_NE(writer->body_.find("classifies into 3 labels"), std::string::npos) << writer->body_;
  three->BeginShutdown();
  EXPECT_TRUE(three->WaitForIdle(absl::Now() + absl::Seconds(10)));
  server->Shutdown();
}

// vLLM's add_special_tokens on completions: false sends a text prompt without the tokenizer's
// special tokens (Llama 3's <|begin_of_text|>), tokenized by the front; the default leaves the
// text to the Inference service, which adds them.
TEST_F(HttpFrontendTest, CompletionsAddSpecialTokensFalseLeavesOutTheBos) {
  ASSERT_NO_FATAL_FAILURE(UseLlama3Tokenizer());
  const std::vector<int32_t> with = *tokenizer_->Encode("Hello there");
  const std::vector<int32_t> without =
      *tokenizer_->Encode("Hello there", {.add_special_tokens = false});
  ASSERT_EQ(with.size(), without.size() + 1) << "the fixture's tokenizer adds a BOS";

  RecordingInference service;
  std::unique_ptr<grpc::Server> server = Serve(service);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<HttpFrontend> frontend = Make(16, channel_);
  for (const char* body : {R"({"prompt": "Hello there", "add_special_tokens": false})",
                           R"({"prompt": "Hello there", "n": 2, "add_special_tokens": false})",
                           R"({"prompt": "Hello there"})"}) {
    auto writer = std::make_shared<RecordingWriter>();
    frontend->Handle(Post("/v1/completions", body), writer);
    ASSERT_TRUE(writer->Wait());
    ASSERT_EQ(writer->status_, 200) << writer->body_;
  }
  std::lock_guard<std::mutex> lock(service.mu_);
  ASSERT_EQ(service.requests_.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    const v1::GenerateRequest& r = service.requests_[i];
    ASSERT_TRUE(r.has_token_ids()) << r.DebugString();
    EXPECT_EQ(std::vector<int32_t>(r.token_ids().ids().begin(), r.token_ids().ids().end()),
              without);
  }
  EXPECT_EQ(service.requests_[3].text(), "Hello there");  // the service adds the BOS
  frontend->BeginShutdown();
  EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
  server->Shutdown();
}

// vLLM's request ids: a request's X-Request-Id header names its response id ("cmpl-<id>"), over
// the body's request_id, which names it otherwise; with neither the id is random. No response
// header without --enable-request-id-headers.
TEST_F(HttpFrontendTest, ResponseIdsEndWithTheRequestId) {
  RecordingInference service;
  std::unique_ptr<grpc::Server> server = Serve(service);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<HttpFrontend> frontend = Make(16, channel_);
  struct Case {
    std::string header;      // X-Request-Id; empty: none
    std::string request_id;  // the body's; empty: none
    std::string id;          // the response's; empty: random
  };
  for (const Case& c : std::vector<Case>{{"trace-7", "", "cmpl-trace-7"},
                                         {"", "mine", "cmpl-mine"},
                                         {"trace-7", "mine", "cmpl-trace-7"},
                                         {"", "", ""}}) {
    http::HttpRequest request = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 1})");
    if (!c.header.empty()) request.headers.emplace_back("x-request-id", c.header);
    if (!c.request_id.empty()) {
      nlohmann::json body = nlohmann::json::parse(request.body);
      body["request_id"] = c.request_id;
      request.body = body.dump();
    }
    auto writer = std::make_shared<RecordingWriter>();
    frontend->Handle(std::move(request), writer);
    ASSERT_TRUE(writer->Wait());
    ASSERT_EQ(writer->status_, 200) << writer->body_;
    const std::string id = nlohmann::json::parse(writer->body_)["id"];
    if (c.id.empty()) {
      EXPECT_EQ(id.size(), 5u + 24u) << id;
      EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 5), std::string::npos) << id;
    } else {
      EXPECT_EQ(id, c.id);
    }
    EXPECT_TRUE(writer->headers_.empty()) << "no X-Request-Id without the flag";
  }
  // Longer than kMaxRequestIdBytes: refused, naming the header.
  http::HttpRequest request = Post("/v1/completions", R"({"prompt": "hi"})");
  request.headers.emplace_back("x-request-id", std::string(openai::kMaxRequestIdBytes + 1, 'a'));
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(std::move(request), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->status_, 400);
  EXPECT_NE(writer->body_.find("the X-Request-Id header is 257 bytes, at most 256"),
            std::string::npos)
      << writer->body_;
  frontend->BeginShutdown();
  EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
  server->Shutdown();
}

// --enable-request-id-headers: every response carries X-Request-Id, the request's own or a new
// one, which a completion's id then ends with.
TEST_F(HttpFrontendTest, RequestIdHeadersEchoOrMakeTheId) {
  RecordingInference service;
  std::unique_ptr<grpc::Server> server = Serve(service);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<HttpFrontend> frontend = Make(16, channel_, /*request_id_headers=*/true);
  using Headers = std::vector<std::pair<std::string, std::string>>;

  http::HttpRequest health;
  health.method = "GET";
  health.path = "/health";
  health.headers.emplace_back("x-request-id", "probe-1");
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(std::move(health), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->headers_, (Headers{{"X-Request-Id", "probe-1"}}));

  for (const bool empty_header : {false, true}) {
    http::HttpRequest request = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 1})");
    if (empty_header) request.headers.emplace_back("x-request-id", "");
    writer = std::make_shared<RecordingWriter>();
    frontend->Handle(std::move(request), writer);
    ASSERT_TRUE(writer->Wait());
    ASSERT_EQ(writer->status_, 200) << writer->body_;
    ASSERT_EQ(writer->headers_.size(), 1u);
    EXPECT_EQ(writer->headers_[0].first, "X-Request-Id");
    const std::string made = writer->headers_[0].second;
    EXPECT_EQ(made.size(), 24u) << made;
    EXPECT_EQ(nlohmann::json::parse(writer->body_)["id"], "cmpl-" + made);
  }
  frontend->BeginShutdown();
  EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
  server->Shutdown();
}

// vLLM's return_token_strs on /tokenize: each token's string as tokenizer.json's vocabulary (or
// added tokens) spells it, the BOS included; without it token_strs is null, as vLLM answers.
TEST_F(HttpFrontendTest, TokenizeReturnsTokenStringsFromTheVocabulary) {
  const std::string dir = testing::FixtureDir("llama3");
  absl::StatusOr<std::unique_ptr<Tokenizer>> llama3 =
      Tokenizer::FromFiles(dir + "/tokenizer.json", dir + "/tokenizer_config.json");
  ASSERT_TRUE(llama3.ok()) << llama3.status();
  tokenizer_ = *std::move(llama3);
  std::ifstream in(dir + "/tokenizer.json");
  const nlohmann::json file = nlohmann::json::parse(in);
  std::map<int32_t, std::string> vocabulary;
  for (const auto& [token, id] : file["model"]["vocab"].items())
    vocabulary[id.get<int32_t>()] = token;
  for (const nlohmann::json& added : file["added_tokens"]) {
    vocabulary[added["id"].get<int32_t>()] = added["content"].get<std::string>();
  }
  std::unique_ptr<HttpFrontend> frontend = Make(16);
  for (const bool strs : {false, true}) {
    auto writer = std::make_shared<RecordingWriter>();
    frontend->Handle(
        Post("/tokenize",
             nlohmann::json{{"prompt", "Hello there, world!"}, {"return_token_strs", strs}}.dump()),
        writer);
    ASSERT_TRUE(writer->Wait());
    ASSERT_EQ(writer->status_, 200) << writer->body_;
    const nlohmann::json body = nlohmann::json::parse(writer->body_);
    if (!strs) {
      EXPECT_TRUE(body["token_strs"].is_null()) << writer->body_;
      continue;
    }
    ASSERT_EQ(body["token_strs"].size(), body["tokens"].size()) << writer->body_;
    ASSERT_GE(body["tokens"].size(), 4u);
    EXPECT_EQ(body["token_strs"][0], "<|begin_of_text|>");
    for (size_t i = 0; i < body["tokens"].size(); ++i) {
      EXPECT_EQ(body["token_strs"][i], vocabulary.at(body["tokens"][i].get<int32_t>())) << i;
    }
  }
  auto writer = std::make_shared<RecordingWriter>();
  frontend->Handle(Post("/tokenize", R"({"prompt": "hi", "return_token_strs": 1})"), writer);
  ASSERT_TRUE(writer->Wait());
  EXPECT_EQ(writer->status_, 400);
  EXPECT_EQ(nlohmann::json::parse(writer->body_)["error"]["param"], "return_token_strs");
}

// vLLM's per-request chat_template: refused 400 unless the router trusts request templates
// (--trust-request-chat-template); trusted, it renders the prompt in place of the model's (here
// there is none) and a template that does not parse is a 400 naming it.
TEST_F(HttpFrontendTest, RequestChatTemplatesRenderOnlyWhenTrusted) {
  RecordingInference service;
  std::unique_ptr<grpc::Server> server = Serve(service);
  ASSERT_NE(server, nullptr);
  const std::string body =
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "yo"}],
          "chat_template": "{% for m in messages %}[{{ m['content'] }}]{% endfor %}",
          "max_tokens": 1})";
  for (const bool trusted : {false, true}) {
    std::unique_ptr<HttpFrontend> frontend = Make(16, channel_, false, trusted);
    auto writer = std::make_shared<RecordingWriter>();
    frontend->Handle(Post("/v1/chat/completions", body), writer);
    ASSERT_TRUE(writer->Wait());
    const nlohmann::json answer = nlohmann::json::parse(writer->body_);
    if (!trusted) {
      EXPECT_EQ(writer->status_, 400);
      EXPECT_EQ(answer["error"]["param"], "chat_template") << writer->body_;
      EXPECT_NE(writer->body_.find("--trust-request-chat-template is not set"), std::string::npos);
    } else {
      ASSERT_EQ(writer->status_, 200) << writer->body_;
      std::lock_guard<std::mutex> lock(service.mu_);
      ASSERT_EQ(service.requests_.size(), 1u);
      const auto& ids = service.requests_[0].token_ids().ids();
      EXPECT_EQ(std::string(ids.begin(), ids.end()), "[hi][yo]");
    }
    writer = std::make_shared<RecordingWriter>();
    nlohmann::json broken = nlohmann::json::parse(body);
    broken["chat_template"] = "{% for m in messages %}";
    frontend->Handle(Post("/v1/chat/completions", broken.dump()), writer);
    ASSERT_TRUE(writer->Wait());
    EXPECT_EQ(writer->status_, 400);
    EXPECT_EQ(nlohmann::json::parse(writer->body_)["error"]["param"], "chat_template");
    frontend->BeginShutdown();
    EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
  }
  server->Shutdown();
}

// The prompt /tokenize renders for a chat `body` with one user message "hi", as text (the byte
// tokenizer gives one token per byte), or "STATUS BODY" when it is refused.
std::string TokenizedChat(HttpFrontend& frontend, nlohmann::json body) {
  body["messages"] = {{{"role", "user"}, {"content", "hi"}}};
  auto writer = std::make_shared<RecordingWriter>();
  frontend.Handle(Post("/tokenize", body.dump()), writer);
  EXPECT_TRUE(writer->Wait());
  if (writer->status_ != 200) return absl::StrCat(writer->status_, " ", writer->body_);
  const nlohmann::json ids = nlohmann::json::parse(writer->body_)["tokens"];
  std::string text;
  for (const nlohmann::json& id : ids) text += static_cast<char>(id.get<int>());
  return text;
}

// A model with named templates (Hermes 2 Pro / 3 and Command R have "tool_use" beside "default"):
// a request that gives tools renders with tool_use, as vLLM renders it through transformers'
// get_chat_template; a trusted request's chat_template may name one.
TEST_F(HttpFrontendTest, RequestsWithToolsRenderWithTheToolUseTemplate) {
  absl::StatusOr<openai::ChatTemplate> model =
      openai::ChatTemplate::Create("D{% for m in messages %}[{{ m.content }}]{% endfor %}", {});
  absl::StatusOr<openai::ChatTemplate> tool_use =
      openai::ChatTemplate::Create("T{{ tools | length }}[{{ messages[0].content }}]", {});
  absl::StatusOr<openai::ChatTemplate> rag = openai::ChatTemplate::Create("R", {});
  ASSERT_TRUE(model.ok() && tool_use.ok() && rag.ok());
  model->AddNamed("tool_use", *tool_use);
  model->AddNamed("rag", *rag);
  chat_template_ = *model;
  const nlohmann::json tools = nlohmann::json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])");
  for (const bool trusted : {false, true}) {
    std::unique_ptr<HttpFrontend> frontend = Make(16, nullptr, false, trusted);
    EXPECT_EQ(TokenizedChat(*frontend, nlohmann::json::object()), "D[hi]");
    EXPECT_EQ(TokenizedChat(*frontend, {{"tools", tools}}), "T1[hi]");
    // An empty list is still a list of tools (transformers checks `tools is not None`); null is
    // none given.
    EXPECT_EQ(TokenizedChat(*frontend, {{"tools", nlohmann::json::array()}}), "T0[hi]");
    EXPECT_EQ(TokenizedChat(*frontend, {{"tools", nullptr}}), "D[hi]");
    const std::string named = TokenizedChat(*frontend, {{"chat_template", "rag"}});
    if (trusted) {
      EXPECT_EQ(named, "R");
      // The name wins over the tools.
      EXPECT_EQ(TokenizedChat(*frontend, {{"chat_template", "rag"}, {"tools", tools}}), "R");
    } else {
      EXPECT_NE(named.find("--trust-request-chat-template is not set"), std::string::npos) << named;
    }
    frontend->BeginShutdown();
    EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
  }
  // vLLM's --exclude-tools-when-tool-choice-none: tool_choice "none" renders as if no tools were
  // given; without the flag the template still sees them.
  for (const bool exclude : {false, true}) {
    exclude_tools_when_tool_choice_none_ = exclude;
    std::unique_ptr<HttpFrontend> frontend = Make(16);
    EXPECT_EQ(TokenizedChat(*frontend, {{"tools", tools}, {"tool_choice", "none"}}),
              exclude ? "D[hi]" : "T1[hi]");
    EXPECT_EQ(TokenizedChat(*frontend, {{"tools", nlohmann::json::array()}}),
              exclude ? "D[hi]" : "T0[hi]");
    frontend->BeginShutdown();
    EXPECT_TRUE(frontend->WaitForIdle(absl::Now() + absl::Seconds(10)));
  }
}

}  // namespace
}  // namespace headroom::router
