// `headroom bench`: offline throughput of the engine, like vLLM's benchmark_throughput: random
// prompts of --input-len tokens, --output-len tokens each (EOS ignored), all queued at once.
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

inline constexpr std::string_view kBenchSummary =
    "Measure offline engine throughput (requests/s, tokens/s) on random prompts.";

int RunBenchCommand(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace headroom::cli
