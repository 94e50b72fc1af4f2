// End to end: `headroom up` as a real process (it starts two `headroom worker` children on the
// llama-gqa fixture and a `headroom router`), spoken to over gRPC through the router, then
// stopped with SIGTERM; every child it printed must be gone. Also runs examples/generate.py
// against it when build/venv has grpcio-tools.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "fixtures.h"
#include "groups_up.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "http_client.h"
#include "nlohmann/json.hpp"
#include "venv_python.h"

namespace headroom::e2e {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

struct Up {
  std::unique_ptr<ChildProcess> process;
  std::vector<pid_t> child_pids;  // from the "... pid N" lines
  std::string query_command;      // the printed examples/generate.py line
  std::string curl_command;       // the printed curl line
};

// Starts `headroom up` and reads its URL lines up to "Ctrl-C stops the cluster.".
Up StartUp() {
  Up up;
  up.process = std::make_unique<ChildProcess>(
      "up", std::vector<std::string>{
                "--groups",
                "2",
                "--grpc-port",
                "0",
                "--http-port",
                "0",
                "--model",
                worker::testdata::FixtureDir("llama-gqa").string(),
                "--num-gpu-blocks-override",
                "64",
                "--max-model-len",
                "256",
                "--max-num-seqs",
                "4",
                "--lora-modules",
                "sql=" + (worker::testdata::FixtureDir("lora") / "llama-gqa-all").string(),
                "--max-lora-rank",
                "8",
                "--allow-runtime-lora-updating",
                "--max-loras",
                "2",
                "--lora-resolver-dir",
                worker::testdata::FixtureDir("lora").string(),
                "--pooler-config",
                R"({"pooling_type": "MEAN", "normalize": false})"});
  if (up.process->address().empty()) return up;
  for (int i = 0; i < 20; ++i) {
    const std::string line = up.process->NextLine(std::chrono::seconds(10));
    if (line.empty() || line == "Ctrl-C stops the cluster.") break;
    if (const size_t at = line.rfind(" pid "); at != std::string::npos) {
      up.child_pids.push_back(static_cast<pid_t>(std::stol(line.substr(at + 5))));
    }
    if (line.find("examples/generate.py") != std::string::npos) up.query_command = line;
    if (line.find("curl http://") != std::string::npos) up.curl_command = line;
  }
  return up;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

std::unique_ptr<grpc::ClientContext> Context(int timeout_s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(system_clock::now() + seconds(timeout_s));
  return context;
}

void StopAndExpectClean(Up& up) {
  up.process->Signal(SIGTERM);
  const std::optional<int> status = up.process->WaitExit(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << "headroom up did not exit within 30 s of SIGTERM";
  EXPECT_EQ(*status, 0);
  for (pid_t pid : up.child_pids) EXPECT_FALSE(Alive(pid)) << "child " << pid << " left running";
}

TEST(UpE2eTest, ServesThroughTheRouterAndStopsEveryChildOnSigterm) {
  Up up = StartUp();
  ASSERT_FALSE(up.process->address().empty()) << "headroom up printed no ready line";
  ASSERT_EQ(up.child_pids.size(), 3u) << "expected pids of the router and two workers";
  EXPECT_NE(up.query_command.find("--target " + up.process->address()), std::string::npos)
      << up.query_command;
  auto channel = grpc::CreateChannel(up.process->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Inference::NewStub(channel);
  ASSERT_TRUE(e2e::GroupsUp(*stub, 2)) << "the router never saw 2 healthy groups";
  // --lora-modules reached the workers: the router lists the adapter.
  {
    auto list_context = Context(10);
    v1::ListModelsResponse models;
    ASSERT_TRUE(stub->ListModels(list_context.get(), {}, &models).ok());
    ASSERT_EQ(models.models_size(), 2);
    EXPECT_EQ(models.models(1).id(), "sql");
    EXPECT_EQ(models.models(1).parent(), models.models(0).id());
  }

  v1::GenerateRequest request;
  for (int32_t t : {72, 101, 108, 108, 111}) request.mutable_token_ids()->add_ids(t);
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(8);
  request.mutable_sampling()->set_ignore_eos(true);
  auto context = Context(60);
  auto reader = stub->Generate(context.get(), request);
  v1::GenerateResponse response;
  std::vector<int32_t> tokens;
  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED;
  while (reader->Read(&response)) {
    tokens.insert(tokens.end(), response.token_ids().begin(), response.token_ids().end());
    if (response.finish_reason() != v1::FINISH_REASON_UNSPECIFIED)
      finish = response.finish_reason();
  }
  const grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(tokens.size(), 8u);
  EXPECT_EQ(finish, v1::FINISH_REASON_LENGTH);

  // The printed curl works: its URL, method and body, sent as printed.
  const size_t url_at = up.curl_command.find("http://");
  ASSERT_NE(url_at, std::string::npos) << up.curl_command;
  const std::string url =
      up.curl_command.substr(url_at, up.curl_command.find(' ', url_at) - url_at);
  const size_t path_at = url.find('/', 7);
  const size_t body_at = up.curl_command.find("-d '");
  ASSERT_NE(body_at, std::string::npos) << up.curl_command;
  const std::string body =
      up.curl_command.substr(body_at + 4, up.curl_command.rfind('\'') - body_at - 4);
  const HttpResponse http =
      HttpRequestTo(PortOf(url.substr(7, path_at - 7)), "POST", url.substr(path_at), body);
  EXPECT_EQ(http.status, 200) << http.body;
  EXPECT_NE(http.body.find("\"object\":\"text_completion\""), std::string::npos) << http.body;
  // --lora-resolver-dir reached the workers: a request naming a fixture directory loads it into
  // the slot beside sql on the group it goes to.
  const HttpResponse resolved =
      HttpRequestTo(PortOf(url.substr(7, path_at - 7)), "POST", "/v1/completions",
                    R"({"model": "llama-gqa-rslora", "prompt": "Hello", "max_tokens": 2})");
  EXPECT_EQ(resolved.status, 200) << resolved.body;
  // --pooler-config reached the workers: an embedding is transformers' mean of the last hidden
  // states, unnormalized (scripts/gen_embedding_fixtures.py).
  std::ifstream fixture(worker::testdata::FixtureDir("llama-gqa") / "embeddings.json");
  const nlohmann::json prompt = nlohmann::json::parse(fixture)["prompts"][3];
  const HttpResponse embedded =
      HttpRequestTo(PortOf(url.substr(7, path_at - 7)), "POST", "/v1/embeddings",
                    nlohmann::json{{"input", prompt["ids"]}}.dump());
  ASSERT_EQ(embedded.status, 200) << embedded.body;
  const auto got =
      nlohmann::json::parse(embedded.body)["data"][0]["embedding"].get<std::vector<double>>();
  const auto mean = prompt["mean"].get<std::vector<double>>();
  ASSERT_EQ(got.size(), mean.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], mean[i], 1e-4 + 1e-4 * std::fabs(mean[i])) << "value " << i;
  }
  // --allow-runtime-lora-updating and --max-loras reached the workers: a second adapter loads
  // into the slot beside sql (on the group above, in place of the idle resolved adapter).
  const std::string load = R"({"lora_name": "rs", "lora_path": ")" +
                           (worker::testdata::FixtureDir("lora") / "llama-gqa-rslora").string() +
                           R"("})";
  const HttpResponse loaded =
      HttpRequestTo(PortOf(url.substr(7, path_at - 7)), "POST", "/v1/load_lora_adapter", load);
  EXPECT_EQ(loaded.status, 200) << loaded.body;

  StopAndExpectClean(up);
}

TEST(UpE2eTest, ExampleClientStreamsAFinishLine) {
  const std::string source = HEADROOM_SOURCE_DIR;
  const std::string python = VenvPython(source);
  if (const std::optional<std::string> missing = VenvPythonMissing(python, "grpc, grpc_tools")) {
    GTEST_SKIP() << *missing;
  }
  Up up = StartUp();
  ASSERT_FALSE(up.process->address().empty()) << "headroom up printed no ready line";
  auto channel = grpc::CreateChannel(up.process->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Inference::NewStub(channel);
  ASSERT_TRUE(e2e::GroupsUp(*stub, 2));

  const std::string command = python + " " + source + "/examples/generate.py --target " +
                              up.process->address() +
                              " --max-tokens 8 --temperature 0 'Hello world' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[256];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_NE(output.find("[finish_reason=LENGTH prompt_tokens=11 completion_tokens=8]"),
            std::string::npos)
      << output;

  StopAndExpectClean(up);
}

}  // namespace
}  // namespace headroom::e2e
