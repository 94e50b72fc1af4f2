// `headroom bench`: offline throughput of the engine, like vLLM's benchmark_throughput: random
// prompts of --input-len tokens, --output-len tokens each (EOS ignored), all queued at once.
// `headroom bench serve ...`: the online benchmark against a running router (bench_serve.h).
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

inline constexpr std::string_view kBenchSummary =
    "Measure offline engine throughput on random prompts; `bench serve`: a running router's.";

int RunBenchCommand(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace headroom::cli
