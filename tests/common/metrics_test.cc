#include "common/metrics.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace headroom::metrics {
namespace {

TEST(MetricsTest, ExactExposition) {
  Registry registry;
  Family<Counter>& tokens = registry.AddCounter("vllm:prompt_tokens", "Prefill tokens.",
                                                {"model_name"});
  Family<Gauge>& running = registry.AddGauge("vllm:num_requests_running", "Running requests.");
  Family<Histogram>& ttft = registry.AddHistogram("vllm:time_to_first_token_seconds",
                                                  "Time to first token.", {"model_name"},
                                                  {0.1, 1.0});
  tokens.WithLabels({"m"}).Increment(3);
  running.WithLabels({}).Set(2);
  ttft.WithLabels({"m"}).Observe(0.0625);
  ttft.WithLabels({"m"}).Observe(0.5);
  ttft.WithLabels({"m"}).Observe(7);
  EXPECT_EQ(registry.Render(),
            "# HELP vllm:prompt_tokens_total Prefill tokens.\n"
            "# TYPE vllm:prompt_tokens_total counter\n"
            "vllm:prompt_tokens_total{model_name=\"m\"} 3\n"
            "# HELP vllm:num_requests_running Running requests.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running 2\n"
            "# HELP vllm:time_to_first_token_seconds Time to first token.\n"
            "# TYPE vllm:time_to_first_token_seconds histogram\n"
            "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.1\"} 1\n"
            "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"1\"} 2\n"
            "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"
            "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 7.5625\n"
            "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 3\n");
}

TEST(MetricsTest, ChildrenAreStableAndSortedByLabelValues) {
  Registry registry;
  Family<Counter>& success = registry.AddCounter("vllm:request_success", "Finished requests.",
                                                 {"finished_reason", "model_name"});
  Counter& stop = success.WithLabels({"stop", "m"});
  success.WithLabels({"abort", "m"}).Increment();
  stop.Increment(2);
  EXPECT_EQ(&stop, &success.WithLabels({"stop", "m"}));
  EXPECT_EQ(registry.Render(),
            "# HELP vllm:request_success_total Finished requests.\n"
            "# TYPE vllm:request_success_total counter\n"
            "vllm:request_success_total{finished_reason=\"abort\",model_name=\"m\"} 1\n"
            "vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} 2\n");
}

TEST(MetricsTest, Escaping) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeHelp("say \"x\" \\ y\nz"), "say \"x\" \\\\ y\\nz");
  Registry registry;
  registry.AddGauge("g", "line1\nline2 \\", {"path"}).WithLabels({"C:\\x \"q\"\n"}).Set(-1.5);
  EXPECT_EQ(registry.Render(),
            "# HELP g line1\\nline2 \\\\\n"
            "# TYPE g gauge\n"
            "g{path=\"C:\\\\x \\\"q\\\"\\n\"} -1.5\n");
}

TEST(MetricsTest, FormatValue) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
}

TEST(MetricsTest, HistogramBucketsAreInclusiveAndCumulative) {
  Histogram histogram({1, 2, 5});
  for (double v : {0.0, 1.0, 1.0000001, 2.0, 4.9, 5.0, 5.1, 100.0, -3.0}) histogram.Observe(v);
  const Histogram::Snapshot s = histogram.Read();
  // <=1: 0, 1, -3; <=2: +1.0000001, 2; <=5: +4.9, 5; +Inf: +5.1, 100.
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{3, 5, 7, 9}));
  EXPECT_EQ(s.count, 9u);
  EXPECT_NEAR(s.sum, 0 + 1 + 1.0000001 + 2 + 4.9 + 5 + 5.1 + 100 - 3, 1e-9);
}

TEST(MetricsTest, CounterIgnoresNegativeIncrements) {
  Counter counter;
  counter.Increment(2);
  counter.Increment(-1);
  EXPECT_EQ(counter.Value(), 2);
}

TEST(MetricsTest, ConcurrentIncrementsSum) {
  Registry registry;
  Family<Counter>& counter = registry.AddCounter("c", "c", {"t"});
  Family<Histogram>& histogram = registry.AddHistogram("h", "h", {}, {0.5});
  Gauge& gauge = registry.AddGauge("g", "g").WithLabels({});
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        counter.WithLabels({t % 2 == 0 ? "even" : "odd"}).Increment();
        histogram.WithLabels({}).Observe(i % 2 == 0 ? 0.25 : 1.0);
        gauge.Increment();
        if (i % 1000 == 0) (void)registry.Render();  // rendering races with increments
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter.WithLabels({"even"}).Value(), kThreads / 2 * kPerThread);
  EXPECT_EQ(counter.WithLabels({"odd"}).Value(), kThreads / 2 * kPerThread);
  EXPECT_EQ(gauge.Value(), kThreads * kPerThread);
  const Histogram::Snapshot s = histogram.WithLabels({}).Read();
  EXPECT_EQ(s.cumulative[0], uint64_t{kThreads} * kPerThread / 2);
  EXPECT_EQ(s.count, uint64_t{kThreads} * kPerThread);
  EXPECT_DOUBLE_EQ(s.sum, kThreads * (kPerThread / 2) * 1.25);
}

TEST(MetricsDeathTest, ProgrammingErrorsCheck) {
  Registry registry;
  registry.AddGauge("g", "g", {"a"});
  EXPECT_DEATH(registry.AddGauge("g", "again"), "duplicate");
  EXPECT_DEATH(registry.AddGauge("bad-name", "x"), "bad metric name");
  EXPECT_DEATH(registry.AddCounter("x_total", "x"), "_total");
}

}  // namespace
}  // namespace headroom::metrics
