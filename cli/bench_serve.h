// `headroom bench serve`: online serving benchmark against a running router's OpenAI API, like
// vLLM's `vllm bench serve` (random dataset, openai-completions backend): --num-prompts prompts of
// exactly --random-input-len tokens (random words tokenized by the server's /tokenize, cut to
// length, sent as token ids), each streaming --random-output-len tokens, sent at --request-rate
// (Poisson; inf = all at once) with at most --max-concurrency in flight. Reports what vLLM's
// reports: request and token throughput, TTFT, TPOT (excluding the first token) and inter-token
// latency (mean, median, p99), and writes them with every request's numbers to --result-json.
// Exit status 0 when every request succeeded, 1 otherwise (the first failure is printed), 2 for a
// bad flag.
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

int RunBenchServe(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace headroom::cli
