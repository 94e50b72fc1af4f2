// LoRA adapters end to end: two real `headroom worker`s serving the llama-gqa fixture with two
// PEFT adapters (--lora-modules in both of vLLM's forms) behind a real `headroom router`:
//   - /v1/models and gRPC ListModels list the adapters as vLLM's model cards;
//   - a request whose model names an adapter runs with it: its greedy tokens are PEFT's
//     (scripts/gen_lora_fixtures.py), after the base model's have filled the prefix caches with
//     the same prompts, and the HTTP text is the gRPC text;
//   - an unknown model is a 404 naming the adapters; a worker with an adapter it cannot load
//     exits rather than serve without it;
//   - with --allow-runtime-lora-updating, vLLM's /v1/load_lora_adapter and
//     /v1/unload_lora_adapter load and unload adapters on every group while they serve;
//   - with --lora-resolver-dir, a request naming an adapter loads it from the directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "child_process.h"
#include "fixture_worker.h"
#include "fixtures.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "http_client.h"
#include "http_cluster.h"
#include "nlohmann/json.hpp"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

std::string AdapterPath(const std::string& name) {
  return (worker::testdata::FixtureDir("lora") / name).string();
}

Json Expected(const std::filesystem::path& dir) {
  std::ifstream in(dir / "expected.json");
  return Json::parse(in);
}

// The base model's id (the fixture directory the workers report).
std::string BaseId() { return worker::testdata::FixtureDir("llama-gqa").string(); }

// vLLM's --max-loras is accepted; worker metrics on a free port (each worker prints it after its
// listening line).
std::vector<std::string> LoraFlags() {
  return {"--lora-modules",
          "sql=" + AdapterPath("llama-gqa-all"),
          Json{{"name", "rs"}, {"path", AdapterPath("llama-gqa-rslora")}}.dump(),
          "--max-lora-rank",
          "8",
          "--max-loras",
          "1",
          "--metrics-port",
          "0"};
}

class LoraE2eTest : public SharedClusterTest<LoraE2eTest> {
 public:
  static std::vector<std::string> ExtraWorkerFlags() { return LoraFlags(); }

 protected:
  // worker_a's /metrics port, read from its output once per cluster.
  static int MetricsPort() {
    static int port = 0;
    static const Cluster* read_from = nullptr;
    if (read_from != cluster_) {
      const std::string line = cluster_->worker_a->NextLine(seconds(10));
      const std::string prefix = "headroom worker metrics on ";
      port = line.rfind(prefix, 0) == 0 ? PortOf(line.substr(prefix.size())) : 0;
      read_from = cluster_;
    }
    return port;
  }
};

// Greedy token ids and text of `ids` under `model` ("" = the base model), over gRPC.
struct Generated {
  std::vector<int32_t> tokens;
  std::string text;
};
Generated GrpcGreedy(v1::Inference::Stub& stub, const std::string& model,
                     const std::vector<int32_t>& ids, int max_tokens) {
  v1::GenerateRequest request;
  request.set_model(model);
  request.mutable_token_ids()->mutable_ids()->Assign(ids.begin(), ids.end());
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(max_tokens);
  request.mutable_sampling()->set_ignore_eos(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + seconds(60));
  auto reader = stub.Generate(&context, request);
  v1::GenerateResponse response;
  Generated out;
  while (reader->Read(&response)) {
    out.tokens.insert(out.tokens.end(), response.token_ids().begin(), response.token_ids().end());
    out.text += response.text();
  }
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << model << ": " << status.error_message();
  return out;
}

// `got` is the reference's greedy continuation up to the first step whose top-1/top-2 margin is
// under 0.01 (where summation order may pick the other token); returns the tokens compared.
size_t ExpectGreedyPrefix(const Json& reference, const std::vector<int32_t>& got) {
  const auto greedy = reference["greedy"].get<std::vector<int32_t>>();
  size_t compared = 0;
  for (; compared < got.size() && compared < greedy.size(); ++compared) {
    if (reference["margins"][compared].get<double>() < 0.01) break;
    EXPECT_EQ(got[compared], greedy[compared]) << "step " << compared;
  }
  return compared;
}

TEST_F(LoraE2eTest, ModelsListTheAdaptersAsVllmModelCards) {
  const HttpResponse response = cluster_->Get("/v1/models");
  ASSERT_EQ(response.status, 200) << response.body;
  const Json data = Json::parse(response.body)["data"];
  ASSERT_EQ(data.size(), 3u) << response.body;
  EXPECT_EQ(data[0]["id"], BaseId());
  EXPECT_TRUE(data[0]["parent"].is_null());
  EXPECT_EQ(data[1]["id"], "sql");
  EXPECT_EQ(data[1]["root"], AdapterPath("llama-gqa-all"));
  EXPECT_EQ(data[1]["parent"], BaseId());
  EXPECT_EQ(data[2]["id"], "rs");
  EXPECT_EQ(data[2]["root"], AdapterPath("llama-gqa-rslora"));

  grpc::ClientContext context;
  v1::ListModelsResponse models;
  ASSERT_TRUE(cluster_->stub->ListModels(&context, {}, &models).ok());
  ASSERT_EQ(models.models_size(), 3);
  EXPECT_EQ(models.models(2).id(), "rs");
  EXPECT_EQ(models.models(2).parent(), BaseId());
}

TEST_F(LoraE2eTest, AnAdaptersNameRunsItAsPeftDoes) {
  const Json base = Expected(worker::testdata::FixtureDir("llama-gqa"));
  // The base model first, so the workers' prefix caches hold these prompts' base-model KV.
  for (const Json& prompt : base["prompts"]) {
    const Generated got = GrpcGreedy(*cluster_->stub, "", prompt["ids"], 16);
    EXPECT_GT(ExpectGreedyPrefix(prompt, got.tokens), 0u);
  }
  for (const auto& [model, fixture] : std::vector<std::pair<std::string, std::string>>{
           {"sql", "llama-gqa-all"}, {"rs", "llama-gqa-rslora"}}) {
    SCOPED_TRACE(model);
    const Json expected = Expected(AdapterPath(fixture));
    size_t compared = 0;
    for (size_t p = 0; p < expected["prompts"].size(); ++p) {
      const Json& prompt = expected["prompts"][p];
      const Generated got = GrpcGreedy(*cluster_->stub, model, prompt["ids"], 16);
      compared += ExpectGreedyPrefix(prompt, got.tokens);
      // Where the adapter's reference continuation differs from the base model's, ours does.
      if (prompt["greedy"][0] != base["prompts"][p]["greedy"][0]) {
        EXPECT_NE(got.tokens.front(), base["prompts"][p]["greedy"][0].get<int32_t>());
      }
      // The OpenAI API gives the same text under the adapter's name, and echoes the name.
      const HttpResponse http = cluster_->Post("/v1/completions", Json{{"model", model},
                                                                       {"prompt", prompt["ids"]},
                                                                       {"max_tokens", 16},
                                                                       {"temperature", 0},
                                                                       {"ignore_eos", true}}
                                                                      .dump());
      ASSERT_EQ(http.status, 200) << http.body;
      const Json body = Json::parse(http.body);
      EXPECT_EQ(body["model"], model);
      EXPECT_EQ(body["choices"][0]["text"], got.text);
    }
    EXPECT_GE(compared, 16u) << "too few tokens were decisive enough to compare";
  }
}

TEST_F(LoraE2eTest, WorkersExportEachAdaptersRequests) {
  const HttpResponse response = HttpRequestTo(MetricsPort(), "GET", "/metrics", "", {});
  ASSERT_EQ(response.status, 200) << response.body;
  for (const char* series : {"headroom:lora_requests_running", "headroom:lora_requests_waiting"}) {
    for (const char* adapter : {"sql", "rs"}) {
      const std::string sample =
          std::string(series) + "{lora_name=\"" + adapter + "\",model_name=\"" + BaseId() + "\"} 0";
      EXPECT_NE(response.body.find(sample), std::string::npos) << sample;
    }
  }
}

TEST_F(LoraE2eTest, AnUnknownModelIsA404NamingTheAdapters) {
  const HttpResponse response = cluster_->Post(
      "/v1/completions", Json{{"model", "sql-v2"}, {"prompt", "hi"}, {"max_tokens", 1}}.dump());
  EXPECT_EQ(response.status, 404) << response.body;
  const std::string message = Json::parse(response.body)["error"]["message"];
  EXPECT_NE(message.find("\"sql-v2\""), std::string::npos) << message;
  EXPECT_NE(message.find("LoRA adapters: sql, rs"), std::string::npos) << message;
  // vLLM's run-time loading route: these workers load no adapters at run time, and say how.
  const HttpResponse load =
      cluster_->Post("/v1/load_lora_adapter",
                     Json{{"lora_name", "sql-v2"}, {"lora_path", AdapterPath("x")}}.dump());
  EXPECT_EQ(load.status, 400) << load.body;
  EXPECT_NE(load.body.find("start it with --allow-runtime-lora-updating"), std::string::npos)
      << load.body;
}

// Workers that take adapters at run time: two slots, one holding --lora-modules' sql.
class LoraRuntimeE2eTest : public SharedClusterTest<LoraRuntimeE2eTest> {
 public:
  static std::vector<std::string> ExtraWorkerFlags() {
    return {"--allow-runtime-lora-updating",
            "--max-loras",
            "2",
            "--max-lora-rank",
            "8",
            "--lora-modules",
            "sql=" + AdapterPath("llama-gqa-all")};
  }
};

std::vector<std::string> ModelIds(Cluster& cluster) {
  const HttpResponse response = cluster.Get("/v1/models");
  EXPECT_EQ(response.status, 200) << response.body;
  const Json body = Json::parse(response.body);
  std::vector<std::string> ids;
  for (const Json& card : body["data"]) ids.push_back(card["id"]);
  return ids;
}

// vLLM's /v1/load_lora_adapter and /v1/unload_lora_adapter through the router: a loaded adapter
// is listed and runs as PEFT does on the very next request; the slots bound what loads; an
// unloaded one is a 404 again; load_inplace replaces one; and every refusal is vLLM's status or
// its closest, with the reason.
TEST_F(LoraRuntimeE2eTest, AdaptersLoadAndUnloadAsVllmsDo) {
  const auto load = [&](const Json& body) {
    return cluster_->Post("/v1/load_lora_adapter", body.dump());
  };
  const auto unload = [&](const std::string& name) {
    return cluster_->Post("/v1/unload_lora_adapter", Json{{"lora_name", name}}.dump());
  };
  HttpResponse response =
      load({{"lora_name", "live"}, {"lora_path", AdapterPath("llama-gqa-rslora")}});
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.body, "Success: LoRA adapter 'live' added successfully.");
  EXPECT_EQ(ModelIds(*cluster_), (std::vector<std::string>{BaseId(), "sql", "live"}));
  // At once, on whichever group takes it: PEFT's tokens.
  const Json expected = Expected(AdapterPath("llama-gqa-rslora"));
  size_t compared = 0;
  for (const Json& prompt : expected["prompts"]) {
    compared +=
        ExpectGreedyPrefix(prompt, GrpcGreedy(*cluster_->stub, "live", prompt["ids"], 16).tokens);
  }
  EXPECT_GE(compared, 16u);

  response = load({{"lora_name", "live"}, {"lora_path", AdapterPath("llama-gqa-rslora")}});
  EXPECT_EQ(response.status, 400) << response.body;  // vLLM's status
  EXPECT_NE(response.body.find("is already loaded"), std::string::npos) << response.body;
  // vLLM's load_inplace replaces it: with both slots taken and nothing of it in flight, in its
  // own slot; the next requests run the new weights.
  response = load({{"lora_name", "live"},
                   {"lora_path", AdapterPath("llama-gqa-all")},
                   {"load_inplace", "yes"}});
  EXPECT_EQ(response.status, 400) << response.body;
  response = load(
      {{"lora_name", "live"}, {"lora_path", AdapterPath("llama-gqa-all")}, {"load_inplace", true}});
  ASSERT_EQ(response.status, 200) << response.body;
  compared = 0;
  const Json replaced = Expected(AdapterPath("llama-gqa-all"));
  for (const Json& prompt : replaced["prompts"]) {
    compared +=
        ExpectGreedyPrefix(prompt, GrpcGreedy(*cluster_->stub, "live", prompt["ids"], 16).tokens);
  }
  EXPECT_GE(compared, 16u);
  response = load({{"lora_name", "third"}, {"lora_path", AdapterPath("llama-gqa-all")}});
  EXPECT_EQ(response.status, 429) << response.body;
  EXPECT_NE(response.body.find("all 2 LoRA slots (--max-loras) are taken: serving sql, live"),
            std::string::npos)
      << response.body;
  response = load({{"lora_name", "nowhere"}});
  EXPECT_EQ(response.status, 400) << response.body;
  EXPECT_NE(response.body.find("Both 'lora_name' and 'lora_path' must be provided."),
            std::string::npos)
      << response.body;

  response = unload("live");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.body, "Success: LoRA adapter 'live' removed successfully.");
  EXPECT_EQ(ModelIds(*cluster_), (std::vector<std::string>{BaseId(), "sql"}));
  response = cluster_->Post("/v1/completions",
                            Json{{"model", "live"}, {"prompt", "hi"}, {"max_tokens", 1}}.dump());
  EXPECT_EQ(response.status, 404) << response.body;
  response = unload("live");
  EXPECT_EQ(response.status, 404) << response.body;
  const std::string message = Json::parse(response.body)["error"]["message"];
  EXPECT_NE(message.find("LoRA adapter \"live\" is not loaded (LoRA adapters: sql)"),
            std::string::npos)
      << message;
  // The freed slot takes another adapter; a directory that is none is a 404 naming it.
  response = load({{"lora_name", "gone"}, {"lora_path", AdapterPath("no-such-adapter")}});
  EXPECT_EQ(response.status, 404) << response.body;
  EXPECT_NE(response.body.find("not a directory"), std::string::npos) << response.body;
  response = load({{"lora_name", "again"}, {"lora_path", AdapterPath("llama-gqa-rslora")}});
  EXPECT_EQ(response.status, 200) << response.body;
}

// Workers that load an adapter a request names from a directory (--lora-resolver-dir: vLLM's
// lora_filesystem_resolver), one slot each. The directory holds the fixtures as "rs" and "sql".
class LoraResolverE2eTest : public SharedClusterTest<LoraResolverE2eTest> {
 public:
  static std::filesystem::path Dir() {
    return std::filesystem::temp_directory_path() /
           absl::StrCat("headroom_e2e_resolver_", ::getpid());
  }
  static std::vector<std::string> ExtraWorkerFlags() {
    std::filesystem::remove_all(Dir());
    std::filesystem::create_directories(Dir());
    std::filesystem::create_directory_symlink(AdapterPath("llama-gqa-rslora"), Dir() / "rs");
    std::filesystem::create_directory_symlink(AdapterPath("llama-gqa-all"), Dir() / "sql");
    std::filesystem::create_directory_symlink(AdapterPath("llama-gqa-all"), Dir() / "sql2");
    return {"--allow-runtime-lora-updating", "--max-loras", "1", "--max-lora-rank", "8",
            "--lora-resolver-dir",           Dir().string()};
  }
  static void TearDownTestSuite() {
    SharedClusterTest<LoraResolverE2eTest>::TearDownTestSuite();
    std::filesystem::remove_all(Dir());
  }
};

// `model` runs the fixture prompts with PEFT's greedy tokens (up to near-ties) over gRPC.
void ExpectPeftTokens(v1::Inference::Stub& stub, const std::string& model,
                      const std::string& fixture) {
  const Json expected = Expected(AdapterPath(fixture));
  size_t compared = 0;
  for (const Json& prompt : expected["prompts"]) {
    compared += ExpectGreedyPrefix(prompt, GrpcGreedy(stub, model, prompt["ids"], 16).tokens);
  }
  EXPECT_GE(compared, 16u) << model;
}

// No adapter is loaded at start; the first request naming one loads it where it is placed and
// gets PEFT's tokens, after which the adapter is listed; a name the directory lacks is a 404.
TEST_F(LoraResolverE2eTest, ARequestLoadsItsAdapterFromTheDirectory) {
  EXPECT_EQ(ModelIds(*cluster_), std::vector<std::string>{BaseId()});
  ExpectPeftTokens(*cluster_->stub, "rs", "llama-gqa-rslora");
  // One slot per group: "sql" goes to the other group, or replaces the idle "rs".
  ExpectPeftTokens(*cluster_->stub, "sql", "llama-gqa-all");
  const HttpResponse completion = cluster_->Post(
      "/v1/completions", Json{{"model", "rs"}, {"prompt", "hi"}, {"max_tokens", 2}}.dump());
  EXPECT_EQ(completion.status, 200) << completion.body;
  // The groups report what they loaded (within a report interval of the last step).
  std::vector<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    ids = ModelIds(*cluster_);
    if (std::find(ids.begin(), ids.end(), "rs") != ids.end()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(std::find(ids.begin(), ids.end(), "rs"), ids.end());
  for (const std::string name : {"nope", ".."}) {
    const HttpResponse response = cluster_->Post(
        "/v1/completions", Json{{"model", name}, {"prompt", "hi"}, {"max_tokens", 1}}.dump());
    EXPECT_EQ(response.status, 404) << response.body;
    const std::string message = Json::parse(response.body)["error"]["message"];
    EXPECT_NE(message.find("LoRA adapter \"" + name + "\" does not exist"), std::string::npos)
        << message;
  }
}

// Three adapters asked for at once, two at a time each, on two groups of one slot: a request
// finding its group's slot in use waits for it (as vLLM queues it) instead of being refused, and
// every one gets PEFT's tokens.
TEST_F(LoraResolverE2eTest, RequestsForMoreAdaptersThanSlotsWaitTheirTurn) {
  const std::vector<std::pair<std::string, std::string>> adapters = {
      {"rs", "llama-gqa-rslora"}, {"sql", "llama-gqa-all"}, {"sql2", "llama-gqa-all"}};
  std::vector<std::thread> clients;
  for (int round = 0; round < 2; ++round) {
    for (const auto& [name, fixture] : adapters) {
      clients.emplace_back([this, name, fixture] {
        const Json prompt = Expected(AdapterPath(fixture))["prompts"][3];
        const Generated out =
            GrpcGreedy(*cluster_->stub, name, prompt["ids"].get<std::vector<int32_t>>(), 32);
        EXPECT_GE(ExpectGreedyPrefix(prompt, out.tokens), 1u) << name;
      });
    }
  }
  for (std::thread& client : clients) client.join();
}

// Every slot holds an adapter that does not give way (one slot per group, "pinned" loaded
// through /v1/load_lora_adapter on both, in place of any idle adapter loaded on first use): a
// request naming another adapter of the directory is refused 429 with Retry-After, as the router's
// own refusals are (vLLM would queue it; docs/engine.md), and once "pinned" is unloaded it loads.
TEST_F(LoraResolverE2eTest, ARequestFindingNoSlotIsA429WithRetryAfter) {
  const Json third = {{"model", "sql"}, {"prompt", "hi"}, {"max_tokens", 1}};
  HttpResponse response = cluster_->Post(
      "/v1/load_lora_adapter",
      Json{{"lora_name", "pinned"}, {"lora_path", AdapterPath("llama-gqa-rslora")}}.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  response = cluster_->Post("/v1/completions", third.dump());
  EXPECT_EQ(response.status, 429) << response.body;
  EXPECT_EQ(response.Header("retry-after"), "1") << response.body;
  const std::string message = Json::parse(response.body)["error"]["message"];
  EXPECT_NE(message.find(absl::StrCat("LoRA adapter \"sql\" was found (", Dir().string(),
                                      "/sql) but no slot can take it (adapters loaded at start "
                                      "or by /v1/load_lora_adapter keep theirs): all 1 LoRA "
                                      "slots (--max-loras) are taken: serving pinned.")),
            std::string::npos)
      << message;
  response = cluster_->Post("/v1/unload_lora_adapter", Json{{"lora_name", "pinned"}}.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  response = cluster_->Post("/v1/completions", third.dump());
  EXPECT_EQ(response.status, 200) << response.body;
}

TEST(LoraWorkerStartTest, AnAdapterItCannotLoadStopsTheWorker) {
  std::vector<std::string> flags = FixtureWorkerFlags(16);
  flags.insert(flags.end(),
               {"--lora-modules", "sql=" + AdapterPath("llama-gqa-all"), "--max-lora-rank", "4"});
  // It listens first (health probes answer while it loads), then exits instead of serving the
  // base model alone; the message is lora_test's.
  ChildProcess worker("worker", flags);
  const std::optional<int> status = worker.WaitExit(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << "the worker kept running with an adapter it cannot load";
  EXPECT_NE(*status, 0);
}

}  // namespace
}  // namespace headroom::e2e
