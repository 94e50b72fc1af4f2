// `headroom bench serve` against a real router and two workers (the llama-gqa fixture, byte
// tokenizer, max_model_len 256): what it counts is what the router reports, on both datasets and
// both APIs, and bad flags are refused before anything is sent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "child_process.h"
#include "fixtures.h"
#include "http_client.h"
#include "http_cluster.h"
#include "nlohmann/json.hpp"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

std::filesystem::path TempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("headroom_" + name + "_" + std::to_string(::getpid()) + ".json");
}

struct BenchRun {
  std::optional<int> exit_status;
  std::vector<std::string> stdout_lines;
  Json result;  // --result-json, or discarded
};

class BenchServeE2eTest : public SharedClusterTest<BenchServeE2eTest> {
 protected:
  static std::string Url() { return "http://127.0.0.1:" + std::to_string(cluster_->http_port); }

  // `headroom bench serve FLAGS` against the cluster, with its result file read back.
  static BenchRun Run(const std::vector<std::string>& flags) {
    const std::filesystem::path result = TempPath("bench_result");
    std::vector<std::string> args = {"serve", "--base-url",    Url(),          "--api-key",
                                     kApiKey, "--result-json", result.string()};
    args.insert(args.end(), flags.begin(), flags.end());
    ChildProcess bench("bench", args);
    BenchRun run;
    run.exit_status = bench.WaitExit(seconds(60));
    run.stdout_lines.push_back(bench.first_line());
    for (std::string line = bench.NextLine(seconds(1)); !line.empty();
         line = bench.NextLine(seconds(1))) {
      run.stdout_lines.push_back(line);
    }
    std::ifstream file(result);
    run.result = Json::parse(file, nullptr, false);
    std::filesystem::remove(result);
    return run;
  }

  // The tokens the router's /tokenize counts in `text` (special tokens added, as vLLM counts a
  // ShareGPT turn).
  static int64_t Tokens(const std::string& text) {
    const HttpResponse r = cluster_->Post("/tokenize", Json{{"prompt", text}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return Json::parse(r.body)["count"].get<int64_t>();
  }
};

bool HasLine(const BenchRun& run, const std::string& start) {
  for (const std::string& line : run.stdout_lines) {
    if (line.rfind(start, 0) == 0) return true;
  }
  return false;
}

// Every request's prompt is exactly the asked length and it streams exactly the asked tokens (the
// usage the router reports), every latency reported is consistent with the per-request numbers
// written, and nothing failed.
TEST_F(BenchServeE2eTest, CountsEveryTokenOfEveryRequest) {
  const BenchRun run =
      Run({"--num-prompts", "12", "--random-input-len", "20", "--random-output-len", "8",
           "--ignore-eos", "--max-concurrency", "4", "--request-rate", "100"});
  ASSERT_EQ(run.exit_status, 0);
  const Json& r = run.result;
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["model_id"], worker::testdata::FixtureDir("llama-gqa").string());
  EXPECT_EQ(r["completed"], 12);
  EXPECT_EQ(r["failed"], 0);
  EXPECT_EQ(r["total_input_tokens"], 12 * 20);
  EXPECT_EQ(r["total_output_tokens"], 12 * 8);
  EXPECT_EQ(r["input_lens"], Json(std::vector<int>(12, 20)));
  EXPECT_EQ(r["output_lens"], Json(std::vector<int>(12, 8)));
  EXPECT_EQ(r["errors"], Json(std::vector<std::string>(12, "")));
  EXPECT_EQ(r["max_concurrency"], 4);
  double ttft_sum = 0;
  for (size_t i = 0; i < 12; ++i) {
    const double ttft = r["ttfts"][i].get<double>();
    EXPECT_GT(ttft, 0.0);
    EXPECT_LT(ttft, r["duration"].get<double>());
    ttft_sum += ttft;
    // At most one gap per token after the first: every worker message makes a chunk, even one
    // whose text is held back, but a worker sends the tokens that came while its last write was
    // in flight in one message (vLLM's server merges them too when the client lags).
    EXPECT_LE(r["itls"][i].size(), 7u);
  }
  EXPECT_NEAR(r["mean_ttft_ms"].get<double>(), ttft_sum / 12 * 1000, 1e-6);
  EXPECT_LE(r["median_ttft_ms"].get<double>(), r["p99_ttft_ms"].get<double>());
  EXPECT_NEAR(r["output_throughput"].get<double>(), 96 / r["duration"].get<double>(), 1e-6);
  EXPECT_NEAR(r["request_throughput"].get<double>(), 12 / r["duration"].get<double>(), 1e-6);
  EXPECT_TRUE(r["request_goodput"].is_null());
}

// vLLM's --random-prefix-len and --random-range-ratio: every prompt is the 16-token prefix plus
// 10 to 30 tokens of its own, asks for 4 to 12, and gets them (--ignore-eos).
TEST_F(BenchServeE2eTest, RandomPrefixAndRangeRatioShapeThePrompts) {
  const BenchRun run =
      Run({"--num-prompts", "40", "--random-input-len", "20", "--random-output-len", "8",
           "--random-prefix-len", "16", "--random-range-ratio", "0.5", "--ignore-eos",
           "--max-concurrency", "8"});
  ASSERT_EQ(run.exit_status, 0) << (run.result.is_object() ? run.result["errors"].dump() : "");
  const Json& r = run.result;
  ASSERT_EQ(r["completed"], 40);
  std::set<int64_t> inputs;
  std::set<int64_t> outputs;
  for (size_t i = 0; i < 40; ++i) {
    const auto in = r["input_lens"][i].get<int64_t>();
    const auto out = r["output_lens"][i].get<int64_t>();
    EXPECT_GE(in, 16 + 10);
    EXPECT_LE(in, 16 + 30);
    EXPECT_GE(out, 4);
    EXPECT_LE(out, 12);
    inputs.insert(in);
    outputs.insert(out);
  }
  EXPECT_GT(inputs.size(), 5u) << "the input lengths vary";
  EXPECT_GT(outputs.size(), 3u) << "the output lengths vary";
}

// A ShareGPT file: only the conversations vLLM's filter passes are sent (a prompt over 1024
// tokens would also be over the workers' max_model_len 256 and fail), each asking for as many
// tokens as the router counts in its reply; with more prompts than pass, samples repeat, and
// with --no-oversample the run is shorter and says so.
TEST_F(BenchServeE2eTest, ShareGptSendsWhatPassesTheFilterAskingForTheRepliesLength) {
  const std::vector<std::pair<std::string, std::string>> valid = {
      {"Tell me about the sea.", "The sea is wide and deep."},
      {"What is two plus two?", "Four, of course."},
      {"Why is the sky blue?", "Because of scattering."}};
  Json conversations = Json::array();
  const auto add = [&](std::vector<std::string> turns) {
    Json entry = {{"id", conversations.size()}, {"conversations", Json::array()}};
    for (size_t i = 0; i < turns.size(); ++i) {
      entry["conversations"].push_back(
          {{"from", i % 2 == 0 ? "human" : "gpt"}, {"value", turns[i]}});
    }
    conversations.push_back(entry);
  };
  add({valid[0].first, valid[0].second});
  add({"Hi", "Hello there, friend."});  // prompt under 4 tokens
  add({valid[1].first, valid[1].second});
  add({"Name a color please.", "ok"});                // reply under 4 tokens
  add({"A question left alone."});                    // one turn
  add({std::string(1100, 'a'), "Too long to ask."});  // prompt over 1024 tokens
  add({valid[2].first, valid[2].second, "And why is the sunset red?"});
  const std::filesystem::path dataset = TempPath("sharegpt");
  std::ofstream(dataset) << conversations.dump();

  int64_t input_tokens = 0, output_tokens = 0;
  std::multiset<int64_t> prompt_lens;
  for (const auto& [prompt, reply] : valid) {
    input_tokens += Tokens(prompt);
    output_tokens += Tokens(reply);
    prompt_lens.insert(Tokens(prompt));
  }
  const std::vector<std::string> sharegpt = {
      "--dataset-name", "sharegpt", "--dataset-path", dataset.string(), "--ignore-eos",
      "--seed",         "7"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), sharegpt.begin(), sharegpt.end());
    return more;
  };

  const BenchRun exact = Run(with({"--num-prompts", "3"}));
  ASSERT_EQ(exact.exit_status, 0);
  EXPECT_EQ(exact.result["dataset_name"], "sharegpt");
  EXPECT_EQ(exact.result["completed"], 3);
  EXPECT_EQ(exact.result["total_input_tokens"], input_tokens);
  EXPECT_EQ(exact.result["total_output_tokens"], output_tokens);

  const BenchRun repeated = Run(with({"--num-prompts", "8"}));
  ASSERT_EQ(repeated.exit_status, 0);
  EXPECT_EQ(repeated.result["completed"], 8);
  for (const Json& len : repeated.result["input_lens"]) {
    EXPECT_EQ(prompt_lens.count(len.get<int64_t>()), 1u) << len;
  }

  const BenchRun shorter = Run(with({"--num-prompts", "8", "--no-oversample"}));
  std::filesystem::remove(dataset);
  ASSERT_EQ(shorter.exit_status, 0);
  EXPECT_EQ(shorter.result["completed"], 3);
  EXPECT_EQ(shorter.result["num_prompts"], 3);
  EXPECT_TRUE(HasLine(shorter, "only 3 ShareGPT conversations pass the filter"));
}

// --backend openai-chat: the random prompts go as the user's message (the router's chat template
// adds its own tokens to each, the same for all) and each streams the asked tokens.
TEST_F(BenchServeE2eTest, ChatBackendStreamsTheAskedTokensForEachMessage) {
  const BenchRun run = Run({"--backend", "openai-chat", "--num-prompts", "6", "--random-input-len",
                            "20", "--random-output-len", "8", "--ignore-eos"});
  ASSERT_EQ(run.exit_status, 0) << (run.result.is_object() ? run.result["errors"].dump() : "");
  EXPECT_EQ(run.result["endpoint"], "/v1/chat/completions");
  EXPECT_EQ(run.result["completed"], 6);
  EXPECT_EQ(run.result["total_output_tokens"], 6 * 8);
  const int64_t first = run.result["input_lens"][0].get<int64_t>();
  EXPECT_GT(first, 20);
  EXPECT_EQ(run.result["input_lens"], Json(std::vector<int64_t>(6, first)));
}

// A request whose tokens' text is all held back still streams chunks, and bench serve times them
// as vLLM's does, by chunk, not by text (as a big-vocabulary model with a byte tokenizer or a
// special token does). --extra-body, vLLM's flag, forces "a" and a stop string:
//  - stop "a" ends every request at its first token with no text: one chunk, empty text, and
//    it counts (TTFT, 1 output token), not a failure;
//  - a stop string of 16 a's holds the text of 8 back to the end: the first token still
//    arrives in a chunk of its own, so every request has at least one inter-token gap, and its
//    text is joined from the chunks.
TEST_F(BenchServeE2eTest, ChunksWithoutTextStillCountAsTokens) {
  const std::string force_a = R"({"logit_bias": {")" + std::to_string(int{'a'}) + R"(": 100}, )";
  const BenchRun stopped =
      Run({"--num-prompts", "4", "--random-input-len", "10", "--random-output-len", "4",
           "--extra-body", force_a + R"("stop": ["a"]})"});
  ASSERT_EQ(stopped.exit_status, 0)
      << (stopped.result.is_object() ? stopped.result["errors"].dump() : "");
  EXPECT_EQ(stopped.result["completed"], 4);
  EXPECT_EQ(stopped.result["output_lens"], Json(std::vector<int64_t>(4, 1)));
  EXPECT_EQ(stopped.result["generated_texts"], Json(std::vector<std::string>(4, "")));
  for (const Json& ttft : stopped.result["ttfts"]) EXPECT_GT(ttft.get<double>(), 0.0);

  for (const char* backend : {"openai", "openai-chat"}) {
    const BenchRun held =
        Run({"--backend", backend, "--num-prompts", "4", "--random-input-len", "10",
             "--random-output-len", "8", "--ignore-eos", "--percentile-metrics", "ttft,e2el",
             "--extra-body", force_a + R"("stop": ["aaaaaaaaaaaaaaaa"]})"});
    ASSERT_EQ(held.exit_status, 0) << backend;
    EXPECT_EQ(held.result["total_output_tokens"], 4 * 8) << backend;
    EXPECT_EQ(held.result["generated_texts"], Json(std::vector<std::string>(4, "aaaaaaaa")))
        << backend;
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_GE(held.result["itls"][i].size(), 1u) << backend << " request " << i;
    }
    // (Chunks read in one recv share a time, so the gaps, and E2EL - TTFT, may be 0.)
    EXPECT_LE(held.result["mean_ttft_ms"].get<double>(), held.result["mean_e2el_ms"].get<double>())
        << backend;
  }
}

// vLLM's sampling flags reach every request under the API's names: an out-of-range value of
// each is the router's 400 naming that field. --extra-body's keys win over them.
TEST_F(BenchServeE2eTest, SamplingFlagsReachEveryRequestUnderTheApisNames) {
  const std::vector<std::array<std::string, 3>> cases = {
      {"--temperature", "-1", "temperature"},
      {"--top-p", "2", "top_p"},
      {"--top-k", "-5", "top_k"},
      {"--min-p", "2", "min_p"},
      {"--frequency-penalty", "3", "frequency_penalty"},
      {"--presence-penalty", "3", "presence_penalty"},
      {"--repetition-penalty", "0", "repetition_penalty"}};
  for (const auto& [flag, value, field] : cases) {
    const BenchRun run = Run({"--num-prompts", "2", "--random-input-len", "10",
                              "--random-output-len", "2", flag, value});
    EXPECT_EQ(run.exit_status, 1) << flag;
    ASSERT_TRUE(run.result.is_object()) << flag;
    EXPECT_EQ(run.result["failed"], 2) << flag;
    for (const Json& error : run.result["errors"]) {
      EXPECT_TRUE(error.get<std::string>().starts_with("HTTP 400: ")) << flag << ": " << error;
      EXPECT_NE(error.get<std::string>().find(field), std::string::npos) << flag << ": " << error;
    }
  }
  const BenchRun replaced =
      Run({"--num-prompts", "2", "--random-input-len", "10", "--random-output-len", "2",
           "--temperature", "-1", "--extra-body", R"({"temperature": 0})"});
  EXPECT_EQ(replaced.exit_status, 0);
}

// vLLM's openai-embeddings backend: each prompt embedded once, its input counted, nothing
// generated, its TTFT its whole latency.
TEST_F(BenchServeE2eTest, EmbeddingsBackendEmbedsEachPrompt) {
  const BenchRun run =
      Run({"--backend", "openai-embeddings", "--num-prompts", "10", "--random-input-len", "30",
           "--percentile-metrics", "e2el", "--metric-percentiles", "50,99"});
  ASSERT_EQ(run.exit_status, 0) << (run.result.is_object() ? run.result["errors"].dump() : "");
  const Json& r = run.result;
  EXPECT_EQ(r["endpoint"], "/v1/embeddings");
  EXPECT_EQ(r["completed"], 10);
  EXPECT_EQ(r["total_input_tokens"], 10 * 30);
  EXPECT_EQ(r["total_output_tokens"], 0);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_GT(r["ttfts"][i].get<double>(), 0.0);
    EXPECT_EQ(r["itls"][i].size(), 0u);
  }
  EXPECT_GT(r["p99_e2el_ms"].get<double>(), 0.0);
  EXPECT_TRUE(HasLine(run, "P99 E2EL")) << "the chosen metric is printed";
}

// --goodput, --percentile-metrics and --metric-percentiles, as vLLM spells them: SLOs no request
// can miss give goodput = throughput, one every request misses gives 0; the chosen metrics and
// percentiles are reported and written, the others are not.
TEST_F(BenchServeE2eTest, GoodputAndChosenPercentilesAreReportedAsVllmNamesThem) {
  const BenchRun met = Run({"--num-prompts", "5", "--random-input-len", "10", "--random-output-len",
                            "4", "--goodput", "ttft:600000", "e2el:600000", "--percentile-metrics",
                            "ttft,e2el", "--metric-percentiles", "50,90"});
  ASSERT_EQ(met.exit_status, 0);
  EXPECT_DOUBLE_EQ(met.result["request_goodput"].get<double>(),
                   met.result["request_throughput"].get<double>());
  EXPECT_TRUE(met.result.contains("p90_e2el_ms"));
  EXPECT_TRUE(met.result.contains("p50_ttft_ms"));
  EXPECT_FALSE(met.result.contains("p99_ttft_ms"));
  EXPECT_FALSE(met.result.contains("mean_itl_ms"));
  EXPECT_LE(met.result["p50_e2el_ms"].get<double>(), met.result["p90_e2el_ms"].get<double>());
  EXPECT_TRUE(HasLine(met, "Request goodput (req/s):"));
  EXPECT_TRUE(HasLine(met, "P90 E2EL (ms):"));
  EXPECT_FALSE(HasLine(met, "Mean ITL (ms):"));

  const BenchRun missed = Run({"--num-prompts", "3", "--random-input-len", "10",
                               "--random-output-len", "4", "--goodput", "ttft:0"});
  ASSERT_EQ(missed.exit_status, 0);
  EXPECT_EQ(missed.result["request_goodput"].get<double>(), 0.0);
}

// Requests the router refuses are counted as failures, with the router's reason, and the exit
// status says so; a bad flag or dataset is refused (exit 2) before anything is sent.
// The HTTP requests the router has answered: the count of vllm:request_params_n, which it
// observes once per request (no series before the first).
int64_t RouterRequests(const Cluster& cluster) {
  const HttpResponse metrics = cluster.Get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  const std::string name = "vllm:request_params_n_count";
  const size_t at = metrics.body.find(name);
  if (at == std::string::npos) return 0;
  const size_t value = metrics.body.find(' ', at);
  return std::stoll(metrics.body.substr(value + 1));
}

// vLLM's --num-warmups: that many requests of the first prompt go out before the benchmark and
// are left out of its numbers. --ramp-up-*: the rate climbs from the start to the end RPS (at
// constant gaps, 1/20 + 1/30 + 1/40 s after the first), and the result says so.
TEST_F(BenchServeE2eTest, WarmupsAndRampUpAsVllmSendsThem) {
  const int64_t before = RouterRequests(*cluster_);
  const BenchRun warmed = Run({"--num-prompts", "3", "--num-warmups", "4", "--random-input-len",
                               "10", "--random-output-len", "2", "--max-concurrency", "2"});
  ASSERT_EQ(warmed.exit_status, 0);
  EXPECT_EQ(warmed.result["completed"], 3);
  EXPECT_EQ(warmed.result["num_prompts"], 3);
  EXPECT_TRUE(HasLine(warmed, "Warmup run completed."));
  EXPECT_EQ(RouterRequests(*cluster_) - before, 3 + 4);

  const BenchRun ramped =
      Run({"--num-prompts", "4", "--random-input-len", "10", "--random-output-len", "2",
           "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "10", "--ramp-up-end-rps", "40",
           "--burstiness", "inf"});
  ASSERT_EQ(ramped.exit_status, 0);
  EXPECT_EQ(ramped.result["completed"], 4);
  EXPECT_EQ(ramped.result["ramp_up_strategy"], "linear");
  EXPECT_EQ(ramped.result["ramp_up_start_rps"], 10.0);
  EXPECT_EQ(ramped.result["ramp_up_end_rps"], 40.0);
  // Rates 10, 20, 30, 40: the last request leaves 1/10 + 1/20 + 1/30 + 1/40 s after the start.
  EXPECT_GE(ramped.result["duration"].get<double>(), 0.1 + 0.05 + 1.0 / 30 + 0.025);
}

TEST_F(BenchServeE2eTest, ReportsRefusedRequestsAndRefusesBadFlags) {
  // 250 prompt tokens + 8 > max_model_len 256.
  const BenchRun refused =
      Run({"--num-prompts", "3", "--random-input-len", "250", "--random-output-len", "8"});
  EXPECT_EQ(refused.exit_status, 1);
  ASSERT_TRUE(refused.result.is_object());
  EXPECT_EQ(refused.result["completed"], 0);
  EXPECT_EQ(refused.result["failed"], 3);
  for (const Json& error : refused.result["errors"]) {
    EXPECT_TRUE(error.get<std::string>().starts_with("HTTP 400: ")) << error;
    EXPECT_NE(error.get<std::string>().find("exceeds max_model_len 256"), std::string::npos)
        << error;
  }
  const std::filesystem::path not_sharegpt = TempPath("not_sharegpt");
  std::ofstream(not_sharegpt) << R"({"conversations": []})";
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"--request-rate", "0"},
           {"--random-input-len", "0"},
           {"--base-url", "https://127.0.0.1:1"},
           {"--burstiness", "0"},
           {"--dataset-name", "sharegpt"},
           {"--dataset-name", "sharegpt", "--dataset-path", "/nonexistent/sharegpt.json"},
           {"--dataset-name", "sharegpt", "--dataset-path", not_sharegpt.string()},
           {"--dataset-name", "sonnet"},
           {"--backend", "openai-chat", "--endpoint", "/v1/completions"},
           {"--backend", "openai-embeddings", "--endpoint", "/v1/completions"},
           {"--backend", "tgi"},
           {"--extra-body", "[1]"},
           {"--extra-body", "{\"stop\": "},
           {"--backend", "openai-embeddings", "--top-k", "5"},
           {"--goodput", "itl:5"},
           {"--random-range-ratio", "1"},
           {"--random-prefix-len", "-1"},
           {"--random-input-len", "1", "--random-range-ratio", "0.5"},
           {"--percentile-metrics", "ttft,latency"},
           {"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"},
           {"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2",
            "--request-rate", "5"},
           {"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "3", "--ramp-up-end-rps", "2"},
           {"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "0", "--ramp-up-end-rps",
            "2"},
           {"--ramp-up-strategy", "step", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2"},
           {"--ramp-up-end-rps", "2"},
           {"--num-warmups", "-1"}}) {
    const BenchRun run = Run(flags);
    EXPECT_EQ(run.exit_status, 2) << flags[0] << " " << flags[1];
    EXPECT_TRUE(run.result.is_discarded()) << flags[0];  // nothing was run
  }
  std::filesystem::remove(not_sharegpt);
}

}  // namespace
}  // namespace headroom::e2e
