// fp16/bf16 <-> float conversions: known constants, every bit pattern against an independent
// formula, every rounding boundary, and torch's own conversions recorded in
// tests/worker/fixtures/safetensors/dtypes.safetensors.
#include "worker/model/float16.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/worker/fixtures.h"
#include "worker/model/safetensors.h"

namespace headroom::worker {
namespace {

uint32_t Bits(float value) { return std::bit_cast<uint32_t>(value); }

TEST(Float16Test, KnownConstants) {
  EXPECT_EQ(Fp16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(Fp16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(Fp16ToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(Fp16ToFloat(0x7BFF), 65504.0f);                  // Largest finite.
  EXPECT_EQ(Fp16ToFloat(0x0400), std::ldexp(1.0f, -14));     // Smallest normal.
  EXPECT_EQ(Fp16ToFloat(0x0001), std::ldexp(1.0f, -24));     // Smallest subnormal.
  EXPECT_EQ(Fp16ToFloat(0x03FF), std::ldexp(1023.0f, -24));  // Largest subnormal.
  EXPECT_EQ(Fp16ToFloat(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(Bits(Fp16ToFloat(0x0000)), 0x00000000u);
  EXPECT_EQ(Bits(Fp16ToFloat(0x8000)), 0x80000000u);  // -0 keeps its sign.
  EXPECT_EQ(Fp16ToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Fp16ToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Fp16ToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(Fp16ToFloat(0x7C01)));  // Signalling NaN stays a NaN.
  EXPECT_TRUE(std::signbit(Fp16ToFloat(0xFE00)));

  EXPECT_EQ(Bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(Bf16ToFloat(0x7F7F), 3.3895313892515355e38f);  // Largest finite.
  EXPECT_EQ(Bf16ToFloat(0x0080), std::ldexp(1.0f, -126));  // Smallest normal.
  EXPECT_EQ(Bf16ToFloat(0x0001), std::ldexp(1.0f, -133));  // Smallest subnormal.
  EXPECT_EQ(Bits(Bf16ToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(Bf16ToFloat(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Bf16ToFloat(0xFF80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Bf16ToFloat(0x7FC0)));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(0x7F81)));

  EXPECT_EQ(FloatToFp16(1.0f), 0x3C00);
  EXPECT_EQ(FloatToFp16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToFp16(65519.0f), 0x7BFF);  // Below the midpoint to 65536.
  EXPECT_EQ(FloatToFp16(65520.0f), 0x7C00);  // Midpoint: ties to even = inf.
  EXPECT_EQ(FloatToFp16(1e10f), 0x7C00);
  EXPECT_EQ(FloatToFp16(-1e10f), 0xFC00);
  EXPECT_EQ(FloatToFp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToFp16(std::ldexp(1.0f, -25)), 0x0000);  // Tie to even: 0.
  EXPECT_EQ(FloatToFp16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie to even 2.
  EXPECT_EQ(FloatToFp16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(FloatToFp16(-std::ldexp(1.0f, -26)), 0x8000);        // Underflow keeps sign.
  EXPECT_EQ(FloatToFp16(std::ldexp(1023.5f, -24)), 0x0400);      // Rounds up to a normal.
  EXPECT_EQ(FloatToFp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // Tie to even (down).
  EXPECT_EQ(FloatToFp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // Tie to even (up).
  EXPECT_EQ(FloatToFp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToFp16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(std::numeric_limits<float>::quiet_NaN()))));

  EXPECT_EQ(FloatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);        // Tie to even (down).
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(3.0f, -8)), 0x3F82);        // Tie to even (up).
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7F80);  // Rounds to inf.
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lives only in the low 16 bits must not truncate to infinity.
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::bit_cast<float>(0x7F800001u)))));
}

TEST(Float16Test, EveryFp16PatternMatchesTheFormulaAndRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float value = Fp16ToFloat(bits);
    const int exponent = static_cast<int>((h >> 10) & 0x1F);
    const int mantissa = static_cast<int>(h & 0x3FF);
    const bool negative = (h & 0x8000) != 0;
    if (exponent == 0x1F) {
      EXPECT_EQ(std::isnan(value), mantissa != 0) << h;
      EXPECT_EQ(std::isinf(value), mantissa == 0) << h;
    } else {
      const float magnitude = exponent == 0
                                  ? std::ldexp(static_cast<float>(mantissa), -24)
                                  : std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
      EXPECT_EQ(Bits(value), Bits(negative ? -magnitude : magnitude)) << h;
    }
    EXPECT_EQ(std::signbit(value), negative) << h;
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(value)))) << h;
    } else {
      EXPECT_EQ(FloatToFp16(value), bits) << h;
    }
  }
}

TEST(Float16Test, EveryBf16PatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float value = Bf16ToFloat(bits);
    EXPECT_EQ(Bits(value), h << 16);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(value)))) << h;
    } else {
      EXPECT_EQ(FloatToBf16(value), bits) << h;
    }
  }
}

// Between every two adjacent finite 16-bit values a < b the midpoint is exact in float: it rounds
// to the even one of the two, and one float ulp to either side rounds to the nearer one.
template <typename ToFloat, typename FromFloat>
void CheckRoundingBoundaries(uint16_t largest_finite, ToFloat to_float, FromFloat from_float) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t h = 0; h < largest_finite; ++h) {
      const auto lo_bits = static_cast<uint16_t>(sign | h);
      const auto hi_bits = static_cast<uint16_t>(sign | (h + 1));
      const float lo = to_float(lo_bits);
      const float hi = to_float(hi_bits);
      const float mid = lo + (hi - lo) / 2;
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + static_cast<double>(hi)) / 2);
      const uint16_t even = (h & 1) == 0 ? lo_bits : hi_bits;
      ASSERT_EQ(from_float(mid), even) << absl::StrFormat("%#06x", lo_bits);
      ASSERT_EQ(from_float(std::nextafter(mid, lo)), lo_bits) << absl::StrFormat("%#06x", lo_bits);
      ASSERT_EQ(from_float(std::nextafter(mid, hi)), hi_bits) << absl::StrFormat("%#06x", lo_bits);
    }
  }
}

TEST(Float16Test, Fp16RoundsToNearestEvenAtEveryBoundary) {
  CheckRoundingBoundaries(0x7BFF, Fp16ToFloat, FloatToFp16);
}

TEST(Float16Test, Bf16RoundsToNearestEvenAtEveryBoundary) {
  CheckRoundingBoundaries(0x7F7F, Bf16ToFloat, FloatToBf16);
}

// torch's conversions, recorded by scripts/gen_model_fixtures.py.
class TorchConversionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = (testdata::FixtureDir("safetensors") / "dtypes.safetensors").string();
    absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    file_.emplace(*std::move(file));
  }

  std::vector<uint16_t> Raw16(std::string_view name) {
    const SafetensorsTensor* tensor = file_->Find(name);
    EXPECT_NE(tensor, nullptr) << name;
    if (tensor == nullptr) return {};
    const absl::Span<const uint8_t> bytes = file_->RawBytes(*tensor);
    std::vector<uint16_t> values(bytes.size() / 2);
    std::memcpy(values.data(), bytes.data(), values.size() * 2);
    return values;
  }

  std::vector<float> Floats(std::string_view name) {
    absl::StatusOr<std::vector<float>> values = file_->ReadFloat32(name);
    EXPECT_TRUE(values.ok()) << values.status();
    return values.ok() ? *values : std::vector<float>();
  }

  std::optional<SafetensorsFile> file_;
};

TEST_F(TorchConversionsTest, UpcastsMatchTorch) {
  for (const auto& [bits_name, expected_name] :
       {std::pair{"f16_bits", "f16_as_f32"}, std::pair{"bf16_bits", "bf16_as_f32"}}) {
    const std::vector<uint16_t> bits = Raw16(bits_name);
    const std::vector<float> expected = Floats(expected_name);
    const std::vector<float> converted = Floats(bits_name);  // Through the reader's conversion.
    ASSERT_EQ(bits.size(), expected.size());
    ASSERT_EQ(converted.size(), expected.size());
    ASSERT_GT(bits.size(), 500u);
    for (size_t i = 0; i < bits.size(); ++i) {
      SCOPED_TRACE(absl::StrFormat("%s[%d] = %#06x", bits_name, i, bits[i]));
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(converted[i]));
      } else {
        EXPECT_EQ(Bits(converted[i]), Bits(expected[i]));
      }
    }
  }
}

TEST_F(TorchConversionsTest, DowncastsMatchTorch) {
  const std::vector<float> source = Floats("f32_src");
  const std::vector<uint16_t> to_fp16 = Raw16("f32_to_f16");
  const std::vector<uint16_t> to_bf16 = Raw16("f32_to_bf16");
  ASSERT_EQ(source.size(), to_fp16.size());
  ASSERT_EQ(source.size(), to_bf16.size());
  ASSERT_GT(source.size(), 300u);
  for (size_t i = 0; i < source.size(); ++i) {
    SCOPED_TRACE(absl::StrFormat("f32_src[%d] = %a (%#010x)", i, static_cast<double>(source[i]),
                                 Bits(source[i])));
    if (std::isnan(source[i])) {
      EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(source[i]))));
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(source[i]))));
      continue;
    }
    EXPECT_EQ(FloatToFp16(source[i]), to_fp16[i]);
    EXPECT_EQ(FloatToBf16(source[i]), to_bf16[i]);
  }
}

}  // namespace
}  // namespace headroom::worker
