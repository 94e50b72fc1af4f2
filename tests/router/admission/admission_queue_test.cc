#include "router/admission/admission_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace headroom::router {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

GroupLoad Group(int32_t free) {
  return GroupLoad{.group = "g",
                   .up = true,
                   .total_blocks = 100,
                   .free_blocks = free,
                   .block_size = 16,
                   .max_model_len = 4096};
}

std::vector<int64_t> Ids(const std::vector<PlacedRequest>& placed) {
  std::vector<int64_t> ids;
  for (const PlacedRequest& p : placed) ids.push_back(p.id);
  return ids;
}

TEST(AdmissionQueueTest, PlacesFcfsAndReservesBlocks) {
  AdmissionQueue queue({.high_watermark = 10, .low_watermark = 5});
  const absl::Time deadline = kStart + absl::Seconds(30);
  ASSERT_TRUE(queue.Offer(1, 160, deadline).accepted);  // 10 blocks
  ASSERT_TRUE(queue.Offer(2, 800, deadline).accepted);  // 50 blocks
  ASSERT_TRUE(queue.Offer(3, 16, deadline).accepted);   // 1 block
  std::vector<GroupLoad> groups = {Group(40)};
  // 1 fits (30 left); 2 does not and blocks 3 behind it (FCFS).
  std::vector<PlacedRequest> placed =
      queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart);
  EXPECT_EQ(Ids(placed), std::vector<int64_t>{1});
  EXPECT_EQ(groups[0].reserved_blocks, 10);
  EXPECT_EQ(queue.size(), 2);
  // The group reports more free blocks and the reservation reflected.
  groups[0].free_blocks = 90;
  groups[0].reserved_blocks = 0;
  placed = queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart + absl::Seconds(1));
  EXPECT_EQ(Ids(placed), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(groups[0].reserved_blocks, 51);
}

// Lower priority values first, arrival order among equals; a head that must wait still blocks the
// requests behind it, whatever their priority.
TEST(AdmissionQueueTest, PlacesInPriorityOrderFcfsAmongEquals) {
  AdmissionQueue queue({.high_watermark = 10, .low_watermark = 5});
  const absl::Time deadline = kStart + absl::Seconds(30);
  ASSERT_TRUE(queue.Offer(1, 16, deadline, 0).accepted);
  ASSERT_TRUE(queue.Offer(2, 16, deadline, 0).accepted);
  ASSERT_TRUE(queue.Offer(3, 16, deadline, -1).accepted);
  ASSERT_TRUE(queue.Offer(4, 16, deadline, 1).accepted);
  ASSERT_TRUE(queue.Offer(5, 16 * 30, deadline, -1).accepted);  // 30 blocks
  ASSERT_TRUE(queue.Offer(6, 16, deadline, 0).accepted);
  std::vector<GroupLoad> groups = {Group(20)};
  // 3 fits; 5 (same priority, later) does not and holds every lower priority back.
  EXPECT_EQ(Ids(queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart)),
            std::vector<int64_t>{3});
  groups[0].free_blocks = 90;
  groups[0].reserved_blocks = 0;
  EXPECT_EQ(Ids(queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart)),
            (std::vector<int64_t>{5, 1, 2, 6, 4}));
}

TEST(AdmissionQueueTest, RequestsThatNoLongerFitAnyGroupComeBackRejected) {
  AdmissionQueue queue({.high_watermark = 10, .low_watermark = 5});
  ASSERT_TRUE(queue.Offer(1, 100 * 16 + 1, kStart + absl::Seconds(30)).accepted);
  std::vector<GroupLoad> groups = {Group(100)};
  const std::vector<PlacedRequest> placed =
      queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].outcome, PlacementOutcome::kNeverFits);
  EXPECT_EQ(groups[0].reserved_blocks, 0);
  EXPECT_EQ(queue.size(), 0);
}

TEST(AdmissionQueueTest, HysteresisRefusesAboveHighUntilBelowLow) {
  AdmissionQueue queue({.high_watermark = 4, .low_watermark = 2});
  const absl::Time deadline = kStart + absl::Seconds(30);
  for (int64_t id = 1; id <= 4; ++id) ASSERT_TRUE(queue.Offer(id, 16, deadline).accepted);
  const OfferResult refused = queue.Offer(5, 16, deadline);
  EXPECT_FALSE(refused.accepted);
  EXPECT_GE(refused.retry_after_s, 1);
  EXPECT_FALSE(queue.accepting());
  // Down to 3 (> low): still refusing.
  ASSERT_TRUE(queue.Remove(1));
  EXPECT_FALSE(queue.Offer(6, 16, deadline).accepted);
  // Down to 2 (== low): accepting again.
  ASSERT_TRUE(queue.Remove(2));
  EXPECT_TRUE(queue.Offer(7, 16, deadline).accepted);
  EXPECT_FALSE(queue.Remove(42));
}

TEST(AdmissionQueueTest, RetryAfterFollowsTheDrainRate) {
  AdmissionQueue queue({.high_watermark = 20, .low_watermark = 10});
  const absl::Time deadline = kStart + absl::Hours(1);
  int64_t id = 0;
  for (; id < 20; ++id) ASSERT_TRUE(queue.Offer(id, 16, deadline).accepted);
  // Drain 2 requests per second until the queue accepts again (8 left, below the low mark).
  std::vector<GroupLoad> groups = {Group(2)};
  for (int s = 1; s <= 6; ++s) {
    groups[0].reserved_blocks = 0;
    ASSERT_EQ(queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart + absl::Seconds(s))
                  .size(),
              2u);
  }
  for (; queue.size() < 20; ++id) ASSERT_TRUE(queue.Offer(id, 16, deadline).accepted);
  // 10 over the low watermark at 2 per second: 5 s.
  EXPECT_EQ(queue.Offer(id, 16, deadline).retry_after_s, 5);
}

TEST(AdmissionQueueTest, ExpiredRequestsLeaveWithTheirIds) {
  AdmissionQueue queue({.high_watermark = 10, .low_watermark = 5});
  ASSERT_TRUE(queue.Offer(1, 16, kStart + absl::Seconds(5)).accepted);
  ASSERT_TRUE(queue.Offer(2, 16, kStart + absl::Seconds(50)).accepted);
  ASSERT_TRUE(queue.Offer(3, 16, kStart + absl::Seconds(5)).accepted);
  EXPECT_TRUE(queue.Expire(kStart + absl::Seconds(4)).empty());
  EXPECT_EQ(queue.Expire(kStart + absl::Seconds(5)), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(queue.size(), 1);
}

}  // namespace
}  // namespace headroom::router
