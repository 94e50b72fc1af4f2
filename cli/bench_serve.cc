#include "cli/bench_serve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cli/bench_report.h"
#include "cli/bench_workload.h"
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
constexpr char kCompletions[] = "/v1/completions";
constexpr char kChatCompletions[] = "/v1/chat/completions";
constexpr char kEmbeddings[] = "/v1/embeddings";

FlagSet MakeFlags() {
  FlagSet flags(
      "headroom bench serve",
      "Online serving benchmark against a running router's OpenAI API (vLLM's `vllm bench "
      "serve`): --num-prompts requests from the random or ShareGPT dataset, streamed from "
      "/v1/completions or /v1/chat/completions at temperature 0 (or embedded by /v1/embeddings), "
      "sent at --request-rate with at most --max-concurrency in flight. Prints request, goodput "
      "and token throughput, TTFT, TPOT, inter-token and end-to-end latency; exits 1 when a "
      "request failed.");
  flags.AddString("base-url", "http://127.0.0.1:8000", "The router's HTTP address.");
  flags.AddString("model", std::nullopt, "Model id to request (default: the first /v1/models).");
  flags.AddString("backend", "openai",
                  "openai or vllm (the completions API), openai-chat (the chat API) or "
                  "openai-embeddings (each prompt embedded: its TTFT is its whole latency; "
                  "--percentile-metrics e2el).");
  flags.AddString("endpoint", std::nullopt,
                  "/v1/completions, /v1/chat/completions or /v1/embeddings (default: the "
                  "backend's).");
  flags.AddString("dataset-name", "random", "random or sharegpt.");
  flags.AddString("dataset-path", std::nullopt,
                  "The ShareGPT JSON file (ShareGPT_V3_unfiltered_cleaned_split.json's format).");
  flags.AddInt64("num-prompts", 100, "Requests to send.");
  flags.AddInt64("random-input-len", 1024, "random: prompt tokens per request.");
  flags.AddInt64("random-output-len", 128, "random: tokens to generate per request.");
  flags.AddInt64("random-prefix-len", 0,
                 "random: tokens of a prefix shared by every prompt, before its "
                 "--random-input-len own ones.");
  flags.AddDouble("random-range-ratio", 0.0,
                  "random: in [0, 1); input and output lengths drawn uniformly from [len x (1 - "
                  "r), len x (1 + r)].");
  flags.AddInt64("sharegpt-output-len", std::nullopt,
                 "sharegpt: tokens to generate per request (default: its reply's).");
  flags.AddBool("disable-shuffle", false, "sharegpt: vLLM's name for --no-shuffle.");
  flags.AddBool("shuffle", true,
                "sharegpt: shuffle the conversations with --seed first (Python's random, as vLLM "
                "does: the same seed sends the same conversations).");
  flags.AddBool("oversample", true,
                "sharegpt: repeat samples at random when fewer than --num-prompts pass.");
  flags.AddBool("ignore-eos", false,
                "Generate the requested tokens whatever the model writes (ignore_eos).");
  // vLLM's sampling group: sent only when given, except temperature (0 unless given).
  flags.AddDouble("temperature", std::nullopt, "Sampling temperature (default 0: greedy).");
  flags.AddDouble("top-p", std::nullopt, "Sampling top_p.");
  flags.AddInt64("top-k", std::nullopt, "Sampling top_k.");
  flags.AddDouble("min-p", std::nullopt, "Sampling min_p.");
  flags.AddDouble("frequency-penalty", std::nullopt, "Sampling frequency_penalty.");
  flags.AddDouble("presence-penalty", std::nullopt, "Sampling presence_penalty.");
  flags.AddDouble("repetition-penalty", std::nullopt, "Sampling repetition_penalty.");
  flags.AddString("extra-body", std::nullopt,
                  "A JSON object whose keys are added to every request's body, replacing the "
                  "benchmark's own (e.g. '{\"stop\": [\"\\n\"]}').");
  flags.AddString("request-rate", "inf",
                  "Requests per second (see --burstiness); inf sends all at once.");
  flags.AddString("burstiness", "1",
                  "Shape of the gamma distribution of the gaps between requests: 1 is a Poisson "
                  "process, smaller is burstier, inf sends at constant gaps.");
  flags.AddString("ramp-up-strategy", std::nullopt,
                  "linear or exponential: the request rate climbs from --ramp-up-start-rps to "
                  "--ramp-up-end-rps over the requests (in place of --request-rate).");
  flags.AddDouble("ramp-up-start-rps", std::nullopt, "The first request's rate (ramp-up).");
  flags.AddDouble("ramp-up-end-rps", std::nullopt, "The last request's rate (ramp-up).");
  flags.AddInt64("num-warmups", 0,
                 "Requests of the first prompt sent before the benchmark (at most "
                 "--max-concurrency at once) and left out of its numbers.");
  flags.AddInt64("max-concurrency", 0,
                 "Most requests in flight (0: no limit but 1024, one thread each).");
  flags.AddInt64("seed", 0, "Seed of the prompts, the sample and the arrival times.");
  flags.AddString("percentile-metrics", "ttft,tpot,itl",
                  "Metrics to report percentiles of: ttft, tpot, itl, e2el.");
  flags.AddString("metric-percentiles", "99", "Percentiles to report, e.g. 50,90,99.");
  flags.AddStringList("goodput",
                      "SLOs as KEY:MILLISECONDS pairs (ttft, tpot, e2el), e.g. --goodput ttft:200 "
                      "tpot:50: also report the requests/s that met all of them.");
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
  std::string endpoint;  // kCompletions, kChatCompletions or kEmbeddings
  bool sharegpt = false;
  std::string dataset_path;
  int64_t num_prompts = 0;
  int64_t input_len = 0;   // random
  int64_t output_len = 0;  // random
  int64_t prefix_len = 0;  // random
  double range_ratio = 0;  // random
  std::optional<int64_t> sharegpt_output_len;
  bool shuffle = true;
  bool oversample = true;
  bool ignore_eos = false;
  double request_rate = 0;  // requests/s; inf: all at once
  double burstiness = 1;
  std::optional<RampUp> ramp_up;  // in place of request_rate
  int64_t num_warmups = 0;
  int64_t max_concurrency = 0;  // 0: none
  uint64_t seed = 0;
  std::chrono::seconds timeout{600};
  ReportSpec report;
  // What every request's body gets on top of the benchmark's own: the sampling flags, then
  // --extra-body (vLLM's order: its keys win).
  Json extra_body = Json::object();
};

// "inf" or a number > 0 (`flag` names it in the error).
absl::StatusOr<double> PositiveOrInf(const FlagSet& flags, const char* flag) {
  const std::string text = *flags.GetString(flag);
  double value = 0;
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (!absl::SimpleAtod(text, &value) || !(value > 0) || std::isinf(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " must be a number > 0 or inf, got \"", text, "\""));
  }
  return value;
}

// vLLM's --ramp-up-* flags, checked as vLLM checks them (nullopt without --ramp-up-strategy).
absl::StatusOr<std::optional<RampUp>> ReadRampUp(const FlagSet& flags, double request_rate) {
  const std::optional<std::string> strategy = flags.GetString("ramp-up-strategy");
  const std::optional<double> start = flags.GetDouble("ramp-up-start-rps");
  const std::optional<double> end = flags.GetDouble("ramp-up-end-rps");
  if (!strategy.has_value()) {
    if (start.has_value() || end.has_value()) {
      return absl::InvalidArgumentError(
          "--ramp-up-start-rps and --ramp-up-end-rps need --ramp-up-strategy");
    }
    return std::nullopt;
  }
  if (*strategy != "linear" && *strategy != "exponential") {
    return absl::InvalidArgumentError(
        absl::StrCat("--ramp-up-strategy must be linear or exponential, got \"", *strategy, "\""));
  }
  if (!std::isinf(request_rate)) {
    return absl::InvalidArgumentError(
        "when using ramp-up, do not specify --request-rate: the ramp-up parameters set the rate");
  }
  if (!start.has_value() || !end.has_value()) {
    return absl::InvalidArgumentError(
        "--ramp-up-strategy needs both --ramp-up-start-rps and --ramp-up-end-rps");
  }
  if (*start < 0 || *end < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ramp-up start and end RPS must be non-negative, got ", *start, " and ", *end));
  }
  if (*start > *end) {
    return absl::InvalidArgumentError(
        absl::StrCat("ramp-up start RPS must be at most the end RPS, got ", *start, " > ", *end));
  }
  if (*strategy == "exponential" && *start == 0) {
    return absl::InvalidArgumentError("for exponential ramp-up, the start RPS cannot be 0");
  }
  return RampUp{.strategy = *strategy == "linear" ? RampUp::Strategy::kLinear
                                                  : RampUp::Strategy::kExponential,
                .start_rps = *start,
                .end_rps = *end};
}

absl::Status ReadEndpoint(const FlagSet& flags, Settings& s) {
  const std::string backend = *flags.GetString("backend");
  const char* speaks = backend == "openai-chat"                   ? kChatCompletions
                       : backend == "openai-embeddings"           ? kEmbeddings
                       : backend == "openai" || backend == "vllm" ? kCompletions
                                                                  : nullptr;
  if (speaks == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backend must be openai, vllm, openai-chat or openai-embeddings, got \"", backend, "\""));
  }
  s.endpoint = flags.GetString("endpoint").value_or(speaks);
  if (s.endpoint != speaks) {
    return absl::InvalidArgumentError(absl::StrCat("--backend ", backend, " speaks ", speaks,
                                                   ", but --endpoint is ", s.endpoint));
  }
  return absl::OkStatus();
}

absl::Status ReadDataset(const FlagSet& flags, Settings& s) {
  const std::string dataset = *flags.GetString("dataset-name");
  if (dataset != "random" && dataset != "sharegpt") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dataset-name must be random or sharegpt, got \"", dataset, "\""));
  }
  s.sharegpt = dataset == "sharegpt";
  s.num_prompts = *flags.GetInt64("num-prompts");
  s.input_len = *flags.GetInt64("random-input-len");
  s.output_len = *flags.GetInt64("random-output-len");
  if (s.num_prompts < 1 || s.input_len < 1 || s.output_len < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num-prompts, --random-input-len and --random-output-len must be >= 1, got ",
                     s.num_prompts, ", ", s.input_len, " and ", s.output_len));
  }
  s.prefix_len = *flags.GetInt64("random-prefix-len");
  s.range_ratio = *flags.GetDouble("random-range-ratio");
  if (s.prefix_len < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--random-prefix-len must be >= 0, got ", s.prefix_len));
  }
  if (!(s.range_ratio >= 0 && s.range_ratio < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--random-range-ratio must be in [0, 1), got ", s.range_ratio));
  }
  if (const auto shortest =
          static_cast<int64_t>(std::floor(static_cast<double>(s.input_len) * (1 - s.range_ratio)));
      !s.sharegpt && s.prefix_len + shortest < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--random-input-len ", s.input_len, " is too small: with --random-range-ratio ",
        s.range_ratio, " and --random-prefix-len ", s.prefix_len,
        " a prompt may have 0 tokens; raise either length or lower the ratio"));
  }
  s.sharegpt_output_len = flags.GetInt64("sharegpt-output-len");
  if (s.sharegpt_output_len.has_value() && *s.sharegpt_output_len < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sharegpt-output-len must be >= 1, got ", *s.sharegpt_output_len));
  }
  if (s.sharegpt) {
    if (!flags.GetString("dataset-path").has_value()) {
      return absl::InvalidArgumentError("--dataset-name sharegpt needs --dataset-path FILE");
    }
    s.dataset_path = *flags.GetString("dataset-path");
  }
  s.shuffle = flags.GetBool("shuffle") && !flags.GetBool("disable-shuffle");
  s.oversample = flags.GetBool("oversample");
  return absl::OkStatus();
}

// The sampling flags (temperature 0 unless given, the rest only when given) and --extra-body over
// them, as `vllm bench serve` merges them; an embeddings backend takes no sampling flag.
absl::Status ReadExtraBody(const FlagSet& flags, Settings& s) {
  Json sampling = Json::object();
  for (const char* flag : {"temperature", "top-p", "min-p", "frequency-penalty", "presence-penalty",
                           "repetition-penalty"}) {
    if (const std::optional<double> value = flags.GetDouble(flag); value.has_value()) {
      sampling[absl::StrReplaceAll(flag, {{"-", "_"}})] = *value;
    }
  }
  if (const std::optional<int64_t> top_k = flags.GetInt64("top-k"); top_k.has_value()) {
    sampling["top_k"] = *top_k;
  }
  if (s.endpoint == kEmbeddings && !sampling.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling flags (", sampling.begin().key(),
                     " ...) apply to generation; --backend openai-embeddings generates nothing"));
  }
  if (s.endpoint != kEmbeddings && !sampling.contains("temperature")) sampling["temperature"] = 0;
  s.extra_body = std::move(sampling);
  if (const std::optional<std::string> text = flags.GetString("extra-body"); text.has_value()) {
    const Json extra = Json::parse(*text, nullptr, false);
    if (!extra.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--extra-body must be a JSON object, got '", *text, "'"));
    }
    s.extra_body.update(extra);
  }
  return absl::OkStatus();
}

absl::StatusOr<Settings> ReadSettings(const FlagSet& flags) {
  Settings s;
  HR_ASSIGN_OR_RETURN(s.target, ParseBaseUrl(*flags.GetString("base-url")));
  std::optional<std::string> key = flags.GetString("api-key");
  if (!key.has_value()) {
    if (const char* env = std::getenv("OPENAI_API_KEY"); env != nullptr && *env != '\0') key = env;
  }
  if (key.has_value()) s.headers.push_back(absl::StrCat("Authorization: Bearer ", *key));
  HR_RETURN_IF_ERROR(ReadEndpoint(flags, s));
  HR_RETURN_IF_ERROR(ReadDataset(flags, s));
  s.ignore_eos = flags.GetBool("ignore-eos");
  HR_RETURN_IF_ERROR(ReadExtraBody(flags, s));
  HR_ASSIGN_OR_RETURN(s.request_rate, PositiveOrInf(flags, "request-rate"));
  HR_ASSIGN_OR_RETURN(s.burstiness, PositiveOrInf(flags, "burstiness"));
  HR_ASSIGN_OR_RETURN(s.ramp_up, ReadRampUp(flags, s.request_rate));
  s.num_warmups = *flags.GetInt64("num-warmups");
  if (s.num_warmups < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num-warmups must be >= 0, got ", s.num_warmups));
  }
  s.max_concurrency = *flags.GetInt64("max-concurrency");
  if (s.max_concurrency < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-concurrency must be >= 0, got ", s.max_concurrency));
  }
  s.seed = static_cast<uint64_t>(*flags.GetInt64("seed"));
  s.timeout = std::chrono::seconds(std::max<int64_t>(1, *flags.GetInt64("timeout-s")));
  if (std::optional<std::string> model = flags.GetString("model"); model.has_value()) {
    s.model = *model;
  }
  HR_ASSIGN_OR_RETURN(s.report.metrics,
                      ParsePercentileMetrics(*flags.GetString("percentile-metrics")));
  HR_ASSIGN_OR_RETURN(s.report.percentiles,
                      ParseMetricPercentiles(*flags.GetString("metric-percentiles")));
  if (const std::vector<std::string> goodput = flags.GetStringList("goodput"); !goodput.empty()) {
    HR_ASSIGN_OR_RETURN(s.report.goodput_slo_ms, ParseGoodput(absl::StrJoin(goodput, " ")));
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

// The router's /tokenize and /detokenize.
ServerTokenizer TokenizerOf(const Settings& s) {
  ServerTokenizer t;
  t.tokenize = [&s](const std::string& text,
                    bool add_special_tokens) -> absl::StatusOr<std::vector<int32_t>> {
    HR_ASSIGN_OR_RETURN(
        const Json r,
        Call(s, "POST", "/tokenize",
             Json{{"prompt", text}, {"add_special_tokens", add_special_tokens}}.dump()));
    return r.value("tokens", std::vector<int32_t>());
  };
  t.detokenize = [&s](const std::vector<int32_t>& ids) -> absl::StatusOr<std::string> {
    HR_ASSIGN_OR_RETURN(const Json r, Call(s, "POST", "/detokenize", Json{{"tokens", ids}}.dump()));
    return r.value("prompt", std::string());
  };
  return t;
}

absl::StatusOr<std::vector<BenchRequest>> MakeRequests(const Settings& s) {
  const ServerTokenizer tokenizer = TokenizerOf(s);
  if (!s.sharegpt) {
    return MakeRandomRequests({.num_prompts = s.num_prompts,
                               .input_len = s.input_len,
                               .output_len = s.output_len,
                               .prefix_len = s.prefix_len,
                               .range_ratio = s.range_ratio,
                               .as_text = s.endpoint == kChatCompletions,
                               .seed = s.seed},
                              tokenizer);
  }
  HR_ASSIGN_OR_RETURN(std::vector<ShareGptPair> pairs, LoadShareGpt(s.dataset_path));
  return SampleShareGpt(std::move(pairs),
                        {.num_prompts = s.num_prompts,
                         .output_len = s.sharegpt_output_len,
                         .shuffle = s.shuffle,
                         .oversample = s.oversample,
                         .seed = static_cast<int64_t>(s.seed)},
                        tokenizer);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The streamed request's body: the prompt as ids or text to /v1/completions, or as the user's
// message to /v1/chat/completions.
Json RequestBody(const Settings& s, const BenchRequest& request) {
  Json body = {{"model", s.model},
               {"ignore_eos", s.ignore_eos},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (s.endpoint == kChatCompletions) {
    body["messages"] = {{{"role", "user"}, {"content", request.text}}};
    body["max_completion_tokens"] = request.output_len;
  } else {
    body["prompt"] = request.ids.empty() ? Json(request.text) : Json(request.ids);
    body["max_tokens"] = request.output_len;
  }
  body.update(s.extra_body);
  return body;
}

// Whether a streamed chunk carries a choice. As in `vllm bench serve`, every such chunk is a
// token's arrival, even with empty text (a special token, part of a UTF-8 character): the first
// is the TTFT, each later one an inter-token latency. The usage chunk has no choices.
bool HasChoice(const Json& chunk) {
  const auto choices = chunk.find("choices");
  return choices != chunk.end() && choices->is_array() && !choices->empty();
}

// A chunk's text: choices[0].text (completions) or choices[0].delta.content (chat); "" if none.
std::string ChunkText(const Json& chunk) {
  const Json& choice = chunk["choices"][0];
  const auto string_at = [](const Json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!choice.is_object()) return "";
  const auto delta = choice.find("delta");
  if (delta != choice.end() && delta->is_object()) return string_at(*delta, "content");
  return string_at(choice, "text");
}

// A refused request's error: "HTTP <status>: " and the OpenAI error's message (or the body).
std::string HttpError(const StreamedResponse& response) {
  const Json answer = Json::parse(response.body, nullptr, false);
  return absl::StrCat("HTTP ", response.status, ": ",
                      answer.is_object() && answer.contains("error")
                          ? answer["error"].value("message", "")
                          : response.body);
}

// One embedding: the whole answer arrives at once, so its TTFT is its latency and it generates
// nothing; the usage gives its input tokens.
RequestResult RunOneEmbedding(const Settings& s, const BenchRequest& request) {
  RequestResult result;
  Json body = {{"model", s.model},
               {"input", request.ids.empty() ? Json(request.text) : Json(request.ids)}};
  body.update(s.extra_body);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<StreamedResponse> response =
      Request(s.target, "POST", s.endpoint, body.dump(), s.headers, s.timeout);
  result.latency_s = Seconds(Clock::now() - start);
  result.ttft_s = result.latency_s;
  if (!response.ok()) {
    result.error = std::string(response.status().message());
    return result;
  }
  const Json answer = Json::parse(response->body, nullptr, false);
  if (response->status != 200) {
    result.error = HttpError(*response);
  } else if (!answer.is_object() || !answer.contains("data") || answer["data"].size() != 1) {
    result.error = "the answer holds no embedding";
  } else {
    result.input_tokens = answer.value("usage", Json::object()).value("prompt_tokens", int64_t{0});
  }
  return result;
}

RequestResult RunOne(const Settings& s, const BenchRequest& request) {
  if (s.endpoint == kEmbeddings) return RunOneEmbedding(s, request);
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
    if (HasChoice(chunk)) {
      if (first) {
        result.ttft_s = Seconds(at - start);
        first = false;
      } else {
        result.itl_s.push_back(Seconds(at - last));
      }
      last = at;
      result.generated_text += ChunkText(chunk);
    }
    if (const auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
      result.input_tokens = usage->value("prompt_tokens", int64_t{0});
      result.output_tokens = usage->value("completion_tokens", int64_t{0});
    }
  };
  absl::StatusOr<StreamedResponse> response = PostStreaming(
      s.target, s.endpoint, RequestBody(s, request).dump(), s.headers, on_event, s.timeout);
  // vLLM's E2EL ends at the last chunk with a choice, not at the usage chunk or [DONE].
  result.latency_s = Seconds((first ? Clock::now() : last) - start);
  if (!response.ok()) {
    result.error = std::string(response.status().message());
  } else if (response->status != 200) {
    result.error = HttpError(*response);
  } else if (result.error.empty() && first) {
    result.error = "the stream ended without a chunk holding a choice, so it has no TTFT";
  }
  return result;
}

absl::Status BenchServe(const FlagSet& flags, std::ostream& out) {
  HR_ASSIGN_OR_RETURN(Settings s, ReadSettings(flags));
  if (s.model.empty()) {
    HR_ASSIGN_OR_RETURN(const Json models, Call(s, "GET", "/v1/models"));
    const Json& data = models.value("data", Json::array());
    if (data.empty()) return absl::FailedPreconditionError("/v1/models lists no model");
    s.model = data[0].value("id", "");
  }
  HR_ASSIGN_OR_RETURN(const std::vector<BenchRequest> requests, MakeRequests(s));
  const auto n = static_cast<int64_t>(requests.size());
  if (n < s.num_prompts) {
    out << "only " << n << " ShareGPT conversations pass the filter; sending " << n
        << " requests, not --num-prompts " << s.num_prompts << " (--no-oversample)\n";
  }
  const int64_t threads = std::min(n, s.max_concurrency > 0 ? s.max_concurrency : kMaxThreads);
  const std::vector<double> arrival =
      ArrivalOffsets(n, s.request_rate, s.burstiness, s.seed + 1, s.ramp_up);
  const char* ramp_name = !s.ramp_up.has_value()                             ? ""
                          : s.ramp_up->strategy == RampUp::Strategy::kLinear ? "linear"
                                                                             : "exponential";
  if (s.ramp_up.has_value()) {
    out << "Traffic ramp-up strategy: " << ramp_name << ", from " << s.ramp_up->start_rps << " to "
        << s.ramp_up->end_rps << " RPS\n";
  }
  if (s.num_warmups > 0) {
    // vLLM's warmup: the first prompt, num_warmups times, at most max_concurrency at once.
    out << "Warming up with " << s.num_warmups << " requests...\n";
    std::atomic<int64_t> left{s.num_warmups};
    std::vector<std::thread> warmers;
    for (int64_t t = 0; t < std::min(s.num_warmups, threads); ++t) {
      warmers.emplace_back([&] {
        while (left.fetch_sub(1) > 0) (void)RunOne(s, requests.front());
      });
    }
    for (std::thread& t : warmers) t.join();
    out << "Warmup run completed.\n";
  }

  std::vector<RequestResult> results(requests.size());
  std::atomic<size_t> next{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < requests.size(); i = next++) {
        std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(arrival[i])));
        results[i] = RunOne(s, requests[i]);
      }
    });
  }
  for (std::thread& t : pool) t.join();
  const double duration = Seconds(Clock::now() - start);

  const Json header = {
      {"base_url",
       absl::StrCat("http://", s.target.host, ":", s.target.port, s.target.path_prefix)},
      {"endpoint", s.endpoint},
      {"dataset_name", s.sharegpt ? "sharegpt" : "random"},
      {"model_id", s.model},
      {"num_prompts", n},
      {"request_rate", std::isinf(s.request_rate) ? Json("inf") : Json(s.request_rate)},
      {"burstiness", std::isinf(s.burstiness) ? Json("inf") : Json(s.burstiness)},
      {"max_concurrency", threads}};
  Json report = Summarize(header, s.report, results, duration);
  if (s.ramp_up.has_value()) {
    report.update({{"ramp_up_strategy", ramp_name},
                   {"ramp_up_start_rps", s.ramp_up->start_rps},
                   {"ramp_up_end_rps", s.ramp_up->end_rps}});
  }
  PrintReport(report, s.report, out);
  if (std::optional<std::string> path = flags.GetString("result-json"); path.has_value()) {
    std::ofstream file(*path);
    file << report.dump(1) << "\n";
    if (!file.good()) return absl::UnavailableError(absl::StrCat("cannot write ", *path));
  }
  for (const RequestResult& r : results) {
    if (r.error.empty()) continue;
    return absl::AbortedError(absl::StrCat(report["failed"].get<int64_t>(), " of ", n,
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
