// `headroom up`: a local cluster on loopback. Starts --groups `headroom worker` children (CPU
// backend, one process per group) and one `headroom router` in front of them, all from this same
// executable. Prints `headroom up listening on HOST:PORT` (the router's gRPC address) as its first
// stdout line, then every URL and a command that queries the cluster. SIGTERM or SIGINT stops the
// router, then the workers (bounded, then SIGKILL) and exits 0; a child that dies on its own stops
// the rest and exits 1; a child that does not come up within 120 s stops the rest and exits 2.
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

inline constexpr std::string_view kUpSummary =
    "Start a local cluster: worker groups and a router on loopback, until Ctrl-C.";

int RunUpCommand(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace headroom::cli
