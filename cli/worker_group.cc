#include "cli/worker_group.h"

#include <signal.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/child_processes.h"
#include "cli/exit_codes.h"
#include "cli/hf_overrides_flag.h"
#include "grpcpp/grpcpp.h"
#include "worker/comm/grpc_rendezvous.h"
#include "worker/model/model_config.h"
#include "worker/model/shard_weights.h"

namespace headroom::cli {
namespace {

constexpr char kWho[] = "headroom worker group";
// Exit status when a rank died, or the group failed, while serving.
constexpr int kExitGroupFailed = 1;
// Rank 0 prints its listening line after loading: loading may take this long.
constexpr auto kStartTimeout = std::chrono::minutes(10);
// How often the supervision loop looks for lines, signals and dead ranks.
constexpr auto kPollInterval = std::chrono::milliseconds(50);

// Kills every rank still running, at once (the group is unusable).
void KillAll(ChildProcesses& ranks) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    Child& c = ranks.child(i);
    if (c.wait_status.has_value()) continue;
    kill(c.pid, SIGKILL);
    int status = 0;
    waitpid(c.pid, &status, 0);
    c.wait_status = status;
  }
}

bool ExitedZero(const Child& c) {
  return c.wait_status.has_value() && WIFEXITED(*c.wait_status) && WEXITSTATUS(*c.wait_status) == 0;
}

}  // namespace

int RunWorkerGroup(absl::Span<const std::string_view> args, const FlagSet& flags,
                   const sigset_t& stop_signals, std::ostream& out, std::ostream& err) {
  const int64_t tp = *flags.GetInt64("tensor-parallel-size");
  // Refuse a size that cannot shard the model here, with the reasons, before starting anything.
  absl::StatusOr<worker::ModelConfig> config =
      worker::LoadModelConfig(*flags.GetString("model"), HfOverrides(flags));
  absl::Status valid = config.status();
  if (valid.ok()) valid = worker::CheckShardable(*config, {.tensor_parallel_size = tp, .rank = 0});
  if (!valid.ok()) {
    err << "error: " << valid.message() << "\n";
    return kExitRefused;
  }
  absl::StatusOr<std::string> executable = SelfExecutable();
  if (!executable.ok()) {
    err << "error: " << executable.status().message() << "\n";
    return kExitRefused;
  }

  worker::RendezvousService rendezvous;
  grpc::ServerBuilder builder;
  int rendezvous_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &rendezvous_port);
  builder.RegisterService(&rendezvous);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || rendezvous_port == 0) {
    err << "error: cannot start the group's rendezvous service on 127.0.0.1\n";
    return kExitRefused;
  }
  const std::string group_id =
      absl::StrCat("group-", getpid(), "-", absl::ToUnixNanos(absl::Now()));

  ChildProcesses ranks(*executable, kWho, err);
  for (int64_t rank = 0; rank < tp; ++rank) {
    std::vector<std::string> rank_args = {"worker"};
    rank_args.insert(rank_args.end(), args.begin(), args.end());
    rank_args.insert(rank_args.end(),
                     {"--rank", absl::StrCat(rank), "--rendezvous",
                      absl::StrCat("127.0.0.1:", rendezvous_port), "--group-id", group_id});
    // Followers serve nothing: only rank 0 talks to the router and exports metrics.
    if (rank > 0) rank_args.insert(rank_args.end(), {"--metrics-port", "-1"});
    absl::StatusOr<size_t> spawned = ranks.Spawn(absl::StrCat("rank ", rank), rank_args);
    if (!spawned.ok()) {
      err << "error: " << spawned.status().message() << "\n";
      KillAll(ranks);
      return kExitRefused;
    }
    err << kWho << ": rank " << rank << " of " << tp << " is pid " << ranks.child(*spawned).pid
        << "\n";
  }

  // Supervise: relay rank 0's lines, forward a stop signal to it, and end the group when a rank
  // ends.
  const auto start_deadline = Clock::now() + kStartTimeout;
  bool serving = false;
  bool stopping = false;
  while (true) {
    std::string line;
    size_t dead = 0;
    switch (ranks.ReadLine(0, Clock::now() + kPollInterval, stop_signals, &line, &dead)) {
      case ChildProcesses::LineResult::kLine:
        serving = serving || line.starts_with("headroom worker listening on ");
        out << line << std::endl;
        continue;
      case ChildProcesses::LineResult::kTimeout:
        if (!serving && !stopping && Clock::now() >= start_deadline) {
          err << kWho << ": rank 0 did not start serving within "
              << std::chrono::duration_cast<std::chrono::seconds>(kStartTimeout).count()
              << " s; stopping the group\n";
          KillAll(ranks);
          return kExitGroupFailed;
        }
        continue;
      case ChildProcesses::LineResult::kStopSignal:
        if (stopping) {  // a second signal: no more waiting
          KillAll(ranks);
          return kExitGroupFailed;
        }
        stopping = true;
        err << kWho << ": stopping; rank 0 drains and stops the followers\n";
        kill(ranks.child(0).pid, SIGTERM);
        continue;
      case ChildProcesses::LineResult::kDied:
        break;
    }
    const Child& ended = ranks.child(dead);
    // Stopping, the followers exit 0 once rank 0 tells them to, possibly before rank 0 itself.
    if (stopping && dead != 0 && ExitedZero(ended)) continue;
    if (stopping && dead == 0 && ExitedZero(ended)) {
      // Rank 0 drained and told the followers to stop: wait for them to finish.
      std::vector<size_t> followers;
      for (size_t i = 1; i < ranks.size(); ++i) followers.push_back(i);
      // They exit by themselves; a SIGTERM during their exit could end them by the signal.
      ranks.StopGroup(followers, stop_signals, std::chrono::seconds(5));
      bool all_zero = true;
      for (size_t i : followers) {
        if (ExitedZero(ranks.child(i))) continue;
        all_zero = false;
        err << kWho << ": " << ranks.child(i).name << " (pid " << ranks.child(i).pid << ") "
            << DescribeStatus(*ranks.child(i).wait_status) << "\n";
      }
      err << kWho << ": stopped\n";
      return all_zero ? kExitOk : kExitGroupFailed;
    }
    err << kWho << ": " << ended.name << " (pid " << ended.pid << ") "
        << DescribeStatus(*ended.wait_status) << "; taking the group down\n";
    KillAll(ranks);
    return kExitGroupFailed;
  }
}

}  // namespace headroom::cli
