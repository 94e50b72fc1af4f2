// End to end, tensor-parallel groups as real processes: `headroom worker --tensor-parallel-size 2`
// is a launcher starting two rank processes that meet over Gloo on loopback.
//   - `headroom up --tensor-parallel-size 2` serves the single-rank engine's greedy tokens over
//     gRPC, and the same text over HTTP;
//   - each rank serves its shards of LoRA adapters: PEFT's tokens under each adapter's name;
//   - SIGTERM stops every rank and the launcher exits 0;
//   - kill -9 of a follower rank takes its group down (the launcher exits non-zero, the router
//     marks the group down) within 2 s, and requests that had not streamed a token finish on the
//     other group.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "fixture_model.h"
#include "fixture_worker.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "http_client.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"

namespace headroom::e2e {
namespace {

using std::chrono::seconds;

std::unique_ptr<grpc::ClientContext> Context(int timeout_s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + seconds(timeout_s));
  return context;
}

struct Generated {
  std::vector<int32_t> tokens;
  std::string text;
  grpc::Status status;
};

Generated Generate(v1::Inference::Stub& stub, const std::vector<int32_t>& prompt,
                   int32_t max_tokens, const std::string& model = "") {
  v1::GenerateRequest request;
  request.set_model(model);
  for (const int32_t t : prompt) request.mutable_token_ids()->add_ids(t);
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(max_tokens);
  request.mutable_sampling()->set_ignore_eos(true);
  auto context = Context(60);
  auto reader = stub.Generate(context.get(), request);
  Generated out;
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    out.tokens.insert(out.tokens.end(), response.token_ids().begin(), response.token_ids().end());
    out.text += response.text();
  }
  out.status = reader->Finish();
  return out;
}

// Healthy groups as the router sees them, by address.
std::vector<std::string> HealthyGroups(v1::Inference::Stub& stub) {
  v1::ClusterState state;
  auto context = Context(5);
  std::vector<std::string> healthy;
  if (!stub.GetClusterState(context.get(), {}, &state).ok()) return healthy;
  for (const v1::GroupState& g : state.groups()) {
    if (g.healthy()) healthy.push_back(g.address());
  }
  return healthy;
}

bool WaitHealthy(v1::Inference::Stub& stub, size_t groups) {
  for (int i = 0; i < 400; ++i) {
    if (HealthyGroups(stub).size() == groups) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The greedy tokens of the in-process single-rank engine on the fixture.
std::vector<int32_t> ReferenceTokens(const std::vector<int32_t>& prompt, int32_t max_tokens) {
  const worker::testdata::FixtureModel& m = worker::testdata::LoadFixtureModel("llama-gqa");
  worker::CpuBackend backend(1);
  auto engine = worker::Engine::Create(m.config, m.weights,
                                       {.max_num_seqs = 4,
                                        .max_num_batched_tokens = 256,
                                        .max_model_len = 256,
                                        .block_size = 16,
                                        .num_kv_blocks = 64},
                                       &backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return {};
  worker::Request request;
  request.id = worker::RequestId{1};
  request.prompt = prompt;
  request.sampling.temperature = 0.0f;
  request.sampling.max_tokens = max_tokens;
  request.sampling.ignore_eos = true;
  EXPECT_TRUE((*engine)->AddRequest(request).ok());
  std::vector<int32_t> tokens;
  while ((*engine)->HasWork()) {
    auto step = (*engine)->Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (const worker::StepToken& t : *step) tokens.push_back(t.token);
  }
  return tokens;
}

// Pids of the children of `parent` whose command line has `--rank <rank>`.
std::vector<pid_t> RankPids(pid_t parent, int rank) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* entry = readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat("/proc/" + name + "/stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream cmdline_file("/proc/" + name + "/cmdline");
    std::ostringstream contents;
    contents << cmdline_file.rdbuf();
    const std::string cmdline = contents.str();
    if (cmdline.find(std::string("--rank\0", 7) + std::to_string(rank) + '\0') !=
        std::string::npos) {
      pids.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  closedir(proc);
  return pids;
}

std::vector<std::string> WorkerFlags(int tp, int blocks) {
  std::vector<std::string> flags = FixtureWorkerFlags(blocks);
  flags.insert(flags.end(), {"--tensor-parallel-size", std::to_string(tp)});
  return flags;
}

TEST(TensorParallelE2eTest, UpWithTwoRanksPerGroupServesTheSingleRankTokensOverGrpcAndHttp) {
  ChildProcess up(
      "up", {"--groups", "1", "--tensor-parallel-size", "2", "--grpc-port", "0", "--http-port", "0",
             "--model", worker::testdata::FixtureDir("llama-gqa").string(),
             "--num-gpu-blocks-override", "64", "--max-model-len", "256", "--max-num-seqs", "4"});
  ASSERT_FALSE(up.address().empty()) << "headroom up printed no ready line";
  int http_port = 0;
  for (int i = 0; i < 20 && http_port == 0; ++i) {
    const std::string line = up.NextLine(seconds(10));
    if (line.empty()) break;
    if (const size_t at = line.find("http://");
        at != std::string::npos && line.find("OpenAI API") != std::string::npos) {
      http_port = PortOf(line.substr(at + 7, line.find(' ', at) - at - 7));
    }
  }
  ASSERT_NE(http_port, 0) << "no HTTP line";
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(up.address(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(WaitHealthy(*stub, 1)) << "the router never saw the group";

  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100};
  constexpr int32_t kMaxTokens = 24;
  const std::vector<int32_t> expected = ReferenceTokens(prompt, kMaxTokens);
  ASSERT_EQ(expected.size(), static_cast<size_t>(kMaxTokens));
  const Generated grpc_result = Generate(*stub, prompt, kMaxTokens);
  ASSERT_TRUE(grpc_result.status.ok()) << grpc_result.status.error_message();
  EXPECT_EQ(grpc_result.tokens, expected);

  // The same prompt as text ("Hello world": the byte tokenizer's ids above) over HTTP.
  const nlohmann::json request = {{"prompt", "Hello world"},
                                  {"max_tokens", kMaxTokens},
                                  {"temperature", 0},
                                  {"ignore_eos", true}};
  const HttpResponse http = HttpRequestTo(http_port, "POST", "/v1/completions", request.dump());
  ASSERT_EQ(http.status, 200) << http.body;
  EXPECT_EQ(nlohmann::json::parse(http.body)["choices"][0]["text"], grpc_result.text);

  up.Signal(SIGTERM);
  EXPECT_EQ(up.WaitExit(seconds(30)), 0);
}

// LoRA adapters through a group of two rank processes: each rank loads its shards of both
// adapters (the launcher passes --lora-modules on), and a request under each adapter's name gives
// PEFT's greedy tokens (scripts/gen_lora_fixtures.py) up to the first near-tie.
TEST(TensorParallelE2eTest, EveryRankServesItsShardOfTheAdapters) {
  const auto adapter = [](const std::string& name) {
    return (worker::testdata::FixtureDir("lora") / name).string();
  };
  ChildProcess up(
      "up",
      {"--groups", "1", "--tensor-parallel-size", "2", "--grpc-port", "0", "--http-port", "0",
       "--model", worker::testdata::FixtureDir("llama-gqa").string(), "--num-gpu-blocks-override",
       "64", "--max-model-len", "256", "--max-num-seqs", "4", "--lora-modules",
       "sql=" + adapter("llama-gqa-all"), "rs=" + adapter("llama-gqa-rslora")});
  ASSERT_FALSE(up.address().empty()) << "headroom up printed no ready line";
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(up.address(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(WaitHealthy(*stub, 1)) << "the router never saw the group";
  size_t compared = 0;
  for (const auto& [model, fixture] : std::vector<std::pair<std::string, std::string>>{
           {"sql", "llama-gqa-all"}, {"rs", "llama-gqa-rslora"}}) {
    std::ifstream in(std::filesystem::path(adapter(fixture)) / "expected.json");
    const nlohmann::json expected = nlohmann::json::parse(in);
    for (const nlohmann::json& prompt : expected["prompts"]) {
      const Generated got = Generate(*stub, prompt["ids"].get<std::vector<int32_t>>(), 12, model);
      ASSERT_TRUE(got.status.ok()) << model << ": " << got.status.error_message();
      ASSERT_EQ(got.tokens.size(), 12u);
      for (size_t step = 0; step < got.tokens.size(); ++step) {
        if (prompt["margins"][step].get<double>() < 0.01) break;  // a near-tie: stop comparing
        EXPECT_EQ(got.tokens[step], prompt["greedy"][step].get<int32_t>())
            << model << ", step " << step;
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 16u) << "too few decisive tokens to compare";
  up.Signal(SIGTERM);
  EXPECT_EQ(up.WaitExit(seconds(30)), 0);
}

TEST(TensorParallelE2eTest, SigtermStopsEveryRankAndTheLauncherExitsZero) {
  ChildProcess group("worker", WorkerFlags(2, 64));
  ASSERT_FALSE(group.address().empty());
  const std::vector<pid_t> leader = RankPids(group.pid(), 0);
  const std::vector<pid_t> follower = RankPids(group.pid(), 1);
  ASSERT_EQ(leader.size(), 1u);
  ASSERT_EQ(follower.size(), 1u);
  group.Signal(SIGTERM);
  // Rank 0 drains and stops the follower; the launcher reports success.
  EXPECT_EQ(group.WaitExit(seconds(30)), 0);
  for (const pid_t pid : {leader[0], follower[0]}) {
    EXPECT_TRUE(kill(pid, 0) != 0 && errno == ESRCH) << "rank pid " << pid << " still runs";
  }
}

TEST(TensorParallelE2eTest, KillingAFollowerTakesTheGroupDownAndRequestsMoveToTheOtherGroup) {
  // Group A: two ranks; group B: one. 9 blocks each: one 20 + 60 token request at a time.
  ChildProcess group_a("worker", WorkerFlags(2, 9));
  ChildProcess group_b("worker", WorkerFlags(1, 9));
  ASSERT_FALSE(group_a.address().empty());
  ASSERT_FALSE(group_b.address().empty());
  ChildProcess router("router", {"--grpc-port", "0", "--http-port", "-1", "--workers",
                                 group_a.address() + "," + group_b.address()});
  ASSERT_FALSE(router.address().empty());
  auto stub = v1::Inference::NewStub(
      grpc::CreateChannel(router.address(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(WaitHealthy(*stub, 2)) << "the router never saw both groups";
  const std::vector<pid_t> followers = RankPids(group_a.pid(), 1);
  ASSERT_EQ(followers.size(), 1u) << "rank 1 of group A not found among its launcher's children";

  constexpr int kRequests = 8;
  std::vector<Generated> results(kRequests);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = Generate(*stub, std::vector<int32_t>(20, 70 + i), 60);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // both groups busy
  kill(followers[0], SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  // The launcher takes the whole group down and exits non-zero.
  const std::optional<int> exit = group_a.WaitExit(seconds(2));
  ASSERT_TRUE(exit.has_value()) << "group A's launcher still runs 2 s after its follower died";
  EXPECT_NE(*exit, 0);
  // The router marks the group down within 2 s of the kill.
  bool down = false;
  while (!down && std::chrono::steady_clock::now() - killed_at < seconds(5)) {
    const std::vector<std::string> healthy = HealthyGroups(*stub);
    down = std::find(healthy.begin(), healthy.end(), group_a.address()) == healthy.end();
    if (!down) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(down);
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, seconds(2));
  for (std::thread& t : clients) t.join();
  int ok = 0;
  for (const Generated& r : results) {
    if (r.status.ok()) {
      ++ok;
      EXPECT_EQ(r.tokens.size(), 60u);
    } else {
      // Only a request that had already streamed from group A may fail, and clearly; the others
      // (queued at the router or in group A's scheduler) finish on group B.
      EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
      EXPECT_FALSE(r.tokens.empty()) << r.status.error_message();
    }
  }
  // Group A runs at most --max-num-seqs (4) of them at once.
  EXPECT_GE(ok, kRequests - 4);
  // The survivor serves new requests.
  const Generated after = Generate(*stub, {1, 2, 3}, 8);
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
}

}  // namespace
}  // namespace headroom::e2e
