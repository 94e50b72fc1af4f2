// `headroom bench serve`: online serving benchmark against a running router's OpenAI API, like
// vLLM's `vllm bench serve`, with its flags: the random or ShareGPT dataset (cli/bench_workload.h),
// the completions or chat API (--backend openai / openai-chat), arrivals at --request-rate with
// --burstiness and at most --max-concurrency in flight. Reports what vLLM's reports
// (cli/bench_report.h): request, goodput and token throughput, and TTFT, TPOT (excluding the
// first token), inter-token and end-to-end latency, and writes them with every request's numbers
// to --result-json. Exit status 0 when every request succeeded, 1 otherwise (the first failure
// is printed), 2 for a bad flag or dataset file.
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

int RunBenchServe(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace headroom::cli
