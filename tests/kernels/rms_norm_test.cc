#include "kernels/cpu/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

// Reference in double: x / sqrt(mean(x^2) + eps) * w. Tolerance: 2e-6 relative + 1e-7 absolute
// (fp32 scaling of an fp32 input).
void ExpectNormalized(const std::vector<float>& x, const std::vector<float>& weight, int64_t tokens,
                      int64_t hidden, float eps, const std::vector<float>& out) {
  for (int64_t t = 0; t < tokens; ++t) {
    double sum = 0.0;
    for (int64_t j = 0; j < hidden; ++j) {
      const double v = static_cast<double>(x[static_cast<size_t>(t * hidden + j)]);
      sum += v * v;
    }
    const double inv_rms =
        1.0 / std::sqrt(sum / static_cast<double>(hidden) + static_cast<double>(eps));
    for (int64_t j = 0; j < hidden; ++j) {
      const size_t i = static_cast<size_t>(t * hidden + j);
      const double want =
          static_cast<double>(x[i]) * inv_rms * static_cast<double>(weight[static_cast<size_t>(j)]);
      ASSERT_NEAR(static_cast<double>(out[i]), want, 2e-6 * std::abs(want) + 1e-7)
          << "tokens=" << tokens << " hidden=" << hidden << " at " << t << "," << j;
    }
  }
}

TEST(RmsNormTest, MatchesDoubleReferenceOnOddSizes) {
  std::mt19937_64 rng(3);
  for (const auto& [tokens, hidden] : {std::pair{1, 1}, std::pair{3, 17}, std::pair{33, 4099}}) {
    for (float eps : {1e-5f, 1e-6f}) {
      const std::vector<float> x = RandomFloats(rng, int64_t{tokens} * hidden, -3.0f, 3.0f);
      const std::vector<float> weight = RandomFloats(rng, hidden, 0.5f, 1.5f);
      std::vector<float> out = Poisoned(int64_t{tokens} * hidden);
      ASSERT_TRUE(RmsNorm(x.data(), weight.data(), tokens, hidden, eps, out.data()).ok());
      ExpectNormalized(x, weight, tokens, hidden, eps, out);
    }
  }
}

TEST(RmsNormTest, ZeroRowGivesZeros) {
  const std::vector<float> x(8, 0.0f);
  const std::vector<float> weight(8, 2.0f);
  std::vector<float> out = Poisoned(8);
  ASSERT_TRUE(RmsNorm(x.data(), weight.data(), 1, 8, 1e-5f, out.data()).ok());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(RmsNormTest, InPlaceEqualsOutOfPlace) {
  std::mt19937_64 rng(4);
  std::vector<float> x = RandomFloats(rng, 5 * 31);
  const std::vector<float> weight = RandomFloats(rng, 31);
  std::vector<float> out = Poisoned(5 * 31);
  ASSERT_TRUE(RmsNorm(x.data(), weight.data(), 5, 31, 1e-5f, out.data()).ok());
  ASSERT_TRUE(RmsNorm(x.data(), weight.data(), 5, 31, 1e-5f, x.data()).ok());
  EXPECT_EQ(x, out);
}

TEST(AddRmsNormTest, AddsResidualThenNormalizes) {
  std::mt19937_64 rng(5);
  for (const auto& [tokens, hidden] : {std::pair{1, 1}, std::pair{7, 129}, std::pair{16, 2051}}) {
    const int64_t n = int64_t{tokens} * hidden;
    const std::vector<float> x = RandomFloats(rng, n);
    const std::vector<float> residual_in = RandomFloats(rng, n, -2.0f, 2.0f);
    const std::vector<float> weight = RandomFloats(rng, hidden, 0.5f, 1.5f);
    std::vector<float> residual = residual_in;
    std::vector<float> out = Poisoned(n);
    ASSERT_TRUE(
        AddRmsNorm(residual.data(), x.data(), weight.data(), tokens, hidden, 1e-5f, out.data())
            .ok());
    std::vector<float> sum(static_cast<size_t>(n));
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = residual_in[i] + x[i];
    EXPECT_EQ(residual, sum) << "the residual is the exact fp32 sum";
    ExpectNormalized(sum, weight, tokens, hidden, 1e-5f, out);
  }
}

TEST(AddRmsNormTest, OutMayAliasX) {
  std::mt19937_64 rng(6);
  std::vector<float> x = RandomFloats(rng, 3 * 40);
  const std::vector<float> weight = RandomFloats(rng, 40);
  std::vector<float> residual_a = RandomFloats(rng, 3 * 40);
  std::vector<float> residual_b = residual_a;
  std::vector<float> out = Poisoned(3 * 40);
  ASSERT_TRUE(
      AddRmsNorm(residual_a.data(), x.data(), weight.data(), 3, 40, 1e-6f, out.data()).ok());
  ASSERT_TRUE(AddRmsNorm(residual_b.data(), x.data(), weight.data(), 3, 40, 1e-6f, x.data()).ok());
  EXPECT_EQ(residual_a, residual_b);
  EXPECT_EQ(out, x);
}

// Rows split into column parts (as ranks hold heads): each part's sums of squares, added as the
// all-reduce adds them, then each part scaled by the whole row's rms, is the whole row's RMSNorm.
TEST(RmsNormFromSumSquaresTest, PartsScaledByTheWholeRowsSumAreTheRowsNorm) {
  std::mt19937_64 rng(11);
  for (const auto& [tokens, widths] : {std::pair<int64_t, std::vector<int64_t>>{1, {5, 5}},
                                       {7, {16, 16, 16, 16}},
                                       {13, {3, 9, 1}}}) {
    int64_t hidden = 0;
    for (const int64_t w : widths) hidden += w;
    const std::vector<float> x = RandomFloats(rng, tokens * hidden, -3.0f, 3.0f);
    const std::vector<float> weight = RandomFloats(rng, hidden, 0.5f, 1.5f);
    std::vector<float> total(static_cast<size_t>(tokens), 0.0f);
    std::vector<std::vector<float>> parts;
    int64_t first = 0;
    for (const int64_t w : widths) {
      std::vector<float> part(static_cast<size_t>(tokens * w));
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = 0; j < w; ++j) {
          part[static_cast<size_t>(t * w + j)] = x[static_cast<size_t>(t * hidden + first + j)];
        }
      }
      std::vector<float> sums = Poisoned(tokens);
      ASSERT_TRUE(SumSquares(part.data(), tokens, w, sums.data()).ok());
      for (int64_t t = 0; t < tokens; ++t)
        total[static_cast<size_t>(t)] += sums[static_cast<size_t>(t)];
      parts.push_back(std::move(part));
      first += w;
    }
    std::vector<float> out(static_cast<size_t>(tokens * hidden));
    first = 0;
    for (size_t p = 0; p < widths.size(); ++p) {
      const int64_t w = widths[p];
      std::vector<float> scaled = Poisoned(tokens * w);
      ASSERT_TRUE(RmsNormFromSumSquares(parts[p].data(), total.data(), weight.data() + first,
                                        tokens, w, hidden, 1e-6f, scaled.data())
                      .ok());
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = 0; j < w; ++j) {
          out[static_cast<size_t>(t * hidden + first + j)] = scaled[static_cast<size_t>(t * w + j)];
        }
      }
      first += w;
    }
    ExpectNormalized(x, weight, tokens, hidden, 1e-6f, out);
  }
}

TEST(RmsNormFromSumSquaresTest, BadArgumentsAreInvalidArgument) {
  const std::vector<float> x(8, 1.0f);
  std::vector<float> out(8);
  std::vector<float> sums(2);
  EXPECT_EQ(SumSquares(x.data(), 2, 0, sums.data()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SumSquares(x.data(), 2, 4, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      RmsNormFromSumSquares(x.data(), sums.data(), x.data(), 2, 4, 3, 1e-6f, out.data()).code(),
      absl::StatusCode::kInvalidArgument)
      << "the whole row is narrower than its part";
  EXPECT_EQ(RmsNormFromSumSquares(x.data(), nullptr, x.data(), 2, 4, 8, 1e-6f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RmsNormTest, BadArgumentsAreInvalidArgument) {
  const std::vector<float> x(4, 1.0f);
  std::vector<float> out(4);
  EXPECT_EQ(RmsNorm(x.data(), x.data(), 1, 0, 1e-5f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RmsNorm(x.data(), x.data(), -1, 4, 1e-5f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RmsNorm(x.data(), x.data(), 1, 4, -1.0f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RmsNorm(x.data(), nullptr, 1, 4, 1e-5f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> residual(4);
  EXPECT_EQ(AddRmsNorm(nullptr, x.data(), x.data(), 1, 4, 1e-5f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels::cpu
