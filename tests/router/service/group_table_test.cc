#include "router/service/group_table.h"

#include <gtest/gtest.h>

#include "load_report.h"

namespace headroom::router {
namespace {

TEST(GroupTableTest, ReportMarksUpAndStalenessMarksDown) {
  GroupTable table({"a:1", "b:2"}, absl::Seconds(2));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_FALSE(table.any_up());
  v1::LoadReport first = Report(1, 50);
  first.set_lora_resolver(true);
  first.set_lora_slots_open(3);
  table.ApplyReport(0, first, t0);
  EXPECT_TRUE(table.load(0).up);
  EXPECT_EQ(table.load(0).free_blocks, 50);
  EXPECT_TRUE(table.load(0).lora_resolver);
  EXPECT_EQ(table.load(0).lora_slots_open, 3);
  EXPECT_EQ(table.largest_max_model_len(), 512);
  EXPECT_EQ(table.ExpireStale(t0 + absl::Seconds(1)), 0);
  EXPECT_EQ(table.ExpireStale(t0 + absl::Seconds(3)), 1);
  EXPECT_FALSE(table.any_up());
  table.ApplyReport(0, Report(2, 50), t0 + absl::Seconds(4));
  table.MarkDown(0);
  EXPECT_FALSE(table.load(0).up);
}

// A silence is noticed once, from a report on; a new report starts a new one. A group never heard
// from since it was listed, and a retired one, are never silent.
TEST(GroupTableTest, SilenceIsNoticedOncePerQuietSpellOfAReportingCurrentGroup) {
  GroupTable table({"a:1", "b:2", "c:3"}, absl::Seconds(2));
  const absl::Time t0 = absl::Now();
  const absl::Duration silence = absl::Seconds(10);
  table.ApplyReport(0, Report(1, 50), t0);
  table.ApplyReport(2, Report(1, 50), t0);
  table.SetGroups({"a:1", "b:2"});  // c retired
  EXPECT_TRUE(table.NewlySilent(t0 + absl::Seconds(9), silence).empty());
  EXPECT_EQ(table.NewlySilent(t0 + absl::Seconds(11), silence), std::vector<size_t>{0});
  EXPECT_TRUE(table.NewlySilent(t0 + absl::Seconds(30), silence).empty());  // noticed already
  table.ApplyReport(0, Report(2, 50), t0 + absl::Seconds(31));
  EXPECT_TRUE(table.NewlySilent(t0 + absl::Seconds(40), silence).empty());
  EXPECT_EQ(table.NewlySilent(t0 + absl::Seconds(42), silence), std::vector<size_t>{0});
}

TEST(GroupTableTest, ReservationGoesAtStreamEnd) {
  GroupTable table({"a:1"}, absl::Seconds(2));
  table.ApplyReport(0, Report(1, 50), absl::Now());
  table.loads()[0].reserved_blocks += 5;
  table.Track(7, 0, 5);
  table.ApplyReport(0, Report(2, 50), absl::Now());  // no first token yet: kept
  EXPECT_EQ(table.load(0).reserved_blocks, 5);
  table.Release(7);
  EXPECT_EQ(table.load(0).reserved_blocks, 0);
  table.Release(7);  // idempotent
  EXPECT_EQ(table.load(0).reserved_blocks, 0);
}

TEST(GroupTableTest, ReservationGoesAtTheFirstReportNewerThanTheFirstToken) {
  GroupTable table({"a:1"}, absl::Seconds(2));
  table.ApplyReport(0, Report(3, 50), absl::Now());
  table.loads()[0].reserved_blocks += 4;
  table.Track(1, 0, 4);
  table.MarkFirstToken(1);  // current sequence 3
  table.ApplyReport(0, Report(3, 46), absl::Now());
  EXPECT_EQ(table.load(0).reserved_blocks, 4);
  table.ApplyReport(0, Report(4, 46), absl::Now());
  EXPECT_EQ(table.load(0).reserved_blocks, 0);
  EXPECT_EQ(table.reservations(), 0u);
  table.Release(1);  // the stream end after that changes nothing
  EXPECT_EQ(table.load(0).reserved_blocks, 0);
}

TEST(GroupTableTest, SetGroupsRetiresAndRevivesStableSlots) {
  GroupTable table({"a:1", "b:2"}, absl::Seconds(2));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  table.ApplyReport(0, Report(1, 50), t0);
  table.ApplyReport(1, Report(1, 50), t0);
  table.loads()[0].reserved_blocks += 3;  // a request streaming from a:1
  table.Track(9, 0, 3);

  GroupChange change = table.SetGroups({"b:2", "c:3", "c:3"});
  EXPECT_EQ(change.added, std::vector<size_t>{2});
  EXPECT_EQ(change.removed, std::vector<size_t>{0});
  ASSERT_EQ(table.size(), 3u);
  EXPECT_FALSE(table.current(0));
  EXPECT_FALSE(table.load(0).up);
  EXPECT_TRUE(table.load(1).up);   // untouched
  EXPECT_FALSE(table.load(2).up);  // until its first report
  EXPECT_EQ(table.load(2).group, "c:3");
  table.ApplyReport(0, Report(2, 90), t0);  // a late report of the retired group: ignored
  EXPECT_FALSE(table.load(0).up);
  EXPECT_EQ(table.load(0).free_blocks, 50);
  table.Release(9);  // the streaming request ends normally
  EXPECT_EQ(table.load(0).reserved_blocks, 0);

  // a:1 comes back: its old slot, not a new one; b:2 leaves.
  change = table.SetGroups({"c:3", "a:1"});
  EXPECT_EQ(change.added, std::vector<size_t>{0});
  EXPECT_EQ(change.removed, std::vector<size_t>{1});
  ASSERT_EQ(table.size(), 3u);
  EXPECT_TRUE(table.current(0));
  EXPECT_FALSE(table.load(0).up);  // down until it reports again
  table.ApplyReport(0, Report(3, 60), t0);
  EXPECT_TRUE(table.load(0).up);
  const std::vector<GroupSlot> slots = table.slots();
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[0].address, "a:1");
  EXPECT_TRUE(slots[0].current);
  EXPECT_EQ(slots[1].address, "b:2");
  EXPECT_FALSE(slots[1].current);

  // Listing the same set again changes nothing.
  change = table.SetGroups({"a:1", "c:3"});
  EXPECT_TRUE(change.added.empty());
  EXPECT_TRUE(change.removed.empty());
  EXPECT_TRUE(table.load(0).up);
}

}  // namespace
}  // namespace headroom::router
