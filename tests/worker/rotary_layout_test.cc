// InterleavedToRotateHalfRows (rotary_layout.h): GLM's interleaved rotary pairs reordered into the
// rotate-half layout head by head. The whole-model effect is checked against transformers by the
// glm fixtures' parity tests; these pin the reordering itself and its refusals.
#include "worker/model/rotary_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace headroom::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two heads of 6 rows, 4 of them rotated: in each head the pairs (0, 1) and (2, 3) become
// (0, 2) and (1, 3), that is rows 0, 2, 1, 3; rows 4 and 5 pass through.
TEST(RotaryLayoutTest, ReordersEachHeadsRotatedRows) {
  std::vector<float> bias = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
  ASSERT_TRUE(InterleavedToRotateHalfRows(bias, /*row_width=*/1, /*head_dim=*/6,
                                          /*rotary_dim=*/4)
                  .ok());
  EXPECT_THAT(bias, ElementsAre(0, 2, 1, 3, 4, 5, 10, 12, 11, 13, 14, 15));

  // Rows of a projection move whole: [4 rows of width 2], all rotated.
  std::vector<float> weight = {0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5};
  ASSERT_TRUE(InterleavedToRotateHalfRows(weight, 2, 4, 4).ok());
  EXPECT_THAT(weight, ElementsAre(0, 0.5, 2, 2.5, 1, 1.5, 3, 3.5));

  // Eight rows: evens first, then odds.
  std::vector<float> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  ASSERT_TRUE(InterleavedToRotateHalfRows(eight, 1, 8, 8).ok());
  EXPECT_THAT(eight, ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));

  std::vector<float> absent;
  EXPECT_TRUE(InterleavedToRotateHalfRows(absent, 1, 8, 4).ok());
  EXPECT_TRUE(absent.empty());
}

TEST(RotaryLayoutTest, RefusesPartialHeadsAndBadRotaryDims) {
  std::vector<float> rows(10, 0.0f);
  absl::Status status = InterleavedToRotateHalfRows(rows, 1, 4, 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("10 values are not whole heads of 4 rows"));
  for (const int64_t rotary_dim : {0, 3, 6}) {
    status = InterleavedToRotateHalfRows(rows, 1, 5, rotary_dim);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << rotary_dim;
    EXPECT_THAT(std::string(status.message()), HasSubstr("even rotary_dim of at most head_dim"));
  }
}

}  // namespace
}  // namespace headroom::worker
