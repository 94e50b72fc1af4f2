// SIGTERM and SIGINT for the serving subcommands (worker, router, up).
#pragma once

#include <signal.h>

namespace headroom::cli {

// Blocks SIGTERM and SIGINT in the calling thread, so every thread started afterwards (gRPC's,
// the engine's) inherits the mask and the main thread alone takes them with sigwait /
// sigtimedwait. Returns the set to wait on.
inline sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

}  // namespace headroom::cli
