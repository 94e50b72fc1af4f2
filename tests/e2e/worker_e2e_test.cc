// End to end: the real `headroom worker` binary as a child process, spoken to over gRPC.
//
// Parity, health and refusals run on the committed llama-gqa fixture. The tests that need a
// request to still be running while they look (load updates, cancel, SIGTERM) use dummy:small,
// whose ~30 ms steps leave time to look; the fixture finishes 200 tokens in a few milliseconds.
// Every RPC has a deadline and every child is SIGKILLed in teardown if it is still alive.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "child_process.h"
#include "fixture_model.h"
#include "fixture_worker.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/worker.grpc.pb.h"
#include "http_client.h"
#include "kvcache/block_hash.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"

extern char** environ;

namespace headroom::worker {
namespace {

using e2e::MetricSample;

using std::chrono::seconds;
using std::chrono::system_clock;

// A `headroom worker` child process.
class WorkerProcess : public e2e::ChildProcess {
 public:
  explicit WorkerProcess(std::vector<std::string> flags)
      : ChildProcess("worker", std::move(flags)) {}
};

const std::string& FixtureModelDir() {
  static const std::string dir = testdata::FixtureDir("llama-gqa").string();
  return dir;
}

// Flags of the fixture worker; the in-process engine below uses the same values.
std::vector<std::string> FixtureFlags(int blocks = 64) { return e2e::FixtureWorkerFlags(blocks); }

std::vector<std::string> SlowFlags() {
  return {"--model",
          "dummy:small",
          "--port",
          "0",
          "--metrics-port",
          "-1",
          "--num-gpu-blocks-override",
          "64",
          "--block-size",
          "16",
          "--max-num-seqs",
          "4",
          "--max-num-batched-tokens",
          "256",
          "--max-model-len",
          "512",
          "--threads",
          "1",
          "--drain-timeout-s",
          "30"};
}

// Sets the value after flag `name` in `flags`.
void SetFlag(std::vector<std::string>& flags, const std::string& name, const std::string& value) {
  for (size_t i = 0; i + 1 < flags.size(); ++i) {
    if (flags[i] == name) flags[i + 1] = value;
  }
}

// The /metrics port a worker started with --metrics-port 0 prints after its listening line; 0
// if it printed something else.
int MetricsPort(WorkerProcess& worker) {
  const std::string line = worker.NextLine(seconds(10));
  const std::string prefix = "headroom worker metrics on 127.0.0.1:";
  EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
  return line.rfind(prefix, 0) == 0 ? std::stoi(line.substr(prefix.size())) : 0;
}

std::unique_ptr<grpc::ClientContext> Context(int timeout_s = 30) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(system_clock::now() + seconds(timeout_s));
  return context;
}

v1::SubmitRequest MakeSubmit(uint64_t id, std::vector<int32_t> prompt, int32_t max_tokens) {
  v1::SubmitRequest request;
  request.set_request_id(id);
  for (int32_t t : prompt) request.add_prompt_token_ids(t);
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(max_tokens);
  return request;
}

struct StreamResult {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED;
  int32_t completion_tokens = 0;
  grpc::Status status;
};

StreamResult ReadAll(grpc::ClientReaderInterface<v1::SubmitResponse>& reader,
                     StreamResult result = {}) {
  v1::SubmitResponse response;
  while (reader.Read(&response)) {
    for (const v1::GeneratedToken& t : response.tokens()) {
      result.tokens.push_back(t.token_id());
      result.logprobs.push_back(t.logprob());
    }
    if (response.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
      result.finish = response.finish_reason();
      result.completion_tokens = response.completion_tokens();
    }
  }
  result.status = reader.Finish();
  return result;
}

class WorkerE2eTest : public ::testing::Test {
 protected:
  void Connect(const WorkerProcess& worker) {
    ASSERT_FALSE(worker.address().empty()) << "the worker did not print its listening line";
    channel_ = grpc::CreateChannel(worker.address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Worker::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
  }

  grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& service = "") {
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    auto context = Context(5);
    if (!health_->Check(context.get(), request, &response).ok()) {
      return grpc::health::v1::HealthCheckResponse::UNKNOWN;
    }
    return response.status();
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

// What the engine in this process streams for one greedy request on `fixture`: the reference the
// worker process must reproduce.
StreamResult InProcessGreedy(const testdata::FixtureModel& fixture, const EngineOptions& options,
                             const std::vector<int32_t>& prompt, int32_t max_tokens,
                             bool ignore_eos) {
  StreamResult out;
  CpuBackend backend(1);
  absl::StatusOr<std::unique_ptr<Engine>> engine =
      Engine::Create(fixture.config, fixture.weights, options, &backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return out;
  Request request;
  request.id = RequestId{1};
  request.prompt = prompt;
  request.sampling.temperature = 0.0f;
  request.sampling.max_tokens = max_tokens;
  request.sampling.ignore_eos = ignore_eos;
  EXPECT_TRUE((*engine)->AddRequest(request).ok());
  while ((*engine)->HasWork()) {
    absl::StatusOr<std::vector<StepToken>> step = (*engine)->Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (const StepToken& t : *step) {
      out.tokens.push_back(t.token);
      out.logprobs.push_back(t.logprob);
      out.finish =
          t.finish == FinishReason::kStop ? v1::FINISH_REASON_STOP : v1::FINISH_REASON_LENGTH;
    }
  }
  out.completion_tokens = static_cast<int32_t>(out.tokens.size());
  return out;
}

// The worker's stream is the reference's: the same tokens, logprobs within 1e-4.
void ExpectSameStream(const StreamResult& result, const StreamResult& expected) {
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_EQ(result.tokens, expected.tokens);
  ASSERT_EQ(result.logprobs.size(), expected.logprobs.size());
  for (size_t i = 0; i < expected.logprobs.size(); ++i) {
    EXPECT_NEAR(result.logprobs[i], expected.logprobs[i], 1e-4) << "token " << i;
  }
  EXPECT_EQ(result.finish, expected.finish);
  EXPECT_EQ(result.completion_tokens, expected.completion_tokens);
}

TEST_F(WorkerE2eTest, SubmitStreamsTheSameGreedyTokensAsAnInProcessEngine) {
  WorkerProcess worker(FixtureFlags());
  Connect(worker);
  const std::vector<int32_t> prompt = {1, 17, 33, 5, 99, 250, 7, 64, 128, 3, 11};
  constexpr int32_t kMaxTokens = 40;

  // The reference: the engine in this process, same fixture, same options.
  const StreamResult expected = InProcessGreedy(testdata::LoadFixtureModel("llama-gqa"),
                                                {.max_num_seqs = 4,
                                                 .max_num_batched_tokens = 256,
                                                 .max_model_len = 256,
                                                 .block_size = 16,
                                                 .num_kv_blocks = 64,
                                                 .eos_token_id = 2},
                                                prompt, kMaxTokens, /*ignore_eos=*/false);
  ASSERT_GE(expected.tokens.size(), 10u)
      << "the reference stopped early; pick a prompt that runs longer";

  auto context = Context();
  auto reader = stub_->Submit(context.get(), MakeSubmit(1, prompt, kMaxTokens));
  ExpectSameStream(ReadAll(*reader), expected);
}

// generation_config.json's eos_token_id list (Llama-3.1's <|eom_id|>, Qwen2.5's <|endoftext|>)
// stops requests as vLLM's does: a copy of the fixture model whose generation_config.json names
// the token greedy decoding produces third ends the same request there, finished by a stop.
TEST_F(WorkerE2eTest, GenerationConfigEosIdsStopRequests) {
  const std::vector<int32_t> prompt = {1, 17, 33, 5, 99, 250, 7, 64, 128, 3, 11};
  std::vector<int32_t> free_run;
  {
    WorkerProcess worker(FixtureFlags());
    Connect(worker);
    auto context = Context();
    auto reader = stub_->Submit(context.get(), MakeSubmit(1, prompt, 12));
    const StreamResult result = ReadAll(*reader);
    ASSERT_TRUE(result.status.ok()) << result.status.error_message();
    free_run = result.tokens;
  }
  ASSERT_EQ(free_run.size(), 12u);
  const int32_t stop = free_run[2];
  ASSERT_TRUE(stop != free_run[0] && stop != free_run[1]) << "pick a token first seen third";

  const std::filesystem::path model =
      std::filesystem::temp_directory_path() / ("headroom_eos_model_" + std::to_string(::getpid()));
  std::filesystem::remove_all(model);
  std::filesystem::copy(FixtureModelDir(), model, std::filesystem::copy_options::recursive);
  std::ofstream(model / "generation_config.json")
      << R"({"bos_token_id": 1, "eos_token_id": [2, )" << stop << "]}";
  std::vector<std::string> flags = FixtureFlags();
  SetFlag(flags, "--model", model.string());
  WorkerProcess worker(flags);
  Connect(worker);
  auto context = Context();
  auto reader = stub_->Submit(context.get(), MakeSubmit(2, prompt, 12));
  const StreamResult result = ReadAll(*reader);
  std::filesystem::remove_all(model);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_EQ(result.tokens, std::vector<int32_t>(free_run.begin(), free_run.begin() + 3));
  EXPECT_EQ(result.finish, v1::FINISH_REASON_STOP);
}

// generation_config.json's sampling values are the defaults of requests that leave them unset,
// as vLLM's --generation-config auto makes them: a copy of the fixture model whose file says
// temperature 0 decodes an unset-temperature request greedily, while an explicit temperature 1,
// or the same request under --generation-config vllm (vLLM's default temperature 1), samples.
TEST_F(WorkerE2eTest, GenerationConfigSamplingIsTheDefaultOfUnsetFields) {
  const std::vector<int32_t> prompt = {1, 17, 33, 5, 99, 250, 7, 64, 128, 3, 11};
  constexpr int32_t kTokens = 16;
  std::vector<int32_t> greedy;
  {
    WorkerProcess worker(FixtureFlags());
    Connect(worker);
    auto context = Context();
    auto reader = stub_->Submit(context.get(), MakeSubmit(1, prompt, kTokens));
    const StreamResult result = ReadAll(*reader);
    ASSERT_TRUE(result.status.ok()) << result.status.error_message();
    greedy = result.tokens;
  }
  const std::filesystem::path model = std::filesystem::temp_directory_path() /
                                      ("headroom_genconfig_model_" + std::to_string(::getpid()));
  std::filesystem::remove_all(model);
  std::filesystem::copy(FixtureModelDir(), model, std::filesystem::copy_options::recursive);
  std::ofstream(model / "generation_config.json")
      << R"({"eos_token_id": 2, "temperature": 0.0, "top_p": 0.9})";
  // Seeded, so each run samples the same tokens.
  v1::SubmitRequest unset = MakeSubmit(2, prompt, kTokens);
  unset.mutable_sampling()->clear_temperature();
  unset.mutable_sampling()->set_seed(7);
  v1::SubmitRequest explicit_one = unset;
  explicit_one.set_request_id(3);
  explicit_one.mutable_sampling()->set_temperature(1.0f);
  const auto run = [this, &model](const std::vector<std::string>& extra,
                                  const std::vector<v1::SubmitRequest>& requests) {
    std::vector<std::string> flags = FixtureFlags();
    SetFlag(flags, "--model", model.string());
    flags.insert(flags.end(), extra.begin(), extra.end());
    WorkerProcess worker(flags);
    Connect(worker);
    std::vector<std::vector<int32_t>> outputs;
    for (const v1::SubmitRequest& request : requests) {
      auto context = Context();
      auto reader = stub_->Submit(context.get(), request);
      const StreamResult result = ReadAll(*reader);
      EXPECT_TRUE(result.status.ok()) << result.status.error_message();
      outputs.push_back(result.tokens);
    }
    return outputs;
  };
  const std::vector<std::vector<int32_t>> automatic = run({}, {unset, explicit_one});
  const std::vector<std::vector<int32_t>> vllm =
      run({"--generation-config", "vllm"}, {unset, explicit_one});
  std::filesystem::remove_all(model);
  ASSERT_EQ(automatic.size(), 2u);
  ASSERT_EQ(vllm.size(), 2u);
  EXPECT_EQ(automatic[0], greedy) << "the file's temperature 0 is the default";
  EXPECT_NE(automatic[1], greedy) << "an explicit temperature keeps its own";
  EXPECT_NE(vllm[0], greedy) << "--generation-config vllm: temperature 1";
  // Under vllm the unset and the explicit temperature 1 are the same request.
  EXPECT_EQ(vllm[0], vllm[1]);
}

// vLLM's --hf-overrides reaches the config before the worker reads it: a copy of the qwen2-yarn
// fixture whose config.json lost its yarn block (pretrained at 64 positions) is served with the
// block given back as an override. Its context is then the block's 64 x 4 = 256 (64 without),
// and a 61-token prompt decoded past position 64 gives the tokens and logprobs of the engine on
// the untouched fixture in this process.
TEST_F(WorkerE2eTest, HfOverridesGiveTheModelItsYarnContextAndNumbers) {
  const std::filesystem::path model = std::filesystem::temp_directory_path() /
                                      ("headroom_yarn_model_" + std::to_string(::getpid()));
  std::filesystem::remove_all(model);
  std::filesystem::copy(testdata::FixtureDir("qwen2-yarn"), model,
                        std::filesystem::copy_options::recursive);
  nlohmann::json config;
  std::ifstream(model / "config.json") >> config;
  const nlohmann::json yarn = config["rope_scaling"];
  ASSERT_EQ(yarn["rope_type"], "yarn");
  config["rope_scaling"] = nullptr;
  std::ofstream(model / "config.json") << config.dump();
  const auto flags = [&model](std::vector<std::string> extra) {
    // The fixture worker's flags on the copy, without --max-model-len: the model's context sets it.
    std::vector<std::string> f = FixtureFlags();
    SetFlag(f, "--model", model.string());
    const auto at = std::find(f.begin(), f.end(), "--max-model-len");
    f.erase(at, at + 2);
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  };
  const auto first_report = [this](const WorkerProcess& worker) {
    Connect(worker);
    auto context = Context(5);
    auto reader = stub_->WatchLoad(context.get(), v1::WatchLoadRequest());
    v1::LoadReport report;
    EXPECT_TRUE(reader->Read(&report));
    context->TryCancel();
    return report;
  };
  {
    WorkerProcess plain(flags({}));
    EXPECT_EQ(first_report(plain).max_model_len(), 64) << "without the block: its own 64";
  }
  const std::string overrides = nlohmann::json{{"rope_scaling", yarn}}.dump();
  WorkerProcess worker(flags({"--hf-overrides", overrides}));
  EXPECT_EQ(first_report(worker).max_model_len(), 256);

  std::ifstream in(testdata::FixtureDir("qwen2-yarn") / "expected.json");
  const std::vector<int32_t> prompt =
      nlohmann::json::parse(in)["prompts"][3]["ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(prompt.size(), 61u);
  const StreamResult expected = InProcessGreedy(
      testdata::LoadFixtureModel("qwen2-yarn"),
      {.max_num_seqs = 4, .max_num_batched_tokens = 256, .block_size = 16, .num_kv_blocks = 64},
      prompt, 32, /*ignore_eos=*/true);
  ASSERT_EQ(expected.tokens.size(), 32u);

  v1::SubmitRequest submit = MakeSubmit(1, prompt, 32);
  submit.mutable_sampling()->set_ignore_eos(true);
  auto context = Context();
  auto reader = stub_->Submit(context.get(), submit);
  const StreamResult result = ReadAll(*reader);
  std::filesystem::remove_all(model);
  ExpectSameStream(result, expected);
}

TEST_F(WorkerE2eTest, HealthIsServingAndFirstLoadReportMatchesTheFlags) {
  WorkerProcess worker(FixtureFlags(64));
  Connect(worker);
  EXPECT_EQ(Health(), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("headroom.v1.Worker"), grpc::health::v1::HealthCheckResponse::SERVING);

  auto context = Context(5);
  auto reader = stub_->WatchLoad(context.get(), v1::WatchLoadRequest());
  v1::LoadReport report;
  ASSERT_TRUE(reader->Read(&report));
  EXPECT_EQ(report.total_blocks(), 63);  // --num-gpu-blocks-override 64, less the null block
  EXPECT_EQ(report.free_blocks(), 63);
  EXPECT_EQ(report.block_size(), 16);
  EXPECT_EQ(report.max_model_len(), 256);
  EXPECT_EQ(report.running(), 0);
  EXPECT_EQ(report.waiting(), 0);
  EXPECT_FALSE(report.draining());
  EXPECT_EQ(report.model(), FixtureModelDir());
  EXPECT_GT(report.sequence(), 0u);
  // Nothing changes: the next report is the heartbeat, within about a second.
  const auto start = std::chrono::steady_clock::now();
  v1::LoadReport next;
  ASSERT_TRUE(reader->Read(&next));
  EXPECT_GT(next.sequence(), report.sequence());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  context->TryCancel();
}

TEST_F(WorkerE2eTest, RequestThatCanNeverFitIsInvalidArgumentWithTheNumbers) {
  WorkerProcess worker(FixtureFlags(/*blocks=*/8));  // 7 usable blocks = 112 tokens
  Connect(worker);
  std::vector<int32_t> prompt(50, 5);
  auto context = Context();
  auto reader = stub_->Submit(context.get(), MakeSubmit(1, prompt, 150));
  const StreamResult result = ReadAll(*reader);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(result.status.error_message().find("200 tokens"), std::string::npos)
      << result.status.error_message();
  EXPECT_NE(result.status.error_message().find("the pool has 7 blocks"), std::string::npos)
      << result.status.error_message();
  EXPECT_TRUE(result.tokens.empty());

  // Above max_model_len is refused the same way.
  auto context2 = Context();
  auto reader2 = stub_->Submit(context2.get(), MakeSubmit(2, {1, 2, 3}, 300));
  const StreamResult result2 = ReadAll(*reader2);
  EXPECT_EQ(result2.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(result2.status.error_message().find("303"), std::string::npos)
      << result2.status.error_message();
}

// Reads reports until `pred` holds (or the stream ends / 20 s pass).
template <typename Pred>
std::optional<v1::LoadReport> ReadUntil(grpc::ClientReaderInterface<v1::LoadReport>& reader,
                                        Pred pred) {
  v1::LoadReport report;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (std::chrono::steady_clock::now() < deadline && reader.Read(&report)) {
    if (pred(report)) return report;
  }
  return std::nullopt;
}

// A run-time LoRA load's and unload's answers name the first load report made after them (what
// a router waits for): that report shows the change.
TEST_F(WorkerE2eTest, RuntimeLoraChangesNameTheFirstReportThatShowsThem) {
  std::vector<std::string> flags = FixtureFlags();
  flags.insert(flags.end(),
               {"--allow-runtime-lora-updating", "--max-loras", "1", "--max-lora-rank", "8"});
  WorkerProcess worker(flags);
  Connect(worker);
  auto watch_context = Context(60);
  auto watch = stub_->WatchLoad(watch_context.get(), v1::WatchLoadRequest());
  v1::LoadReport first;
  ASSERT_TRUE(watch->Read(&first));
  const auto lists_rs = [](const v1::LoadReport& report) {
    return std::any_of(report.lora_adapters().begin(), report.lora_adapters().end(),
                       [](const v1::LoraAdapter& a) { return a.name() == "rs"; });
  };
  ASSERT_FALSE(lists_rs(first));
  v1::LoadLoraAdapterRequest load;
  load.set_lora_name("rs");
  load.set_lora_path((testdata::FixtureDir("lora") / "llama-gqa-rslora").string());
  v1::LoadLoraAdapterResponse loaded;
  auto load_context = Context(30);
  ASSERT_TRUE(stub_->LoadLoraAdapter(load_context.get(), load, &loaded).ok());
  EXPECT_GT(loaded.report_sequence(), first.sequence());
  std::optional<v1::LoadReport> report = ReadUntil(
      *watch, [&](const v1::LoadReport& r) { return r.sequence() >= loaded.report_sequence(); });
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(lists_rs(*report)) << report->DebugString();

  v1::UnloadLoraAdapterRequest unload;
  unload.set_lora_name("rs");
  v1::UnloadLoraAdapterResponse unloaded;
  auto unload_context = Context(30);
  ASSERT_TRUE(stub_->UnloadLoraAdapter(unload_context.get(), unload, &unloaded).ok());
  EXPECT_GT(unloaded.report_sequence(), report->sequence());
  report = ReadUntil(
      *watch, [&](const v1::LoadReport& r) { return r.sequence() >= unloaded.report_sequence(); });
  ASSERT_TRUE(report.has_value());
  EXPECT_FALSE(lists_rs(*report)) << report->DebugString();
  watch_context->TryCancel();
}

TEST_F(WorkerE2eTest, LoadUpdatesWhileRunningAndClientCancelFreesTheBlocks) {
  WorkerProcess worker(SlowFlags());
  Connect(worker);
  auto watch_context = Context(60);
  auto watch = stub_->WatchLoad(watch_context.get(), v1::WatchLoadRequest());
  v1::LoadReport first;
  ASSERT_TRUE(watch->Read(&first));
  ASSERT_EQ(first.total_blocks(), 63);
  ASSERT_EQ(first.free_blocks(), 63);

  // 40 prompt tokens + up to 400 output tokens: 28 blocks at the end; runs for many seconds.
  std::vector<int32_t> prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(100 + i * 13);
  v1::SubmitRequest submit = MakeSubmit(7, prompt, 400);
  submit.mutable_sampling()->set_ignore_eos(true);
  auto submit_context = Context(60);
  auto stream = stub_->Submit(submit_context.get(), submit);
  v1::SubmitResponse response;
  ASSERT_TRUE(stream->Read(&response));  // the request runs
  ASSERT_GE(response.tokens_size(), 1);

  const std::optional<v1::LoadReport> busy = ReadUntil(*watch, [](const v1::LoadReport& r) {
    return r.running() == 1 && r.free_blocks() < r.total_blocks();
  });
  ASSERT_TRUE(busy.has_value()) << "no report showed the running request";
  EXPECT_GT(busy->sequence(), first.sequence());
  EXPECT_LE(busy->free_blocks(), 63 - 3);  // at least the 40-token prompt's 3 blocks

  submit_context->TryCancel();
  const StreamResult cancelled = ReadAll(*stream);
  EXPECT_EQ(cancelled.status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_LT(cancelled.tokens.size(), 399u);

  const std::optional<v1::LoadReport> idle = ReadUntil(*watch, [](const v1::LoadReport& r) {
    return r.running() == 0 && r.waiting() == 0 && r.free_blocks() == r.total_blocks();
  });
  ASSERT_TRUE(idle.has_value()) << "the cancelled request's blocks were never freed";
  EXPECT_EQ(idle->free_blocks(), 63);
  watch_context->TryCancel();
}

// The prefix cache as the router learns it from a WatchLoad stream: the whole cache first, then
// what each report's delta changes.
class PrefixCacheView {
 public:
  // Applies `report`'s delta; false if it is malformed.
  bool Apply(const v1::LoadReport& report) {
    const v1::PrefixCacheDelta& delta = report.prefix_cache();
    const auto added = kvcache::UnpackBlockHashes(delta.added());
    const auto removed = kvcache::UnpackBlockHashes(delta.removed());
    if (!added.has_value() || !removed.has_value()) return false;
    if (delta.reset()) hashes_.clear();
    for (const kvcache::BlockHash& h : *removed) hashes_.erase({h.low, h.high});
    for (const kvcache::BlockHash& h : *added) hashes_.insert({h.low, h.high});
    return true;
  }
  [[nodiscard]] bool Has(const kvcache::BlockHash& h) const {
    return hashes_.contains({h.low, h.high});
  }
  [[nodiscard]] const std::set<std::pair<uint64_t, uint64_t>>& hashes() const { return hashes_; }

 private:
  std::set<std::pair<uint64_t, uint64_t>> hashes_;
};

// LoadReports carry the worker's prefix cache: a stream starts from the whole cache, later
// reports add the full blocks of the prompts the worker ran and remove the blocks it evicted for
// new ones, under the same chained hashes a router computes from the prompt.
TEST_F(WorkerE2eTest, LoadReportsCarryThePrefixCacheAsItChanges) {
  WorkerProcess worker(FixtureFlags(16));  // 15 usable blocks
  Connect(worker);
  // 40-token prompts: 2 full blocks and a tail block each; one output token, so nothing else.
  const auto prompt = [](int32_t seed) {
    std::vector<int32_t> p(40);
    for (size_t i = 0; i < p.size(); ++i) p[i] = (seed * 31 + static_cast<int32_t>(i) * 7) % 250;
    return p;
  };
  const auto run = [&](const std::vector<int32_t>& p) {
    auto context = Context();
    auto stream = stub_->Submit(context.get(), MakeSubmit(0, p, 1));
    ASSERT_TRUE(ReadAll(*stream).status.ok());
  };
  run(prompt(1));
  auto watch_context = Context(60);
  auto watch = stub_->WatchLoad(watch_context.get(), v1::WatchLoadRequest());
  v1::LoadReport report;
  ASSERT_TRUE(watch->Read(&report));
  EXPECT_TRUE(report.prefix_cache().reset()) << "a stream starts from the whole cache";
  PrefixCacheView view;
  ASSERT_TRUE(view.Apply(report));
  const std::vector<kvcache::BlockHash> first = kvcache::PromptBlockHashes(prompt(1), 16, "");
  EXPECT_EQ(view.hashes().size(), 2u);
  for (const kvcache::BlockHash& h : first) EXPECT_TRUE(view.Has(h));

  // Five more prompts: 2 blocks of each are cached. The pool's 15 blocks run out at the fifth,
  // which takes the first prompt's blocks (freed first, and the never-used ones are gone).
  for (int32_t seed = 2; seed <= 6; ++seed) run(prompt(seed));
  const std::vector<kvcache::BlockHash> last = kvcache::PromptBlockHashes(prompt(6), 16, "");
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (!(view.Has(last[0]) && view.Has(last[1])) && std::chrono::steady_clock::now() < deadline &&
         watch->Read(&report)) {
    EXPECT_FALSE(report.prefix_cache().reset());
    ASSERT_TRUE(view.Apply(report));
  }
  ASSERT_TRUE(view.Has(last[0]) && view.Has(last[1])) << "no delta added the last prompt";
  EXPECT_FALSE(view.Has(first[0]) || view.Has(first[1])) << "no delta removed the evicted blocks";
  for (int32_t seed = 2; seed <= 5; ++seed) {
    for (const kvcache::BlockHash& h : kvcache::PromptBlockHashes(prompt(seed), 16, "")) {
      EXPECT_TRUE(view.Has(h));
    }
  }
  EXPECT_EQ(view.hashes().size(), 10u);

  // A new stream's snapshot is what the deltas built.
  auto again_context = Context(10);
  auto again = stub_->WatchLoad(again_context.get(), v1::WatchLoadRequest());
  ASSERT_TRUE(again->Read(&report));
  PrefixCacheView snapshot;
  ASSERT_TRUE(snapshot.Apply(report));
  EXPECT_EQ(snapshot.hashes(), view.hashes());
  watch_context->TryCancel();
  again_context->TryCancel();
}

TEST_F(WorkerE2eTest, SigtermDrainsRunningStreamAndExitsZero) {
  WorkerProcess worker(SlowFlags());
  Connect(worker);
  ASSERT_EQ(Health(), grpc::health::v1::HealthCheckResponse::SERVING);
  constexpr int32_t kMaxTokens = 60;  // ~2 s on dummy:small
  v1::SubmitRequest submit = MakeSubmit(11, {5, 6, 7, 8, 9, 10, 11, 12}, kMaxTokens);
  submit.mutable_sampling()->set_ignore_eos(true);
  auto context = Context(60);
  auto stream = stub_->Submit(context.get(), submit);
  v1::SubmitResponse response;
  ASSERT_TRUE(stream->Read(&response));
  StreamResult first;
  for (const v1::GeneratedToken& t : response.tokens()) first.tokens.push_back(t.token_id());

  worker.Signal(SIGTERM);
  // Health turns NOT_SERVING and new requests are refused while the stream goes on.
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  auto status = Health();
  while (status != grpc::health::v1::HealthCheckResponse::NOT_SERVING &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    status = Health();
  }
  EXPECT_EQ(status, grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  auto refused_context = Context(5);
  auto refused = stub_->Submit(refused_context.get(), MakeSubmit(12, {1, 2, 3}, 4));
  const StreamResult refused_result = ReadAll(*refused);
  EXPECT_EQ(refused_result.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(refused_result.status.error_message(), "draining");

  const StreamResult result = ReadAll(*stream, first);
  EXPECT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_EQ(result.tokens.size(), static_cast<size_t>(kMaxTokens));
  EXPECT_EQ(result.finish, v1::FINISH_REASON_LENGTH);

  EXPECT_EQ(worker.WaitExit(std::chrono::seconds(15)), std::optional<int>(0));
}

TEST_F(WorkerE2eTest, ServesPrometheusMetricsUnderVllmNames) {
  std::vector<std::string> flags = FixtureFlags();
  flags.insert(flags.end(), {"--metrics-port", "0"});
  WorkerProcess worker(flags);
  Connect(worker);
  const int port = MetricsPort(worker);
  ASSERT_NE(port, 0);

  const e2e::HttpResponse health = e2e::HttpRequestTo(port, "GET", "/health");
  EXPECT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(e2e::HttpRequestTo(port, "GET", "/nope").status, 404);

  constexpr int32_t kMaxTokens = 12;
  const std::vector<int32_t> prompt = {1, 17, 33, 5, 99, 250, 7, 64, 128, 3, 11};
  auto context = Context();
  auto stream = stub_->Submit(context.get(), MakeSubmit(41, prompt, kMaxTokens));
  const StreamResult result = ReadAll(*stream);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_FALSE(result.tokens.empty());

  const e2e::HttpResponse response = e2e::HttpRequestTo(port, "GET", "/metrics");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_NE(response.Header("content-type").value_or("").find("text/plain; version=0.0.4"),
            std::string::npos);
  const std::string& body = response.body;
  const std::string model = "{model_name=\"" + FixtureModelDir() + "\"}";
  const std::string stop_or_length = result.finish == v1::FINISH_REASON_STOP ? "stop" : "length";
  EXPECT_EQ(MetricSample(body, "vllm:generation_tokens_total" + model),
            static_cast<double>(result.tokens.size()));
  EXPECT_EQ(MetricSample(body, "vllm:prompt_tokens_total" + model),
            static_cast<double>(prompt.size()));
  EXPECT_EQ(MetricSample(body, "vllm:request_success_total{finished_reason=\"" + stop_or_length +
                                   "\",model_name=\"" + FixtureModelDir() + "\"}"),
            1);
  EXPECT_EQ(MetricSample(body, "vllm:num_requests_running" + model), 0);
  EXPECT_EQ(MetricSample(body, "vllm:num_requests_waiting" + model), 0);
  EXPECT_EQ(MetricSample(body, "vllm:kv_cache_usage_perc" + model), 0);
  EXPECT_EQ(MetricSample(body, "headroom:kv_blocks_total" + model), 63);  // 64 minus the null block
  EXPECT_GE(MetricSample(body, "vllm:prefix_cache_queries_total" + model), 0);  // present
  EXPECT_EQ(MetricSample(body, "vllm:time_to_first_token_seconds_count" + model), 1);
  EXPECT_EQ(MetricSample(body, "vllm:inter_token_latency_seconds_count" + model),
            static_cast<double>(result.tokens.size() - 1));
  EXPECT_EQ(MetricSample(body, "vllm:e2e_request_latency_seconds_count" + model), 1);
  EXPECT_GT(MetricSample(body, "vllm:e2e_request_latency_seconds_sum" + model), 0);
  // The request's phases: queue + prefill is its time to first token, decode the rest.
  for (const char* phase : {"queue", "prefill", "decode", "inference"}) {
    EXPECT_EQ(
        MetricSample(body, absl::StrCat("vllm:request_", phase, "_time_seconds_count", model)), 1)
        << phase;
  }
  const auto sum = [&](const std::string& name) {
    return MetricSample(body, absl::StrCat("vllm:", name, "_seconds_sum", model));
  };
  EXPECT_NEAR(sum("request_queue_time") + sum("request_prefill_time"), sum("time_to_first_token"),
              1e-6);
  // The engine's first-scheduled stamp got here: without it the queue time is 0 (clamped to the
  // arrival) and the prefill takes the whole time to first token.
  EXPECT_GT(sum("request_queue_time"), 0);
  EXPECT_GT(sum("request_prefill_time"), 0);
  EXPECT_GT(sum("request_decode_time"), 0);
  EXPECT_NEAR(sum("request_inference_time"),
              sum("request_prefill_time") + sum("request_decode_time"), 1e-6);
  EXPECT_LE(sum("request_queue_time") + sum("request_inference_time"),
            sum("e2e_request_latency") + 1e-6);
  // The mean of the request's inter-token latencies: its decode time over the gaps.
  ASSERT_GT(result.tokens.size(), 1u);
  EXPECT_NEAR(sum("request_time_per_output_token"),
              sum("request_decode_time") / static_cast<double>(result.tokens.size() - 1), 1e-9);
  EXPECT_NEAR(sum("request_time_per_output_token"),
              sum("inter_token_latency") / static_cast<double>(result.tokens.size() - 1), 1e-6);
  // Request sizes, in vLLM's 1-2-5 buckets up to max_model_len 256: 1, 2, 5, ..., 100, 200.
  const auto sample = [&](const std::string& name, const std::string& le = "") {
    const std::string labels =
        absl::StrCat("{model_name=\"", FixtureModelDir(), "\"",
                     le.empty() ? "" : absl::StrCat(",le=\"", le, "\""), "}");
    return MetricSample(body, absl::StrCat("vllm:", name, labels));
  };
  EXPECT_EQ(sample("request_prompt_tokens_sum"), static_cast<double>(prompt.size()));
  EXPECT_EQ(sample("request_prompt_tokens_bucket", "10"), 0);  // 11 tokens
  EXPECT_EQ(sample("request_prompt_tokens_bucket", "20"), 1);
  EXPECT_EQ(sample("request_generation_tokens_sum"), static_cast<double>(result.tokens.size()));
  EXPECT_EQ(sample("request_params_max_tokens_sum"), kMaxTokens);
  EXPECT_EQ(sample("request_params_max_tokens_bucket", "10"), 0);  // 12
  EXPECT_EQ(sample("request_params_max_tokens_bucket", "20"), 1);
  EXPECT_EQ(sample("request_params_max_tokens_bucket", "200"), 1);
  EXPECT_EQ(sample("request_params_max_tokens_bucket", "+Inf"), 1);
  EXPECT_EQ(sample("request_params_max_tokens_bucket", "500"), -1) << "no bound above 256";
  // One prefill step of the 11 prompt tokens, then one decode step per later token.
  EXPECT_EQ(sample("iteration_tokens_total_count"), static_cast<double>(result.tokens.size()));
  EXPECT_EQ(sample("iteration_tokens_total_sum"),
            static_cast<double>(prompt.size() + result.tokens.size() - 1));
  EXPECT_EQ(sample("iteration_tokens_total_bucket", "8"),
            static_cast<double>(result.tokens.size() - 1));
  EXPECT_NE(body.find("# TYPE vllm:num_preemptions_total counter"), std::string::npos);
  EXPECT_EQ(sample("request_num_preemptions_count"), 1);
  EXPECT_EQ(sample("request_num_preemptions_bucket", "0"), 1);  // never preempted
  // The KV cache as the flags configured it (FixtureWorkerFlags: 64 blocks of 16, defaults).
  EXPECT_EQ(MetricSample(body, absl::StrCat("vllm:cache_config_info{block_size=\"16\","
                                            "cache_dtype=\"float32\",enable_prefix_caching="
                                            "\"True\",gpu_memory_utilization=\"0.9\","
                                            "num_gpu_blocks=\"64\",model_name=\"",
                                            FixtureModelDir(), "\"}")),
            1);

  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.WaitExit(std::chrono::seconds(15)), std::optional<int>(0));
}

// --scheduling-policy priority, one sequence at a time: while a first request runs, a
// priority-5 request and then a priority -5 one wait; the later one, of higher priority, gets
// its first token first (first come, first served would reverse them).
TEST_F(WorkerE2eTest, PrioritySchedulingServesTheLowerValueFirst) {
  std::vector<std::string> flags = SlowFlags();
  SetFlag(flags, "--max-num-seqs", "1");
  SetFlag(flags, "--max-num-batched-tokens", "64");
  flags.insert(flags.end(), {"--scheduling-policy", "priority"});
  WorkerProcess worker(flags);
  Connect(worker);

  const std::vector<int32_t> prompt = {1, 17, 33, 5, 99, 25, 7, 64};
  std::mutex mu;
  std::vector<uint64_t> first_token_order;  // request ids, by first token
  const auto run = [&](uint64_t id, int32_t priority, int32_t max_tokens) {
    v1::SubmitRequest submit = MakeSubmit(id, prompt, max_tokens);
    submit.set_priority(priority);
    auto context = Context(60);
    auto stream = stub_->Submit(context.get(), submit);
    v1::SubmitResponse response;
    bool first = true;
    int32_t tokens = 0;
    while (stream->Read(&response)) {
      if (first && response.tokens_size() > 0) {
        std::lock_guard<std::mutex> lock(mu);
        first_token_order.push_back(id);
        first = false;
      }
      tokens += response.tokens_size();
    }
    const grpc::Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << id << ": " << status.error_message();
    EXPECT_EQ(tokens, max_tokens) << id;
  };
  std::thread running([&] { run(1, 0, 24); });
  // Wait until request 1 streams, so the next two queue behind it.
  for (int i = 0; i < 1000; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!first_token_order.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::thread low([&] { run(2, 5, 2); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread high([&] { run(3, -5, 2); });
  running.join();
  low.join();
  high.join();
  EXPECT_EQ(first_token_order, (std::vector<uint64_t>{1, 3, 2}));

  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.WaitExit(std::chrono::seconds(15)), std::optional<int>(0));
}

// Three requests that together outgrow a 6-block pool (48 tokens): the engine preempts, and each
// request's count reaches vllm:request_num_preemptions, whose sum is the engine's
// vllm:num_preemptions.
TEST_F(WorkerE2eTest, PreemptionsAreCountedPerRequest) {
  std::vector<std::string> flags = SlowFlags();
  SetFlag(flags, "--metrics-port", "0");
  SetFlag(flags, "--num-gpu-blocks-override", "7");  // 6 usable blocks of 8: 48 tokens
  SetFlag(flags, "--block-size", "8");
  SetFlag(flags, "--max-model-len", "32");
  WorkerProcess worker(flags);
  Connect(worker);
  const int port = MetricsPort(worker);
  ASSERT_NE(port, 0);

  // 11 + 16 tokens each (4 blocks); three of them need more than 6 blocks past 5 tokens.
  std::vector<StreamResult> results(3);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < results.size(); ++i) {
    clients.emplace_back([&, i] {
      auto context = Context(60);
      SCOPED_TRACE(i);
      auto stream = stub_->Submit(
          context.get(), MakeSubmit(100 + i, {1, 17, 33, 5, 99, 25, 7, 64, 12, 3, 11}, 16));
      results[i] = ReadAll(*stream);
    });
  }
  for (std::thread& t : clients) t.join();
  for (const StreamResult& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.tokens.size(), 16u);
  }

  const e2e::HttpResponse response = e2e::HttpRequestTo(port, "GET", "/metrics");
  ASSERT_EQ(response.status, 200) << response.body;
  const std::string model = "{model_name=\"dummy:small\"}";
  const double preemptions = MetricSample(response.body, "vllm:num_preemptions_total" + model);
  EXPECT_GT(preemptions, 0) << "the pool never ran out";
  EXPECT_EQ(MetricSample(response.body, "vllm:request_num_preemptions_count" + model), 3);
  EXPECT_EQ(MetricSample(response.body, "vllm:request_num_preemptions_sum" + model), preemptions);
  EXPECT_LT(
      MetricSample(response.body,
                   "vllm:request_num_preemptions_bucket{model_name=\"dummy:small\",le=\"0\"}"),
      3);

  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.WaitExit(std::chrono::seconds(15)), std::optional<int>(0));
}

}  // namespace
}  // namespace headroom::worker
