// Layer groups (kvcache/layer_groups.h) and a KvCacheManager holding one block table per group.
// The grouping expectations are written from the published layer patterns (Gemma 2: every other
// layer windowed; Gemma 3: five windowed layers, then a global one) and the rule in the header;
// the manager expectations from the attention rule (a query at p reads (p - window, p]).
#include "kvcache/layer_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kvcache/block_hash.h"
#include "kvcache/kv_cache_manager.h"

namespace headroom::kvcache {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Gemma 3's layer windows: layer i is global when (i + 1) % 6 == 0.
std::vector<int32_t> Gemma3Windows(int32_t layers, int32_t window) {
  std::vector<int32_t> windows(static_cast<size_t>(layers), window);
  for (int32_t i = 5; i < layers; i += 6) windows[static_cast<size_t>(i)] = 0;
  return windows;
}

TEST(LayerGroupsTest, UniformWindowsShareOneGroupOfEveryLayer) {
  for (const int32_t window : {0, 4096}) {
    const LayerGroups groups = PlanLayerGroups(std::vector<int32_t>(32, window));
    EXPECT_THAT(groups.windows, ElementsAre(window));
    EXPECT_EQ(groups.group_size, 32);
    EXPECT_THAT(groups.layer_group, Each(0));
    std::vector<int32_t> slots(32);
    std::iota(slots.begin(), slots.end(), 0);
    EXPECT_EQ(groups.layer_slot, slots);
    EXPECT_EQ(groups.padding_slots(), 0);
  }
  EXPECT_EQ(PlanLayerGroups({}).num_groups(), 0);
}

TEST(LayerGroupsTest, Gemma2AlternatingLayersMakeTwoEqualGroups) {
  std::vector<int32_t> windows(26);
  for (size_t i = 0; i < windows.size(); ++i) windows[i] = i % 2 == 0 ? 4096 : 0;
  const LayerGroups groups = PlanLayerGroups(windows);
  EXPECT_THAT(groups.windows, ElementsAre(0, 4096));
  EXPECT_EQ(groups.group_size, 13);
  EXPECT_EQ(groups.padding_slots(), 0);
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_EQ(groups.layer_group[i], i % 2 == 0 ? 1 : 0) << i;
    EXPECT_EQ(groups.layer_slot[i], static_cast<int32_t>(i / 2)) << i;
  }
}

TEST(LayerGroupsTest, Gemma3OneBSplitsTwentyTwoWindowedLayersIntoGroupsOfFour) {
  // 26 layers: global 5, 11, 17, 23; 22 windowed ones in groups of 4 (the last padded by 2).
  const LayerGroups groups = PlanLayerGroups(Gemma3Windows(26, 512));
  EXPECT_THAT(groups.windows, ElementsAre(0, 512, 512, 512, 512, 512, 512));
  EXPECT_EQ(groups.group_size, 4);
  EXPECT_EQ(groups.padding_slots(), 2);
  EXPECT_EQ(groups.layer_group[5], 0);
  EXPECT_EQ(groups.layer_slot[5], 0);
  EXPECT_EQ(groups.layer_group[23], 0);
  EXPECT_EQ(groups.layer_slot[23], 3);
  // Windowed layers in order: 0 1 2 3 | 4 6 7 8 | 9 10 12 13 | ... | 24 25.
  EXPECT_EQ(groups.layer_group[4], 2);
  EXPECT_EQ(groups.layer_slot[4], 0);
  EXPECT_EQ(groups.layer_group[6], 2);
  EXPECT_EQ(groups.layer_slot[6], 1);
  EXPECT_EQ(groups.layer_group[25], 6);
  EXPECT_EQ(groups.layer_slot[25], 1);
  // No two layers of one group share a slot.
  for (size_t a = 0; a < 26; ++a) {
    for (size_t b = a + 1; b < 26; ++b) {
      EXPECT_FALSE(groups.layer_group[a] == groups.layer_group[b] &&
                   groups.layer_slot[a] == groups.layer_slot[b])
          << a << " and " << b;
    }
  }
}

TEST(LayerGroupsTest, TooManyGroupsFallBackToOneGroupKeepingEveryBlock) {
  // One global layer among 40 windowed ones would need 41 groups of one layer.
  std::vector<int32_t> windows(41, 1024);
  windows[20] = 0;
  const LayerGroups groups = PlanLayerGroups(windows);
  EXPECT_THAT(groups.windows, ElementsAre(0));
  EXPECT_EQ(groups.group_size, 41);
}

TEST(LayerGroupsTest, GroupHashesDifferPerGroupAndGroupZeroIsTheChainedHash) {
  const BlockHash h = HashBlock(RootBlockHash(""), std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(LayerGroupHash(h, 0), h);
  EXPECT_NE(LayerGroupHash(h, 1), h);
  EXPECT_NE(LayerGroupHash(h, 1), LayerGroupHash(h, 2));
}

std::vector<int32_t> Iota(int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 100);
  return v;
}

std::vector<int32_t> Values(absl::Span<const BlockId> blocks) {
  std::vector<int32_t> v;
  for (const BlockId b : blocks) v.push_back(b.value());
  return v;
}

TEST(LayerGroupsKvCacheTest, OnlyTheWindowedGroupReleasesAndBothDrawFromOnePool) {
  // Block size 2, groups {full, window 3}: 21 usable blocks.
  auto kv = KvCacheManager::Create({.num_blocks = 22, .block_size = 2, .group_windows = {0, 3}});
  ASSERT_TRUE(kv.ok()) << kv.status();
  const SequenceId seq{1};
  ASSERT_TRUE((*kv)->AddSequence(seq, (*kv)->FindCachedPrefix(Iota(7)), Iota(7)).ok());
  // 7 tokens: 4 entries per table, 8 blocks in all.
  EXPECT_EQ((*kv)->num_free_blocks(), 21 - 8);
  // Decode to 12 tokens, one at a time. Before the step computing token n the windowed group
  // keeps the blocks of positions >= n - 2: a block dies when its last position is below that.
  for (int32_t n = 7; n < 12; ++n) ASSERT_TRUE((*kv)->Append(seq, {n}).ok());
  // Positions 0..11 in 6 blocks per group. The last step computed position 11 after releasing
  // below 11 - 3 + 1 = 9: blocks 0..3 (positions 0..7) are dead in the windowed group.
  EXPECT_EQ((*kv)->NumReleasedBlocks(seq, 0), 0);
  EXPECT_EQ((*kv)->NumReleasedBlocks(seq, 1), 4);
  EXPECT_THAT(Values((*kv)->BlockTable(seq, 1).subspan(0, 4)), Each(0));
  EXPECT_THAT(Values((*kv)->BlockTable(seq, 0)), Each(::testing::Gt(0)));
  EXPECT_EQ((*kv)->num_free_blocks(), 21 - 6 - 2);
  // Peak per sequence of 12 tokens in steps of 1: 6 full-group blocks plus the windowed group's
  // ceil((3 - 1 + 1) / 2) + 1 = 3.
  EXPECT_EQ((*kv)->PeakBlocks(12, 1), 6 + 3);
  const absl::Status check = (*kv)->CheckInvariants();
  EXPECT_TRUE(check.ok()) << check;
}

TEST(LayerGroupsKvCacheTest, AHitNeedsTheFullGroupsWholePrefixAndTheWindowsTail) {
  auto kv = KvCacheManager::Create({.num_blocks = 64, .block_size = 2, .group_windows = {0, 3}});
  ASSERT_TRUE(kv.ok()) << kv.status();
  const std::vector<int32_t> prompt = Iota(9);
  ASSERT_TRUE((*kv)->AddSequence(SequenceId{1}, (*kv)->FindCachedPrefix(prompt), prompt).ok());
  const std::vector<BlockId> full(((*kv)->BlockTable(SequenceId{1}, 0)).begin(),
                                  ((*kv)->BlockTable(SequenceId{1}, 0)).end());
  const std::vector<BlockId> windowed(((*kv)->BlockTable(SequenceId{1}, 1)).begin(),
                                      ((*kv)->BlockTable(SequenceId{1}, 1)).end());
  ASSERT_TRUE((*kv)->Free(SequenceId{1}));
  // The same 9-token prompt: 4 blocks (8 tokens) can be served. The query at 8 reads 6..8, so the
  // windowed group serves blocks 3 only; blocks 0..2 of it are behind the window.
  const PrefixHit hit = (*kv)->FindCachedPrefix(prompt);
  ASSERT_EQ(hit.num_cached_tokens, 8);
  EXPECT_THAT(hit.blocks[0], ElementsAre(full[0], full[1], full[2], full[3]));
  EXPECT_THAT(hit.blocks[1], ElementsAre(kNullBlockId, kNullBlockId, kNullBlockId, windowed[3]));
  // Taking it costs the revived full blocks 0..3 and windowed block 3, plus one new block per
  // group for token 8.
  EXPECT_EQ((*kv)->BlocksToAdmit(hit, 9), 4 + 1 + 2);
  ASSERT_TRUE((*kv)->AddSequence(SequenceId{2}, hit, prompt).ok());
  EXPECT_EQ((*kv)->NumReleasedBlocks(SequenceId{2}, 1), 3);
  EXPECT_EQ((*kv)->Stats().prefix_hits, 8);
}

TEST(LayerGroupsKvCacheTest, RejectsAWindowPerGroupTogetherWithOneForAll) {
  EXPECT_THAT(
      KvCacheManager::Create({.num_blocks = 8, .sliding_window = 4, .group_windows = {0, 4}})
          .status()
          .message(),
      HasSubstr("sliding_window must be 0 with group_windows"));
  EXPECT_THAT(
      KvCacheManager::Create({.num_blocks = 8, .group_windows = {0, -1}}).status().message(),
      HasSubstr("group_windows[1] must be 0 (none) or positive, got -1"));
}

}  // namespace
}  // namespace headroom::kvcache
