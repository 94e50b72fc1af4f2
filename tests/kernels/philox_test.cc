#include "kernels/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace headroom::kernels {
namespace {

// Known-answer vectors of Philox-4x32-10 published with Random123 (tests/kat_vectors):
// counter (4 words), key (2 words) -> output (4 words).
TEST(PhiloxTest, KnownAnswers) {
  struct Vector {
    Philox4x32Counter counter;
    Philox4x32Key key;
    Philox4x32Counter want;
  };
  const std::vector<Vector> vectors = {
      {{{0, 0, 0, 0}}, {{0, 0}}, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {{0xffffffff, 0xffffffff}},
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {{0xa4093822, 0x299f31d0}},
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Vector& v : vectors) {
    const Philox4x32Counter got = Philox4x32_10(v.counter, v.key);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.word[i], v.want.word[i]) << "word " << i;
  }
}

TEST(PhiloxTest, UniformIsInUnitIntervalAndLooksUniform) {
  // Mean 1/2 and variance 1/12 of 100000 draws, within 5 standard errors.
  const int n = 100000;
  double sum = 0.0;
  double sum_squares = 0.0;
  for (uint64_t i = 0; i < n; ++i) {
    const double u = PhiloxUniform(1234, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_squares += u * u;
  }
  const double mean = sum / n;
  const double variance = sum_squares / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5.0 * std::sqrt(1.0 / 12.0 / n));
  EXPECT_NEAR(variance, 1.0 / 12.0, 0.002);
}

TEST(PhiloxTest, UniformDependsOnSeedAndIndex) {
  EXPECT_EQ(PhiloxUniform(7, 3), PhiloxUniform(7, 3));
  EXPECT_NE(PhiloxUniform(7, 3), PhiloxUniform(7, 4));
  EXPECT_NE(PhiloxUniform(7, 3), PhiloxUniform(8, 3));
  EXPECT_NE(PhiloxUniform(uint64_t{1} << 32, 0), PhiloxUniform(0, 0));  // high seed bits count
  EXPECT_NE(PhiloxUniform(0, uint64_t{1} << 32), PhiloxUniform(0, 0));  // high index bits count
}

}  // namespace
}  // namespace headroom::kernels
