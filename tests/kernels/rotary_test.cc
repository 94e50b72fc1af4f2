#include "kernels/cpu/rotary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numbers>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::RandomFloats;

constexpr Llama3RopeScaling kLlama31{8.0, 1.0, 4.0, 8192};

std::vector<float> InvFreq(int64_t head_dim, double theta,
                           const std::optional<Llama3RopeScaling>& scaling = std::nullopt) {
  absl::StatusOr<std::vector<float>> inv_freq = RopeInvFreq(head_dim, theta, scaling);
  EXPECT_TRUE(inv_freq.ok()) << inv_freq.status();
  return inv_freq.ok() ? *inv_freq : std::vector<float>{};
}

TEST(RopeInvFreqTest, DefaultFrequencies) {
  // head_dim 4, theta 10000: 1 / 10000^(0/4), 1 / 10000^(2/4).
  EXPECT_EQ(InvFreq(4, 10000.0), (std::vector<float>{1.0f, 0.01f}));
  // head_dim 128, theta 500000 (Llama 3): inv_freq[i] = 500000^(-2i/128), to fp32 rounding.
  const std::vector<float> inv_freq = InvFreq(128, 500000.0);
  ASSERT_EQ(inv_freq.size(), 64u);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const double want = std::pow(500000.0, -static_cast<double>(2 * i) / 128.0);
    EXPECT_NEAR(static_cast<double>(inv_freq[i]), want, 3e-7 * want) << i;
  }
}

TEST(RopeInvFreqTest, Llama3ScalingAtTheThreeBands) {
  // Llama 3.1: theta 500000, head_dim 128, factor 8, low 1, high 4, original context 8192.
  // Wavelengths 2*pi / inv_freq: i <= 28 are < 2048 (high frequencies, unchanged), 29..34 lie in
  // [2048, 8192] (medium, interpolated), i >= 35 are > 8192 (low frequencies, divided by 8).
  const std::vector<float> plain = InvFreq(128, 500000.0);
  const std::vector<float> scaled = InvFreq(128, 500000.0, kLlama31);
  ASSERT_EQ(scaled.size(), 64u);
  for (size_t i = 0; i <= 28; ++i) EXPECT_EQ(scaled[i], plain[i]) << i;
  for (size_t i = 35; i < 64; ++i) {
    EXPECT_NEAR(static_cast<double>(scaled[i]), static_cast<double>(plain[i]) / 8.0,
                1e-7 * static_cast<double>(plain[i]))
        << i;
  }
  for (size_t i = 29; i <= 34; ++i) {
    const double f = static_cast<double>(plain[i]);
    const double smooth = (8192.0 / (2.0 * std::numbers::pi / f) - 1.0) / (4.0 - 1.0);
    ASSERT_GT(smooth, 0.0);
    ASSERT_LT(smooth, 1.0);
    const double want = (1.0 - smooth) * f / 8.0 + smooth * f;
    EXPECT_NEAR(static_cast<double>(scaled[i]), want, 2e-7 * want) << i;
    EXPECT_LT(scaled[i], plain[i]);
    EXPECT_GT(scaled[i], plain[i] / 8.0f);
  }
  // Worked by hand: i = 32 is 1/sqrt(500000) = 0.00141421356, wavelength 4442.883,
  // smooth = (8192 / 4442.883 - 1) / 3 = 0.2812826, scaled = 0.000524846161.
  EXPECT_NEAR(static_cast<double>(scaled[32]), 0.0005248461609929547, 1e-10);
  // i = 35: 500000^(-70/128) / 8 = 9.5562124e-05 (wavelength 8219 > 8192).
  EXPECT_NEAR(static_cast<double>(scaled[35]), 9.556212353964683e-05, 2e-11);
  EXPECT_EQ(scaled[0], 1.0f);
}

TEST(RopeInvFreqTest, InvalidArguments) {
  EXPECT_EQ(RopeInvFreq(5, 10000.0, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RopeInvFreq(0, 10000.0, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RopeInvFreq(64, 0.5, std::nullopt).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RopeInvFreq(64, 10000.0, Llama3RopeScaling{8.0, 4.0, 1.0, 8192}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RopeInvFreq(64, 10000.0, Llama3RopeScaling{0.0, 1.0, 4.0, 8192}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RopeInvFreq(64, 10000.0, Llama3RopeScaling{8.0, 1.0, 4.0, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RopeInvFreqTest, LongRopeDividesEachFrequencyByItsFactor) {
  // Phi-3.5-mini's shape: head_dim 96, theta 10000; factors from 1 to ~60 as its long list spans.
  std::vector<double> factors;
  for (int i = 0; i < 48; ++i) factors.push_back(1.0 + 1.25 * i);
  const absl::StatusOr<std::vector<float>> inv_freq = LongRopeInvFreq(96, 10000.0, factors);
  ASSERT_TRUE(inv_freq.ok()) << inv_freq.status();
  ASSERT_EQ(inv_freq->size(), 48u);
  for (size_t i = 0; i < inv_freq->size(); ++i) {
    const double want = 1.0 / (factors[i] * std::pow(10000.0, static_cast<double>(2 * i) / 96.0));
    EXPECT_NEAR(static_cast<double>((*inv_freq)[i]), want, 4e-7 * want) << i;
  }
  // Factors of 1 are the default frequencies, bit for bit.
  EXPECT_EQ(*LongRopeInvFreq(16, 10000.0, std::vector<double>(8, 1.0)), InvFreq(16, 10000.0));

  EXPECT_EQ(LongRopeInvFreq(96, 10000.0, {1.0, 2.0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<double> bad(8, 1.0);
  bad[3] = 0.0;
  EXPECT_EQ(LongRopeInvFreq(16, 10000.0, bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LongRopeInvFreq(15, 10000.0, std::vector<double>(7, 1.0)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// YaRN against transformers' own _compute_yarn_parameters (tests/kernels/fixtures/
// yarn_inv_freq.json, made by scripts/gen_rope_fixtures.py): Qwen2.5-7B's and Qwen3-8B's heads
// with their model cards' block, non-default betas, and the degenerate ramps of tiny pretrained
// lengths. Both run the same fp32 steps, so they agree to the power's rounding.
TEST(RopeInvFreqTest, YarnMatchesTransformersToOneUlp) {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  const std::string path =
      std::string(root != nullptr ? root : ".") + "/tests/kernels/fixtures/yarn_inv_freq.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot open " << path;
  const nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_EQ(fixture["cases"].size(), 6u);
  for (const nlohmann::json& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const nlohmann::json& block = c["rope_scaling"];
    const YarnRopeScaling scaling{.factor = block["factor"].get<double>(),
                                  .original_max_position_embeddings =
                                      block["original_max_position_embeddings"].get<int64_t>(),
                                  .beta_fast = block.value("beta_fast", 32.0),
                                  .beta_slow = block.value("beta_slow", 1.0)};
    const int64_t head_dim = c["head_dim"].get<int64_t>();
    const double theta = c["rope_theta"].get<double>();
    const absl::StatusOr<std::vector<float>> inv_freq = YarnInvFreq(head_dim, theta, scaling);
    ASSERT_TRUE(inv_freq.ok()) << inv_freq.status();
    // Within one ulp: torch's fp32 power (Sleef's, 1 ulp) is not always correctly rounded, and
    // ours is (Qwen's head_dim 128 over 1e6 differs at i = 37; every other value is equal).
    const std::vector<float> want = c["inv_freq"].get<std::vector<float>>();
    ASSERT_EQ(inv_freq->size(), want.size());
    int unequal = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const float got = (*inv_freq)[i];
      EXPECT_TRUE(got == want[i] || got == std::nextafter(want[i], 0.0f) ||
                  got == std::nextafter(want[i], 1.0f))
          << i << ": " << got << " against transformers' " << want[i];
      unequal += got == want[i] ? 0 : 1;
    }
    EXPECT_LE(unequal, 1);
    // Each frequency lies between its interpolated and its unscaled value.
    const std::vector<float> plain = InvFreq(head_dim, theta);
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_LE((*inv_freq)[i], plain[i]) << i;
      EXPECT_GE((*inv_freq)[i], plain[i] / static_cast<float>(scaling.factor) * (1 - 1e-6f)) << i;
    }
  }
}

TEST(RopeInvFreqTest, YarnInvalidArguments) {
  const YarnRopeScaling qwen{.factor = 4.0, .original_max_position_embeddings = 32768};
  EXPECT_TRUE(YarnInvFreq(128, 1e6, qwen).ok());
  for (const YarnRopeScaling& bad :
       {YarnRopeScaling{.factor = 0.5, .original_max_position_embeddings = 32768},
        YarnRopeScaling{.factor = 4.0, .original_max_position_embeddings = 0},
        YarnRopeScaling{.factor = 4.0,
        .original_max_position_embeddings = 32768,
        .beta_fast = 1.0,
        .beta_slow = 32.0},
        YarnRopeScaling{.factor = 4.0,
        .original_max_position_embeddings = 32768,
        .beta_fast = 32.0,
        .beta_slow = 0.0}}) {
    const absl::Status status = YarnInvFreq(128, 1e6, bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("invalid yarn rope scaling"));
  }
  EXPECT_EQ(YarnInvFreq(15, 1e6, qwen).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RotaryTest, HandComputedSmallCase) {
  // head_dim 4, theta 10000 -> inv_freq {1, 0.01}; pairs are (0, 2) and (1, 3).
  const std::vector<float> inv_freq = InvFreq(4, 10000.0);
  const std::vector<int64_t> positions = {1, 3};
  std::vector<float> q = {1, 2, 3, 4, /*token 1*/ 1, 0, 0, 0};  // [2 tokens, 1 head, 4]
  std::vector<float> k = {0, 0, 0, 0, /*token 1*/ 0.5f, -1, 2, 0.25f};
  ASSERT_TRUE(
      Rotary(positions.data(), 2, q.data(), 1, k.data(), 1, 4, 4, inv_freq.data(), 1.0f).ok());
  // Position 1: angles 1 and 0.01.
  //   q0 = 1 cos 1 - 3 sin 1,  q1 = 2 cos .01 - 4 sin .01,
  //   q2 = 3 cos 1 + 1 sin 1,  q3 = 4 cos .01 + 2 sin .01.
  EXPECT_NEAR(q[0], -1.9841106485555495, 1e-6);
  EXPECT_NEAR(q[1], 1.959900667496664, 1e-6);
  EXPECT_NEAR(q[2], 2.4623779024123156, 1e-6);
  EXPECT_NEAR(q[3], 4.019799668334994, 1e-6);
  // Position 3: angles 3 and 0.03; (1, 0, 0, 0) becomes (cos 3, 0, sin 3, 0).
  EXPECT_NEAR(q[4], std::cos(3.0), 1e-6);
  EXPECT_EQ(q[5], 0.0f);
  EXPECT_NEAR(q[6], std::sin(3.0), 1e-6);
  EXPECT_EQ(q[7], 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(k[static_cast<size_t>(i)], 0.0f);
  EXPECT_NEAR(k[4], -0.7772362644199571, 1e-6);
  EXPECT_NEAR(k[5], -1.0070489087996115, 1e-6);
  EXPECT_NEAR(k[6], -1.9094249891709572, 1e-6);
  EXPECT_NEAR(k[7], 0.21989200823475122, 1e-6);
}

TEST(RotaryTest, PositionZeroIsIdentity) {
  std::mt19937_64 rng(31);
  const std::vector<float> inv_freq = InvFreq(64, 500000.0, kLlama31);
  const std::vector<float> q0 = RandomFloats(rng, 3 * 4 * 64);
  const std::vector<float> k0 = RandomFloats(rng, 3 * 2 * 64);
  std::vector<float> q = q0;
  std::vector<float> k = k0;
  const std::vector<int64_t> positions = {0, 0, 0};
  ASSERT_TRUE(
      Rotary(positions.data(), 3, q.data(), 4, k.data(), 2, 64, 64, inv_freq.data(), 1.0f).ok());
  EXPECT_EQ(q, q0);
  EXPECT_EQ(k, k0);
}

// Matches a double-precision evaluation of HF's formula (angle = fp32 inv_freq * fp32 position,
// then cos/sin) at positions up to 8191, within 1e-5 absolute on inputs in [-1, 1], and preserves
// the norm of every rotated pair.
TEST(RotaryTest, MatchesHfFormulaAndPreservesNormUpTo8k) {
  std::mt19937_64 rng(32);
  const int64_t head_dim = 128;
  const int64_t heads = 3;
  const int64_t kv_heads = 1;
  for (const auto& scaling : {std::optional<Llama3RopeScaling>{}, std::optional{kLlama31}}) {
    const std::vector<float> inv_freq = InvFreq(head_dim, 500000.0, scaling);
    const std::vector<int64_t> positions = {0, 1, 2, 17, 1000, 4095, 4096, 8000, 8191};
    const int64_t tokens = static_cast<int64_t>(positions.size());
    const std::vector<float> q0 = RandomFloats(rng, tokens * heads * head_dim);
    const std::vector<float> k0 = RandomFloats(rng, tokens * kv_heads * head_dim);
    std::vector<float> q = q0;
    std::vector<float> k = k0;
    ASSERT_TRUE(Rotary(positions.data(), tokens, q.data(), heads, k.data(), kv_heads, head_dim,
                       head_dim, inv_freq.data(), 1.0f)
                    .ok());
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = (t * heads + h) * head_dim;
        for (int64_t i = 0; i < head_dim / 2; ++i) {
          const float angle_f = inv_freq[static_cast<size_t>(i)] *
                                static_cast<float>(positions[static_cast<size_t>(t)]);
          const double angle = static_cast<double>(angle_f);
          const double x1 = static_cast<double>(q0[static_cast<size_t>(base + i)]);
          const double x2 = static_cast<double>(q0[static_cast<size_t>(base + i + head_dim / 2)]);
          const double y1 = static_cast<double>(q[static_cast<size_t>(base + i)]);
          const double y2 = static_cast<double>(q[static_cast<size_t>(base + i + head_dim / 2)]);
          ASSERT_NEAR(y1, x1 * std::cos(angle) - x2 * std::sin(angle), 1e-5) << t << "," << i;
          ASSERT_NEAR(y2, x2 * std::cos(angle) + x1 * std::sin(angle), 1e-5) << t << "," << i;
          ASSERT_NEAR(y1 * y1 + y2 * y2, x1 * x1 + x2 * x2, 1e-5);
        }
      }
    }
  }
}

// q(m) . k(n) depends only on m - n.
TEST(RotaryTest, DotProductDependsOnlyOnRelativePosition) {
  std::mt19937_64 rng(33);
  const int64_t head_dim = 64;
  const std::vector<float> inv_freq = InvFreq(head_dim, 10000.0);
  const std::vector<float> q0 = RandomFloats(rng, head_dim);
  const std::vector<float> k0 = RandomFloats(rng, head_dim);
  auto rotated_dot = [&](int64_t m, int64_t n) {
    std::vector<float> q = q0;
    std::vector<float> k = k0;
    std::vector<float> unused_k(static_cast<size_t>(head_dim));
    std::vector<float> unused_q(static_cast<size_t>(head_dim));
    EXPECT_TRUE(
        Rotary(&m, 1, q.data(), 1, unused_k.data(), 1, head_dim, head_dim, inv_freq.data(), 1.0f)
            .ok());
    EXPECT_TRUE(
        Rotary(&n, 1, unused_q.data(), 1, k.data(), 1, head_dim, head_dim, inv_freq.data(), 1.0f)
            .ok());
    double dot = 0.0;
    for (int64_t d = 0; d < head_dim; ++d) {
      dot += static_cast<double>(q[static_cast<size_t>(d)]) *
             static_cast<double>(k[static_cast<size_t>(d)]);
    }
    return dot;
  };
  for (int64_t delta : {0, 1, 7, 50}) {
    const double at_origin = rotated_dot(delta, 0);
    for (int64_t n : {1, 13, 100, 517}) {
      // fp32 angles at positions ~600 carry ~3e-5 rad of rounding; |q||k| ~ 20.
      EXPECT_NEAR(rotated_dot(n + delta, n), at_origin, 2e-3) << "delta=" << delta << " n=" << n;
    }
  }
}

// Partial rotary (Phi-4-mini: 96 of 128): the leading rotary_dim values of each head turn
// exactly as a whole head of rotary_dim would (frequencies computed for rotary_dim, as
// transformers does), and the rest keep their bits. Odd head_dim is fine when rotary_dim is even.
TEST(RotaryTest, PartialRotaryTurnsTheLeadingValuesAndPassesTheRest) {
  std::mt19937_64 rng(34);
  for (const auto& [head_dim, rotary_dim] :
       {std::pair<int64_t, int64_t>{128, 96}, {16, 12}, {7, 2}, {64, 64}}) {
    SCOPED_TRACE(absl::StrCat(rotary_dim, " of ", head_dim));
    const int64_t heads = 3;
    const int64_t kv_heads = 2;
    const std::vector<float> inv_freq = InvFreq(rotary_dim, 10000.0);
    const std::vector<int64_t> positions = {0, 5, 77, 4099};
    const int64_t tokens = static_cast<int64_t>(positions.size());
    const std::vector<float> q0 = RandomFloats(rng, tokens * heads * head_dim);
    const std::vector<float> k0 = RandomFloats(rng, tokens * kv_heads * head_dim);
    std::vector<float> q = q0;
    std::vector<float> k = k0;
    ASSERT_TRUE(Rotary(positions.data(), tokens, q.data(), heads, k.data(), kv_heads, head_dim,
                       rotary_dim, inv_freq.data(), 1.0f)
                    .ok());
    // The leading values, cut out into heads of rotary_dim and rotated whole.
    auto leading = [&](const std::vector<float>& x, int64_t rows) {
      std::vector<float> out;
      for (int64_t r = 0; r < rows; ++r) {
        out.insert(out.end(), x.begin() + r * head_dim, x.begin() + r * head_dim + rotary_dim);
      }
      return out;
    };
    std::vector<float> q_whole = leading(q0, tokens * heads);
    std::vector<float> k_whole = leading(k0, tokens * kv_heads);
    ASSERT_TRUE(Rotary(positions.data(), tokens, q_whole.data(), heads, k_whole.data(), kv_heads,
                       rotary_dim, rotary_dim, inv_freq.data(), 1.0f)
                    .ok());
    EXPECT_EQ(leading(q, tokens * heads), q_whole);
    EXPECT_EQ(leading(k, tokens * kv_heads), k_whole);
    for (int64_t r = 0; r < tokens * heads; ++r) {
      for (int64_t d = rotary_dim; d < head_dim; ++d) {
        const auto i = static_cast<size_t>(r * head_dim + d);
        ASSERT_EQ(q[i], q0[i]) << "row " << r << " dim " << d;
      }
    }
    for (int64_t r = 0; r < tokens * kv_heads; ++r) {
      for (int64_t d = rotary_dim; d < head_dim; ++d) {
        const auto i = static_cast<size_t>(r * head_dim + d);
        ASSERT_EQ(k[i], k0[i]) << "row " << r << " dim " << d;
      }
    }
    EXPECT_NE(q, q0) << "the leading values must turn";
  }
}

TEST(RotaryTest, PartialRotaryHandComputed) {
  // head_dim 6, rotary_dim 4: HandComputedSmallCase's pairs (0, 2), (1, 3); 4 and 5 pass.
  const std::vector<float> inv_freq = InvFreq(4, 10000.0);
  const int64_t position = 1;
  std::vector<float> q = {1, 2, 3, 4, 9, -9};
  std::vector<float> k = {0, 0, 0, 0, 0.5f, 0.25f};
  ASSERT_TRUE(Rotary(&position, 1, q.data(), 1, k.data(), 1, 6, 4, inv_freq.data(), 1.0f).ok());
  EXPECT_NEAR(q[0], -1.9841106485555495, 1e-6);
  EXPECT_NEAR(q[1], 1.959900667496664, 1e-6);
  EXPECT_NEAR(q[2], 2.4623779024123156, 1e-6);
  EXPECT_NEAR(q[3], 4.019799668334994, 1e-6);
  EXPECT_EQ(q[4], 9.0f);
  EXPECT_EQ(q[5], -9.0f);
  EXPECT_EQ(k, (std::vector<float>{0, 0, 0, 0, 0.5f, 0.25f}));

  // LongRoPE's attention factor multiplies cos and sin: the rotated values scale by it, the
  // passed ones do not (so it cannot be folded into the attention scale).
  const float factor = std::sqrt(2.0f);
  std::vector<float> scaled = {1, 2, 3, 4, 9, -9};
  ASSERT_TRUE(
      Rotary(&position, 1, scaled.data(), 1, k.data(), 1, 6, 4, inv_freq.data(), factor).ok());
  EXPECT_NEAR(scaled[0], -1.9841106485555495 * std::sqrt(2.0), 1e-5);
  EXPECT_NEAR(scaled[3], 4.019799668334994 * std::sqrt(2.0), 1e-5);
  EXPECT_EQ(scaled[4], 9.0f);
  EXPECT_EQ(scaled[5], -9.0f);
}

TEST(RotaryTest, InvalidArguments) {
  const std::vector<float> inv_freq = {1.0f, 0.1f};
  std::vector<float> q(8);
  std::vector<float> k(8);
  const std::vector<int64_t> negative = {-1, 0};
  EXPECT_EQ(
      Rotary(negative.data(), 2, q.data(), 1, k.data(), 1, 4, 4, inv_freq.data(), 1.0f).code(),
      absl::StatusCode::kInvalidArgument);
  const std::vector<int64_t> positions = {0, 1};
  EXPECT_EQ(
      Rotary(positions.data(), 2, q.data(), 1, k.data(), 1, 3, 3, inv_freq.data(), 1.0f).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Rotary(positions.data(), 2, q.data(), 1, k.data(), 1, 4, 4, nullptr, 1.0f).code(),
            absl::StatusCode::kInvalidArgument);
  for (const float scale : {0.0f, -1.0f, std::nanf(""), INFINITY}) {
    const absl::Status status =
        Rotary(positions.data(), 2, q.data(), 1, k.data(), 1, 4, 4, inv_freq.data(), scale);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << scale;
    EXPECT_THAT(std::string(status.message()),
                ::testing::HasSubstr("scale must be positive and finite"));
  }
  for (const int64_t rotary_dim : {0, -2, 3, 6}) {
    const absl::Status status =
        Rotary(positions.data(), 2, q.data(), 1, k.data(), 1, 4, rotary_dim, inv_freq.data(), 1.0f);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << rotary_dim;
    EXPECT_THAT(
        std::string(status.message()),
        ::testing::HasSubstr(absl::StrCat(
            "rotary_dim must be positive, even and at most head_dim (4), got ", rotary_dim)));
  }
}

}  // namespace
}  // namespace headroom::kernels::cpu
