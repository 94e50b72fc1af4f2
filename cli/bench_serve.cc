#include "cli/bench_serve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/exit_codes.h"
#include "cli/http_stream_client.h"
#include "cli/parse_flags.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace headroom::cli {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

// Without --max-concurrency, at most this many requests are in flight (one thread each).
constexpr int64_t kMaxThreads = 1024;

FlagSet MakeFlags() {
  FlagSet flags(
      "headroom bench serve",
      "Online serving benchmark against a running router's OpenAI API (vLLM's `vllm bench "
      "serve`, random dataset): --num-prompts prompts of exactly --random-input-len tokens "
      "(random words tokenized by the server, sent as token ids), each streaming "
      "--random-output-len tokens from /v1/completions at temperature 0, sent at "
      "--request-rate with at most --max-concurrency in flight. Prints request and token "
      "throughput, TTFT, TPOT and inter-token latency; exits 1 when a request failed.");
  flags.AddString("base-url", "http://127.0.0.1:8000", "The router's HTTP address.");
  flags.AddString("model", std::nullopt, "Model id to request (default: the first /v1/models).");
  flags.AddInt64("num-prompts", 100, "Requests to send.");
  flags.AddInt64("random-input-len", 1024, "Prompt tokens per request.");
  flags.AddInt64("random-output-len", 128, "Tokens to generate per request (max_tokens).");
  flags.AddBool("ignore-eos", false,
                "Generate --random-output-len tokens whatever the model writes (ignore_eos).");
  flags.AddString("request-rate", "inf",
                  "Requests per second, arrivals a Poisson process; inf sends all at once.");
  flags.AddInt64("max-concurrency", 0,
                 "Most requests in flight (0: no limit but 1024, one thread each).");
  flags.AddInt64("seed", 0, "Seed of the prompts and the arrival times.");
  flags.AddString("api-key", std::nullopt,
                  "Sent as \"Authorization: Bearer <key>\" (default: $OPENAI_API_KEY if set).");
  flags.AddString("result-json", std::nullopt,
                  "Also write the results, with every request's numbers, to this file.");
  flags.AddInt64("timeout-s", 600, "A request fails when nothing arrives for this long.");
  return flags;
}

struct Settings {
  HttpTarget target;
  std::vector<std::string> headers;
  std::string model;
  int64_t num_prompts = 0;
  int64_t input_len = 0;
  int64_t output_len = 0;
  bool ignore_eos = false;
  double request_rate = 0;  // requests/s; inf: all at once
  int64_t threads = 0;
  uint64_t seed = 0;
  std::chrono::seconds timeout{600};
};

struct RequestResult {
  std::string error;         // empty: it succeeded
  int64_t input_tokens = 0;  // the usage the server reported
  int64_t output_tokens = 0;
  double ttft_s = 0;          // to the first event with text
  double latency_s = 0;       // to the end of the response
  std::vector<double> itl_s;  // between events with text
};

absl::StatusOr<Settings> ReadSettings(const FlagSet& flags) {
  Settings s;
  HR_ASSIGN_OR_RETURN(s.target, ParseBaseUrl(*flags.GetString("base-url")));
  std::optional<std::string> key = flags.GetString("api-key");
  if (!key.has_value()) {
    if (const char* env = std::getenv("OPENAI_API_KEY"); env != nullptr && *env != '\0') key = env;
  }
  if (key.has_value()) s.headers.push_back(absl::StrCat("Authorization: Bearer ", *key));
  s.num_prompts = *flags.GetInt64("num-prompts");
  s.input_len = *flags.GetInt64("random-input-len");
  s.output_len = *flags.GetInt64("random-output-len");
  if (s.num_prompts < 1 || s.input_len < 1 || s.output_len < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num-prompts, --random-input-len and --random-output-len must be >= 1, got ",
                     s.num_prompts, ", ", s.input_len, " and ", s.output_len));
  }
  s.ignore_eos = flags.GetBool("ignore-eos");
  const std::string rate = *flags.GetString("request-rate");
  if (rate == "inf") {
    s.request_rate = std::numeric_limits<double>::infinity();
  } else if (!absl::SimpleAtod(rate, &s.request_rate) || !(s.request_rate > 0) ||
             std::isinf(s.request_rate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--request-rate must be a number > 0 or inf, got \"", rate, "\""));
  }
  const int64_t max_concurrency = *flags.GetInt64("max-concurrency");
  if (max_concurrency < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-concurrency must be >= 0, got ", max_concurrency));
  }
  s.threads = std::min(s.num_prompts, max_concurrency > 0 ? max_concurrency : kMaxThreads);
  s.seed = static_cast<uint64_t>(*flags.GetInt64("seed"));
  s.timeout = std::chrono::seconds(std::max<int64_t>(1, *flags.GetInt64("timeout-s")));
  if (std::optional<std::string> model = flags.GetString("model"); model.has_value()) {
    s.model = *model;
  }
  return s;
}

// The JSON body of a 200 answer to `method path`, or an error naming the status and body.
absl::StatusOr<Json> Call(const Settings& s, const std::string& method, const std::string& path,
                          const std::string& body = "") {
  HR_ASSIGN_OR_RETURN(StreamedResponse r,
                      Request(s.target, method, path, body, s.headers, std::chrono::seconds(60)));
  if (r.status != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat(method, " ", path, " answered ", r.status, ": ", r.body));
  }
  Json json = Json::parse(r.body, nullptr, false);
  if (json.is_discarded()) {
    return absl::FailedPreconditionError(absl::StrCat(method, " ", path, " answered no JSON"));
  }
  return json;
}

// Prompts of exactly `input_len` tokens of the served model: random lowercase words, tokenized by
// the server (so every id is a real token), cut to length.
absl::StatusOr<std::vector<std::vector<int32_t>>> MakePrompts(const Settings& s) {
  std::mt19937_64 rng(s.seed);
  std::uniform_int_distribution<int> letter('a', 'z');
  std::uniform_int_distribution<int> word_len(2, 8);
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t p = 0; p < s.num_prompts; ++p) {
    std::string text;
    std::vector<int32_t> ids;
    for (int round = 0; static_cast<int64_t>(ids.size()) < s.input_len; ++round) {
      if (round == 8) {
        return absl::FailedPreconditionError(
            absl::StrCat("/tokenize gave ", ids.size(), " tokens for ", text.size(),
                         " bytes of words; cannot make a prompt of ", s.input_len, " tokens"));
      }
      for (int64_t w = 0; w < s.input_len; ++w) {
        if (!text.empty()) text.push_back(' ');
        for (int c = word_len(rng); c > 0; --c) text.push_back(static_cast<char>(letter(rng)));
      }
      HR_ASSIGN_OR_RETURN(const Json tokenized,
                          Call(s, "POST", "/tokenize",
                               Json{{"prompt", text}, {"add_special_tokens", false}}.dump()));
      ids = tokenized.value("tokens", std::vector<int32_t>());
    }
    ids.resize(static_cast<size_t>(s.input_len));
    prompts.push_back(std::move(ids));
  }
  return prompts;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

RequestResult RunOne(const Settings& s, const std::vector<int32_t>& prompt) {
  const Json body = {{"model", s.model},
                     {"prompt", prompt},
                     {"max_tokens", s.output_len},
                     {"temperature", 0},
                     {"ignore_eos", s.ignore_eos},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  RequestResult result;
  const Clock::time_point start = Clock::now();
  Clock::time_point last = start;
  bool first = true;
  const auto on_event = [&](Clock::time_point at, std::string_view payload) {
    if (payload == "[DONE]") return;
    const Json chunk = Json::parse(payload, nullptr, false);
    if (chunk.is_discarded()) return;
    if (chunk.contains("error") && result.error.empty()) {
      result.error = chunk["error"].value("message", std::string("an error event"));
    }
    const Json& choices = chunk.value("choices", Json::array());
    if (!choices.empty() && !choices[0].value("text", std::string()).empty()) {
      if (first) {
        result.ttft_s = Seconds(at - start);
        first = false;
      } else {
        result.itl_s.push_back(Seconds(at - last));
      }
      last = at;
    }
    if (const auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
      result.input_tokens = usage->value("prompt_tokens", int64_t{0});
      result.output_tokens = usage->value("completion_tokens", int64_t{0});
    }
  };
  absl::StatusOr<StreamedResponse> response =
      PostStreaming(s.target, "/v1/completions", body.dump(), s.headers, on_event, s.timeout);
  result.latency_s = Seconds(Clock::now() - start);
  if (!response.ok()) {
    result.error = std::string(response.status().message());
  } else if (response->status != 200) {
    const Json error = Json::parse(response->body, nullptr, false);
    result.error = absl::StrCat("HTTP ", response->status, ": ",
                                error.is_object() && error.contains("error")
                                    ? error["error"].value("message", "")
                                    : response->body);
  } else if (result.error.empty() && first) {
    result.error = "the stream ended without text";
  }
  return result;
}

// numpy.percentile's default (linear between the closest ranks); 0 for no values.
double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (rank - static_cast<double>(below));
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// Mean, median and p99 of `seconds` in ms, under vLLM's result names ("<stat>_<name>_ms").
void AddLatencyStats(const std::string& name, const std::vector<double>& seconds, Json& out) {
  out[absl::StrCat("mean_", name, "_ms")] = Mean(seconds) * 1000;
  out[absl::StrCat("median_", name, "_ms")] = Percentile(seconds, 50) * 1000;
  out[absl::StrCat("p99_", name, "_ms")] = Percentile(seconds, 99) * 1000;
}

Json Summarize(const Settings& s, const std::vector<RequestResult>& results, double duration) {
  Json out;
  int64_t completed = 0, input_tokens = 0, output_tokens = 0;
  std::vector<double> ttft, tpot, itl;
  Json input_lens = Json::array(), output_lens = Json::array(), ttfts = Json::array(),
       itls = Json::array(), errors = Json::array();
  for (const RequestResult& r : results) {
    errors.push_back(r.error);
    input_lens.push_back(r.input_tokens);
    output_lens.push_back(r.output_tokens);
    ttfts.push_back(r.ttft_s);
    itls.push_back(r.itl_s);
    if (!r.error.empty()) continue;
    ++completed;
    input_tokens += r.input_tokens;
    output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s);
    if (r.output_tokens > 1) {
      tpot.push_back((r.latency_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1));
    }
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
  }
  out["base_url"] =
      absl::StrCat("http://", s.target.host, ":", s.target.port, s.target.path_prefix);
  out["model_id"] = s.model;
  out["num_prompts"] = s.num_prompts;
  out["request_rate"] = std::isinf(s.request_rate) ? Json("inf") : Json(s.request_rate);
  out["max_concurrency"] = s.threads;
  out["duration"] = duration;
  out["completed"] = completed;
  out["failed"] = s.num_prompts - completed;
  out["total_input_tokens"] = input_tokens;
  out["total_output_tokens"] = output_tokens;
  out["request_throughput"] = static_cast<double>(completed) / duration;
  out["output_throughput"] = static_cast<double>(output_tokens) / duration;
  out["total_token_throughput"] = static_cast<double>(input_tokens + output_tokens) / duration;
  AddLatencyStats("ttft", ttft, out);
  AddLatencyStats("tpot", tpot, out);
  AddLatencyStats("itl", itl, out);
  out["input_lens"] = std::move(input_lens);
  out["output_lens"] = std::move(output_lens);
  out["ttfts"] = std::move(ttfts);
  out["itls"] = std::move(itls);
  out["errors"] = std::move(errors);
  return out;
}

void PrintReport(const Json& r, std::ostream& out) {
  const auto row = [&](const char* label, const std::string& value) {
    out << absl::StrFormat("%-40s%s\n", label, value);
  };
  const auto number = [&](const char* label, const char* key) {
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
  row("Maximum request concurrency:", absl::StrCat(r["max_concurrency"].get<int64_t>()));
  number("Benchmark duration (s):", "duration");
  count("Total input tokens:", "total_input_tokens");
  count("Total generated tokens:", "total_output_tokens");
  number("Request throughput (req/s):", "request_throughput");
  number("Output token throughput (tok/s):", "output_throughput");
  number("Total Token throughput (tok/s):", "total_token_throughput");
  for (const auto& [title, name, upper] :
       {std::tuple{"Time to First Token", "ttft", "TTFT"},
        std::tuple{"Time per Output Token (excl. 1st token)", "tpot", "TPOT"},
        std::tuple{"Inter-token Latency", "itl", "ITL"}}) {
    section(title);
    for (const auto& [stat, shown] :
         {std::pair{"mean", "Mean"}, std::pair{"median", "Median"}, std::pair{"p99", "P99"}}) {
      const std::string label = absl::StrCat(shown, " ", upper, " (ms):");
      row(label.c_str(),
          absl::StrFormat("%.2f", r[absl::StrCat(stat, "_", name, "_ms")].get<double>()));
    }
  }
  out << std::string(50, '=') << "\n";
}

absl::Status BenchServe(const FlagSet& flags, std::ostream& out) {
  HR_ASSIGN_OR_RETURN(Settings s, ReadSettings(flags));
  if (s.model.empty()) {
    HR_ASSIGN_OR_RETURN(const Json models, Call(s, "GET", "/v1/models"));
    const Json& data = models.value("data", Json::array());
    if (data.empty()) return absl::FailedPreconditionError("/v1/models lists no model");
    s.model = data[0].value("id", "");
  }
  HR_ASSIGN_OR_RETURN(const std::vector<std::vector<int32_t>> prompts, MakePrompts(s));

  // Arrival offsets from the start: exponential gaps at the request rate, or all at once.
  std::vector<double> arrival(static_cast<size_t>(s.num_prompts), 0.0);
  if (!std::isinf(s.request_rate)) {
    std::mt19937_64 rng(s.seed + 1);
    std::exponential_distribution<double> gap(s.request_rate);
    for (size_t i = 1; i < arrival.size(); ++i) arrival[i] = arrival[i - 1] + gap(rng);
  }
  std::vector<RequestResult> results(prompts.size());
  std::atomic<size_t> next{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int64_t t = 0; t < s.threads; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < prompts.size(); i = next++) {
        std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(arrival[i])));
        results[i] = RunOne(s, prompts[i]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double duration = Seconds(Clock::now() - start);

  const Json report = Summarize(s, results, duration);
  PrintReport(report, out);
  if (std::optional<std::string> path = flags.GetString("result-json"); path.has_value()) {
    std::ofstream file(*path);
    file << report.dump(1) << "\n";
    if (!file.good()) return absl::UnavailableError(absl::StrCat("cannot write ", *path));
  }
  for (const RequestResult& r : results) {
    if (r.error.empty()) continue;
    return absl::AbortedError(absl::StrCat(report["failed"].get<int64_t>(), " of ", s.num_prompts,
                                           " requests failed; the first: ", r.error));
  }
  return absl::OkStatus();
}

}  // namespace

int RunBenchServe(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  FlagSet flags = MakeFlags();
  if (const std::optional<int> done = ParseFlagsOrExit(flags, args, out, err)) return *done;
  if (absl::Status status = BenchServe(flags, out); !status.ok()) {
    err << "error: " << status.message() << "\n";
    return status.code() == absl::StatusCode::kInvalidArgument ? kExitRefused : 1;
  }
  return kExitOk;
}

}  // namespace headroom::cli
