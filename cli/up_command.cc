#include "cli/up_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/child_processes.h"
#include "cli/exit_codes.h"
#include "cli/hf_overrides_flag.h"
#include "cli/parse_flags.h"
#include "cli/stop_signals.h"
#include "common/flags.h"

namespace headroom::cli {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(120);
// Passed to the children so that their own drain fits in kStopTimeout.
constexpr int kChildDrainSeconds = 10;
// Exit status when a child died on its own after the cluster came up.
constexpr int kExitChildDied = 1;

FlagSet MakeUpFlags() {
  FlagSet flags("headroom up",
                "Start a local cluster on 127.0.0.1: --groups worker groups (one `headroom "
                "worker` process each, CPU backend) and one `headroom router` in front of them. "
                "Prints 'headroom up listening on HOST:PORT' (the router), then the URLs and a "
                "query command; Ctrl-C/SIGTERM stops everything and exits 0. A child that dies "
                "stops the rest (exit 1); a child not up within 120 s stops the rest (exit 2).");
  flags.AddString("model", "dummy:tiny",
                  "Hugging Face model directory or dummy:<preset>, served by every group.");
  flags.AddInt64("groups", 2, "Worker groups to start.");
  flags.AddInt64("tensor-parallel-size", 1,
                 "Ranks per worker group: each group is a `headroom worker` launcher starting "
                 "this many rank processes (CPU backend, Gloo over loopback).");
  flags.AddInt64("grpc-port", 50051, "Router gRPC port (0 = pick a free one).");
  flags.AddInt64("http-port", 8000, "Router OpenAI-compatible HTTP port (0 = pick a free one).");
  flags.AddString("api-key", std::nullopt, "Passed to the router: required Bearer key on /v1.");
  flags.AddInt64("worker-base-port", 0,
                 "Worker i listens on BASE+i and serves /metrics on BASE+groups+i (0 = pick free "
                 "ports).");
  flags.AddInt64("num-gpu-blocks-override", std::nullopt,
                 "KV blocks per worker group (passed to every worker).");
  flags.AddInt64("max-model-len", std::nullopt,
                 "Longest prompt + output (passed to every worker).");
  flags.AddInt64("max-num-seqs", std::nullopt,
                 "Most sequences running in one step (passed to every worker).");
  flags.AddInt64("threads-per-worker", 1, "CPU threads of each worker (0 = all).");
  flags.AddStringList("lora-modules",
                      "LoRA adapters every worker serves (name=path; passed to every worker): "
                      "a request whose model is an adapter's name runs with it.");
  flags.AddInt64("max-lora-rank", std::nullopt, "Largest adapter rank (passed to every worker).");
  flags.AddBool("allow-runtime-lora-updating", false,
                "Let the router's /v1/load_lora_adapter load adapters into --max-loras slots "
                "reserved at start (passed to every worker).");
  flags.AddInt64("max-loras", std::nullopt,
                 "With --allow-runtime-lora-updating: adapters resident at once (passed to every "
                 "worker).");
  flags.AddString("lora-resolver-dir", std::nullopt,
                  "With --allow-runtime-lora-updating: a request naming an adapter not loaded "
                  "loads <dir>/<name> first (passed to every worker).");
  flags.AddString("pooler-config", std::nullopt,
                  "How embeddings pool, as vLLM's JSON: {\"pooling_type\": \"LAST\" | \"MEAN\" | "
                  "\"CLS\", \"normalize\": bool} (passed to every worker).");
  AddHfOverridesFlag(flags);
  return flags;
}

// The router first (it stops accepting, finishes streams), then every worker.
void StopAll(ChildProcesses& cluster, std::optional<size_t> router, const sigset_t& stop_signals) {
  if (router.has_value()) cluster.StopGroup({*router}, stop_signals);
  std::vector<size_t> rest;
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (!router.has_value() || i != *router) rest.push_back(i);
  }
  cluster.StopGroup(rest, stop_signals);
}

struct Options {
  std::string model;
  int64_t groups = 0;
  int64_t tensor_parallel_size = 1;
  int64_t grpc_port = 0;
  int64_t http_port = 0;
  std::optional<std::string> api_key;
  int64_t worker_base_port = 0;
  std::vector<std::string> worker_flags;  // shared by every worker
};

absl::StatusOr<Options> Validate(const FlagSet& flags) {
  Options o;
  o.model = *flags.GetString("model");
  o.groups = *flags.GetInt64("groups");
  if (o.groups < 1 || o.groups > 64) {
    return absl::InvalidArgumentError(absl::StrCat("--groups must be in [1, 64], got ", o.groups));
  }
  o.tensor_parallel_size = *flags.GetInt64("tensor-parallel-size");
  if (o.tensor_parallel_size < 1 || o.tensor_parallel_size > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tensor-parallel-size must be in [1, 64], got ", o.tensor_parallel_size));
  }
  o.grpc_port = *flags.GetInt64("grpc-port");
  if (o.grpc_port < 0 || o.grpc_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grpc-port must be in [0, 65535], got ", o.grpc_port));
  }
  o.http_port = *flags.GetInt64("http-port");
  if (o.http_port < 0 || o.http_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-port must be in [0, 65535], got ", o.http_port));
  }
  o.api_key = flags.GetString("api-key");
  o.worker_base_port = *flags.GetInt64("worker-base-port");
  if (o.worker_base_port < 0 || o.worker_base_port + 2 * o.groups - 1 > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--worker-base-port must be 0 or leave room for ", 2 * o.groups,
                     " ports below 65536, got ", o.worker_base_port));
  }
  const int64_t threads = *flags.GetInt64("threads-per-worker");
  if (threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads-per-worker must be >= 0, got ", threads));
  }
  o.worker_flags = {"--model",
                    o.model,
                    "--host",
                    "127.0.0.1",
                    "--threads",
                    absl::StrCat(threads),
                    "--drain-timeout-s",
                    absl::StrCat(kChildDrainSeconds),
                    "--tensor-parallel-size",
                    absl::StrCat(o.tensor_parallel_size)};
  for (const char* name :
       {"num-gpu-blocks-override", "max-model-len", "max-num-seqs", "max-lora-rank", "max-loras"}) {
    if (const std::optional<int64_t> v = flags.GetInt64(name)) {
      o.worker_flags.push_back(absl::StrCat("--", name));
      o.worker_flags.push_back(absl::StrCat(*v));
    }
  }
  if (flags.GetBool("allow-runtime-lora-updating")) {
    o.worker_flags.push_back("--allow-runtime-lora-updating");
  }
  for (const char* name : {"hf-overrides", "lora-resolver-dir", "pooler-config"}) {
    if (const std::optional<std::string> v = flags.GetString(name)) {
      o.worker_flags.insert(o.worker_flags.end(), {absl::StrCat("--", name), *v});
    }
  }
  if (const std::vector<std::string> adapters = flags.GetStringList("lora-modules");
      !adapters.empty()) {
    o.worker_flags.push_back("--lora-modules");
    o.worker_flags.insert(o.worker_flags.end(), adapters.begin(), adapters.end());
  }
  return o;
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

int Run(const Options& o, const sigset_t& stop_signals, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> executable = SelfExecutable();
  if (!executable.ok()) {
    err << "error: " << executable.status().message() << "\n";
    return kExitRefused;
  }
  ChildProcesses cluster(*executable, "headroom up", err);
  std::optional<size_t> router;
  const auto fail = [&](const std::string& message, int code) {
    err << "error: headroom up: " << message << "; stopping the cluster\n";
    StopAll(cluster, router, stop_signals);
    return code;
  };
  const auto interrupted = [&] {
    err << "headroom up: stop signal while starting; stopping the cluster\n";
    StopAll(cluster, router, stop_signals);
    return kExitOk;
  };

  // Every worker starts at once (they load their weights in parallel).
  std::vector<size_t> workers;
  for (int64_t i = 0; i < o.groups; ++i) {
    std::vector<std::string> args = {"worker"};
    args.insert(args.end(), o.worker_flags.begin(), o.worker_flags.end());
    const int64_t port = o.worker_base_port == 0 ? 0 : o.worker_base_port + i;
    const int64_t metrics = o.worker_base_port == 0 ? 0 : o.worker_base_port + o.groups + i;
    args.insert(args.end(),
                {"--port", absl::StrCat(port), "--metrics-port", absl::StrCat(metrics)});
    absl::StatusOr<size_t> index = cluster.Spawn(absl::StrCat("worker ", i), std::move(args));
    if (!index.ok()) return fail(std::string(index.status().message()), kExitRefused);
    workers.push_back(*index);
  }

  const auto deadline = Clock::now() + kStartTimeout;
  // Reads the line "<prefix>HOST:PORT" of child `i` into `address`; an exit code on failure.
  const auto expect = [&](size_t i, const std::string& prefix,
                          std::string* address) -> std::optional<int> {
    std::string line;
    size_t dead = 0;
    switch (cluster.ReadLine(i, deadline, stop_signals, &line, &dead)) {
      case ChildProcesses::LineResult::kLine:
        if (line.rfind(prefix, 0) != 0) {
          return fail(absl::StrCat(cluster.child(i).name, " printed \"", line, "\", expected \"",
                                   prefix, "HOST:PORT\""),
                      kExitRefused);
        }
        *address = line.substr(prefix.size());
        return std::nullopt;
      case ChildProcesses::LineResult::kStopSignal:
        return interrupted();
      case ChildProcesses::LineResult::kDied: {
        const Child& c = cluster.child(dead);
        return fail(absl::StrCat(c.name, " (pid ", c.pid, ") ", DescribeStatus(*c.wait_status),
                                 " before the cluster came up (its error is above)"),
                    kExitRefused);
      }
      case ChildProcesses::LineResult::kTimeout:
        return fail(absl::StrCat(cluster.child(i).name, " (pid ", cluster.child(i).pid,
                                 ") did not come up within ",
                                 std::chrono::seconds(kStartTimeout).count(), " s"),
                    kExitRefused);
    }
    return kExitRefused;
  };

  std::vector<std::string> addresses(workers.size()), metrics(workers.size());
  for (size_t w = 0; w < workers.size(); ++w) {
    if (auto code = expect(workers[w], "headroom worker listening on ", &addresses[w]))
      return *code;
    if (auto code = expect(workers[w], "headroom worker metrics on ", &metrics[w])) return *code;
  }

  std::vector<std::string> router_args = {"router",
                                          "--host",
                                          "127.0.0.1",
                                          "--grpc-port",
                                          absl::StrCat(o.grpc_port),
                                          "--http-port",
                                          absl::StrCat(o.http_port),
                                          "--workers",
                                          absl::StrJoin(addresses, ","),
                                          "--shutdown-timeout-s",
                                          absl::StrCat(kChildDrainSeconds)};
  if (o.api_key.has_value()) router_args.insert(router_args.end(), {"--api-key", *o.api_key});
  if (!o.model.starts_with("dummy:") && IsRegularFile(o.model + "/tokenizer.json")) {
    router_args.insert(router_args.end(), {"--tokenizer", o.model});
  }
  absl::StatusOr<size_t> router_index = cluster.Spawn("router", std::move(router_args));
  if (!router_index.ok()) return fail(std::string(router_index.status().message()), kExitRefused);
  router = *router_index;
  std::string router_address;
  if (auto code = expect(*router, "headroom router listening on ", &router_address)) return *code;
  std::string http_address;
  if (auto code = expect(*router, "headroom router HTTP on ", &http_address)) return *code;

  out << "headroom up listening on " << router_address << "\n";
  out << "headroom up: " << o.groups << " worker group(s) of " << o.model
      << " on the CPU backend, tensor-parallel-size " << o.tensor_parallel_size << "\n";
  out << "  router    grpc://" << router_address << "  headroom.v1.Inference  pid "
      << cluster.child(*router).pid << "\n";
  out << "  router    http://" << http_address << "  OpenAI API (/v1/completions, "
      << "/v1/chat/completions, /v1/embeddings, /v1/models), /metrics\n";
  for (size_t w = 0; w < workers.size(); ++w) {
    out << "  worker " << w << "  grpc://" << addresses[w] << "  metrics http://" << metrics[w]
        << "/metrics  pid " << cluster.child(workers[w]).pid << "\n";
  }
  const std::string auth =
      o.api_key.has_value() ? absl::StrCat(" -H 'Authorization: Bearer ", *o.api_key, "'") : "";
  out << "query it:\n"
      << "  curl http://" << http_address << "/v1/completions -H 'Content-Type: application/json'"
      << auth << " -d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 32}'\n"
      << "  build/venv/bin/python examples/generate.py --target " << router_address
      << " --max-tokens 32 \"Once upon a time\"\n"
      << "Ctrl-C stops the cluster." << std::endl;

  while (true) {
    const timespec tick{0, 200'000'000};
    const int signal_number = sigtimedwait(&stop_signals, nullptr, &tick);
    if (signal_number > 0) {
      err << "headroom up: signal " << signal_number << ", stopping the router, then the workers\n";
      StopAll(cluster, router, stop_signals);
      err << "headroom up: stopped\n";
      return kExitOk;
    }
    if (const std::optional<size_t> dead = cluster.ReapAny()) {
      const Child& c = cluster.child(*dead);
      err << "error: headroom up: " << c.name << " (pid " << c.pid << ") "
          << DescribeStatus(*c.wait_status) << " unexpectedly; stopping the cluster\n";
      StopAll(cluster, router, stop_signals);
      return kExitChildDied;
    }
  }
}

}  // namespace

int RunUpCommand(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  FlagSet flags = MakeUpFlags();
  if (const std::optional<int> done = ParseFlagsOrExit(flags, args, out, err)) return *done;
  absl::StatusOr<Options> options = Validate(flags);
  if (!options.ok()) {
    err << "error: " << options.status().message() << "\n";
    return kExitRefused;
  }
  // Taken with sigtimedwait; the children get an empty mask back before exec.
  const sigset_t stop_signals = BlockStopSignals();
  return Run(*options, stop_signals, out, err);
}

}  // namespace headroom::cli
