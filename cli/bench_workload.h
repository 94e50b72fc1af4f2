// The workload of `headroom bench serve`, as vLLM's `vllm bench serve` builds it: which prompts it
// sends, how many tokens each asks for, and when each is sent.
//
// Datasets:
//   random    prompts of exactly --random-input-len tokens: random lowercase words tokenized by
//             the server, cut to length (sent as ids; as text, decoded by the server, to a chat
//             endpoint), each asking for --random-output-len tokens; with vLLM's
//             --random-prefix-len, a prefix of that many tokens shared by every prompt comes
//             first, and with --random-range-ratio both lengths vary around their flags.
//   sharegpt  a ShareGPT JSON file (a list of {"conversations": [{"from", "value"}, ...]}): each
//             conversation of two or more turns gives its first turn as the prompt and asks for
//             as many tokens as the server's tokenizer counts in its second (or
//             --sharegpt-output-len). vLLM's filter applies: a prompt or reply under 4 tokens, a
//             prompt over 1024, or both over 2048 are skipped. Conversations are shuffled with
//             --seed first, and when fewer than --num-prompts pass, samples are repeated at
//             random, both with Python's random as vLLM draws them (python_random.h): the same
//             --seed sends the same conversations in the same order as `vllm bench serve`.
// Arrivals: gaps drawn from a gamma distribution of shape --burstiness and mean 1/rate (1 is a
// Poisson process, smaller is burstier, inf is a constant gap), then scaled so that the last
// request is sent at num_prompts / rate, as vLLM does.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace headroom::cli {

struct BenchRequest {
  std::string text;          // the prompt as text (ShareGPT; random prompts for a chat endpoint)
  std::vector<int32_t> ids;  // the prompt as ids (random prompts for /v1/completions)
  int64_t prompt_len = 0;    // its tokens, as the server counts them
  int64_t output_len = 0;    // tokens to ask for (max_tokens)
};

// The server's /tokenize (ids of `text`, special tokens added or not) and /detokenize.
struct ServerTokenizer {
  std::function<absl::StatusOr<std::vector<int32_t>>(const std::string& text,
                                                     bool add_special_tokens)>
      tokenize;
  std::function<absl::StatusOr<std::string>(const std::vector<int32_t>& ids)> detokenize;
};

struct RandomDataset {
  int64_t num_prompts = 0;
  // Each prompt: prefix_len ids shared by every prompt (--random-prefix-len, for prefix-cache
  // runs), then its own random ids, as many as drawn uniformly from [floor(input_len x (1 -
  // range_ratio)), ceil(input_len x (1 + range_ratio))]; it asks for a number of tokens drawn the
  // same way around output_len, at least 1 (--random-range-ratio in [0, 1); vLLM's ranges).
  int64_t input_len = 0;
  int64_t output_len = 0;
  int64_t prefix_len = 0;
  double range_ratio = 0;
  bool as_text = false;  // also decode each prompt to text (for a chat endpoint)
  uint64_t seed = 0;
};
absl::StatusOr<std::vector<BenchRequest>> MakeRandomRequests(const RandomDataset& dataset,
                                                             const ServerTokenizer& tokenizer);

// A conversation's first two turns.
struct ShareGptPair {
  std::string prompt;
  std::string completion;
};
// The pairs of the conversations of two or more turns in the ShareGPT file `path`, in file order.
// Reads the file as it parses it and keeps only those two turns of each conversation.
absl::StatusOr<std::vector<ShareGptPair>> LoadShareGpt(const std::string& path);

struct ShareGptSampling {
  int64_t num_prompts = 0;
  std::optional<int64_t> output_len;  // --sharegpt-output-len: ask for this many instead
  bool shuffle = true;
  bool oversample = true;
  int64_t seed = 0;  // random.seed(seed): Python seeds by the absolute value
};
// vLLM's limits on a sample (vllm/benchmarks/datasets/utils.py is_valid_sequence).
inline constexpr int64_t kShareGptMinLen = 4;
inline constexpr int64_t kShareGptMaxPromptLen = 1024;
inline constexpr int64_t kShareGptMaxTotalLen = 2048;
// Requests from `pairs` (see the file comment); FailedPrecondition when none passes the filter.
absl::StatusOr<std::vector<BenchRequest>> SampleShareGpt(std::vector<ShareGptPair> pairs,
                                                         const ShareGptSampling& sampling,
                                                         const ServerTokenizer& tokenizer);

// vLLM's --ramp-up-strategy: request i of n is sent at a rate going from start_rps (the first) to
// end_rps (the last), linearly or geometrically in i.
struct RampUp {
  enum class Strategy { kLinear, kExponential };
  Strategy strategy = Strategy::kLinear;
  double start_rps = 0;
  double end_rps = 0;
};

// The rate of request i of n under `ramp` (vLLM's get_current_request_rate).
double RampUpRate(const RampUp& ramp, int64_t i, int64_t n);

// When each of `n` requests is sent, in seconds from the start (see the file comment). `rate` in
// requests/s (inf: all at 0); `burstiness` > 0, inf for constant gaps. With `ramp`, request i's
// gap is drawn at RampUpRate(i) instead (a rate of 0 sends at once), and the times are not
// rescaled to n / rate, as vLLM does.
std::vector<double> ArrivalOffsets(int64_t n, double rate, double burstiness, uint64_t seed,
                                   const std::optional<RampUp>& ramp = std::nullopt);

}  // namespace headroom::cli
