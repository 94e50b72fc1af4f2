// The tensor-parallel group launcher: `headroom worker --tensor-parallel-size N` (N > 1).
//
// It serves the group's rendezvous on loopback, starts N rank processes (`headroom worker` with
// the same flags plus --rank, --rendezvous and --group-id; rank i would own device i), relays
// rank 0's stdout (so its "headroom worker listening on HOST:PORT" line is this process's), and
// supervises (docs/tensor_parallel.md):
//   - SIGTERM/SIGINT go to rank 0, which drains and tells the followers to stop; the launcher
//     exits with rank 0's status once every rank has ended;
//   - any rank that ends otherwise takes the group down at once: the other ranks are killed, so
//     rank 0's streams and load reports break and the router fails over, and the launcher exits 1
//     (Kubernetes restarts the pod).
#pragma once

#include <signal.h>

#include <ostream>
#include <string_view>

#include "absl/types/span.h"
#include "common/flags.h"

namespace headroom::cli {

// `args` are the worker command's arguments (what `flags` parsed); returns the exit status.
int RunWorkerGroup(absl::Span<const std::string_view> args, const FlagSet& flags,
                   const sigset_t& stop_signals, std::ostream& out, std::ostream& err);

}  // namespace headroom::cli
