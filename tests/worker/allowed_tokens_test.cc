#include "worker/engine/allowed_tokens.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace headroom::worker {
namespace {

// Whatever form a list is kept in, it allows exactly its ids, and takes the bytes of the smaller
// form: 4 per id, or 4 per 32 ids up to the largest. Random lists from a few ids of a small
// vocabulary to most of a 128k one, with repeats, in any order.
TEST(AllowedTokensTest, KeepsExactlyItsIdsInTheSmallerForm) {
  std::mt19937 rng(17);
  int bitmasks = 0;
  int lists = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int32_t vocab = trial % 3 == 0 ? 128256 : 1 + static_cast<int32_t>(rng() % 5000);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const double u = unit(rng);
    const double kept = u * u * u;  // mostly sparse lists, some dense
    std::vector<int32_t> ids;
    std::set<int32_t> reference;
    for (int32_t t = 0; t < vocab; ++t) {
      if (unit(rng) >= kept) continue;
      ids.push_back(t);
      reference.insert(t);
      if (rng() % 7 == 0) ids.push_back(t);  // a repeat
    }
    std::shuffle(ids.begin(), ids.end(), rng);
    const AllowedTokens allowed(ids);
    const std::vector<int32_t> sorted(reference.begin(), reference.end());
    ASSERT_EQ(allowed.SortedIds(), sorted) << "trial " << trial;
    for (int32_t t = -1; t < vocab + 40; t += 1 + static_cast<int32_t>(rng() % 50)) {
      ASSERT_EQ(allowed.Contains(t), reference.contains(t)) << "trial " << trial << " id " << t;
    }
    if (ids.empty()) {
      EXPECT_EQ(allowed.bytes(), 0u);
      EXPECT_TRUE(allowed.view().ids.empty());
      EXPECT_TRUE(allowed.view().bitmask.empty()) << "an empty bitmask reads as no constraint";
      continue;
    }
    const size_t as_ids = 4 * ids.size();
    const size_t as_bitmask = 4 * (static_cast<size_t>(*reference.rbegin()) / 32 + 1);
    EXPECT_EQ(allowed.bytes(), std::min(as_ids, as_bitmask)) << "trial " << trial;
    const AllowedView view = allowed.view();
    EXPECT_NE(view.ids.empty(), view.bitmask.empty()) << "exactly one form";
    (allowed.is_bitmask() ? bitmasks : lists) += 1;
  }
  EXPECT_GT(bitmasks, 30);
  EXPECT_GT(lists, 30);
}

// String text of a 128k vocabulary (most of it) fits in 16 KB; the ids would take ~500 KB.
TEST(AllowedTokensTest, MostOfALargeVocabularyIsABitmask) {
  std::vector<int32_t> ids;
  for (int32_t t = 0; t < 128256; ++t) {
    if (t % 50 != 0) ids.push_back(t);
  }
  const AllowedTokens allowed(ids);
  EXPECT_TRUE(allowed.is_bitmask());
  EXPECT_EQ(allowed.bytes(), 128256u / 8);
  EXPECT_EQ(allowed.view().bitmask.size(), 128256u / 32);
  EXPECT_TRUE(allowed.Contains(128255));
  EXPECT_FALSE(allowed.Contains(128200));
  EXPECT_FALSE(allowed.Contains(128256)) << "past the words";
  // One id far up the vocabulary: 4 bytes, not a bitmask up to it.
  const AllowedTokens eos({128009});
  EXPECT_FALSE(eos.is_bitmask());
  EXPECT_EQ(eos.bytes(), 4u);
  EXPECT_EQ(eos.SortedIds(), std::vector<int32_t>{128009});
}

}  // namespace
}  // namespace headroom::worker
