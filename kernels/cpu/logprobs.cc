#include "kernels/cpu/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {
namespace internal {

absl::Status ComputeRowStats(absl::string_view op, const float* row, int64_t vocab_size,
                             int64_t row_index, RowStats& stats) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (int64_t t = 0; t < vocab_size; ++t) {
    const float l = row[t];
    if (std::isnan(l) || l == std::numeric_limits<float>::infinity()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": row ", row_index, " has a NaN or +inf logit at token ", t));
    }
    max_logit = std::max(max_logit, l);
  }
  if (max_logit == -std::numeric_limits<float>::infinity()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": every logit of row ", row_index, " is -inf"));
  }
  double sum = 0.0;
  const double max_d = static_cast<double>(max_logit);
  for (int64_t t = 0; t < vocab_size; ++t) sum += std::exp(static_cast<double>(row[t]) - max_d);
  stats = RowStats{.max_logit = max_logit, .log_sum_exp = max_d + std::log(sum)};
  return absl::OkStatus();
}

void WriteTopLogprobs(const float* row, int64_t vocab_size, double log_sum_exp, int64_t n,
                      std::vector<int32_t>& ids, int32_t* top_ids, float* top_logprobs) {
  n = std::min(n, vocab_size);
  if (n > 0) {
    for (int64_t t = 0; t < vocab_size; ++t) ids[static_cast<size_t>(t)] = static_cast<int32_t>(t);
    // Logit descending, ties by lower id.
    std::partial_sort(
        ids.begin(), ids.begin() + n, ids.begin() + vocab_size,
        [row](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  }
  for (int64_t i = 0; i < kMaxLogprobs; ++i) {
    if (i < n) {
      const int32_t t = ids[static_cast<size_t>(i)];
      top_ids[i] = t;
      top_logprobs[i] = static_cast<float>(static_cast<double>(row[t]) - log_sum_exp);
    } else {
      top_ids[i] = -1;
      top_logprobs[i] = -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace internal

absl::Status TokenLogprobs(const float* logits, int64_t num_rows, int64_t vocab_size,
                           const int32_t* targets, int32_t num_top, const LogprobOutput& output) {
  constexpr absl::string_view kOp = "TokenLogprobs";
  if (num_rows < 0 || vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TokenLogprobs: bad sizes: ", num_rows, " rows of ", vocab_size, " logits"));
  }
  if (num_top < 0 || num_top > kMaxLogprobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("TokenLogprobs: num_top must be in [0, ", kMaxLogprobs, "], got ", num_top));
  }
  if (num_rows == 0) return absl::OkStatus();
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "logits", logits, num_rows * vocab_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "targets", targets, num_rows));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "token_logprobs", output.token_logprobs, num_rows));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "top_ids", output.top_ids, num_rows * kMaxLogprobs));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "top_logprobs", output.top_logprobs, num_rows * kMaxLogprobs));
  std::vector<internal::RowStats> stats(static_cast<size_t>(num_rows));
  for (int64_t r = 0; r < num_rows; ++r) {
    if (targets[r] < 0 || targets[r] >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("TokenLogprobs: row ", r, ": target ",
                                                     targets[r], " is outside the vocabulary (",
                                                     vocab_size, ")"));
    }
    HR_RETURN_IF_ERROR(internal::ComputeRowStats(kOp, logits + r * vocab_size, vocab_size, r,
                                                 stats[static_cast<size_t>(r)]));
  }
  std::vector<int32_t> ids(static_cast<size_t>(vocab_size));
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* row = logits + r * vocab_size;
    const double log_sum_exp = stats[static_cast<size_t>(r)].log_sum_exp;
    output.token_logprobs[r] =
        static_cast<float>(static_cast<double>(row[targets[r]]) - log_sum_exp);
    if (output.target_ranks != nullptr) {
      const float target = row[targets[r]];
      output.target_ranks[r] =
          1 + static_cast<int32_t>(
                  std::count_if(row, row + vocab_size, [target](float l) { return l > target; }));
    }
    internal::WriteTopLogprobs(row, vocab_size, log_sum_exp, num_top, ids,
                               output.top_ids + r * kMaxLogprobs,
                               output.top_logprobs + r * kMaxLogprobs);
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
