// PrefixIndex: which prompt blocks a group holds, as the router placed them and the worker
// reports them.
#include "router/placement/prefix_index.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kvcache/block_hash.h"

namespace headroom::router {
namespace {

std::vector<int32_t> Tokens(int32_t first, int32_t count) {
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

TEST(PrefixIndexTest, MatchCountsOnlyTheLeadingRecordedBlocks) {
  const std::vector<kvcache::BlockHash> a = kvcache::PromptBlockHashes(Tokens(0, 64), 16, "");
  PrefixIndex index;
  EXPECT_EQ(index.Match(0, a), 0);
  index.Record(1, absl::MakeConstSpan(a).subspan(0, 3), 100);
  EXPECT_EQ(index.Match(1, a), 3);
  EXPECT_EQ(index.Match(0, a), 0);  // recorded for group 1 only
  EXPECT_EQ(index.Match(7, a), 0);  // a group never seen
  // A prompt that shares the first two blocks, then differs.
  std::vector<int32_t> fork = Tokens(0, 64);
  fork[40] = -1;
  EXPECT_EQ(index.Match(1, kvcache::PromptBlockHashes(fork, 16, "")), 2);
  // A hole stops the match: blocks after the first miss do not count.
  PrefixIndex holes;
  holes.Record(0, {a[1], a[2], a[3]}, 100);
  EXPECT_EQ(holes.Match(0, a), 0);
}

TEST(PrefixIndexTest, ForgetsTheLeastRecentlyUsedBeyondThePoolTailsFirst) {
  const std::vector<kvcache::BlockHash> a = kvcache::PromptBlockHashes(Tokens(0, 64), 16, "");
  const std::vector<kvcache::BlockHash> b = kvcache::PromptBlockHashes(Tokens(1000, 64), 16, "");
  PrefixIndex index;
  index.Record(0, a, 6);
  index.Record(0, b, 6);
  // 8 entries into a pool of 6: the two least recently used go, which are a's tail blocks.
  EXPECT_EQ(index.size(0), 6);
  EXPECT_EQ(index.Match(0, b), 4);
  EXPECT_EQ(index.Match(0, a), 2);
  // Using a again makes it the most recent: now b's tail goes.
  index.Record(0, absl::MakeConstSpan(a).subspan(0, 2), 6);
  index.Record(0, {a[2]}, 6);
  EXPECT_EQ(index.Match(0, a), 3);
  EXPECT_EQ(index.Match(0, b), 3);
  EXPECT_EQ(index.size(0), 6);
  // A group that shrank (or a pool of 0) keeps no more than it can hold.
  index.Record(0, {}, 1);
  EXPECT_EQ(index.size(0), 1);
  index.Clear(0);
  EXPECT_EQ(index.size(0), 0);
  EXPECT_EQ(index.Match(0, a), 0);
}

TEST(PrefixIndexTest, ForgottenBlocksNoLongerMatchAndUnknownOnesAreIgnored) {
  const std::vector<kvcache::BlockHash> hashes = kvcache::PromptBlockHashes(Tokens(0, 64), 16, "");
  PrefixIndex index;
  index.Record(0, hashes, 100);
  index.Forget(0, {hashes[2]});  // the worker evicted the third block
  EXPECT_EQ(index.Match(0, hashes), 2);
  EXPECT_EQ(index.size(0), 3);
  index.Forget(0, kvcache::PromptBlockHashes(Tokens(500, 32), 16, ""));  // never recorded
  index.Forget(7, hashes);                                      // an unknown group
  EXPECT_EQ(index.size(0), 3);
  index.Record(0, {hashes[2]}, 100);  // cached again
  EXPECT_EQ(index.Match(0, hashes), 4);
}

}  // namespace
}  // namespace headroom::router
