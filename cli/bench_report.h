// The results of `headroom bench serve`, computed and printed as vLLM's `vllm bench serve` does:
// throughput, goodput against SLOs, and for each selected metric (ttft, tpot, itl, e2el) its
// mean, median, standard deviation and selected percentiles (numpy's linear interpolation), in
// the report and in the --result-json keys vLLM writes ("p99_ttft_ms", "request_goodput", ...).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/percentile.h"  // Percentile, used with the report
#include "nlohmann/json.hpp"

namespace headroom::cli {

struct RequestResult {
  std::string error;           // empty: it succeeded
  int64_t input_tokens = 0;    // the usage the server reported
  int64_t output_tokens = 0;   //
  double ttft_s = 0;           // to the first chunk with a choice
  double latency_s = 0;        // to the last chunk with a choice (E2EL, as vLLM times it)
  std::vector<double> itl_s;   // between chunks with a choice
  std::string generated_text;  // the streamed text (choices[0].text or delta.content), joined
};

struct ReportSpec {
  std::vector<std::string> metrics = {"ttft", "tpot", "itl"};  // --percentile-metrics
  std::vector<double> percentiles = {99};                      // --metric-percentiles
  std::map<std::string, double> goodput_slo_ms;                // --goodput: metric -> limit
};

// "ttft,tpot,itl,e2el" -> the names; InvalidArgument for another name or none.
absl::StatusOr<std::vector<std::string>> ParsePercentileMetrics(const std::string& text);
// "50,90,99.9" -> the numbers, each in (0, 100]; InvalidArgument otherwise.
absl::StatusOr<std::vector<double>> ParseMetricPercentiles(const std::string& text);
// "ttft:200 tpot:50" (space- or comma-separated KEY:MS) -> the SLOs; keys ttft, tpot, e2el, each
// value >= 0; InvalidArgument naming the pair otherwise.
absl::StatusOr<std::map<std::string, double>> ParseGoodput(const std::string& text);

// The result JSON: `header` (the run's settings) plus the numbers over `results`, which took
// `duration_s`. A request counts towards goodput when it succeeded and met every SLO (a request
// of one token has TPOT 0).
nlohmann::json Summarize(const nlohmann::json& header, const ReportSpec& spec,
                         const std::vector<RequestResult>& results, double duration_s);

// vLLM's report of `summary` (as Summarize made it with `spec`).
void PrintReport(const nlohmann::json& summary, const ReportSpec& spec, std::ostream& out);

}  // namespace headroom::cli
