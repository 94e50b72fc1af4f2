#include "router/service/group_table.h"

#include <gtest/gtest.h>

namespace headroom::router {
namespace {

v1::LoadReport Report(uint64_t sequence, int32_t free_blocks) {
  v1::LoadReport r;
  r.set_sequence(sequence);
  r.set_total_blocks(100);
  r.set_free_blocks(free_blocks);
  r.set_block_size(16);
  r.set_max_model_len(512);
  r.set_model("m");
  return r;
}

TEST(GroupTableTest, ReportMarksUpAndStalenessMarksDown) {
  GroupTable table({"a:1", "b:2"}, absl::Seconds(2));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_FALSE(table.any_up());
  table.ApplyReport(0, Report(1, 50), t0);
  EXPECT_TRUE(table.load(0).up);
  EXPECT_EQ(table.load(0).free_blocks, 50);
  EXPECT_EQ(table.largest_max_model_len(), 512);
  EXPECT_EQ(table.ExpireStale(t0 + absl::Seconds(1)), 0);
  EXPECT_EQ(table.ExpireStale(t0 + absl::Seconds(3)), 1);
  EXPECT_FALSE(table.any_up());
  table.ApplyReport(0, Report(2, 50), t0 + absl::Seconds(4));
  table.MarkDown(0);
  EXPECT_FALSE(table.load(0).up);
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

}  // namespace
}  // namespace headroom::router
