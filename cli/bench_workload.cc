#include "cli/bench_workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/python_random.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace headroom::cli {
namespace {

using Json = nlohmann::json;

// Builds only what SampleShareGpt needs from a ShareGPT file: for each conversation (an object
// in the top-level list), the "value" strings of its first two turns and how many turns it has.
// Depths count the containers open around an event: 1 inside the list, 2 inside a conversation,
// 3 inside its "conversations" list, 4 inside a turn.
class ShareGptReader : public nlohmann::json_sax<Json> {
 public:
  std::vector<ShareGptPair> pairs;
  std::string error;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }

  bool string(string_t& value) override {
    if (depth_ == 4 && in_turns_ && turn_key_ == "value" && turns_ <= 2) {
      (turns_ == 1 ? prompt_ : completion_) = std::move(value);
      (turns_ == 1 ? has_prompt_ : has_completion_) = true;
    }
    return true;
  }

  bool key(string_t& name) override {
    if (depth_ == 2) entry_key_ = name;
    if (depth_ == 4) turn_key_ = name;
    return true;
  }

  bool start_object(std::size_t) override {
    if (depth_ == 0) return Fail("the file must be a JSON list of conversations, not an object");
    if (depth_ == 1) {
      entry_key_.clear();
      turns_ = 0;
      has_prompt_ = has_completion_ = false;
    }
    if (depth_ == 3 && in_turns_) {
      ++turns_;
      turn_key_.clear();
    }
    ++depth_;
    return true;
  }

  bool end_object() override {
    --depth_;
    if (depth_ == 1 && turns_ >= 2 && has_prompt_ && has_completion_) {
      pairs.push_back({std::move(prompt_), std::move(completion_)});
    }
    return true;
  }

  bool start_array(std::size_t) override {
    if (depth_ == 2 && entry_key_ == "conversations") in_turns_ = true;
    ++depth_;
    return true;
  }

  bool end_array() override {
    --depth_;
    if (depth_ == 2) in_turns_ = false;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    return Fail(absl::StrCat("not JSON at byte ", position, ": ", e.what()));
  }

 private:
  bool Fail(std::string message) {
    error = std::move(message);
    return false;
  }

  int depth_ = 0;
  bool in_turns_ = false;
  int turns_ = 0;
  std::string entry_key_, turn_key_;
  std::string prompt_, completion_;
  bool has_prompt_ = false, has_completion_ = false;
};

// Exactly `length` ids of random lowercase words, tokenized by the server.
absl::StatusOr<std::vector<int32_t>> RandomWordIds(int64_t length, std::mt19937_64& rng,
                                                   const ServerTokenizer& tokenizer) {
  std::uniform_int_distribution<int> letter('a', 'z');
  std::uniform_int_distribution<int> word_len(2, 8);
  std::string text;
  std::vector<int32_t> ids;
  for (int round = 0; static_cast<int64_t>(ids.size()) < length; ++round) {
    if (round == 8) {
      return absl::FailedPreconditionError(
          absl::StrCat("/tokenize gave ", ids.size(), " tokens for ", text.size(),
                       " bytes of words; cannot make a prompt of ", length, " tokens"));
    }
    for (int64_t w = 0; w < length; ++w) {
      if (!text.empty()) text.push_back(' ');
      for (int c = word_len(rng); c > 0; --c) text.push_back(static_cast<char>(letter(rng)));
    }
    HR_ASSIGN_OR_RETURN(ids, tokenizer.tokenize(text, /*add_special_tokens=*/false));
  }
  ids.resize(static_cast<size_t>(length));
  return ids;
}

// vLLM's length range: [floor(len x (1 - ratio)), ceil(len x (1 + ratio))], at least `floor`.
std::uniform_int_distribution<int64_t> LengthRange(int64_t length, double ratio, int64_t floor) {
  const auto len = static_cast<double>(length);
  return std::uniform_int_distribution<int64_t>(
      std::max(floor, static_cast<int64_t>(std::floor(len * (1 - ratio)))),
      std::max(floor, static_cast<int64_t>(std::ceil(len * (1 + ratio)))));
}

}  // namespace

absl::StatusOr<std::vector<BenchRequest>> MakeRandomRequests(const RandomDataset& dataset,
                                                             const ServerTokenizer& tokenizer) {
  std::mt19937_64 rng(dataset.seed);
  // The lengths first, as vLLM draws them; then the shared prefix; then each prompt's words.
  std::uniform_int_distribution<int64_t> input_len =
      LengthRange(dataset.input_len, dataset.range_ratio, 0);
  std::uniform_int_distribution<int64_t> output_len =
      LengthRange(dataset.output_len, dataset.range_ratio, 1);
  std::vector<std::pair<int64_t, int64_t>> lengths;
  for (int64_t p = 0; p < dataset.num_prompts; ++p) {
    const int64_t in = input_len(rng);  // drawn before the output length, in this order
    lengths.emplace_back(in, output_len(rng));
  }
  std::vector<int32_t> prefix;
  if (dataset.prefix_len > 0) {
    HR_ASSIGN_OR_RETURN(prefix, RandomWordIds(dataset.prefix_len, rng, tokenizer));
  }
  std::vector<BenchRequest> requests;
  for (const auto& [in, out] : lengths) {
    std::vector<int32_t> ids = prefix;
    if (in > 0) {
      HR_ASSIGN_OR_RETURN(const std::vector<int32_t> words, RandomWordIds(in, rng, tokenizer));
      ids.insert(ids.end(), words.begin(), words.end());
    }
    BenchRequest& r = requests.emplace_back();
    if (dataset.as_text) {
      HR_ASSIGN_OR_RETURN(r.text, tokenizer.detokenize(ids));
    }
    r.prompt_len = static_cast<int64_t>(ids.size());
    r.ids = std::move(ids);
    r.output_len = out;
  }
  return requests;
}

absl::StatusOr<std::vector<ShareGptPair>> LoadShareGpt(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::InvalidArgumentError(absl::StrCat("cannot open ShareGPT file ", path));
  ShareGptReader reader;
  if (!Json::sax_parse(file, &reader) || !reader.error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ShareGPT file ", path, ": ", reader.error.empty() ? "not JSON" : reader.error));
  }
  return std::move(reader.pairs);
}

absl::StatusOr<std::vector<BenchRequest>> SampleShareGpt(std::vector<ShareGptPair> pairs,
                                                         const ShareGptSampling& sampling,
                                                         const ServerTokenizer& tokenizer) {
  // vLLM seeds Python's random with --seed and shuffles the conversations (load_data).
  PythonRandom shuffle(sampling.seed);
  if (sampling.shuffle) shuffle.Shuffle(pairs);
  std::vector<BenchRequest> requests;
  for (ShareGptPair& pair : pairs) {
    if (static_cast<int64_t>(requests.size()) >= sampling.num_prompts) break;
    HR_ASSIGN_OR_RETURN(const std::vector<int32_t> prompt, tokenizer.tokenize(pair.prompt, true));
    const auto prompt_len = static_cast<int64_t>(prompt.size());
    int64_t output_len = 0;
    if (sampling.output_len.has_value()) {
      output_len = *sampling.output_len;
    } else {
      HR_ASSIGN_OR_RETURN(const std::vector<int32_t> reply,
                          tokenizer.tokenize(pair.completion, true));
      output_len = static_cast<int64_t>(reply.size());
      if (output_len < kShareGptMinLen) continue;
    }
    if (prompt_len < kShareGptMinLen || prompt_len > kShareGptMaxPromptLen ||
        prompt_len + output_len > kShareGptMaxTotalLen) {
      continue;
    }
    requests.push_back({.text = std::move(pair.prompt),
                        .ids = {},
                        .prompt_len = prompt_len,
                        .output_len = output_len});
  }
  if (requests.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "none of the ", pairs.size(), " conversations of two or more turns has a prompt of ",
        kShareGptMinLen, " to ", kShareGptMaxPromptLen, " tokens, a reply of at least ",
        kShareGptMinLen, " and at most ", kShareGptMaxTotalLen, " tokens in all"));
  }
  if (sampling.oversample && static_cast<int64_t>(requests.size()) < sampling.num_prompts) {
    // vLLM reseeds and draws random.choice among those that passed (maybe_oversample_requests).
    PythonRandom choose(sampling.seed);
    const size_t passed = requests.size();
    while (static_cast<int64_t>(requests.size()) < sampling.num_prompts) {
      BenchRequest again = requests[choose.RandBelow(passed)];
      requests.push_back(std::move(again));
    }
  }
  return requests;
}

double RampUpRate(const RampUp& ramp, int64_t i, int64_t n) {
  const double progress = static_cast<double>(i) / static_cast<double>(std::max<int64_t>(n - 1, 1));
  if (ramp.strategy == RampUp::Strategy::kLinear) {
    return ramp.start_rps + (ramp.end_rps - ramp.start_rps) * progress;
  }
  return ramp.start_rps * std::pow(ramp.end_rps / ramp.start_rps, progress);
}

std::vector<double> ArrivalOffsets(int64_t n, double rate, double burstiness, uint64_t seed,
                                   const std::optional<RampUp>& ramp) {
  std::vector<double> at(static_cast<size_t>(std::max<int64_t>(n, 0)), 0.0);
  if (ramp.has_value()) {
    std::mt19937_64 rng(seed);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double r = RampUpRate(*ramp, i, n);
      if (r > 0) {
        sum += std::isinf(burstiness)
                   ? 1.0 / r
                   : std::gamma_distribution<double>(burstiness, 1.0 / (r * burstiness))(rng);
      }
      at[static_cast<size_t>(i)] = sum;
    }
    return at;
  }
  if (at.empty() || std::isinf(rate)) return at;
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gap(std::isinf(burstiness) ? 1.0 : burstiness,
                                      std::isinf(burstiness) ? 1.0 : 1.0 / (rate * burstiness));
  double sum = 0;
  for (double& t : at) {
    sum += std::isinf(burstiness) ? 1.0 / rate : gap(rng);
    t = sum;
  }
  // The sum of the gaps drifts from n / rate by a few percent from seed to seed; vLLM scales it
  // back so that runs of different seeds send at the same average rate.
  const double scale = static_cast<double>(n) / rate / at.back();
  for (double& t : at) t *= scale;
  return at;
}

}  // namespace headroom::cli
