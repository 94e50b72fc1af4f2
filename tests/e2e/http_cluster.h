// Cluster: the HTTP e2e tests' cluster of real processes: two `headroom worker`s serving the
// llama-gqa fixture (vocab 256, so the router's byte tokenizer fits it) and a `headroom router`
// with an HTTP port and an API key in front of them.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "child_process.h"
#include "fixture_worker.h"
#include "groups_up.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "http_client.h"

namespace headroom::e2e {

inline constexpr char kApiKey[] = "e2e-secret";
inline const std::string kAuth = std::string("Authorization: Bearer ") + kApiKey;

// The HTTP port a router prints after its gRPC listening line; 0 if it did not.
inline int ReadHttpPort(ChildProcess& router) {
  const std::string line = router.NextLine(std::chrono::seconds(10));
  const std::string prefix = "headroom router HTTP on ";
  return line.rfind(prefix, 0) == 0 ? PortOf(line.substr(prefix.size())) : 0;
}

// A whole Generate call (a 30 s deadline): every message, then the status it ended with.
struct GenerateResult {
  std::vector<v1::GenerateResponse> messages;
  grpc::Status status;
};
inline GenerateResult GenerateAll(v1::Inference::Stub& stub, const v1::GenerateRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub.Generate(&context, request);
  GenerateResult result;
  v1::GenerateResponse message;
  while (reader->Read(&message)) result.messages.push_back(message);
  result.status = reader->Finish();
  return result;
}

struct Cluster {
  std::unique_ptr<ChildProcess> worker_a, worker_b, router;
  int http_port = 0;
  std::unique_ptr<v1::Inference::Stub> stub;

  // Starts two workers of `blocks` KV blocks (with `worker_flags` after the fixture's, so they
  // win) and a router with an HTTP port and the API key.
  bool Start(int blocks, std::vector<std::string> router_flags = {},
             const std::vector<std::string>& worker_flags = {}) {
    std::vector<std::string> workers = FixtureWorkerFlags(blocks);
    workers.insert(workers.end(), worker_flags.begin(), worker_flags.end());
    worker_a = std::make_unique<ChildProcess>("worker", workers);
    worker_b = std::make_unique<ChildProcess>("worker", workers);
    if (worker_a->address().empty() || worker_b->address().empty()) return false;
    std::vector<std::string> flags = {
        "--grpc-port", "0",     "--http-port", "0",
        "--api-key",   kApiKey, "--workers",   worker_a->address() + "," + worker_b->address()};
    flags.insert(flags.end(), router_flags.begin(), router_flags.end());
    router = std::make_unique<ChildProcess>("router", flags);
    if (router->address().empty()) return false;
    http_port = ReadHttpPort(*router);
    if (http_port == 0) return false;
    stub = v1::Inference::NewStub(
        grpc::CreateChannel(router->address(), grpc::InsecureChannelCredentials()));
    return e2e::GroupsUp(*stub, 2, std::chrono::seconds(10));
  }

  HttpResponse Post(const std::string& path, const std::string& body) const {
    return HttpRequestTo(http_port, "POST", path, body, {kAuth});
  }
  HttpResponse Get(const std::string& path) const {
    return HttpRequestTo(http_port, "GET", path, "", {kAuth});
  }
};

// Another router over `cluster`'s workers (no API key), started with `flags`; `http_port` is set
// once it printed its HTTP port and sees both groups up (0 when it did not).
struct ExtraRouter {
  std::unique_ptr<ChildProcess> process;
  int http_port = 0;
};
inline ExtraRouter StartRouterOver(const Cluster& cluster, const std::vector<std::string>& flags) {
  std::vector<std::string> all = {
      "--grpc-port", "0",         "--http-port",
      "0",           "--workers", cluster.worker_a->address() + "," + cluster.worker_b->address()};
  all.insert(all.end(), flags.begin(), flags.end());
  ExtraRouter router{.process = std::make_unique<ChildProcess>("router", all)};
  if (router.process->address().empty()) return router;
  const int port = ReadHttpPort(*router.process);
  const auto stub = v1::Inference::NewStub(
      grpc::CreateChannel(router.process->address(), grpc::InsecureChannelCredentials()));
  if (port != 0 && e2e::GroupsUp(*stub, 2, std::chrono::seconds(10))) router.http_port = port;
  return router;
}

// A test suite whose tests share one Cluster (workers of 64 KV blocks, and the flags of
// `Suite::ExtraWorkerFlags()`), started once for the suite; each test fails at SetUp when it did
// not start. `Suite` gives each suite its own.
template <typename Suite>
class SharedClusterTest : public ::testing::Test {
 protected:
  static std::vector<std::string> ExtraWorkerFlags() { return {}; }

  static void SetUpTestSuite() {
    cluster_ = new Cluster();
    if (!cluster_->Start(64, {}, Suite::ExtraWorkerFlags())) {
      delete cluster_;
      cluster_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr) << "the cluster did not start"; }

  static inline Cluster* cluster_ = nullptr;
};

}  // namespace headroom::e2e
