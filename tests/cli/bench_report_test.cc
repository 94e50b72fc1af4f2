// `headroom bench serve`'s numbers: numpy's percentile and standard deviation (the values of
// numpy's own documentation examples), vLLM's goodput rule, and the keys and rows vLLM writes.
#include "cli/bench_report.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace headroom::cli {
namespace {

using Json = nlohmann::json;

TEST(BenchReportTest, PercentileIsNumpysLinearInterpolation) {
  // numpy.percentile docs: a = [[10, 7, 4], [3, 2, 1]]; np.percentile(a, 50) -> 3.5.
  EXPECT_DOUBLE_EQ(Percentile({10, 7, 4, 3, 2, 1}, 50), 3.5);
  // rank 0.25 * 3 = 0.75 between 1 and 2.
  EXPECT_DOUBLE_EQ(Percentile({4, 3, 2, 1}, 25), 1.75);
  EXPECT_DOUBLE_EQ(Percentile({4, 3, 2, 1}, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({}, 99), 0);
}

RequestResult Ok(double ttft_s, double latency_s, int64_t out, std::vector<double> itl = {}) {
  return {.error = "",
          .input_tokens = 10,
          .output_tokens = out,
          .ttft_s = ttft_s,
          .latency_s = latency_s,
          .itl_s = std::move(itl),
          .generated_text = "text"};
}

// Goodput counts the requests that succeeded within every SLO, per second (vLLM: a request of one
// token has TPOT 0).
TEST(BenchReportTest, GoodputCountsTheSucceededRequestsWithinEverySlo) {
  const std::vector<RequestResult> results = {
      Ok(0.1, 1.0, 10),  // TTFT 100 ms, TPOT 100 ms: good
      Ok(0.3, 0.3, 1),   // TTFT 300 ms: over
      {.error = "HTTP 400: no",
       .input_tokens = 0,
       .output_tokens = 0,
       .ttft_s = 0,
       .latency_s = 0.01,
       .itl_s = {},
       .generated_text = ""},
      Ok(0.05, 2.05, 5),  // TPOT 500 ms: over
      Ok(0.2, 0.2, 1),    // TTFT 200 ms (at the limit), TPOT 0: good
  };
  ReportSpec spec;
  spec.goodput_slo_ms = {{"ttft", 200}, {"tpot", 150}};
  const Json r = Summarize({{"max_concurrency", 2}, {"request_rate", "inf"}}, spec, results, 2.0);
  EXPECT_EQ(r["completed"], 4);
  EXPECT_EQ(r["failed"], 1);
  EXPECT_DOUBLE_EQ(r["request_throughput"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["request_goodput"].get<double>(), 1.0);
  EXPECT_EQ(r["total_output_tokens"], 17);
  EXPECT_EQ(r["total_input_tokens"], 40);
  EXPECT_EQ(r["errors"][2], "HTTP 400: no");
  EXPECT_EQ(r["generated_texts"], (Json{"text", "text", "", "text", "text"}));

  spec.goodput_slo_ms = {{"e2el", 1000}};  // requests 1, 2 and 5
  EXPECT_DOUBLE_EQ(Summarize({}, spec, results, 2.0)["request_goodput"].get<double>(), 1.5);
  spec.goodput_slo_ms.clear();
  EXPECT_TRUE(Summarize({}, spec, results, 2.0)["request_goodput"].is_null());
}

TEST(BenchReportTest, SelectedMetricsGetMeanMedianStdAndSelectedPercentiles) {
  // Latencies 1, 2, 3, 4 s: numpy.std([[1, 2], [3, 4]]) = 1.1180339887498949 (its docs).
  const std::vector<RequestResult> results = {Ok(0.5, 1, 2, {0.5}), Ok(0.5, 2, 2, {1.5}),
                                              Ok(0.5, 3, 2, {2.5}), Ok(0.5, 4, 2, {3.5})};
  ReportSpec spec;
  spec.metrics = {"e2el", "itl"};
  spec.percentiles = {25, 99.9};
  const Json r = Summarize({{"max_concurrency", 4}, {"request_rate", 2.5}}, spec, results, 4.0);
  EXPECT_DOUBLE_EQ(r["mean_e2el_ms"].get<double>(), 2500);
  EXPECT_DOUBLE_EQ(r["median_e2el_ms"].get<double>(), 2500);
  EXPECT_NEAR(r["std_e2el_ms"].get<double>(), 1118.0339887498949, 1e-9);
  EXPECT_DOUBLE_EQ(r["p25_e2el_ms"].get<double>(), 1750);
  EXPECT_NEAR(r["p99.9_itl_ms"].get<double>(), 3497, 1e-9);  // rank 2.997 between 2.5 and 3.5 s
  EXPECT_FALSE(r.contains("mean_ttft_ms"));
  EXPECT_FALSE(r.contains("p99_e2el_ms"));

  std::ostringstream report;
  PrintReport(r, spec, report);
  const std::string text = report.str();
  for (const char* row :
       {"Request rate configured (RPS):          2.50", "End-to-end Latency",
        "P25 E2EL (ms):                          1750.00", "P99.9 ITL (ms):", "Median ITL (ms):"}) {
    EXPECT_NE(text.find(row), std::string::npos) << row << " in\n" << text;
  }
  for (const char* absent : {"TTFT", "Request goodput"}) {
    EXPECT_EQ(text.find(absent), std::string::npos) << absent << " in\n" << text;
  }
  EXPECT_LT(text.find("Inter-token Latency"), text.find("End-to-end Latency"));  // vLLM's order
}

TEST(BenchReportTest, FlagValuesAreParsedOrRefusedWithTheBadWord) {
  EXPECT_EQ(*ParsePercentileMetrics("ttft,e2el"), (std::vector<std::string>{"ttft", "e2el"}));
  EXPECT_EQ(*ParseMetricPercentiles("50, 99.9"), (std::vector<double>{50, 99.9}));
  EXPECT_EQ(*ParseGoodput("ttft:200 tpot:50.5"),
            (std::map<std::string, double>{{"ttft", 200}, {"tpot", 50.5}}));
  EXPECT_EQ(*ParseGoodput("e2el:1000,ttft:3"),
            (std::map<std::string, double>{{"e2el", 1000}, {"ttft", 3}}));
  for (const auto& [status, word] :
       {std::pair{ParsePercentileMetrics("ttft,latency").status(), "latency"},
        std::pair{ParseMetricPercentiles("50,0").status(), "\"0\""},
        std::pair{ParseMetricPercentiles("101").status(), "101"},
        std::pair{ParseGoodput("itl:5").status(), "itl:5"},
        std::pair{ParseGoodput("ttft:-1").status(), "ttft:-1"},
        std::pair{ParseGoodput("ttft").status(), "ttft"}}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << word;
    EXPECT_NE(status.message().find(word), std::string::npos) << status.message();
  }
  EXPECT_FALSE(ParsePercentileMetrics(",").ok());
}

}  // namespace
}  // namespace headroom::cli
