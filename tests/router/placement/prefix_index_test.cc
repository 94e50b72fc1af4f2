// PrefixIndex (which prompt blocks a group holds, as the router placed them and the worker
// reports them) and PromptBlockHashes.
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

TEST(PromptBlockHashesTest, FullBlocksOnlyChainedOverTheirPrefixAndSalted) {
  const std::vector<int32_t> tokens = Tokens(0, 40);
  const std::vector<kvcache::BlockHash> hashes = PromptBlockHashes(tokens, 16, "");
  ASSERT_EQ(hashes.size(), 2u);  // 40 tokens: two full blocks of 16, the last 8 are not cached
  // The worker's chain: block i hashes block i-1's hash with block i's tokens.
  const kvcache::BlockHash first =
      kvcache::HashBlock(kvcache::RootBlockHash(""), absl::MakeConstSpan(tokens).subspan(0, 16));
  EXPECT_EQ(hashes[0], first);
  EXPECT_EQ(hashes[1], kvcache::HashBlock(first, absl::MakeConstSpan(tokens).subspan(16, 16)));
  // The same second block after another first block is another block.
  std::vector<int32_t> other = tokens;
  other[0] = 999;
  EXPECT_NE(PromptBlockHashes(other, 16, "")[1], hashes[1]);
  EXPECT_NE(PromptBlockHashes(tokens, 16, "tenant-a")[0], hashes[0]);
  EXPECT_TRUE(PromptBlockHashes(Tokens(0, 15), 16, "").empty());
  EXPECT_TRUE(PromptBlockHashes(tokens, 0, "").empty());
}

TEST(PrefixIndexTest, MatchCountsOnlyTheLeadingRecordedBlocks) {
  const std::vector<kvcache::BlockHash> a = PromptBlockHashes(Tokens(0, 64), 16, "");
  PrefixIndex index;
  EXPECT_EQ(index.Match(0, a), 0);
  index.Record(1, absl::MakeConstSpan(a).subspan(0, 3), 100);
  EXPECT_EQ(index.Match(1, a), 3);
  EXPECT_EQ(index.Match(0, a), 0);  // recorded for group 1 only
  EXPECT_EQ(index.Match(7, a), 0);  // a group never seen
  // A prompt that shares the first two blocks, then differs.
  std::vector<int32_t> fork = Tokens(0, 64);
  fork[40] = -1;
  EXPECT_EQ(index.Match(1, PromptBlockHashes(fork, 16, "")), 2);
  // A hole stops the match: blocks after the first miss do not count.
  PrefixIndex holes;
  holes.Record(0, {a[1], a[2], a[3]}, 100);
  EXPECT_EQ(holes.Match(0, a), 0);
}

TEST(PrefixIndexTest, ForgetsTheLeastRecentlyUsedBeyondThePoolTailsFirst) {
  const std::vector<kvcache::BlockHash> a = PromptBlockHashes(Tokens(0, 64), 16, "");
  const std::vector<kvcache::BlockHash> b = PromptBlockHashes(Tokens(1000, 64), 16, "");
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
  const std::vector<kvcache::BlockHash> hashes = PromptBlockHashes(Tokens(0, 64), 16, "");
  PrefixIndex index;
  index.Record(0, hashes, 100);
  index.Forget(0, {hashes[2]});  // the worker evicted the third block
  EXPECT_EQ(index.Match(0, hashes), 2);
  EXPECT_EQ(index.size(0), 3);
  index.Forget(0, PromptBlockHashes(Tokens(500, 32), 16, ""));  // never recorded
  index.Forget(7, hashes);                                      // an unknown group
  EXPECT_EQ(index.size(0), 3);
  index.Record(0, {hashes[2]}, 100);  // cached again
  EXPECT_EQ(index.Match(0, hashes), 4);
}

}  // namespace
}  // namespace headroom::router
