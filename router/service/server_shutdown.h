// ShutdownServer: grpc::Server::Shutdown that does not wait on idle client connections.
//
// grpc::Server::Shutdown(deadline) stops accepting, sends each connection a GOAWAY with a ping,
// and returns only when every connection has answered that ping (or when its calls are cancelled
// at `deadline`). A connected but idle gRPC C-core client reads the GOAWAY only on its backup
// poll, every 5 s; a stopped client never does, and the server waits for it until `deadline`.
// So a router with one idle client took 5 s longer to exit after SIGTERM (30 s with a stopped
// one) although no call was open.
//
// ShutdownServer runs Shutdown(deadline) and, once `wait_idle` reports that no call of the
// server's is alive and none has started for `quiet`, closes the connections that are left
// (grpc_server_cancel_all_calls: with no call open it only disconnects). A call that arrives on an
// old connection after that quiet period (a client that sent it before reading the GOAWAY) is
// cancelled; a client that follows the GOAWAY has moved to another replica by then.
#pragma once

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"

namespace headroom::router {

// `wait_idle(deadline)` blocks until none of the server's calls is alive (true) or `deadline`
// (false), e.g. InferenceService::WaitForIdle. Returns when the server has shut down.
void ShutdownServer(grpc::Server& server, absl::Time deadline,
                    absl::FunctionRef<bool(absl::Time)> wait_idle,
                    absl::Duration quiet = absl::Milliseconds(100));

}  // namespace headroom::router
