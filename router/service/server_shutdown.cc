#include "router/service/server_shutdown.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "grpc/grpc.h"

namespace headroom::router {

void ShutdownServer(grpc::Server& server, absl::Time deadline,
                    absl::FunctionRef<bool(absl::Time)> wait_idle, absl::Duration quiet) {
  absl::Notification shutting_down;
  std::thread shutdown([&] {
    shutting_down.Notify();
    server.Shutdown(absl::ToChronoTime(deadline));  // returns when every connection is gone
  });
  shutting_down.WaitForNotification();
  // Idle now and still idle after `quiet`: the open calls are done, close what is left. (Shutdown
  // has begun by then: it starts within microseconds of the notification, `quiet` is far longer.)
  while (wait_idle(deadline)) {
    absl::SleepFor(quiet);
    if (wait_idle(absl::Now())) {
      // The core API, since grpc::Server has no call for it; c_server() is the core handle.
      grpc_server_cancel_all_calls(server.c_server());
      break;
    }
  }
  shutdown.join();  // past `deadline`, Shutdown has cancelled the remaining calls itself
  server.Wait();
}

}  // namespace headroom::router
