#include "kernels/cpu/logprobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::RandomFloats;

// Against a naive double log-softmax and a full sort, on random rows of an odd vocabulary, with
// the outputs poisoned first.
TEST(TokenLogprobsTest, MatchesANaiveLogSoftmaxForTheTargetAndTheTopTokens) {
  std::mt19937_64 rng(11);
  constexpr int64_t kRows = 7;
  constexpr int64_t kVocab = 37;
  std::vector<float> logits = RandomFloats(rng, kRows * kVocab, -6.0f, 6.0f);
  logits[3] = logits[5];  // a tie: the lower id first
  std::vector<int32_t> targets(kRows);
  for (int32_t& t : targets) t = static_cast<int32_t>(rng() % kVocab);
  for (const int32_t num_top : {0, 1, 5, kMaxLogprobs}) {
    std::vector<float> token(kRows, std::numeric_limits<float>::quiet_NaN());
    std::vector<int32_t> ids(kRows * kMaxLogprobs, 12345);
    std::vector<float> top(kRows * kMaxLogprobs, std::numeric_limits<float>::quiet_NaN());
    std::vector<int32_t> ranks(kRows, -7);
    ASSERT_TRUE(TokenLogprobs(logits.data(), kRows, kVocab, targets.data(), num_top,
                              {.token_logprobs = token.data(),
                               .top_ids = ids.data(),
                               .top_logprobs = top.data(),
                               .target_ranks = ranks.data()})
                    .ok());
    for (int64_t r = 0; r < kRows; ++r) {
      const float* row = logits.data() + r * kVocab;
      double lse = 0.0;
      for (int64_t t = 0; t < kVocab; ++t) lse += std::exp(static_cast<double>(row[t]));
      lse = std::log(lse);
      EXPECT_NEAR(token[static_cast<size_t>(r)],
                  static_cast<double>(row[targets[static_cast<size_t>(r)]]) - lse, 1e-5);
      std::vector<int32_t> order(kVocab);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [row](int32_t a, int32_t b) { return row[a] > row[b]; });
      // The target's 1-based place in that order (tokens tied with it do not count).
      const int32_t target = targets[static_cast<size_t>(r)];
      int32_t rank = 1;
      while (row[order[static_cast<size_t>(rank - 1)]] > row[target]) ++rank;
      EXPECT_EQ(ranks[static_cast<size_t>(r)], rank) << r;
      for (int32_t i = 0; i < kMaxLogprobs; ++i) {
        const size_t at = static_cast<size_t>(r * kMaxLogprobs + i);
        if (i < num_top) {
          EXPECT_EQ(ids[at], order[static_cast<size_t>(i)]) << r << " " << i;
          EXPECT_NEAR(top[at], static_cast<double>(row[order[static_cast<size_t>(i)]]) - lse, 1e-5);
        } else {
          EXPECT_EQ(ids[at], -1);
          EXPECT_EQ(top[at], -std::numeric_limits<float>::infinity());
        }
      }
    }
  }
}

TEST(TokenLogprobsTest, BadInputIsInvalidArgument) {
  std::vector<float> logits(8, 0.0f);
  std::vector<float> token(2);
  std::vector<int32_t> ids(2 * kMaxLogprobs);
  std::vector<float> top(2 * kMaxLogprobs);
  const LogprobOutput out{
      .token_logprobs = token.data(), .top_ids = ids.data(), .top_logprobs = top.data()};
  const std::vector<int32_t> in_vocab = {1, 3};
  EXPECT_EQ(TokenLogprobs(logits.data(), 2, 4, in_vocab.data(), 21, out).code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<int32_t> outside = {1, 4};
  EXPECT_EQ(TokenLogprobs(logits.data(), 2, 4, outside.data(), 1, out).code(),
            absl::StatusCode::kInvalidArgument);
  logits[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(TokenLogprobs(logits.data(), 2, 4, in_vocab.data(), 1, out).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels::cpu
