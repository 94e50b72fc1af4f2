#include "kernels/cpu/gelu_tanh_and_mul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

// PyTorch's gelu(approximate="tanh") in double.
double GeluTanh(double g) {
  return 0.5 * g *
         (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g)));
}

TEST(GeluTanhAndMulTest, MatchesDoubleReferenceOnOddSizes) {
  std::mt19937_64 rng(12);
  for (const auto& [tokens, inter] : {std::pair{1, 1}, std::pair{5, 3}, std::pair{17, 1377}}) {
    const std::vector<float> gate_up = RandomFloats(rng, int64_t{tokens} * 2 * inter, -8.0f, 8.0f);
    std::vector<float> out = Poisoned(int64_t{tokens} * inter);
    ASSERT_TRUE(GeluTanhAndMul(gate_up.data(), tokens, inter, out.data()).ok());
    for (int t = 0; t < tokens; ++t) {
      for (int j = 0; j < inter; ++j) {
        const double g = static_cast<double>(gate_up[static_cast<size_t>(t * 2 * inter + j)]);
        const double u =
            static_cast<double>(gate_up[static_cast<size_t>(t * 2 * inter + inter + j)]);
        const double want = GeluTanh(g) * u;
        // fp32 tanh and a few roundings; near g = -3 gelu is a small difference of large terms.
        ASSERT_NEAR(static_cast<double>(out[static_cast<size_t>(t * inter + j)]), want,
                    2e-6 * std::abs(want) + 2e-6)
            << t << "," << j;
      }
    }
  }
}

TEST(GeluTanhAndMulTest, KnownPointsAndExtremes) {
  // gelu(0) = 0; gelu(g) -> g for large g and -> 0 for very negative g; no NaN where g^3
  // overflows the tanh argument.
  const std::vector<float> gate_up = {0.0f, 1.0f, 1e4f, -1e4f, 3.0f, 3.0f, 2.0f, 2.0f};  // [1, 2*4]
  std::vector<float> out = Poisoned(4);
  ASSERT_TRUE(GeluTanhAndMul(gate_up.data(), 1, 4, out.data()).ok());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], GeluTanh(1.0) * 3.0, 1e-6);
  EXPECT_FLOAT_EQ(out[2], 1e4f * 2.0f);
  EXPECT_EQ(out[3], 0.0f);
  // Not SiLU: gelu_tanh(1) = 0.841192, silu(1) = 0.731059.
  EXPECT_NEAR(GeluTanh(1.0), 0.841192, 1e-6);
}

TEST(GeluTanhAndMulTest, BadArgumentsAreInvalidArgument) {
  std::vector<float> out(2);
  const std::vector<float> gate_up(4, 1.0f);
  EXPECT_EQ(GeluTanhAndMul(gate_up.data(), -1, 2, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GeluTanhAndMul(gate_up.data(), 1, 0, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GeluTanhAndMul(nullptr, 1, 2, out.data()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels::cpu
