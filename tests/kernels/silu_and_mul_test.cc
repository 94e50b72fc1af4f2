#include "kernels/cpu/silu_and_mul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

TEST(SiluAndMulTest, MatchesDoubleReferenceOnOddSizes) {
  std::mt19937_64 rng(11);
  for (const auto& [tokens, inter] : {std::pair{1, 1}, std::pair{5, 3}, std::pair{17, 1377}}) {
    const std::vector<float> gate_up = RandomFloats(rng, int64_t{tokens} * 2 * inter, -8.0f, 8.0f);
    std::vector<float> out = Poisoned(int64_t{tokens} * inter);
    ASSERT_TRUE(SiluAndMul(gate_up.data(), tokens, inter, out.data()).ok());
    for (int t = 0; t < tokens; ++t) {
      for (int j = 0; j < inter; ++j) {
        const double g = static_cast<double>(gate_up[static_cast<size_t>(t * 2 * inter + j)]);
        const double u = static_cast<double>(gate_up[static_cast<size_t>(t * 2 * inter + inter + j)]);
        const double want = g / (1.0 + std::exp(-g)) * u;
        // fp32 exp and two roundings: 1e-6 relative.
        ASSERT_NEAR(static_cast<double>(out[static_cast<size_t>(t * inter + j)]), want,
                    1e-6 * std::abs(want) + 1e-7)
            << t << "," << j;
      }
    }
  }
}

TEST(SiluAndMulTest, ExtremeGatesStayFinite) {
  // gate = -200: exp(200) overflows fp32 to inf and silu must be -0, not NaN.
  const std::vector<float> gate_up = {-200.0f, 200.0f, 0.0f, 3.0f, 5.0f, 7.0f};  // [1, 2*3]
  std::vector<float> out = Poisoned(3);
  ASSERT_TRUE(SiluAndMul(gate_up.data(), 1, 3, out.data()).ok());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 200.0f * 5.0f);
  EXPECT_EQ(out[2], 0.0f);
}

TEST(SiluAndMulTest, BadArgumentsAreInvalidArgument) {
  std::vector<float> out(2);
  const std::vector<float> gate_up(4, 1.0f);
  EXPECT_EQ(SiluAndMul(gate_up.data(), -1, 2, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SiluAndMul(gate_up.data(), 1, 0, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SiluAndMul(nullptr, 1, 2, out.data()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels::cpu
