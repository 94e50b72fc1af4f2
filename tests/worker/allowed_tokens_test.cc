#include "worker/engine/allowed_tokens.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "worker/engine/token_mask_cache.h"

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

// Caches sharing a MaskBudget keep no more than it together: one that would pass it starts over,
// and a list that alone does not fit is returned without being kept. What a cache keeps goes
// back to the budget when it starts over, is moved from, or is dropped.
TEST(MaskBudgetTest, CachesTogetherKeepNoMoreThanTheBudget) {
  // `n` ids `step` apart.
  const auto ids_of = [](int32_t n, int32_t step) {
    return [n, step](std::vector<int32_t>* ids) {
      for (int32_t i = 0; i < n; ++i) ids->push_back(i * step);
    };
  };
  const size_t entry =
      AllowedTokens(std::vector<int32_t>{0, 3, 6, 9}).bytes() + TokenMaskCache<int>::kEntryBytes;
  MaskBudget budget(5 * entry);
  {
    TokenMaskCache<int> a(/*max_bytes=*/100 * entry, &budget);
    TokenMaskCache<int> b(/*max_bytes=*/100 * entry, &budget);
    for (int key = 0; key < 3; ++key) {
      EXPECT_EQ(a.Get(key, ids_of(4, 3))->SortedIds(), (std::vector<int32_t>{0, 3, 6, 9}));
    }
    for (int key = 0; key < 2; ++key) b.Get(key, ids_of(4, 3));
    EXPECT_EQ(budget.used(), 5 * entry);
    // Full: b starts over to keep its new list; a keeps its three.
    EXPECT_EQ(b.Get(2, ids_of(4, 3))->SortedIds().size(), 4u);
    EXPECT_EQ(b.bytes(), entry);
    EXPECT_EQ(a.bytes(), 3 * entry);
    EXPECT_EQ(budget.used(), 4 * entry);
    // A hit is served as kept (not computed again).
    a.Get(1, ids_of(99, 3));
    EXPECT_EQ(a.misses(), 3);
    // 200 ids 1000 apart cost more than the whole budget: returned whole, not kept.
    const TokenMaskCache<int>::List huge = a.Get(7, ids_of(200, 1000));
    ASSERT_GT(huge->bytes() + TokenMaskCache<int>::kEntryBytes, budget.max_bytes());
    EXPECT_EQ(huge->SortedIds().size(), 200u);
    EXPECT_EQ(a.bytes(), 0u);
    EXPECT_EQ(budget.used(), entry);
    a.Get(7, ids_of(200, 1000));
    EXPECT_EQ(a.misses(), 5) << "the list that did not fit is computed again";
    a.Get(8, ids_of(4, 3));
    EXPECT_EQ(budget.used(), 2 * entry);
    TokenMaskCache<int> moved = std::move(a);
    EXPECT_EQ(budget.used(), 2 * entry) << "moving keeps the charge";
    moved = TokenMaskCache<int>(100 * entry, &budget);
    EXPECT_EQ(budget.used(), entry) << "b's one list";
  }
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace headroom::worker
