#include "kvcache/block_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace headroom::kvcache {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

BlockHash HashOf(int32_t token) {
  return HashBlock(RootBlockHash(""), std::vector<int32_t>{token});
}

TEST(BlockPoolTest, NullBlockIsNeverHandedOut) {
  BlockPool pool(4, /*enable_caching=*/true);
  EXPECT_EQ(pool.num_usable_blocks(), 3);
  EXPECT_EQ(pool.num_free_blocks(), 3);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(3, &blocks).ok());
  EXPECT_THAT(blocks, ElementsAre(BlockId{1}, BlockId{2}, BlockId{3}));
  EXPECT_EQ(pool.num_used_blocks(), 3);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, AllocationBeyondFreeFailsWithoutChange) {
  BlockPool pool(5, true);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(2, &blocks).ok());
  const absl::Status status = pool.Allocate(3, &blocks);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "need 3 KV blocks, 2 free");
  EXPECT_EQ(blocks.size(), 2u);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, FreedBlocksAreReusedInFreeOrder) {
  BlockPool pool(6, true);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(5, &blocks).ok());
  pool.Free(std::vector<BlockId>{BlockId{4}, BlockId{2}});
  EXPECT_THAT(pool.FreeOrder(), ElementsAre(BlockId{4}, BlockId{2}));
  std::vector<BlockId> again;
  ASSERT_TRUE(pool.Allocate(2, &again).ok());
  EXPECT_THAT(again, ElementsAre(BlockId{4}, BlockId{2}));
}

TEST(BlockPoolTest, SharedBlockIsFreeOnlyAfterLastReference) {
  BlockPool pool(3, true);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(1, &blocks).ok());
  pool.Touch(blocks[0]);
  EXPECT_EQ(pool.ref_count(blocks[0]), 2);
  pool.Free(blocks);
  EXPECT_EQ(pool.num_free_blocks(), 1);  // only the untouched block
  pool.Free(blocks);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, CachedFreeBlockIsRevivedByTouchAndEvictedByAllocation) {
  BlockPool pool(4, true);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(2, &blocks).ok());
  ASSERT_TRUE(pool.Cache(blocks[0], HashOf(10)));
  ASSERT_TRUE(pool.Cache(blocks[1], HashOf(11)));
  pool.Free(blocks);
  EXPECT_EQ(pool.num_evictable_blocks(), 2);
  EXPECT_THAT(pool.Lookup(HashOf(10)), Optional(blocks[0]));

  // A prefix hit revives block[0]: it leaves the free queue and keeps its hash.
  pool.Touch(blocks[0]);
  EXPECT_EQ(pool.num_evictable_blocks(), 1);
  EXPECT_THAT(pool.FreeOrder(), ElementsAre(BlockId{3}, blocks[1]));

  // Allocation takes the never-cached block first, then evicts the cached one.
  std::vector<BlockId> fresh;
  ASSERT_TRUE(pool.Allocate(2, &fresh).ok());
  EXPECT_THAT(fresh, ElementsAre(BlockId{3}, blocks[1]));
  EXPECT_EQ(pool.Lookup(HashOf(11)), std::nullopt);
  EXPECT_EQ(pool.hash(blocks[1]), std::nullopt);
  EXPECT_EQ(pool.num_evictable_blocks(), 0);
  EXPECT_EQ(pool.num_cached_blocks(), 1);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, DuplicateHashIsNotCachedTwice) {
  BlockPool pool(4, true);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(2, &blocks).ok());
  EXPECT_TRUE(pool.Cache(blocks[0], HashOf(1)));
  EXPECT_FALSE(pool.Cache(blocks[1], HashOf(1)));  // another block already serves this prefix
  EXPECT_FALSE(pool.Cache(blocks[0], HashOf(2)));  // a block has one hash for life
  EXPECT_THAT(pool.Lookup(HashOf(1)), Optional(blocks[0]));
  EXPECT_EQ(pool.hash(blocks[1]), std::nullopt);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, CachingDisabledRegistersNothing) {
  BlockPool pool(3, /*enable_caching=*/false);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(1, &blocks).ok());
  EXPECT_FALSE(pool.Cache(blocks[0], HashOf(1)));
  EXPECT_EQ(pool.Lookup(HashOf(1)), std::nullopt);
  EXPECT_EQ(pool.num_cached_blocks(), 0);
}

TEST(BlockPoolDeathTest, RejectsMisuse) {
  BlockPool pool(3, true);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(1, &blocks).ok());
  pool.Free(blocks);
  EXPECT_DEATH(pool.Free(blocks), "double free");
  EXPECT_DEATH(pool.Touch(kNullBlockId), "null block");
  EXPECT_DEATH(pool.Free(std::vector<BlockId>{kNullBlockId}), "null block");
  EXPECT_DEATH(pool.Cache(blocks[0], HashOf(1)), "only used blocks");
}

}  // namespace
}  // namespace headroom::kvcache
