#include "kernels/cpu/sampling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"
#include "kernels/philox.h"

namespace headroom::kernels::cpu {
namespace {

constexpr int64_t kFirstTopPSort = 64;  // candidates sorted first when looking for the nucleus

absl::Status ValidateParams(const SamplingParams& p, int64_t row) {
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Sample: row ", row, ": temperature must be finite and >= 0, got ", p.temperature));
  }
  if (p.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sample: row ", row, ": top_k must be >= 0 (0 = off), got ", p.top_k));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sample: row ", row, ": top_p must be in (0, 1], got ", p.top_p));
  }
  if (p.num_logprobs < 0 || p.num_logprobs > kMaxLogprobs) {
    return absl::InvalidArgumentError(absl::StrCat("Sample: row ", row,
                                                   ": num_logprobs must be in [0, ", kMaxLogprobs,
                                                   "], got ", p.num_logprobs));
  }
  if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sample: row ", row, ": repetition_penalty must be finite and > 0, got ",
                     p.repetition_penalty));
  }
  if (!std::isfinite(p.frequency_penalty) || !std::isfinite(p.presence_penalty)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sample: row ", row,
                     ": frequency_penalty and presence_penalty must be "
                     "finite, got ",
                     p.frequency_penalty, " and ", p.presence_penalty));
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sample: row ", row, ": min_p must be in [0, 1], got ", p.min_p));
  }
  return absl::OkStatus();
}

// The row is chosen from a copy ProcessLogits changes (bias, bans, penalties).
bool ProcessesLogits(const SamplingParams& p) {
  return p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f ||
         p.presence_penalty != 0.0f || p.num_banned_tokens > 0 || p.num_bias > 0 ||
         p.num_allowed_tokens > 0 || p.allowed_bitmask_words > 0;
}

absl::Status ValidateTokens(const int32_t* ids, int64_t count, int64_t vocab_size, int64_t row,
                            absl::string_view what) {
  if (count < 0 || (count > 0 && ids == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sample: row ", row, ": ", what, " has ", count, " ids and no pointer"));
  }
  for (int64_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("Sample: row ", row, ": ", what, " id ",
                                                     ids[i], " is outside [0, ", vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

// A bitmask's words and its bits past the vocabulary (clear: they would be tokens that do not
// exist); it may stop short of the vocabulary, but not together with a list.
absl::Status ValidateBitmask(const SamplingParams& p, int64_t vocab_size, int64_t row) {
  if (p.allowed_bitmask_words < 0 ||
      (p.allowed_bitmask_words > 0 && p.allowed_bitmask == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat("Sample: row ", row, ": allowed_bitmask has ",
                                                   p.allowed_bitmask_words,
                                                   " words and no pointer"));
  }
  if (p.allowed_bitmask_words > 0 && p.num_allowed_tokens > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Sample: row ", row, ": both allowed_tokens (", p.num_allowed_tokens,
        " ids) and allowed_bitmask (", p.allowed_bitmask_words, " words) given; at most one"));
  }
  for (int64_t word = vocab_size / 32; word < p.allowed_bitmask_words; ++word) {
    const int64_t first = word * 32;
    const uint32_t past = first >= vocab_size ? ~uint32_t{0} : ~uint32_t{0} << (vocab_size - first);
    if ((p.allowed_bitmask[word] & past) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Sample: row ", row, ": allowed_bitmask sets token ",
                       first + std::countr_zero(p.allowed_bitmask[word] & past), ", outside [0, ",
                       vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

// Orders token ids by logit descending, ties by lower id.
struct HigherLogit {
  const float* row;
  bool operator()(int32_t a, int32_t b) const {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  }
};

int32_t Argmax(const float* row, int64_t vocab_size) {
  int32_t best = 0;
  for (int64_t t = 1; t < vocab_size; ++t) {
    if (row[t] > row[best]) best = static_cast<int32_t>(t);
  }
  return best;
}

// Samples one token of a non-greedy row. `ids` is scratch of vocab_size entries.
int32_t SampleRow(const float* row, int64_t vocab_size, const SamplingParams& p, float max_logit,
                  std::vector<int32_t>& ids) {
  const double inv_temperature = 1.0 / static_cast<double>(p.temperature);
  const double max_d = static_cast<double>(max_logit);
  auto weight = [&](int32_t t) {
    return std::exp((static_cast<double>(row[t]) - max_d) * inv_temperature);
  };

  // Candidates: ids[0, kept).
  int64_t kept = vocab_size;
  for (int64_t t = 0; t < vocab_size; ++t) ids[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  const HigherLogit higher{row};
  if (p.min_p > 0.0f) {
    // probability(t) / probability(top) = weight(t); the top token always stays.
    const double min_weight = static_cast<double>(p.min_p);
    kept =
        std::partition(ids.begin(), ids.end(),
                       [&](int32_t t) { return row[t] == max_logit || weight(t) >= min_weight; }) -
        ids.begin();
  }
  if (p.top_k > 0 && p.top_k < kept) {
    std::nth_element(ids.begin(), ids.begin() + (p.top_k - 1), ids.begin() + kept, higher);
    kept = p.top_k;
  }
  if (p.top_p < 1.0f) {
    double total = 0.0;
    for (int64_t i = 0; i < kept; ++i) total += weight(ids[static_cast<size_t>(i)]);
    const double target = static_cast<double>(p.top_p) * total;
    // Sort a growing prefix until the running sum reaches the target.
    int64_t sorted = std::min(kFirstTopPSort, kept);
    for (;;) {
      std::partial_sort(ids.begin(), ids.begin() + sorted, ids.begin() + kept, higher);
      double cumulative = 0.0;
      int64_t nucleus = 0;
      for (int64_t i = 0; i < sorted; ++i) {
        cumulative += weight(ids[static_cast<size_t>(i)]);
        if (cumulative >= target) {
          nucleus = i + 1;
          break;
        }
      }
      if (nucleus > 0) {
        kept = nucleus;
        break;
      }
      if (sorted == kept) break;  // rounding kept the sum just below the target: keep all
      sorted = std::min(sorted * 4, kept);
    }
  }
  // Inverse CDF over the kept tokens in ascending id order.
  if (kept < vocab_size) std::sort(ids.begin(), ids.begin() + kept);
  double total = 0.0;
  for (int64_t i = 0; i < kept; ++i) total += weight(ids[static_cast<size_t>(i)]);
  const double threshold = PhiloxUniform(p.seed, p.counter) * total;
  double cumulative = 0.0;
  for (int64_t i = 0; i < kept; ++i) {
    cumulative += weight(ids[static_cast<size_t>(i)]);
    if (cumulative > threshold) return ids[static_cast<size_t>(i)];
  }
  // u * total rounded up to the full sum: the last token with nonzero weight.
  for (int64_t i = kept - 1; i > 0; --i) {
    if (weight(ids[static_cast<size_t>(i)]) > 0.0) return ids[static_cast<size_t>(i)];
  }
  return ids[0];
}

}  // namespace

void ProcessLogits(const float* row, int64_t vocab_size, const SamplingParams& p, float* out) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  if (p.num_allowed_tokens > 0) {
    // Everything -inf, then the allowed tokens' logits back from the row.
    std::fill(out, out + vocab_size, kMinusInf);
    for (int64_t i = 0; i < p.num_allowed_tokens; ++i) {
      const auto t = static_cast<size_t>(p.allowed_tokens[i]);
      out[t] = row[t];
    }
  } else if (p.allowed_bitmask_words > 0) {
    const int64_t covered = std::min(vocab_size, p.allowed_bitmask_words * 32);
    for (int64_t t = 0; t < covered; ++t) {
      const bool allowed = (p.allowed_bitmask[t / 32] >> (t % 32) & 1) != 0;
      out[t] = allowed ? row[t] : kMinusInf;
    }
    std::fill(out + covered, out + vocab_size, kMinusInf);
  } else if (out != row) {
    std::copy(row, row + vocab_size, out);
  }
  for (int64_t i = 0; i < p.num_bias; ++i) {
    out[static_cast<size_t>(p.bias_tokens[i])] += p.bias_values[i];
  }
  if (p.num_banned_tokens > 0) {
    std::vector<float> unbanned(static_cast<size_t>(p.num_banned_tokens));
    for (int64_t i = 0; i < p.num_banned_tokens; ++i) {
      const auto t = static_cast<size_t>(p.banned_tokens[i]);
      unbanned[static_cast<size_t>(i)] = out[t];
      out[t] = kMinusInf;
    }
    if (std::none_of(out, out + vocab_size, [](float x) { return x > kMinusInf; })) {
      // Banning would leave nothing to choose from (e.g. only EOS is allowed): undo it, in
      // reverse so a repeated id gets its first saved value back.
      for (int64_t i = p.num_banned_tokens - 1; i >= 0; --i) {
        out[static_cast<size_t>(p.banned_tokens[i])] = unbanned[static_cast<size_t>(i)];
      }
    }
  }
  if (p.repetition_penalty != 1.0f) {
    // Each distinct token once: mark it by flipping its logit through the penalty only the first
    // time it is seen (a seen-set over prompt and output).
    std::vector<bool> seen(static_cast<size_t>(vocab_size), false);
    const auto penalize = [&](const int32_t* ids, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        const size_t t = static_cast<size_t>(ids[i]);
        if (seen[t]) continue;
        seen[t] = true;
        // A tiny penalty must not overflow a logit to +inf (the step would fail for everyone).
        out[t] = out[t] > 0.0f
                     ? std::min(out[t] / p.repetition_penalty, std::numeric_limits<float>::max())
                     : out[t] * p.repetition_penalty;
      }
    };
    penalize(p.prompt_tokens, p.num_prompt_tokens);
    penalize(p.output_tokens, p.num_output_tokens);
  }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    std::vector<bool> present(static_cast<size_t>(vocab_size), false);
    for (int64_t i = 0; i < p.num_output_tokens; ++i) {
      const size_t t = static_cast<size_t>(p.output_tokens[i]);
      out[t] -= p.frequency_penalty;
      if (!present[t]) {
        present[t] = true;
        out[t] -= p.presence_penalty;
      }
    }
  }
}

absl::Status Sample(const float* logits, int64_t num_rows, int64_t vocab_size,
                    const SamplingParams* params, const SamplerOutput& output) {
  constexpr absl::string_view kOp = "Sample";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_rows", num_rows));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "vocab_size", vocab_size));
  if (vocab_size > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError("Sample: vocab_size exceeds int32");
  }
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "logits", logits, num_rows * vocab_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "params", params, num_rows));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "token_ids", output.token_ids, num_rows));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "token_logprobs", output.token_logprobs, num_rows));
  bool any_logprobs = false;
  for (int64_t r = 0; r < num_rows; ++r) {
    const SamplingParams& p = params[r];
    HR_RETURN_IF_ERROR(ValidateParams(p, r));
    if (ProcessesLogits(p)) {
      HR_RETURN_IF_ERROR(
          ValidateTokens(p.prompt_tokens, p.num_prompt_tokens, vocab_size, r, "prompt_tokens"));
      HR_RETURN_IF_ERROR(
          ValidateTokens(p.output_tokens, p.num_output_tokens, vocab_size, r, "output_tokens"));
      HR_RETURN_IF_ERROR(
          ValidateTokens(p.banned_tokens, p.num_banned_tokens, vocab_size, r, "banned_tokens"));
      HR_RETURN_IF_ERROR(ValidateTokens(p.bias_tokens, p.num_bias, vocab_size, r, "bias_tokens"));
      HR_RETURN_IF_ERROR(
          ValidateTokens(p.allowed_tokens, p.num_allowed_tokens, vocab_size, r, "allowed_tokens"));
      HR_RETURN_IF_ERROR(ValidateBitmask(p, vocab_size, r));
      for (int64_t i = 0; i < p.num_bias; ++i) {
        if (p.bias_values == nullptr || !std::isfinite(p.bias_values[i])) {
          return absl::InvalidArgumentError(
              absl::StrCat("Sample: row ", r, ": bias_values must be finite numbers"));
        }
      }
    }
    any_logprobs = any_logprobs || p.num_logprobs > 0;
  }
  if (any_logprobs) {
    HR_RETURN_IF_ERROR(
        internal::CheckPointer(kOp, "top_ids", output.top_ids, num_rows * kMaxLogprobs));
    HR_RETURN_IF_ERROR(
        internal::CheckPointer(kOp, "top_logprobs", output.top_logprobs, num_rows * kMaxLogprobs));
  }
  std::vector<internal::RowStats> stats(static_cast<size_t>(num_rows));
  for (int64_t r = 0; r < num_rows; ++r) {
    HR_RETURN_IF_ERROR(internal::ComputeRowStats(kOp, logits + r * vocab_size, vocab_size, r,
                                                 stats[static_cast<size_t>(r)]));
  }

  std::vector<int32_t> ids(static_cast<size_t>(vocab_size));  // scratch
  std::vector<float> processed;                               // scratch, rows ProcessLogits changes
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* row = logits + r * vocab_size;
    const SamplingParams& p = params[r];
    const internal::RowStats& s = stats[static_cast<size_t>(r)];
    // What the choice is made from: the raw row, or its processed copy (with its argmax).
    const float* scores = row;
    std::optional<int32_t> top;
    if (ProcessesLogits(p)) {
      processed.resize(static_cast<size_t>(vocab_size));
      ProcessLogits(row, vocab_size, p, processed.data());
      const int32_t best = Argmax(processed.data(), vocab_size);
      if (processed[static_cast<size_t>(best)] > -std::numeric_limits<float>::infinity()) {
        scores = processed.data();  // unless everything was banned
        top = best;
      }
    }
    int32_t token = 0;
    if (p.temperature < kGreedyTemperature) {
      token = top.has_value() ? *top : Argmax(row, vocab_size);
    } else {
      const float max_score = top.has_value() ? scores[*top] : s.max_logit;
      token = SampleRow(scores, vocab_size, p, max_score, ids);
    }
    output.token_ids[r] = token;
    output.token_logprobs[r] = static_cast<float>(static_cast<double>(row[token]) - s.log_sum_exp);

    if (output.top_ids == nullptr || output.top_logprobs == nullptr) continue;
    internal::WriteTopLogprobs(row, vocab_size, s.log_sum_exp, p.num_logprobs, ids,
                               output.top_ids + r * kMaxLogprobs,
                               output.top_logprobs + r * kMaxLogprobs);
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
