// router_latency: what the router adds to one request's latency, measured end to end on loopback.
//
// Starts a real `headroom worker --model dummy:tiny` and a real `headroom router` in front of it
// (child processes), waits until the router sees the group healthy, then sends N sequential
// requests (16 prompt tokens, max_tokens 1, temperature 0) three ways, interleaved so that noise
// on a shared machine hits all three alike:
//   (a) Worker.Submit straight to the worker (the floor: engine step + one gRPC stream),
//   (b) Inference.Generate to the router (router gRPC in, placement, worker stream out),
//   (c) HTTP POST /v1/completions to the router (one new TCP connection per request, JSON in and
//       out, then the same path as (b) over the router's in-process channel),
// plus a reference: a no-op unary Worker.Abort, the cost of one bare gRPC call on this machine.
// Each path gets 20 warm-up requests first. Prints p50/p90/p99/mean per path, the router's added
// latency ((b) - (a), (c) - (a)) at p50 and p99, and the machine. Usage:
//   router_latency [--requests N]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "child_process.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "headroom/v1/worker.grpc.pb.h"
#include "http_client.h"

namespace headroom::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWarmup = 20;
constexpr int kPromptTokens = 16;
// The prompt, as byte-tokenizer ids ("The router adds?"): the same 16 ids on every path.
constexpr std::string_view kPrompt = "The router adds?";
static_assert(kPrompt.size() == kPromptTokens);

std::unique_ptr<grpc::ClientContext> Context(int timeout_s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s));
  return context;
}

// One request on one path; false when it failed (the message is printed).
using RequestFn = std::function<bool()>;

bool WorkerSubmit(v1::Worker::Stub& worker) {
  v1::SubmitRequest request;
  for (char c : kPrompt) request.add_prompt_token_ids(static_cast<unsigned char>(c));
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(1);
  request.mutable_sampling()->set_ignore_eos(true);
  auto context = Context(30);
  auto reader = worker.Submit(context.get(), request);
  v1::SubmitResponse response;
  int tokens = 0;
  while (reader->Read(&response)) tokens += response.tokens_size();
  const grpc::Status status = reader->Finish();
  if (!status.ok() || tokens != 1) {
    std::fprintf(stderr, "Worker.Submit failed: %s (%d tokens)\n", status.error_message().c_str(),
                 tokens);
    return false;
  }
  return true;
}

bool RouterGenerate(v1::Inference::Stub& router) {
  v1::GenerateRequest request;
  for (char c : kPrompt) request.mutable_token_ids()->add_ids(static_cast<unsigned char>(c));
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_max_tokens(1);
  request.mutable_sampling()->set_ignore_eos(true);
  auto context = Context(30);
  auto reader = router.Generate(context.get(), request);
  v1::GenerateResponse response;
  int tokens = 0;
  while (reader->Read(&response)) tokens += response.token_ids_size();
  const grpc::Status status = reader->Finish();
  if (!status.ok() || tokens != 1) {
    std::fprintf(stderr, "Inference.Generate failed: %s (%d tokens)\n",
                 status.error_message().c_str(), tokens);
    return false;
  }
  return true;
}

// A unary RPC that does no work (an unknown id is ignored): the floor of one gRPC call here.
bool WorkerAbortNoop(v1::Worker::Stub& worker) {
  v1::AbortRequest request;
  request.set_request_id(uint64_t{1} << 62);
  v1::AbortResponse response;
  auto context = Context(30);
  const grpc::Status status = worker.Abort(context.get(), request, &response);
  if (!status.ok()) {
    std::fprintf(stderr, "Worker.Abort failed: %s\n", status.error_message().c_str());
    return false;
  }
  return true;
}

std::string CompletionsBody() {
  std::string ids;
  for (char c : kPrompt) {
    if (!ids.empty()) ids += ",";
    ids += std::to_string(static_cast<unsigned char>(c));
  }
  return "{\"prompt\":[" + ids + "],\"max_tokens\":1,\"temperature\":0,\"ignore_eos\":true}";
}

bool HttpCompletion(int port, const std::string& body) {
  const e2e::HttpResponse response = e2e::HttpRequestTo(port, "POST", "/v1/completions", body,
                                                         {}, /*timeout_s=*/30);
  if (response.status != 200 || response.body.find("\"choices\"") == std::string::npos) {
    std::fprintf(stderr, "POST /v1/completions failed: HTTP %d %s\n", response.status,
                 response.body.c_str());
    return false;
  }
  return true;
}

struct Summary {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;  // microseconds
};

// Nearest-rank percentiles.
Summary Summarize(std::vector<double> us) {
  Summary s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  auto at = [&](double p) {
    const double rank = std::ceil(p * static_cast<double>(us.size()));
    return us[static_cast<size_t>(std::max(rank, 1.0)) - 1];
  };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  double sum = 0;
  for (double v : us) sum += v;
  s.mean = sum / static_cast<double>(us.size());
  return s;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

std::string Now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M UTC", &tm);
  return buffer;
}

// Waits (at most `timeout`) until the router's GetClusterState shows every group healthy.
bool WaitHealthy(v1::Inference::Stub& router, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    v1::ClusterState state;
    auto context = Context(5);
    if (router.GetClusterState(context.get(), {}, &state).ok() && state.groups_size() > 0 &&
        std::all_of(state.groups().begin(), state.groups().end(),
                    [](const v1::GroupState& g) { return g.healthy(); })) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// SIGTERM, then at most 20 s for the exit; SIGKILL (by the destructor) if it did not.
void Stop(e2e::ChildProcess& child, const char* name) {
  child.Signal(SIGTERM);
  const std::optional<int> status = child.WaitExit(std::chrono::seconds(20));
  if (!status.has_value()) {
    std::fprintf(stderr, "%s did not exit within 20 s of SIGTERM; killing it\n", name);
  } else if (*status != 0) {
    std::fprintf(stderr, "%s exited with status %d\n", name, *status);
  }
}

std::optional<int> ParseRequests(int argc, char** argv) {
  int requests = 300;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::string_view value;
    if (arg == "--requests" && i + 1 < argc) {
      value = argv[++i];
    } else if (arg.starts_with("--requests=")) {
      value = arg.substr(11);
    } else {
      std::fprintf(stderr, "usage: router_latency [--requests N]\n");
      return std::nullopt;
    }
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), requests);
    if (ec != std::errc() || end != value.data() + value.size() || requests < 1) {
      std::fprintf(stderr, "--requests must be a positive integer, got \"%.*s\"\n",
                   static_cast<int>(value.size()), value.data());
      return std::nullopt;
    }
  }
  return requests;
}

int Main(int argc, char** argv) {
  const std::optional<int> requests = ParseRequests(argc, argv);
  if (!requests.has_value()) return 2;

  e2e::ChildProcess worker("worker", {"--model", "dummy:tiny", "--port", "0", "--metrics-port",
                                      "-1", "--threads", "1"});
  if (worker.address().empty()) {
    std::fprintf(stderr, "the worker did not print its listening line\n");
    return 1;
  }
  // A router binary from before --http-port refuses the flag: then run without HTTP and skip (c).
  auto router = std::make_unique<e2e::ChildProcess>(
      "router", std::vector<std::string>{"--grpc-port", "0", "--http-port", "0", "--workers",
                                         worker.address()});
  if (router->address().empty()) {
    std::fprintf(stderr, "the router did not come up with --http-port 0; retrying without it\n");
    router = std::make_unique<e2e::ChildProcess>(
        "router", std::vector<std::string>{"--grpc-port", "0", "--workers", worker.address()});
  }
  if (router->address().empty()) {
    std::fprintf(stderr, "the router did not print its listening line\n");
    Stop(worker, "worker");
    return 1;
  }
  // The HTTP line follows the gRPC one at once when the router serves HTTP.
  std::optional<int> http_port;
  const std::string http_line = router->NextLine(std::chrono::seconds(5));
  constexpr std::string_view kHttpPrefix = "headroom router HTTP on ";
  if (http_line.starts_with(kHttpPrefix)) {
    http_port = e2e::PortOf(http_line.substr(kHttpPrefix.size()));
  } else {
    std::fprintf(stderr, "the router printed no HTTP line: skipping (c) HTTP /v1/completions\n");
  }

  auto worker_stub =
      v1::Worker::NewStub(grpc::CreateChannel(worker.address(), grpc::InsecureChannelCredentials()));
  auto router_stub = v1::Inference::NewStub(
      grpc::CreateChannel(router->address(), grpc::InsecureChannelCredentials()));
  if (!WaitHealthy(*router_stub, std::chrono::seconds(30))) {
    std::fprintf(stderr, "the worker group never became healthy at the router\n");
    Stop(*router, "router");
    Stop(worker, "worker");
    return 1;
  }

  struct Path {
    const char* name;
    RequestFn send;
    std::vector<double> us;
  };
  const std::string body = CompletionsBody();
  std::vector<Path> paths;
  paths.push_back({"(a) Worker.Submit, direct", [&] { return WorkerSubmit(*worker_stub); }, {}});
  paths.push_back({"(b) Inference.Generate, router", [&] { return RouterGenerate(*router_stub); },
                   {}});
  if (http_port.has_value()) {
    paths.push_back({"(c) POST /v1/completions, router",
                     [&] { return HttpCompletion(*http_port, body); }, {}});
  }
  // Reference, not a request path: what one bare gRPC call to the worker costs.
  paths.push_back({"(ref) Worker.Abort no-op (unary)", [&] { return WorkerAbortNoop(*worker_stub); },
                   {}});

  bool ok = true;
  for (int i = 0; i < kWarmup && ok; ++i) {
    for (Path& p : paths) ok = ok && p.send();
  }
  for (int i = 0; i < *requests && ok; ++i) {
    for (Path& p : paths) {
      const Clock::time_point start = Clock::now();
      ok = ok && p.send();
      p.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  }
  Stop(*router, "router");
  Stop(worker, "worker");
  if (!ok) return 1;

  std::printf("router_latency: %d sequential requests per path after %d warm-up, interleaved; "
              "prompt %d tokens, max_tokens 1, temperature 0\n",
              *requests, kWarmup, kPromptTokens);
  std::printf("binary: %s; worker dummy:tiny --threads 1; all on 127.0.0.1\n", HEADROOM_BINARY);
  std::printf("machine: %ld x %s; load average %s; %s\n\n", sysconf(_SC_NPROCESSORS_ONLN),
              CpuModel().c_str(), LoadAverage().c_str(), Now().c_str());
  std::printf("%-34s %9s %9s %9s %9s\n", "path (latency in us)", "p50", "p90", "p99", "mean");
  std::vector<Summary> summaries;
  for (const Path& p : paths) {
    const Summary s = Summarize(p.us);
    summaries.push_back(s);
    std::printf("%-34s %9.0f %9.0f %9.0f %9.0f\n", p.name, s.p50, s.p90, s.p99, s.mean);
  }
  std::printf("\nadded by the router (difference of the percentiles):\n");
  for (size_t i = 1; i + 1 < summaries.size(); ++i) {  // the last one is the reference
    std::printf("  %c - a: p50 %+6.0f us, p99 %+6.0f us\n", static_cast<char>('a' + i),
                summaries[i].p50 - summaries[0].p50, summaries[i].p99 - summaries[0].p99);
  }
  if (!http_port.has_value()) std::printf("  c - a: not measured (the router serves no HTTP)\n");
  return 0;
}

}  // namespace
}  // namespace headroom::bench

int main(int argc, char** argv) { return headroom::bench::Main(argc, argv); }
