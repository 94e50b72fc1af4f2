// `headroom router`: the router process, gRPC only (headroom.v1.Inference + grpc.health.v1.Health)
// in front of a static list of worker groups (--workers). Prints
// `headroom router listening on HOST:PORT` on stdout once it serves; SIGTERM or SIGINT stops
// accepting, lets open streams finish (at most --shutdown-timeout-s) and exits 0.
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

inline constexpr std::string_view kRouterSummary =
    "Route headroom.v1.Inference requests to worker groups by free KV blocks.";

int RunRouterCommand(absl::Span<const std::string_view> args, std::ostream& out,
                     std::ostream& err);

}  // namespace headroom::cli
