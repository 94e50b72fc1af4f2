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

// A waiting request holds only the groups it waits for. Group 0 serves 8192 tokens and has 10
// free blocks, group 1 serves 1024 and has 150. Request 1 (2000 tokens, 125 blocks) can only use
// group 0 and waits there; the short requests behind it go to group 1 instead of waiting behind
// it, and request 4 (2000 tokens again) waits too, queued, not refused.
TEST(AdmissionQueueTest, AWaitingRequestHoldsOnlyTheGroupsItCouldUse) {
  AdmissionQueue queue({.high_watermark = 10, .low_watermark = 5});
  const absl::Time deadline = kStart + absl::Seconds(30);
  ASSERT_TRUE(queue.Offer(1, 2000, deadline).accepted);
  ASSERT_TRUE(queue.Offer(2, 160, deadline).accepted);  // 10 blocks
  ASSERT_TRUE(queue.Offer(3, 16, deadline).accepted);   // 1 block
  ASSERT_TRUE(queue.Offer(4, 2000, deadline).accepted);
  GroupLoad long_context = Group(10);
  long_context.total_blocks = 200;
  long_context.max_model_len = 8192;
  GroupLoad short_context = Group(150);
  short_context.total_blocks = 200;
  short_context.max_model_len = 1024;
  std::vector<GroupLoad> groups = {long_context, short_context};
  const std::vector<PlacedRequest> placed =
      queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart);
  EXPECT_EQ(Ids(placed), (std::vector<int64_t>{2, 3}));
  for (const PlacedRequest& p : placed) {
    EXPECT_EQ(p.outcome, PlacementOutcome::kPlaced);
    EXPECT_EQ(p.group, 1u) << p.id;
  }
  EXPECT_EQ(groups[0].reserved_blocks, 0);
  EXPECT_EQ(groups[1].reserved_blocks, 11);
  EXPECT_EQ(queue.size(), 2);
  // Group 0 frees its blocks: 1 goes first, and 4 waits behind it.
  groups[0].free_blocks = 200;
  EXPECT_EQ(Ids(queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart)),
            std::vector<int64_t>{1});
  EXPECT_EQ(queue.size(), 1);
}

// Nothing behind a waiting request takes the groups it waits for, even where they have the most
// room. Groups 0 and 1 serve 8192 tokens (10 and 20 free blocks), group 2 serves 1024 (2 free).
// Request 1 (125 blocks) waits for 0 and 1; request 2 (1 block) goes to group 2, not to group 1's
// larger room; request 3 (10 blocks) fits group 1 only, which is held, so it waits.
TEST(AdmissionQueueTest, NothingBehindAWaitingRequestTakesTheGroupsItWaitsFor) {
  AdmissionQueue queue({.high_watermark = 10, .low_watermark = 5});
  const absl::Time deadline = kStart + absl::Seconds(30);
  ASSERT_TRUE(queue.Offer(1, 2000, deadline).accepted);
  ASSERT_TRUE(queue.Offer(2, 16, deadline).accepted);
  ASSERT_TRUE(queue.Offer(3, 160, deadline).accepted);
  std::vector<GroupLoad> groups = {Group(10), Group(20), Group(2)};
  for (GroupLoad& g : groups) {
    g.total_blocks = 200;
    g.max_model_len = 8192;
  }
  groups[2].max_model_len = 1024;
  const std::vector<PlacedRequest> placed =
      queue.Place(absl::MakeSpan(groups), LeastLoadedByBlocks{}, kStart);
  ASSERT_EQ(Ids(placed), std::vector<int64_t>{2});
  EXPECT_EQ(placed[0].group, 2u);
  EXPECT_EQ(groups[0].reserved_blocks + groups[1].reserved_blocks, 0);
  EXPECT_EQ(queue.size(), 2);
}

// A request with a priority waits for the one group that schedules by priority; requests without
// one use the other group meanwhile.
TEST(AdmissionQueueTest, APriorityRequestWaitingForItsGroupDoesNotHoldTheOthers) {
  AdmissionQueue queue({.high_watermark = 10, .low_watermark = 5});
  const absl::Time deadline = kStart + absl::Seconds(30);
  ASSERT_TRUE(queue.Offer(1, 16 * 30, deadline, -1).accepted);
  ASSERT_TRUE(queue.Offer(2, 16 * 10, deadline, 0).accepted);
  GroupLoad priority = Group(5);
  priority.priority_scheduling = true;
  std::vector<GroupLoad> groups = {priority, Group(90)};
  const LeastLoadedByBlocks policy;
  const auto place = [&policy](absl::Span<const GroupLoad> view, int64_t id,
                               int64_t max_total_tokens, absl::Span<const bool> held) {
    return policy(view, {.max_total_tokens = max_total_tokens,
                         .cached_blocks = {},
                         .needs_priority = id == 1,
                         .held = held});
  };
  const std::vector<PlacedRequest> placed = queue.Place(absl::MakeSpan(groups), place, kStart);
  ASSERT_EQ(Ids(placed), std::vector<int64_t>{2});
  EXPECT_EQ(placed[0].group, 1u);
  EXPECT_EQ(queue.size(), 1);
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
