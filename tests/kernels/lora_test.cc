#include "kernels/cpu/lora.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

// Segments of a step: [starts, slots].
struct Segments {
  std::vector<int32_t> starts;
  std::vector<int32_t> slots;
  LoraSegmentsView view() const {
    return {starts.data(), slots.data(), static_cast<int32_t>(slots.size())};
  }
};

TEST(LoraAddTest, AddsEachSegmentsAdapterIntoItsColumnsAndLeavesTheRest) {
  std::mt19937_64 rng(71);
  constexpr int64_t kSlots = 3, kRank = 5, kIn = 37, kOut = 23, kLd = 50, kOffset = 11;
  // Odd lengths, an empty segment, two segments of one slot, and rows without an adapter.
  const Segments seg{{0, 3, 10, 10, 17, 18, 29}, {-1, 2, 1, 0, 2, -1}};
  const int64_t m = seg.starts.back();
  const std::vector<float> x = RandomFloats(rng, m * kIn);
  const std::vector<float> a = RandomFloats(rng, kSlots * kRank * kIn);
  const std::vector<float> b = RandomFloats(rng, kSlots * kOut * kRank);
  const std::vector<float> base = RandomFloats(rng, m * kLd);
  std::vector<float> out = base;
  std::vector<float> scratch = Poisoned(m * kRank);
  const LoraWeightsView lora{a.data(), b.data(), kSlots, kRank, kIn, kOut};
  ASSERT_TRUE(
      LoraAdd(x.data(), lora, seg.view(), m, kLd, scratch.data(), out.data() + kOffset).ok());

  for (size_t s = 0; s < seg.slots.size(); ++s) {
    const int32_t slot = seg.slots[s];
    for (int64_t i = seg.starts[s]; i < seg.starts[s + 1]; ++i) {
      for (int64_t c = 0; c < kLd; ++c) {
        const size_t at = static_cast<size_t>(i * kLd + c);
        const int64_t j = c - kOffset;
        if (slot < 0 || j < 0 || j >= kOut) {
          ASSERT_EQ(out[at], base[at]) << "row " << i << " column " << c << " must not change";
          continue;
        }
        double want = static_cast<double>(base[at]);
        for (int64_t r = 0; r < kRank; ++r) {
          double shrunk = 0;
          for (int64_t k = 0; k < kIn; ++k) {
            shrunk += static_cast<double>(x[static_cast<size_t>(i * kIn + k)]) *
                      static_cast<double>(a[static_cast<size_t>((slot * kRank + r) * kIn + k)]);
          }
          want +=
              shrunk * static_cast<double>(b[static_cast<size_t>((slot * kOut + j) * kRank + r)]);
        }
        ASSERT_NEAR(static_cast<double>(out[at]), want, 1e-4)
            << "row " << i << " column " << c << " slot " << slot;
      }
    }
  }
}

TEST(LoraAddTest, BadSegmentsAndSizesAreInvalidArgumentAndChangeNothing) {
  std::vector<float> x(8, 1.0f), a(2 * 2 * 4, 1.0f), b(2 * 3 * 2, 1.0f), scratch(4), out(6, 0.0f);
  const LoraWeightsView lora{a.data(), b.data(), 2, 2, 4, 3};
  const auto call = [&](const Segments& seg, int64_t ld_out) {
    return LoraAdd(x.data(), lora, seg.view(), 2, ld_out, scratch.data(), out.data()).code();
  };
  constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(call({{0, 3}, {0}}, 3), kInvalid);        // past m = 2 rows
  EXPECT_EQ(call({{0, 2, 1}, {0, 1}}, 3), kInvalid);  // not ascending
  EXPECT_EQ(call({{1, 2}, {0}}, 3), kInvalid);        // does not start at row 0
  EXPECT_EQ(call({{0, 2}, {2}}, 3), kInvalid);        // slot 2 of 2
  EXPECT_EQ(call({{0, 2}, {-2}}, 3), kInvalid);
  EXPECT_EQ(call({{0, 2}, {0}}, 2), kInvalid);  // ld_out below the 3 output columns
  EXPECT_EQ(out, std::vector<float>(6, 0.0f));
  EXPECT_EQ(call({{0, 2}, {1}}, 3), absl::StatusCode::kOk);
  // Every row: x . a_row = 4, times b's two ones: 8 per element.
  EXPECT_EQ(out, std::vector<float>(6, 8.0f));
}

}  // namespace
}  // namespace headroom::kernels::cpu
