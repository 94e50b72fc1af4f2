#include "kvcache/free_block_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace headroom::kvcache {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(FreeBlockQueueTest, PopsInPushOrder) {
  FreeBlockQueue queue(8);
  EXPECT_TRUE(queue.empty());
  queue.PushBack(BlockId{5});
  queue.PushBack(BlockId{2});
  queue.PushBack(BlockId{7});
  EXPECT_EQ(queue.size(), 3);
  EXPECT_EQ(queue.PopFront(), BlockId{5});
  EXPECT_EQ(queue.PopFront(), BlockId{2});
  queue.PushBack(BlockId{5});
  EXPECT_THAT(queue.ToVector(), ElementsAre(BlockId{7}, BlockId{5}));
}

TEST(FreeBlockQueueTest, RemovesFromHeadMiddleAndTail) {
  FreeBlockQueue queue(8);
  for (int32_t b : {1, 2, 3, 4, 5}) queue.PushBack(BlockId{b});
  queue.Remove(BlockId{3});
  EXPECT_THAT(queue.ToVector(), ElementsAre(BlockId{1}, BlockId{2}, BlockId{4}, BlockId{5}));
  queue.Remove(BlockId{1});
  queue.Remove(BlockId{5});
  EXPECT_THAT(queue.ToVector(), ElementsAre(BlockId{2}, BlockId{4}));
  EXPECT_FALSE(queue.Contains(BlockId{1}));
  EXPECT_TRUE(queue.Contains(BlockId{4}));
  queue.Remove(BlockId{2});
  queue.Remove(BlockId{4});
  EXPECT_THAT(queue.ToVector(), IsEmpty());
  EXPECT_EQ(queue.size(), 0);
  // Usable again after emptying: head and tail were reset.
  queue.PushBack(BlockId{6});
  EXPECT_EQ(queue.PopFront(), BlockId{6});
}

TEST(FreeBlockQueueDeathTest, RejectsDoublePushAndEmptyPop) {
  FreeBlockQueue queue(4);
  queue.PushBack(BlockId{1});
  EXPECT_DEATH(queue.PushBack(BlockId{1}), "already free");
  EXPECT_DEATH(queue.Remove(BlockId{2}), "not free");
  queue.PopFront();
  EXPECT_DEATH(queue.PopFront(), "no free block");
}

}  // namespace
}  // namespace headroom::kvcache
