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

// The change log publishes the cache's contents: each registration and each eviction, in order;
// a log that outgrew its capacity says so (and the caller re-reads CachedHashes()).
TEST(BlockPoolTest, CacheEventsLogRegistrationsAndEvictionsInOrder) {
  BlockPool pool(3, true);  // 2 usable blocks
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(2, &blocks).ok());
  EXPECT_TRUE(pool.Cache(blocks[0], HashOf(7)));  // before recording: not logged
  pool.RecordCacheEvents(8);
  EXPECT_TRUE(pool.Cache(blocks[1], HashOf(8)));
  EXPECT_FALSE(pool.Cache(blocks[1], HashOf(9)));  // refused: not logged
  pool.Free(blocks);
  blocks.clear();
  ASSERT_TRUE(pool.Allocate(1, &blocks).ok());  // evicts the front of the free queue
  std::vector<CacheEvent> events;
  EXPECT_TRUE(pool.TakeCacheEvents(&events));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].hash, HashOf(8));
  EXPECT_TRUE(events[0].cached);
  EXPECT_FALSE(events[1].cached);
  const BlockHash evicted = events[1].hash;
  EXPECT_TRUE(evicted == HashOf(7) || evicted == HashOf(8));
  std::vector<BlockHash> left = pool.CachedHashes();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0], evicted);

  events.clear();
  EXPECT_TRUE(pool.TakeCacheEvents(&events));
  EXPECT_TRUE(events.empty()) << "taking empties the log";

  pool.RecordCacheEvents(1);
  EXPECT_TRUE(pool.Cache(blocks[0], HashOf(10)));
  ASSERT_TRUE(pool.Allocate(1, &blocks).ok());  // evicts the other cached hash: a second event
  EXPECT_FALSE(pool.TakeCacheEvents(&events)) << "two events in a log of one";
  EXPECT_TRUE(events.empty());
  EXPECT_THAT(pool.CachedHashes(), ElementsAre(HashOf(10)));
  EXPECT_TRUE(pool.TakeCacheEvents(&events)) << "the overflow is reported once";
}

// Layer groups other than the first cache their blocks unreported: findable, but neither logged
// nor listed, since a router only ever matches the first group's hashes.
TEST(BlockPoolTest, UnreportedHashesAreFindableButNeverLogged) {
  BlockPool pool(3, true);  // 2 usable blocks
  pool.RecordCacheEvents(8);
  std::vector<BlockId> blocks;
  ASSERT_TRUE(pool.Allocate(2, &blocks).ok());
  EXPECT_TRUE(pool.Cache(blocks[0], HashOf(1), /*report=*/false));
  EXPECT_TRUE(pool.Cache(blocks[1], HashOf(2)));
  EXPECT_EQ(pool.Lookup(HashOf(1)), blocks[0]);
  EXPECT_THAT(pool.CachedHashes(), ElementsAre(HashOf(2)));
  pool.Free(blocks);
  blocks.clear();
  ASSERT_TRUE(pool.Allocate(2, &blocks).ok());  // evicts both
  std::vector<CacheEvent> events;
  EXPECT_TRUE(pool.TakeCacheEvents(&events));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].hash, HashOf(2));
  EXPECT_TRUE(events[0].cached);
  EXPECT_EQ(events[1].hash, HashOf(2));
  EXPECT_FALSE(events[1].cached);
  // A block reused for a reported hash is reported again.
  EXPECT_TRUE(pool.Cache(blocks[0], HashOf(3)));
  EXPECT_THAT(pool.CachedHashes(), ElementsAre(HashOf(3)));
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
