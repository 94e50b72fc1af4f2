#include "kernels/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/threads.h"
#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

// Tolerance: |got - want| <= 1e-5 * sum_k |x| |w| + 1e-6, i.e. fp32 rounding of a k-term sum
// relative to its magnitude (the reference sums in double).
void ExpectLinearMatches(int64_t m, int64_t n, int64_t k, bool with_bias, std::mt19937_64& rng) {
  const std::vector<float> x = RandomFloats(rng, m * k);
  const std::vector<float> w = RandomFloats(rng, n * k);
  const std::vector<float> bias = RandomFloats(rng, n);
  std::vector<float> out = Poisoned(m * n);
  ASSERT_TRUE(
      Linear(x.data(), w.data(), with_bias ? bias.data() : nullptr, m, n, k, out.data()).ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = with_bias ? static_cast<double>(bias[static_cast<size_t>(j)]) : 0.0;
      double magnitude = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double a = static_cast<double>(x[static_cast<size_t>(i * k + p)]);
        const double b = static_cast<double>(w[static_cast<size_t>(j * k + p)]);
        want += a * b;
        magnitude += std::abs(a * b);
      }
      const double got = static_cast<double>(out[static_cast<size_t>(i * n + j)]);
      ASSERT_NEAR(got, want, 1e-5 * magnitude + 1e-6)
          << "m=" << m << " n=" << n << " k=" << k << " bias=" << with_bias << " at " << i << ","
          << j;
    }
  }
}

TEST(LinearTest, MatchesNaiveOnOddSizes) {
  std::mt19937_64 rng(7);
  for (const auto& [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{1, 33, 65}, std::tuple{3, 5, 7},
                               std::tuple{17, 129, 255}, std::tuple{64, 96, 300}}) {
    for (bool bias : {false, true}) ExpectLinearMatches(m, n, k, bias, rng);
  }
}

TEST(LinearTest, SameResultWithOneOrTwoThreads) {
  const int before = NumThreads();
  std::mt19937_64 rng(8);
  SetNumThreads(1);
  ExpectLinearMatches(37, 300, 200, true, rng);
  SetNumThreads(2);
  ExpectLinearMatches(37, 300, 200, true, rng);
  SetNumThreads(before);
}

TEST(LinearTest, ZeroRowsIsANoOp) {
  const std::vector<float> w(6, 1.0f);
  EXPECT_TRUE(Linear(nullptr, w.data(), nullptr, 0, 2, 3, nullptr).ok());
}

TEST(LinearTest, BadArgumentsAreInvalidArgument) {
  const std::vector<float> x(6, 1.0f);
  const std::vector<float> w(6, 1.0f);
  std::vector<float> out(4);
  EXPECT_EQ(Linear(x.data(), w.data(), nullptr, -1, 2, 3, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(x.data(), w.data(), nullptr, 2, 0, 3, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(x.data(), nullptr, nullptr, 2, 2, 3, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(x.data(), w.data(), nullptr, 2, 2, int64_t{1} << 32, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels::cpu
