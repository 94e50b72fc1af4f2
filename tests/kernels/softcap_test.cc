#include "kernels/cpu/softcap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::RandomFloats;

TEST(SoftCapTest, MatchesDoubleReferenceAndStaysBelowTheCap) {
  std::mt19937_64 rng(13);
  for (const float cap : {0.5f, 30.0f, 50.0f}) {
    const std::vector<float> input = RandomFloats(rng, 1001, -200.0f, 200.0f);
    std::vector<float> x = input;
    ASSERT_TRUE(SoftCap(x.data(), static_cast<int64_t>(x.size()), cap).ok());
    for (size_t i = 0; i < x.size(); ++i) {
      const double c = static_cast<double>(cap);
      const double want = c * std::tanh(static_cast<double>(input[i]) / c);
      ASSERT_NEAR(static_cast<double>(x[i]), want, 1e-6 * c) << cap << " " << input[i];
      ASSERT_LE(std::abs(x[i]), cap);
    }
  }
  // Near the identity far below the cap.
  float small = 0.01f;
  ASSERT_TRUE(SoftCap(&small, 1, 30.0f).ok());
  EXPECT_NEAR(small, 0.01f, 1e-9);
}

TEST(SoftCapTest, BadArgumentsAreInvalidArgument) {
  std::vector<float> x(3, 1.0f);
  EXPECT_EQ(SoftCap(x.data(), -1, 1.0f).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SoftCap(nullptr, 3, 1.0f).code(), absl::StatusCode::kInvalidArgument);
  for (const float cap : {0.0f, -1.0f, NAN, INFINITY}) {
    EXPECT_EQ(SoftCap(x.data(), 3, cap).code(), absl::StatusCode::kInvalidArgument) << cap;
  }
  EXPECT_EQ(x, std::vector<float>(3, 1.0f));
}

}  // namespace
}  // namespace headroom::kernels::cpu
