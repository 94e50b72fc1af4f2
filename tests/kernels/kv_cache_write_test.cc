#include "kernels/cpu/kv_cache_write.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

TEST(KvCacheWriteTest, WritesTokensToTheirSlotsAndNothingElse) {
  std::mt19937_64 rng(21);
  for (const auto& [num_blocks, block_size, kv_heads, head_dim] :
       {std::tuple{1, 1, 1, 1}, std::tuple{5, 3, 2, 7}, std::tuple{9, 16, 4, 64}}) {
    const int64_t slots = int64_t{num_blocks} * block_size;
    const int64_t row = int64_t{kv_heads} * head_dim;
    std::vector<float> k_cache = Poisoned(slots * row);
    std::vector<float> v_cache = Poisoned(slots * row);
    const PagedKvView view{k_cache.data(), v_cache.data(), num_blocks, block_size, kv_heads,
                           head_dim};
    // Distinct random slots for a subset of the pool, plus two padding tokens.
    std::vector<int64_t> order(static_cast<size_t>(slots));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t written = (slots + 1) / 2;
    std::vector<int64_t> slot_mapping(static_cast<size_t>(written + 2));
    slot_mapping[0] = -1;
    for (int64_t i = 0; i < written; ++i) {
      slot_mapping[static_cast<size_t>(i + 1)] = order[static_cast<size_t>(i)];
    }
    slot_mapping[static_cast<size_t>(written + 1)] = -7;
    const int64_t tokens = static_cast<int64_t>(slot_mapping.size());
    const std::vector<float> k = RandomFloats(rng, tokens * row);
    const std::vector<float> v = RandomFloats(rng, tokens * row);
    ASSERT_TRUE(KvCacheWrite(k.data(), v.data(), slot_mapping.data(), tokens, view).ok());

    std::vector<int64_t> token_of_slot(static_cast<size_t>(slots), -1);
    for (int64_t t = 0; t < tokens; ++t) {
      if (slot_mapping[static_cast<size_t>(t)] >= 0) {
        token_of_slot[static_cast<size_t>(slot_mapping[static_cast<size_t>(t)])] = t;
      }
    }
    for (int64_t slot = 0; slot < slots; ++slot) {
      const int64_t t = token_of_slot[static_cast<size_t>(slot)];
      for (int64_t h = 0; h < kv_heads; ++h) {
        for (int64_t d = 0; d < head_dim; ++d) {
          // Independent index arithmetic: [block, offset, head, dim] flattened.
          const int64_t block = slot / block_size;
          const int64_t offset = slot % block_size;
          const size_t at = static_cast<size_t>(
              ((block * block_size + offset) * kv_heads + h) * head_dim + d);
          if (t < 0) {
            ASSERT_TRUE(std::isnan(k_cache[at]) && std::isnan(v_cache[at])) << "slot " << slot;
          } else {
            const size_t from = static_cast<size_t>((t * kv_heads + h) * head_dim + d);
            ASSERT_EQ(k_cache[at], k[from]);
            ASSERT_EQ(v_cache[at], v[from]);
          }
        }
      }
    }
  }
}

TEST(KvCacheWriteTest, SlotOutOfRangeIsInvalidArgumentAndWritesNothing) {
  std::vector<float> k_cache = Poisoned(4 * 2 * 3);  // 4 blocks of 2 slots, 1 head, dim 3
  std::vector<float> v_cache = Poisoned(4 * 2 * 3);
  const PagedKvView view{k_cache.data(), v_cache.data(), 4, 2, 1, 3};
  const std::vector<float> kv(2 * 3, 1.0f);
  const std::vector<int64_t> slots = {0, 8};
  EXPECT_EQ(KvCacheWrite(kv.data(), kv.data(), slots.data(), 2, view).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(testing::AllNaN(k_cache));
  EXPECT_TRUE(testing::AllNaN(v_cache));
}

TEST(KvCacheWriteTest, BadViewIsInvalidArgument) {
  std::vector<float> cache(8);
  const std::vector<float> kv(4, 1.0f);
  const std::vector<int64_t> slots = {0};
  EXPECT_EQ(KvCacheWrite(kv.data(), kv.data(), slots.data(), 1,
                         PagedKvView{cache.data(), cache.data(), 2, 0, 1, 4})
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWrite(kv.data(), kv.data(), slots.data(), 1,
                         PagedKvView{nullptr, cache.data(), 2, 1, 1, 4})
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWrite(kv.data(), kv.data(), slots.data(), -1,
                         PagedKvView{cache.data(), cache.data(), 2, 1, 1, 4})
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PagedKvViewTest, IndexHelpersFollowTheLayout) {
  std::vector<float> k(3 * 4 * 2 * 5);
  std::vector<float> v(3 * 4 * 2 * 5);
  const PagedKvView view{k.data(), v.data(), 3, 4, 2, 5};
  EXPECT_EQ(view.NumSlots(), 12);
  EXPECT_EQ(view.Slot(2, 3), 11);
  EXPECT_EQ(view.SlotStride(), 10);
  EXPECT_EQ(view.RowOffset(11, 1), ((2 * 4 + 3) * 2 + 1) * 5);
  EXPECT_EQ(view.KeyRow(11, 1), k.data() + 115);
  EXPECT_EQ(view.ValueRow(0, 0), v.data());
}

}  // namespace
}  // namespace headroom::kernels::cpu
