// `headroom worker`: one worker process serving headroom.v1.Worker (and grpc.health.v1.Health)
// over gRPC for one model on the CPU backend. Prints `headroom worker listening on HOST:PORT` on
// stdout once it is SERVING; SIGTERM or SIGINT drains (health NOT_SERVING, new Submits refused,
// running streams finish, at most --drain-timeout-s) and exits 0.
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

inline constexpr std::string_view kWorkerSummary =
    "Serve one model over gRPC (headroom.v1.Worker) as a worker process.";

int RunWorkerCommand(absl::Span<const std::string_view> args, std::ostream& out,
                     std::ostream& err);

}  // namespace headroom::cli
