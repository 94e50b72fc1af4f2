// End to end: two real `headroom worker` processes (the llama-gqa fixture, vocab 256, so the
// router's byte tokenizer fits it) and one real `headroom router` in front of them, spoken to
// over gRPC. Every RPC has a deadline; every child is SIGKILLed in teardown if still alive.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "child_process.h"
#include "fixture_worker.h"
#include "fixtures.h"
#include "groups_up.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "headroom/v1/worker.grpc.pb.h"
#include "http_client.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace headroom::router {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

using Child = e2e::ChildProcess;

std::unique_ptr<grpc::ClientContext> Context(int timeout_s = 30) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(system_clock::now() + seconds(timeout_s));
  return context;
}

v1::GenerateRequest Greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
  v1::GenerateRequest request;
  for (int32_t t : prompt) request.mutable_token_ids()->add_ids(t);
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(max_tokens);
  request.mutable_sampling()->set_ignore_eos(true);
  return request;
}

struct Result {
  std::vector<int32_t> tokens;
  std::string text;
  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED;
  grpc::Status status;
  std::string retry_after;
};

Result Generate(v1::Inference::Stub& stub, const v1::GenerateRequest& request, int timeout_s = 60) {
  Result result;
  auto context = Context(timeout_s);
  auto reader = stub.Generate(context.get(), request);
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    result.tokens.insert(result.tokens.end(), response.token_ids().begin(),
                         response.token_ids().end());
    result.text += response.text();
    if (response.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
      result.finish = response.finish_reason();
    }
  }
  result.status = reader->Finish();
  auto it = context->GetServerTrailingMetadata().find("retry-after");
  if (it != context->GetServerTrailingMetadata().end()) {
    result.retry_after = std::string(it->second.data(), it->second.size());
  }
  return result;
}

class RouterE2eTest : public ::testing::Test {
 protected:
  // Starts two workers with `blocks` KV blocks (worker b: `b_blocks` when given, and
  // `b_flags` more) and a router over them.
  void StartCluster(int blocks, std::vector<std::string> router_flags = {}, int b_blocks = 0,
                    std::vector<std::string> b_flags = {}) {
    worker_a_ = std::make_unique<Child>("worker", e2e::FixtureWorkerFlags(blocks));
    std::vector<std::string> worker_b_flags =
        e2e::FixtureWorkerFlags(b_blocks > 0 ? b_blocks : blocks);
    worker_b_flags.insert(worker_b_flags.end(), b_flags.begin(), b_flags.end());
    worker_b_ = std::make_unique<Child>("worker", worker_b_flags);
    ASSERT_FALSE(worker_a_->address().empty());
    ASSERT_FALSE(worker_b_->address().empty());
    std::vector<std::string> flags = {
        "--grpc-port", "0",         "--http-port",
        "-1",          "--workers", worker_a_->address() + "," + worker_b_->address()};
    flags.insert(flags.end(), router_flags.begin(), router_flags.end());
    router_ = std::make_unique<Child>("router", flags);
    ASSERT_FALSE(router_->address().empty()) << "the router did not print its listening line";
    channel_ = grpc::CreateChannel(router_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Inference::NewStub(channel_);
    ASSERT_TRUE(e2e::GroupsUp(*stub_, 2, std::chrono::seconds(10)))
        << "the groups never came up at the router";
  }

  v1::ClusterState State() {
    v1::ClusterState state;
    auto context = Context(5);
    EXPECT_TRUE(stub_->GetClusterState(context.get(), {}, &state).ok());
    return state;
  }

  std::unique_ptr<Child> worker_a_, worker_b_, router_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Inference::Stub> stub_;
};

TEST_F(RouterE2eTest, GenerateMatchesTheWorkerGreedyTokensAndHealthServes) {
  StartCluster(64);
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100};
  const Result routed = Generate(*stub_, Greedy(prompt, 24));
  ASSERT_TRUE(routed.status.ok()) << routed.status.error_message();
  EXPECT_EQ(routed.finish, v1::FINISH_REASON_LENGTH);
  ASSERT_EQ(routed.tokens.size(), 24u);

  auto worker_channel =
      grpc::CreateChannel(worker_a_->address(), grpc::InsecureChannelCredentials());
  auto worker = v1::Worker::NewStub(worker_channel);
  v1::SubmitRequest submit;
  submit.set_request_id(7);
  for (int32_t t : prompt) submit.add_prompt_token_ids(t);
  submit.mutable_sampling()->set_temperature(0.0f);
  submit.mutable_sampling()->set_max_tokens(24);
  submit.mutable_sampling()->set_ignore_eos(true);
  auto context = Context();
  auto reader = worker->Submit(context.get(), submit);
  std::vector<int32_t> direct;
  v1::SubmitResponse response;
  while (reader->Read(&response)) {
    for (const auto& t : response.tokens()) direct.push_back(t.token_id());
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(routed.tokens, direct);

  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckResponse status;
  auto hc = Context(5);
  ASSERT_TRUE(health->Check(hc.get(), {}, &status).ok());
  EXPECT_EQ(status.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  v1::ListModelsResponse models;
  auto lm = Context(5);
  ASSERT_TRUE(stub_->ListModels(lm.get(), {}, &models).ok());
  ASSERT_EQ(models.models_size(), 1);
  EXPECT_EQ(models.models(0).max_model_len(), 256);
}

// Worker a schedules first come first served and has the larger pool, worker b schedules by
// priority: requests with a priority all go to b (a would refuse them), the others still prefer a.
TEST_F(RouterE2eTest, PriorityRequestsGoOnlyToTheGroupThatSchedulesByPriority) {
  StartCluster(128, {}, 64, {"--scheduling-policy", "priority"});
  for (int i = 0; i < 6; ++i) {
    v1::GenerateRequest request = Greedy({7 + i, 11, 13 + i, 17}, 4);
    request.set_priority(i % 2 == 0 ? 3 : -3);
    const Result r = Generate(*stub_, request);
    EXPECT_TRUE(r.status.ok()) << i << ": " << r.status.error_message();
    EXPECT_EQ(r.tokens.size(), 4u);
  }
  const Result plain = Generate(*stub_, Greedy({5, 6, 7, 8}, 4));
  EXPECT_TRUE(plain.status.ok()) << plain.status.error_message();
}

TEST_F(RouterE2eTest, StopStringEndsTheStreamWithoutShowingIt) {
  StartCluster(64);
  v1::GenerateRequest request = Greedy({72, 101, 108, 108, 111}, 40);
  const Result full = Generate(*stub_, request);
  ASSERT_TRUE(full.status.ok());
  // A one-character ASCII stop string that occurs after the first character.
  size_t at = 1;
  while (at < full.text.size() && static_cast<unsigned char>(full.text[at]) >= 0x80) ++at;
  ASSERT_LT(at, full.text.size()) << "no ASCII character in the output";
  const std::string stop = full.text.substr(at, 1);
  request.mutable_sampling()->add_stop(stop);
  const Result stopped = Generate(*stub_, request);
  ASSERT_TRUE(stopped.status.ok()) << stopped.status.error_message();
  EXPECT_EQ(stopped.finish, v1::FINISH_REASON_STOP);
  EXPECT_EQ(stopped.text, full.text.substr(0, full.text.find(stop)));
  // min_tokens = max_tokens: no stop string may end the output (vLLM's min_tokens).
  request.mutable_sampling()->set_min_tokens(40);
  const Result held = Generate(*stub_, request);
  ASSERT_TRUE(held.status.ok()) << held.status.error_message();
  EXPECT_EQ(held.finish, v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(held.text, full.text);
}

TEST_F(RouterE2eTest, OverloadCompletesOrRefusesEveryRequestNeverHangs) {
  // 8 usable blocks per group; each request needs 5 (20 + 60 tokens): one per group at a time.
  StartCluster(9, {"--max-queue-len", "4"});
  constexpr int kRequests = 40;
  std::vector<Result> results(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int32_t> prompt(20, 65 + i % 20);
      results[static_cast<size_t>(i)] = Generate(*stub_, Greedy(prompt, 60), 60);
    });
  }
  for (std::thread& t : threads) t.join();
  int ok = 0, refused = 0;
  for (const Result& r : results) {
    if (r.status.ok()) {
      ++ok;
      EXPECT_EQ(r.tokens.size(), 60u);
    } else {
      EXPECT_EQ(r.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << r.status.error_message();
      EXPECT_NE(r.status.error_message().find("retry after"), std::string::npos);
      EXPECT_FALSE(r.retry_after.empty());
      ++refused;
    }
  }
  EXPECT_EQ(ok + refused, kRequests);
  EXPECT_GE(ok, 2);
  EXPECT_GE(refused, 1);
  const v1::ClusterState state = State();
  EXPECT_EQ(state.refused(), refused);
  EXPECT_EQ(state.queued(), 0);
}

TEST_F(RouterE2eTest, KilledWorkerRequestsCompleteOnTheOtherOne) {
  StartCluster(9);
  constexpr int kRequests = 12;
  std::vector<Result> results(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int32_t> prompt(20, 70 + i);
      results[static_cast<size_t>(i)] = Generate(*stub_, Greedy(prompt, 60), 60);
    });
  }
  worker_a_->Kill9();
  // The router marks the killed group down within 2 s (its WatchLoad stream breaks).
  const auto killed_at = std::chrono::steady_clock::now();
  bool down = false;
  while (!down && std::chrono::steady_clock::now() - killed_at < seconds(5)) {
    const v1::ClusterState state = State();
    for (const v1::GroupState& g : state.groups()) {
      down |= g.address() == worker_a_->address() && !g.healthy();
    }
    if (!down) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(down) << "the killed group " << worker_a_->address() << " was never marked down";
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, seconds(2));
  for (std::thread& t : threads) t.join();
  int ok = 0;
  for (const Result& r : results) {
    if (r.status.ok()) {
      ++ok;
    } else {
      // Only a request that had already streamed tokens from the killed worker may fail.
      EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
      EXPECT_FALSE(r.tokens.empty()) << r.status.error_message();
    }
  }
  EXPECT_GE(ok, kRequests - 4);
  // New requests go to the survivor.
  const Result after = Generate(*stub_, Greedy({1, 2, 3}, 8));
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
  router_->Signal(SIGTERM);
  EXPECT_EQ(router_->WaitExit(std::chrono::seconds(20)), 0);
}

// A worker frozen (SIGSTOP: no reports, no tokens, the connection still open) does not hold its
// requests until their deadline. Those placed on it in the 2 s before the router saw it go quiet,
// with no token yet, go to the other group once it has been silent --group-silence-timeout-s,
// and complete there.
TEST_F(RouterE2eTest, RequestsOnAFrozenWorkerFailOverAfterTheSilenceTimeout) {
  StartCluster(20, {"--group-silence-timeout-s", "3"});  // 19 usable blocks: 3 requests each
  // Freeze worker a just after a report of it arrived: the router takes 2 s to notice, and the
  // requests below are placed well within them.
  const auto sequence_of_a = [this] {
    const v1::ClusterState state = State();
    for (const v1::GroupState& g : state.groups()) {
      if (g.address() == worker_a_->address()) return g.load().sequence();
    }
    return uint64_t{0};
  };
  const uint64_t before = sequence_of_a();
  for (int i = 0; i < 300 && sequence_of_a() == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  worker_a_->Signal(SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRequests = 6;  // 5 blocks each: about half are placed on the frozen worker
  std::vector<Result> results(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<size_t>(i)] =
          Generate(*stub_, Greedy(std::vector<int32_t>(20, 40 + i), 60), 60);
    });
  }
  for (std::thread& t : threads) t.join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  for (const Result& r : results) {
    EXPECT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.tokens.size(), 60u);
  }
  // Some waited for the silence timeout (so they had been placed on the frozen worker), and none
  // for its 60 s deadline.
  EXPECT_GE(elapsed, seconds(3));
  EXPECT_LT(elapsed, seconds(30));
  worker_a_->Signal(SIGCONT);
}

TEST_F(RouterE2eTest, BadInputIsInvalidArgumentNamingTheField) {
  StartCluster(64);
  v1::GenerateRequest empty = Greedy({}, 4);
  Result r = Generate(*stub_, empty);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.status.error_message().find("prompt"), std::string::npos);

  v1::GenerateRequest top_p = Greedy({1, 2}, 4);
  top_p.mutable_sampling()->set_top_p(2.0f);
  r = Generate(*stub_, top_p);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.status.error_message().find("sampling.top_p"), std::string::npos);

  r = Generate(*stub_, Greedy({1, 2, 3}, 300));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.status.error_message().find("sampling.max_tokens (300)"), std::string::npos)
      << r.status.error_message();
  EXPECT_NE(r.status.error_message().find("256"), std::string::npos);

  v1::GenerateRequest text;
  text.set_text("hi");
  text.mutable_sampling()->set_max_tokens(0);
  r = Generate(*stub_, text);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.status.error_message().find("sampling.max_tokens"), std::string::npos);
}

// SIGTERM lets a stream that is open at that moment finish (stopped workers hold it open).
TEST_F(RouterE2eTest, SigtermLetsTheOpenStreamFinish) {
  StartCluster(64);
  worker_a_->Signal(SIGSTOP);
  worker_b_->Signal(SIGSTOP);
  Result streamed;
  std::thread stream([&] { streamed = Generate(*stub_, Greedy({1, 2, 3}, 16)); });
  bool in_flight = false;
  for (int i = 0; i < 200 && !in_flight; ++i) {
    in_flight = State().in_flight() == 1;
    if (!in_flight) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(in_flight) << "the request never reached a worker";
  router_->Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  worker_a_->Signal(SIGCONT);
  worker_b_->Signal(SIGCONT);
  stream.join();
  EXPECT_TRUE(streamed.status.ok()) << streamed.status.error_message();
  EXPECT_EQ(streamed.tokens.size(), 16u);
  EXPECT_EQ(router_->WaitExit(seconds(20)), 0);
}

// With no call open, SIGTERM exits at once although a client connection is still up.
// grpc::Server::Shutdown alone returns only when every connection has answered the server's
// GOAWAY ping, and an idle gRPC C-core client (this test's channel, no call polling it) reads it
// only on its 5 s backup poll: the router used to take 5 s to exit here.
TEST_F(RouterE2eTest, SigtermDoesNotWaitForIdleClientConnections) {
  StartCluster(64);
  ASSERT_TRUE(Generate(*stub_, Greedy({1, 2, 3}, 4)).status.ok());
  const auto signalled = std::chrono::steady_clock::now();
  router_->Signal(SIGTERM);
  EXPECT_EQ(router_->WaitExit(seconds(20)), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, seconds(3))
      << "the router waited for its idle client connection";
}

// --discovery dns:///localhost:PORT with one worker on 127.0.0.1:PORT: localhost may also resolve
// to ::1, where nobody listens; that group is just down and requests go to the live one.
TEST_F(RouterE2eTest, DnsDiscoveryOfLocalhostFindsTheWorker) {
  worker_a_ = std::make_unique<Child>("worker", e2e::FixtureWorkerFlags(64));
  ASSERT_FALSE(worker_a_->address().empty());
  const std::string port = worker_a_->address().substr(worker_a_->address().rfind(':') + 1);
  router_ = std::make_unique<Child>(
      "router",
      std::vector<std::string>{"--grpc-port", "0", "--http-port", "-1", "--discovery",
                               "dns:///localhost:" + port, "--discovery-interval-s", "0.2"});
  ASSERT_FALSE(router_->address().empty()) << "the router did not print its listening line";
  channel_ = grpc::CreateChannel(router_->address(), grpc::InsecureChannelCredentials());
  stub_ = v1::Inference::NewStub(channel_);
  const std::string live = "127.0.0.1:" + port;
  bool up = false;
  v1::ClusterState state;
  for (int i = 0; i < 200 && !up; ++i) {
    state = State();
    for (const v1::GroupState& g : state.groups()) up |= g.address() == live && g.healthy();
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(up) << "the discovered group " << live << " never came up";
  for (const v1::GroupState& g : state.groups()) {
    EXPECT_TRUE(g.address() == live || g.address() == "[::1]:" + port) << g.address();
  }
  const Result r = Generate(*stub_, Greedy({72, 101, 108, 108, 111}, 8));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.tokens.size(), 8u);
  router_->Signal(SIGTERM);
  EXPECT_EQ(router_->WaitExit(std::chrono::seconds(20)), 0);
}

// One `headroom worker` of dummy:small (vocabulary 32000; ~25 ms a token on one CPU thread) with
// `worker_flags`, and a router over it with `router_flags` and the byte tokenizer of that size,
// where id 256 is the special <|bos|>. `up` once the router sees the worker.
struct SmallModelCluster {
  SmallModelCluster(const std::vector<std::string>& worker_flags,
                    const std::vector<std::string>& router_flags) {
    std::vector<std::string> w = {
        "--model", "dummy:small",    "--port", "0",         "--metrics-port",
        "-1",      "--max-num-seqs", "2",      "--threads", "1"};
    w.insert(w.end(), worker_flags.begin(), worker_flags.end());
    worker = std::make_unique<Child>("worker", w);
    if (worker->address().empty()) return;
    std::vector<std::string> r = {"--grpc-port", "0", "--http-port", "-1", "--byte-tokenizer-vocab",
                                  "32000"};
    r.insert(r.end(), {"--workers", worker->address()});
    r.insert(r.end(), router_flags.begin(), router_flags.end());
    router = std::make_unique<Child>("router", r);
    if (router->address().empty()) return;
    stub = v1::Inference::NewStub(
        grpc::CreateChannel(router->address(), grpc::InsecureChannelCredentials()));
    up = e2e::GroupsUp(*stub, 1, std::chrono::seconds(30));
  }

  std::unique_ptr<Child> worker, router;
  std::unique_ptr<v1::Inference::Stub> stub;
  bool up = false;
};

// A worker frozen mid-stream: the stream ends UNAVAILABLE naming the silence a few seconds later,
// instead of stalling until its deadline. dummy:small (~25 ms a token on one CPU thread) is slow
// enough that the 400-token stream is still running when the worker is stopped.
TEST(RouterFrozenWorkerE2eTest, AStreamCutByAFrozenWorkerEndsUnavailableNamingTheSilence) {
  SmallModelCluster small({"--num-gpu-blocks-override", "64"}, {"--group-silence-timeout-s", "3"});
  ASSERT_TRUE(small.up) << "the worker or the router did not come up";
  v1::Inference::Stub* stub = small.stub.get();
  Child& worker = *small.worker;

  auto context = Context(120);
  auto reader = stub->Generate(context.get(), Greedy({1, 2, 3, 4}, 400));
  v1::GenerateResponse response;
  ASSERT_TRUE(reader->Read(&response));  // streaming
  worker.Signal(SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  size_t tokens = static_cast<size_t>(response.token_ids_size());
  while (reader->Read(&response)) tokens += static_cast<size_t>(response.token_ids_size());
  const grpc::Status status = reader->Finish();
  const auto waited = std::chrono::steady_clock::now() - stopped;
  worker.Signal(SIGCONT);
  EXPECT_LT(tokens, 400u);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_NE(status.error_message().find("sent no load report for 3s"), std::string::npos)
      << status.error_message();
  // The silence counts from the last report, sent at most 1 s before the stop.
  EXPECT_GE(waited, seconds(2));
  EXPECT_LT(waited, seconds(20));
}

// A worker whose engine is stuck in a step (its process and gRPC threads still running) stops
// reporting once the step outlasts --step-stall-timeout-s, so the router gives its requests up as
// it does a frozen worker's. The "stuck" step here is a real one made long on purpose: one
// 4000-token prefill of dummy:small on one CPU thread (~12 s), against a 1 s stall timeout.
TEST(RouterFrozenWorkerE2eTest, AWorkerStuckInAStepStopsReportingAndItsRequestIsGivenUp) {
  SmallModelCluster small({"--num-gpu-blocks-override", "256", "--max-num-batched-tokens", "4096",
                           "--step-stall-timeout-s", "1"},
                          {"--group-silence-timeout-s", "3"});
  ASSERT_TRUE(small.up) << "the worker or the router did not come up";
  v1::Inference::Stub& stub = *small.stub;

  const auto start = std::chrono::steady_clock::now();
  const Result result = Generate(stub, Greedy(std::vector<int32_t>(4000, 5), 2), 120);
  const auto waited = std::chrono::steady_clock::now() - start;
  // No token yet, and no other group to fail over to.
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << result.status.error_message();
  EXPECT_TRUE(result.tokens.empty());
  EXPECT_NE(result.status.error_message().find("no other group can take the request"),
            std::string::npos)
      << result.status.error_message();
  EXPECT_GE(waited, seconds(3));
  EXPECT_LT(waited, seconds(11));  // before the step itself would have ended

  // The worker's health says NOT_SERVING while the step runs (a liveness probe would restart it)
  // and SERVING again once it ended.
  auto health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(small.worker->address(), grpc::InsecureChannelCredentials()));
  const auto status_of_worker = [&health] {
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    auto context = Context(5);
    return health->Check(context.get(), request, &response).ok()
               ? response.status()
               : grpc::health::v1::HealthCheckResponse::UNKNOWN;
  };
  EXPECT_EQ(status_of_worker(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer the step takes minutes; its end is checked in the plain build.
  return;
#endif
  auto serving = status_of_worker();
  for (int i = 0; i < 600 && serving != grpc::health::v1::HealthCheckResponse::SERVING; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    serving = status_of_worker();
  }
  EXPECT_EQ(serving, grpc::health::v1::HealthCheckResponse::SERVING);
}

class RouterSpecialTokensE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    small_ = std::make_unique<SmallModelCluster>(
        std::vector<std::string>{"--num-gpu-blocks-override", "16", "--block-size", "16",
                                 "--max-model-len", "64"},
        std::vector<std::string>{});
    ASSERT_TRUE(small_->up) << "the worker or the router did not come up";
    stub_ = small_->stub.get();
  }
  void TearDown() override {
    if (small_ == nullptr || small_->router == nullptr || small_->router->address().empty()) {
      return;
    }
    small_->router->Signal(SIGTERM);
    EXPECT_EQ(small_->router->WaitExit(std::chrono::seconds(20)), 0);
  }

  std::unique_ptr<SmallModelCluster> small_;
  v1::Inference::Stub* stub_ = nullptr;
};

// skip_special_tokens: sampling only <|bos|> (allowed_token_ids), the text leaves it out by
// default, as vLLM and `tokenizers` do, and shows it when skip_special_tokens is false.
TEST_F(RouterSpecialTokensE2eTest, SkipSpecialTokensLeavesThemOutOfTheTextUnlessFalse) {
  constexpr int32_t kBos = 256;  // router/tokenizer/byte_tokenizer.h
  v1::GenerateRequest request = Greedy({72, 105}, 3);
  request.mutable_sampling()->add_allowed_token_ids(kBos);
  const Result skipped = Generate(*stub_, request);
  ASSERT_TRUE(skipped.status.ok()) << skipped.status.error_message();
  EXPECT_EQ(skipped.tokens, std::vector<int32_t>(3, kBos));
  EXPECT_EQ(skipped.text, "");
  request.mutable_sampling()->set_skip_special_tokens(false);
  const Result kept = Generate(*stub_, request);
  ASSERT_TRUE(kept.status.ok()) << kept.status.error_message();
  EXPECT_EQ(kept.text, "<|bos|><|bos|><|bos|>");
}

// The token that stops a request (a stop_token_ids entry, EOS) is in token_ids but not in the
// text unless include_stop_str_in_output, as vLLM V1 gives it; a request a constraint stops keeps
// its last token's text. Token 98 is "b".
TEST_F(RouterSpecialTokensE2eTest, TheStoppingTokensTextIsLeftOutUnlessAsked) {
  struct Case {
    int32_t token;
    bool skip_special;
    bool include;
    std::string text;
  };
  for (const Case& c : {Case{98, true, false, "a"}, Case{98, true, true, "ab"},
                        Case{256, false, false, "a"}, Case{256, false, true, "a<|bos|>"}}) {
    SCOPED_TRACE(absl::StrCat("stop token ", c.token, c.include ? ", included" : ""));
    // "a" (min_tokens bans the stop token for one token), then the stop token (pushed up).
    v1::GenerateRequest request = Greedy({72, 105}, 8);
    request.mutable_sampling()->set_ignore_eos(false);
    request.mutable_sampling()->add_stop_token_ids(c.token);
    request.mutable_sampling()->set_skip_special_tokens(c.skip_special);
    request.mutable_sampling()->set_include_stop_str_in_output(c.include);
    request.mutable_sampling()->add_allowed_token_ids(97);
    request.mutable_sampling()->add_allowed_token_ids(c.token);
    request.mutable_sampling()->set_min_tokens(1);
    (*request.mutable_sampling()->mutable_logit_bias())[c.token] = 100.0f;
    const Result r = Generate(*stub_, request);
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.finish, v1::FINISH_REASON_STOP);
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{97, c.token})) << "the stop token is in token_ids";
    EXPECT_EQ(r.text, c.text);
  }
  // A guided choice ends on its own last token, which is not a stop token: its text stays.
  v1::GenerateRequest choice = Greedy({72, 105}, 8);
  choice.mutable_sampling()->set_ignore_eos(false);
  choice.mutable_sampling()->add_guided_choice("b");
  const Result picked = Generate(*stub_, choice);
  ASSERT_TRUE(picked.status.ok()) << picked.status.error_message();
  EXPECT_EQ(picked.finish, v1::FINISH_REASON_STOP);
  EXPECT_EQ(picked.text, "b");
}

// A worker with its /metrics endpoint, for reading its prefix-cache counters.
struct MeteredWorker {
  std::unique_ptr<Child> process;
  int metrics_port = 0;

  explicit MeteredWorker(int blocks) {
    process = std::make_unique<Child>("worker", e2e::FixtureWorkerFlags(blocks, 0));
    const std::string line = process->NextLine(std::chrono::seconds(10));
    const std::string prefix = "headroom worker metrics on ";
    if (line.rfind(prefix, 0) == 0) metrics_port = e2e::PortOf(line.substr(prefix.size()));
  }
  // A counter of this worker, e.g. "vllm:prefix_cache_hits_total" (-1 when absent).
  double Counter(const std::string& name) const {
    return e2e::MetricSample(
        e2e::HttpRequestTo(metrics_port, "GET", "/metrics").body,
        absl::StrCat(name, "{model_name=\"", worker::testdata::FixtureDir("llama-gqa").string(),
                     "\"}"));
  }
};

// `count` prompts of 64 tokens (four full blocks), token i of prompt p = (p * a + i * b + c) % 256:
// no block is shared between two of them.
std::vector<std::vector<int32_t>> FourBlockPrompts(int count, int a, int b, int c) {
  std::vector<std::vector<int32_t>> prompts;
  for (int p = 0; p < count; ++p) {
    std::vector<int32_t> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back((p * a + i * b + c) % 256);
    prompts.push_back(std::move(tokens));
  }
  return prompts;
}

// The phi3-fused fixture attends 12 positions back in every layer. Its worker gets 8 usable KV
// blocks of 4 tokens (32 slots) and prefill chunks of 8; the fixture's 61-token prompt plus 32
// tokens needs 93 slots. The router places it (the worker reports its window), the worker runs it
// by releasing the blocks behind the window, and the tokens are transformers' greedy ones.
TEST(RouterSlidingWindowE2eTest, ARequestLongerThanTheWholeKvPoolGetsTransformersTokens) {
  const std::filesystem::path fixture = worker::testdata::FixtureDir("phi3-fused");
  std::ifstream in(fixture / "expected.json");
  const nlohmann::json longest = nlohmann::json::parse(in)["prompts"].back();
  const auto prompt = longest["ids"].get<std::vector<int32_t>>();
  const auto greedy = longest["greedy"].get<std::vector<int32_t>>();
  ASSERT_EQ(greedy.size(), 32u);
  ASSERT_GT(prompt.size() + greedy.size(), 8u * 4);
  Child worker("worker",
               {"--model", fixture.string(), "--port", "0", "--metrics-port", "-1",
                "--num-gpu-blocks-override", "9", "--block-size", "4", "--max-num-seqs", "1",
                "--max-num-batched-tokens", "8", "--max-model-len", "128", "--threads", "1"});
  ASSERT_FALSE(worker.address().empty());
  Child router("router", {"--grpc-port", "0", "--http-port", "-1", "--workers", worker.address()});
  ASSERT_FALSE(router.address().empty());
  auto stub = v1::Inference::NewStub(
      grpc::CreateChannel(router.address(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(e2e::GroupsUp(*stub, 1, std::chrono::seconds(10)));
  const Result r = Generate(*stub, Greedy(prompt, 32));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.finish, v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(r.tokens, greedy);
}

// Gemma 2 and 3 keep one block table per layer group and release the windowed groups' blocks
// behind their 16-position window (gemma2-softcap: 2 groups, gemma3-local-rope: 6). The worker
// gets a pool that holds the longest prompt plus 32 tokens only with that release (the global
// group's blocks plus ceil((16 - 1 + 8) / 4) + 1 = 7 per windowed group), far fewer than keeping
// every group's every block. The router places each prompt (the tokens are transformers'), and
// by the groups' demand the worker reports it refuses, itself, a request no such pool can hold.
class RouterLayerGroupsE2eTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RouterLayerGroupsE2eTest, EveryPromptGetsTransformersTokensThroughASmallPool) {
  const std::filesystem::path fixture = worker::testdata::FixtureDir(GetParam());
  std::ifstream in(fixture / "expected.json");
  const nlohmann::json prompts = nlohmann::json::parse(in)["prompts"];
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(fixture / "config.json"));
  const int groups = GetParam() == "gemma2-softcap" ? 2 : 6;  // Global + windowed layer kinds.
  ASSERT_EQ(config["sliding_window"].get<int>(), 16);
  constexpr int kBlock = 4;
  const int longest = static_cast<int>(prompts.back()["ids"].size()) + 32;
  const int usable = (longest + kBlock - 1) / kBlock + (groups - 1) * 7;
  ASSERT_GT((longest + kBlock - 1) / kBlock * groups, usable) << "the pool must be too small";
  Child worker("worker", {"--model", fixture.string(), "--port", "0", "--metrics-port", "-1",
                          "--num-gpu-blocks-override", std::to_string(usable + 1), "--block-size",
                          "4", "--max-num-seqs", "1", "--max-num-batched-tokens", "8",
                          "--max-model-len", "128", "--threads", "1"});
  ASSERT_FALSE(worker.address().empty());
  Child router("router", {"--grpc-port", "0", "--http-port", "-1", "--workers", worker.address()});
  ASSERT_FALSE(router.address().empty());
  auto stub = v1::Inference::NewStub(
      grpc::CreateChannel(router.address(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(e2e::GroupsUp(*stub, 1, std::chrono::seconds(10)));
  for (const nlohmann::json& prompt : prompts) {
    const auto ids = prompt["ids"].get<std::vector<int32_t>>();
    const auto greedy = prompt["greedy"].get<std::vector<int32_t>>();
    ASSERT_EQ(greedy.size(), 32u);
    const Result r = Generate(*stub, Greedy(ids, 32));
    ASSERT_TRUE(r.status.ok()) << ids.size() << " prompt tokens: " << r.status.error_message();
    EXPECT_EQ(r.finish, v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(r.tokens, greedy) << ids.size() << " prompt tokens";
  }
  // Filling max_model_len needs more blocks than the pool has once every group counts; the
  // router refuses it itself, with the numbers, instead of placing it on a worker that cannot run
  // it: 32 in the global group, 7 in each windowed one.
  const auto ids = prompts.back()["ids"].get<std::vector<int32_t>>();
  const int max_tokens = 128 - static_cast<int>(ids.size());
  const Result refused = Generate(*stub, Greedy(ids, max_tokens));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(
      refused.status.error_message(),
      absl::StrCat("prompt + max_tokens = 128 tokens can never fit a worker group: they need ",
                   32 + (groups - 1) * 7, " KV blocks of 4 tokens at most (summed over ", groups,
                   " layer groups), the closest group's pool has ", usable,
                   " usable blocks (largest max_model_len 128)"));
}

INSTANTIATE_TEST_SUITE_P(Gemma, RouterLayerGroupsE2eTest,
                         ::testing::Values("gemma2-softcap", "gemma3-local-rope"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param == "gemma2-softcap" ? "gemma2" : "gemma3";
                         });

TEST(RouterPrefixAffinityE2eTest, RepeatedPromptsGoBackToTheGroupThatCachedThem) {
  // Eight prompts of four full blocks, no block shared between two of them; each sent once
  // concurrently (they spread over both groups), then each again, one after the other. With
  // affinity every repeat lands on the group that cached it; without it, placement by free
  // blocks alone sends them all to one group and the other group's prompts are recomputed.
  constexpr int kPrompts = 8;
  const std::vector<std::vector<int32_t>> prompts = FourBlockPrompts(kPrompts, 31, 7, 1);
  std::vector<int32_t> calibration;
  for (int i = 0; i < 64; ++i) calibration.push_back((i * 13 + 200) % 256);

  double per_repeat = 0;  // prompt tokens one repeat on the group that holds it reuses
  for (const char* weight : {"10", "0"}) {
    SCOPED_TRACE(absl::StrCat("--prefix-affinity-weight ", weight));
    const bool affinity = std::string(weight) != "0";
    MeteredWorker a(64), b(64);
    ASSERT_GT(a.metrics_port, 0);
    ASSERT_GT(b.metrics_port, 0);
    auto router = std::make_unique<Child>(
        "router", std::vector<std::string>{"--grpc-port", "0", "--http-port", "-1", "--workers",
                                           a.process->address() + "," + b.process->address(),
                                           "--prefix-affinity-weight", weight});
    ASSERT_FALSE(router->address().empty());
    auto stub = v1::Inference::NewStub(
        grpc::CreateChannel(router->address(), grpc::InsecureChannelCredentials()));
    const auto hits = [&] {
      return a.Counter("vllm:prefix_cache_hits_total") + b.Counter("vllm:prefix_cache_hits_total");
    };
    // Both groups, not just the first to report: requests sent while one is up all go there.
    ASSERT_TRUE(e2e::GroupsUp(*stub, 2));
    const Result first = Generate(*stub, Greedy(calibration, 4));
    ASSERT_TRUE(first.status.ok()) << first.status.error_message();
    if (affinity) {
      const double before_repeat = hits();
      ASSERT_TRUE(Generate(*stub, Greedy(calibration, 4)).status.ok());
      per_repeat = hits() - before_repeat;
      ASSERT_GE(per_repeat, 32) << "a repeated prompt should reuse at least two of its blocks";
    }

    const double served_a = a.Counter("vllm:prompt_tokens_total");
    const double served_b = b.Counter("vllm:prompt_tokens_total");
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    for (const std::vector<int32_t>& prompt : prompts) {
      threads.emplace_back([&stub, &ready, prompt] {  // 32 tokens: long enough to overlap
        ready.fetch_add(1);
        while (ready.load() < kPrompts) std::this_thread::yield();  // sent together
        EXPECT_TRUE(Generate(*stub, Greedy(prompt, 32)).status.ok());
      });
    }
    for (std::thread& t : threads) t.join();
    // Placement by free blocks spreads concurrent prompts, but how evenly depends on when the
    // load reports arrive (under ctest -j2 one group has taken only 2 of the 8): each group must
    // hold at least one, so a router without affinity sends some repeat to the wrong one.
    const int on_a =
        static_cast<int>(std::lround((a.Counter("vllm:prompt_tokens_total") - served_a) / 64));
    const int on_b =
        static_cast<int>(std::lround((b.Counter("vllm:prompt_tokens_total") - served_b) / 64));
    ASSERT_EQ(on_a + on_b, kPrompts);
    ASSERT_GE(on_a, 1);
    ASSERT_GE(on_b, 1);

    const double before = hits();
    for (const std::vector<int32_t>& prompt : prompts) {
      // Settled load reports (workers push every 50 ms): both groups idle and equally free, so
      // without affinity every repeat goes the same way (the tie-break by name).
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      ASSERT_TRUE(Generate(*stub, Greedy(prompt, 4)).status.ok());
    }
    const double repeats = (hits() - before) / per_repeat;
    if (affinity) {
      EXPECT_EQ(repeats, kPrompts);
    } else {
      // Every repeat goes one way (the tie-break by name): only that group's prompts are reused.
      EXPECT_LE(repeats, std::max(on_a, on_b));
    }
    router->Signal(SIGTERM);
    EXPECT_EQ(router->WaitExit(std::chrono::seconds(20)), 0);
  }
}

// Several routers share the cluster, so a router must learn what a group cached from the group
// itself: here the prompts reach each worker directly (as if through another router), and a
// fresh router still sends every repeat to the group that holds it. Without the workers'
// reports it would know nothing and send them all one way (the tie-break by name).
TEST(RouterPrefixAffinityE2eTest, WorkerReportedCachesGuideARouterThatPlacedNothing) {
  constexpr int kPrompts = 8;
  const std::vector<std::vector<int32_t>> prompts = FourBlockPrompts(kPrompts, 37, 11, 3);
  MeteredWorker a(64), b(64);
  ASSERT_GT(a.metrics_port, 0);
  ASSERT_GT(b.metrics_port, 0);
  const auto submit_to = [](const Child& worker, const std::vector<int32_t>& prompt) {
    auto stub = v1::Worker::NewStub(
        grpc::CreateChannel(worker.address(), grpc::InsecureChannelCredentials()));
    v1::SubmitRequest request;
    for (int32_t t : prompt) request.add_prompt_token_ids(t);
    request.mutable_sampling()->set_temperature(0.0f);
    request.mutable_sampling()->set_max_tokens(4);
    auto context = Context();
    auto reader = stub->Submit(context.get(), request);
    v1::SubmitResponse response;
    while (reader->Read(&response)) {
    }
    return reader->Finish().ok();
  };
  for (int p = 0; p < kPrompts; ++p) {
    ASSERT_TRUE(
        submit_to(p < kPrompts / 2 ? *a.process : *b.process, prompts[static_cast<size_t>(p)]));
  }
  const auto hits = [](const MeteredWorker& w) {
    return w.Counter("vllm:prefix_cache_hits_total");
  };
  double before = hits(a);
  ASSERT_TRUE(submit_to(*a.process, prompts[0]));
  const double per_repeat = hits(a) - before;  // prompt tokens one repeat reuses
  ASSERT_GE(per_repeat, 32);

  auto router = std::make_unique<Child>(
      "router", std::vector<std::string>{"--grpc-port", "0", "--http-port", "-1", "--workers",
                                         a.process->address() + "," + b.process->address(),
                                         "--prefix-affinity-weight", "10"});
  ASSERT_FALSE(router->address().empty());
  auto stub = v1::Inference::NewStub(
      grpc::CreateChannel(router->address(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(e2e::GroupsUp(*stub, 2)) << "both groups reported (with their caches)";
  const double before_a = hits(a);
  const double before_b = hits(b);
  for (const std::vector<int32_t>& prompt : prompts) {
    ASSERT_TRUE(Generate(*stub, Greedy(prompt, 4)).status.ok());
  }
  EXPECT_EQ(hits(a) - before_a, kPrompts / 2 * per_repeat) << "a's prompts went elsewhere";
  EXPECT_EQ(hits(b) - before_b, kPrompts / 2 * per_repeat) << "b's prompts went elsewhere";
  router->Signal(SIGTERM);
  EXPECT_EQ(router->WaitExit(std::chrono::seconds(20)), 0);
}

}  // namespace
}  // namespace headroom::router
