#include "cli/bench_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace headroom::cli {
namespace {

using Json = nlohmann::json;

struct MetricName {
  const char* key;    // "ttft": in flags and result keys
  const char* shown;  // "TTFT": in the report's rows
  const char* title;  // the report's section
};
constexpr MetricName kMetrics[] = {
    {"ttft", "TTFT", "Time to First Token"},
    {"tpot", "TPOT", "Time per Output Token (excl. 1st token)"},
    {"itl", "ITL", "Inter-token Latency"},
    {"e2el", "E2EL", "End-to-end Latency"},
};

// vLLM's spelling of a percentile in keys and rows: 99 -> "99", 99.9 -> "99.9".
std::string PercentileWord(double p) {
  return p == std::floor(p) ? absl::StrCat(static_cast<int64_t>(p)) : absl::StrCat(p);
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// numpy.std's default (the population's).
double StdDev(const std::vector<double>& values) {
  if (values.empty()) return 0;
  const double mean = Mean(values);
  double sum = 0;
  for (const double v : values) sum += (v - mean) * (v - mean);
  return std::sqrt(sum / static_cast<double>(values.size()));
}

std::vector<std::string> Words(const std::string& text) {
  return absl::StrSplit(text, absl::ByAnyChar(", "), absl::SkipEmpty());
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParsePercentileMetrics(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& word : Words(text)) {
    const bool known = std::any_of(std::begin(kMetrics), std::end(kMetrics),
                                   [&](const MetricName& m) { return word == m.key; });
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("--percentile-metrics takes ttft, tpot, itl and e2el, got \"", word, "\""));
    }
    out.emplace_back(word);
  }
  if (out.empty()) return absl::InvalidArgumentError("--percentile-metrics names no metric");
  return out;
}

absl::StatusOr<std::vector<double>> ParseMetricPercentiles(const std::string& text) {
  std::vector<double> out;
  for (const std::string& word : Words(text)) {
    double p = 0;
    if (!absl::SimpleAtod(word, &p) || !(p > 0 && p <= 100)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metric-percentiles takes numbers in (0, 100], got \"", word, "\""));
    }
    out.push_back(p);
  }
  if (out.empty()) return absl::InvalidArgumentError("--metric-percentiles names no percentile");
  return out;
}

absl::StatusOr<std::map<std::string, double>> ParseGoodput(const std::string& text) {
  std::map<std::string, double> out;
  for (const std::string& pair : Words(text)) {
    const std::vector<std::string> parts = absl::StrSplit(pair, ':');
    double ms = 0;
    if (parts.size() != 2 || (parts[0] != "ttft" && parts[0] != "tpot" && parts[0] != "e2el") ||
        !absl::SimpleAtod(parts[1], &ms) || !(ms >= 0) || std::isinf(ms)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--goodput takes KEY:MILLISECONDS with KEY ttft, tpot or e2el and a "
                       "number >= 0, got \"",
                       pair, "\""));
    }
    out[parts[0]] = ms;
  }
  return out;
}

Json Summarize(const Json& header, const ReportSpec& spec,
               const std::vector<RequestResult>& results, double duration_s) {
  Json out = header;
  int64_t completed = 0, good = 0, input_tokens = 0, output_tokens = 0;
  std::map<std::string, std::vector<double>> seconds;  // by metric
  Json input_lens = Json::array(), output_lens = Json::array(), ttfts = Json::array(),
       itls = Json::array(), errors = Json::array(), texts = Json::array();
  for (const RequestResult& r : results) {
    errors.push_back(r.error);
    texts.push_back(r.generated_text);
    input_lens.push_back(r.input_tokens);
    output_lens.push_back(r.output_tokens);
    ttfts.push_back(r.ttft_s);
    itls.push_back(r.itl_s);
    if (!r.error.empty()) continue;
    ++completed;
    input_tokens += r.input_tokens;
    output_tokens += r.output_tokens;
    const double tpot = r.output_tokens > 1
                            ? (r.latency_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1)
                            : 0.0;
    seconds["ttft"].push_back(r.ttft_s);
    if (r.output_tokens > 1) seconds["tpot"].push_back(tpot);
    seconds["itl"].insert(seconds["itl"].end(), r.itl_s.begin(), r.itl_s.end());
    seconds["e2el"].push_back(r.latency_s);
    const std::map<std::string, double> measured_ms = {
        {"ttft", r.ttft_s * 1000}, {"tpot", tpot * 1000}, {"e2el", r.latency_s * 1000}};
    good += std::all_of(spec.goodput_slo_ms.begin(), spec.goodput_slo_ms.end(),
                        [&](const auto& slo) { return measured_ms.at(slo.first) <= slo.second; });
  }
  out["duration"] = duration_s;
  out["completed"] = completed;
  out["failed"] = static_cast<int64_t>(results.size()) - completed;
  out["total_input_tokens"] = input_tokens;
  out["total_output_tokens"] = output_tokens;
  out["request_throughput"] = static_cast<double>(completed) / duration_s;
  out["request_goodput"] =
      spec.goodput_slo_ms.empty() ? Json(nullptr) : Json(static_cast<double>(good) / duration_s);
  out["output_throughput"] = static_cast<double>(output_tokens) / duration_s;
  out["total_token_throughput"] = static_cast<double>(input_tokens + output_tokens) / duration_s;
  for (const std::string& metric : spec.metrics) {
    const std::vector<double>& values = seconds[metric];
    out[absl::StrCat("mean_", metric, "_ms")] = Mean(values) * 1000;
    out[absl::StrCat("median_", metric, "_ms")] = Percentile(values, 50) * 1000;
    out[absl::StrCat("std_", metric, "_ms")] = StdDev(values) * 1000;
    for (const double p : spec.percentiles) {
      out[absl::StrCat("p", PercentileWord(p), "_", metric, "_ms")] = Percentile(values, p) * 1000;
    }
  }
  out["input_lens"] = std::move(input_lens);
  out["output_lens"] = std::move(output_lens);
  out["ttfts"] = std::move(ttfts);
  out["itls"] = std::move(itls);
  out["generated_texts"] = std::move(texts);
  out["errors"] = std::move(errors);
  return out;
}

void PrintReport(const Json& r, const ReportSpec& spec, std::ostream& out) {
  const auto row = [&](const std::string& label, const std::string& value) {
    out << absl::StrFormat("%-40s%s\n", label, value);
  };
  const auto number = [&](const std::string& label, const std::string& key) {
    row(label, absl::StrFormat("%.2f", r[key].get<double>()));
  };
  const auto count = [&](const char* label, const char* key) {
    row(label, absl::StrCat(r[key].get<int64_t>()));
  };
  const auto section = [&](const std::string& title) {
    const size_t pad = title.size() < 50 ? 50 - title.size() : 0;
    out << std::string(pad / 2, '-') << title << std::string(pad - pad / 2, '-') << "\n";
  };
  out << "============ Serving Benchmark Result ============\n";
  count("Successful requests:", "completed");
  count("Failed requests:", "failed");
  count("Maximum request concurrency:", "max_concurrency");
  if (r["request_rate"].is_number()) number("Request rate configured (RPS):", "request_rate");
  number("Benchmark duration (s):", "duration");
  count("Total input tokens:", "total_input_tokens");
  count("Total generated tokens:", "total_output_tokens");
  number("Request throughput (req/s):", "request_throughput");
  if (!spec.goodput_slo_ms.empty()) number("Request goodput (req/s):", "request_goodput");
  number("Output token throughput (tok/s):", "output_throughput");
  number("Total Token throughput (tok/s):", "total_token_throughput");
  for (const MetricName& m : kMetrics) {
    if (std::find(spec.metrics.begin(), spec.metrics.end(), m.key) == spec.metrics.end()) continue;
    section(m.title);
    number(absl::StrCat("Mean ", m.shown, " (ms):"), absl::StrCat("mean_", m.key, "_ms"));
    number(absl::StrCat("Median ", m.shown, " (ms):"), absl::StrCat("median_", m.key, "_ms"));
    for (const double p : spec.percentiles) {
      const std::string word = PercentileWord(p);
      number(absl::StrCat("P", word, " ", m.shown, " (ms):"),
             absl::StrCat("p", word, "_", m.key, "_ms"));
    }
  }
  out << std::string(50, '=') << "\n";
}

}  // namespace headroom::cli
