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
#include "cli/exit_codes.h"
#include "cli/parse_flags.h"
#include "cli/stop_signals.h"
#include "common/flags.h"

namespace headroom::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kStartTimeout = std::chrono::seconds(120);
// How long each stage of the shutdown (router, then workers) may take before SIGKILL.
constexpr auto kStopTimeout = std::chrono::seconds(15);
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
                 "Devices per worker group; only 1 (tensor parallelism is not implemented yet).");
  flags.AddInt64("grpc-port", 50051, "Router gRPC port (0 = pick a free one).");
  flags.AddInt64("http-port", 8000,
                 "Router OpenAI-compatible HTTP port (0 = pick a free one).");
  flags.AddString("api-key", std::nullopt, "Passed to the router: required Bearer key on /v1.");
  flags.AddInt64("worker-base-port", 0,
                 "Worker i listens on BASE+i and serves /metrics on BASE+groups+i (0 = pick free "
                 "ports).");
  flags.AddInt64("num-gpu-blocks-override", std::nullopt,
                 "KV blocks per worker group (passed to every worker).");
  flags.AddInt64("max-model-len", std::nullopt, "Longest prompt + output (passed to every worker).");
  flags.AddInt64("max-num-seqs", std::nullopt,
                 "Most sequences running in one step (passed to every worker).");
  flags.AddInt64("threads-per-worker", 1, "CPU threads of each worker (0 = all).");
  return flags;
}

struct Child {
  std::string name;  // "router", "worker 0", ...
  pid_t pid = -1;
  int stdout_fd = -1;
  std::string pending;  // stdout read but not yet a full line
  std::optional<int> wait_status;
};

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)),
                        ")");
  }
  return absl::StrCat("ended with wait status ", status);
}

absl::StatusOr<std::string> SelfExecutable() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return absl::InternalError(absl::StrCat("readlink /proc/self/exe: ", strerror(errno)));
  return std::string(buffer, static_cast<size_t>(n));
}

class Cluster {
 public:
  Cluster(std::string executable, std::ostream& err) : executable_(std::move(executable)), err_(err) {}
  ~Cluster() {
    for (Child& child : children_) {
      if (child.pid > 0 && !child.wait_status.has_value()) {
        kill(child.pid, SIGKILL);
        waitpid(child.pid, nullptr, 0);
      }
      if (child.stdout_fd >= 0) close(child.stdout_fd);
    }
  }

  // Starts `headroom <args...>` with its stdout on a pipe, stderr inherited, in its own process
  // group (a terminal's Ctrl-C reaches only `headroom up`, which stops the children in order),
  // and SIGTERMed by the kernel should `headroom up` die first.
  absl::StatusOr<size_t> Spawn(std::string name, std::vector<std::string> args) {
    args.insert(args.begin(), executable_);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
    }
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      if (dup2(fds[1], STDOUT_FILENO) < 0) _exit(127);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    Child child;
    child.name = std::move(name);
    child.pid = pid;
    child.stdout_fd = fds[0];
    children_.push_back(std::move(child));
    return children_.size() - 1;
  }

  Child& child(size_t i) { return children_[i]; }

  // Reaps every child that exited; returns the first one found not already known to be dead.
  std::optional<size_t> ReapAny() {
    std::optional<size_t> first;
    for (size_t i = 0; i < children_.size(); ++i) {
      Child& c = children_[i];
      if (c.pid <= 0 || c.wait_status.has_value()) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.wait_status = status;
        if (!first.has_value()) first = i;
      }
    }
    return first;
  }

  enum class LineResult { kLine, kTimeout, kStopSignal, kDied };

  // The next stdout line of child `i`, while watching for stop signals and dead children.
  LineResult ReadLine(size_t i, Clock::time_point deadline, const sigset_t& stop_signals,
                      std::string* line, size_t* dead) {
    Child& c = children_[i];
    bool eof = false;
    while (true) {
      if (const size_t nl = c.pending.find('\n'); nl != std::string::npos) {
        *line = c.pending.substr(0, nl);
        c.pending.erase(0, nl + 1);
        return LineResult::kLine;
      }
      if (StopSignalPending(stop_signals)) return LineResult::kStopSignal;
      if (const std::optional<size_t> d = ReapAny()) {
        *dead = *d;
        return LineResult::kDied;
      }
      if (Clock::now() >= deadline) return LineResult::kTimeout;
      if (eof) {  // stdout closed: the child is exiting; ReapAny will see it
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      pollfd p{.fd = c.stdout_fd, .events = POLLIN, .revents = 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buffer[512];
      const ssize_t n = read(c.stdout_fd, buffer, sizeof(buffer));
      if (n <= 0) {
        eof = true;
        continue;
      }
      c.pending.append(buffer, static_cast<size_t>(n));
    }
  }

  static bool StopSignalPending(const sigset_t& stop_signals) {
    const timespec zero{0, 0};
    return sigtimedwait(&stop_signals, nullptr, &zero) > 0;
  }

  // SIGTERM to the children in `which` (that are alive), then wait for them until kStopTimeout,
  // then SIGKILL. A stop signal while waiting skips straight to SIGKILL.
  void StopGroup(const std::vector<size_t>& which, const sigset_t& stop_signals) {
    for (size_t i : which) {
      if (!children_[i].wait_status.has_value()) kill(children_[i].pid, SIGTERM);
    }
    const auto deadline = Clock::now() + kStopTimeout;
    while (true) {
      ReapAny();
      bool all_done = true;
      for (size_t i : which) all_done = all_done && children_[i].wait_status.has_value();
      if (all_done) return;
      if (Clock::now() >= deadline || StopSignalPending(stop_signals)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (size_t i : which) {
      Child& c = children_[i];
      if (c.wait_status.has_value()) continue;
      err_ << "headroom up: " << c.name << " (pid " << c.pid << ") did not stop; SIGKILL\n";
      kill(c.pid, SIGKILL);
      int status = 0;
      waitpid(c.pid, &status, 0);
      c.wait_status = status;
    }
  }

  // The router first (it stops accepting, finishes streams), then every worker.
  void StopAll(std::optional<size_t> router, const sigset_t& stop_signals) {
    if (router.has_value()) StopGroup({*router}, stop_signals);
    std::vector<size_t> rest;
    for (size_t i = 0; i < children_.size(); ++i) {
      if (!router.has_value() || i != *router) rest.push_back(i);
    }
    StopGroup(rest, stop_signals);
  }

 private:
  std::string executable_;
  std::ostream& err_;
  std::vector<Child> children_;
};

struct Options {
  std::string model;
  int64_t groups = 0;
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
  if (const int64_t tp = *flags.GetInt64("tensor-parallel-size"); tp != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tensor-parallel-size ", tp,
        ": tensor parallelism is not implemented yet; each group is one worker process (use 1)"));
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
    return absl::InvalidArgumentError(absl::StrCat(
        "--worker-base-port must be 0 or leave room for ", 2 * o.groups,
        " ports below 65536, got ", o.worker_base_port));
  }
  const int64_t threads = *flags.GetInt64("threads-per-worker");
  if (threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads-per-worker must be >= 0, got ", threads));
  }
  o.worker_flags = {"--model", o.model, "--host", "127.0.0.1", "--threads", absl::StrCat(threads),
                    "--drain-timeout-s", absl::StrCat(kChildDrainSeconds)};
  for (const char* name : {"num-gpu-blocks-override", "max-model-len", "max-num-seqs"}) {
    if (const std::optional<int64_t> v = flags.GetInt64(name)) {
      o.worker_flags.push_back(absl::StrCat("--", name));
      o.worker_flags.push_back(absl::StrCat(*v));
    }
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
  Cluster cluster(*executable, err);
  std::optional<size_t> router;
  const auto fail = [&](const std::string& message, int code) {
    err << "error: headroom up: " << message << "; stopping the cluster\n";
    cluster.StopAll(router, stop_signals);
    return code;
  };
  const auto interrupted = [&] {
    err << "headroom up: stop signal while starting; stopping the cluster\n";
    cluster.StopAll(router, stop_signals);
    return kExitOk;
  };

  // Every worker starts at once (they load their weights in parallel).
  std::vector<size_t> workers;
  for (int64_t i = 0; i < o.groups; ++i) {
    std::vector<std::string> args = {"worker"};
    args.insert(args.end(), o.worker_flags.begin(), o.worker_flags.end());
    const int64_t port = o.worker_base_port == 0 ? 0 : o.worker_base_port + i;
    const int64_t metrics = o.worker_base_port == 0 ? 0 : o.worker_base_port + o.groups + i;
    args.insert(args.end(), {"--port", absl::StrCat(port), "--metrics-port", absl::StrCat(metrics)});
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
      case Cluster::LineResult::kLine:
        if (line.rfind(prefix, 0) != 0) {
          return fail(absl::StrCat(cluster.child(i).name, " printed \"", line, "\", expected \"",
                                   prefix, "HOST:PORT\""),
                      kExitRefused);
        }
        *address = line.substr(prefix.size());
        return std::nullopt;
      case Cluster::LineResult::kStopSignal:
        return interrupted();
      case Cluster::LineResult::kDied: {
        const Child& c = cluster.child(dead);
        return fail(absl::StrCat(c.name, " (pid ", c.pid, ") ", DescribeStatus(*c.wait_status),
                                 " before the cluster came up (its error is above)"),
                    kExitRefused);
      }
      case Cluster::LineResult::kTimeout:
        return fail(absl::StrCat(cluster.child(i).name, " (pid ", cluster.child(i).pid,
                                 ") did not come up within ",
                                 std::chrono::seconds(kStartTimeout).count(), " s"),
                    kExitRefused);
    }
    return kExitRefused;
  };

  std::vector<std::string> addresses(workers.size()), metrics(workers.size());
  for (size_t w = 0; w < workers.size(); ++w) {
    if (auto code = expect(workers[w], "headroom worker listening on ", &addresses[w])) return *code;
    if (auto code = expect(workers[w], "headroom worker metrics on ", &metrics[w])) return *code;
  }

  std::vector<std::string> router_args = {"router", "--host", "127.0.0.1", "--grpc-port",
                                          absl::StrCat(o.grpc_port), "--http-port",
                                          absl::StrCat(o.http_port), "--workers",
                                          absl::StrJoin(addresses, ","), "--shutdown-timeout-s",
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
      << " on the CPU backend, tensor-parallel-size 1\n";
  out << "  router    grpc://" << router_address << "  headroom.v1.Inference  pid "
      << cluster.child(*router).pid << "\n";
  out << "  router    http://" << http_address << "  OpenAI API (/v1/completions, "
      << "/v1/chat/completions, /v1/models), /metrics\n";
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
      cluster.StopAll(router, stop_signals);
      err << "headroom up: stopped\n";
      return kExitOk;
    }
    if (const std::optional<size_t> dead = cluster.ReapAny()) {
      const Child& c = cluster.child(*dead);
      err << "error: headroom up: " << c.name << " (pid " << c.pid << ") "
          << DescribeStatus(*c.wait_status) << " unexpectedly; stopping the cluster\n";
      cluster.StopAll(router, stop_signals);
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
