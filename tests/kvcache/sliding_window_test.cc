// Releasing KV blocks behind a sliding window (kvcache/sliding_window.h, KvCacheManager with
// sliding_window > 0). Expected values come from the attention rule itself (a query at p reads
// the keys (p - window, p]), evaluated position by position, not from the closed forms.
#include "kvcache/sliding_window.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "kvcache/kv_cache_manager.h"

namespace headroom::kvcache {
namespace {

using ::testing::HasSubstr;

// Blocks that hold at least one key a query in [first_query, end_query) reads.
std::set<int64_t> BlocksRead(int64_t first_query, int64_t end_query, int64_t block_size,
                             int64_t window) {
  std::set<int64_t> blocks;
  for (int64_t p = first_query; p < end_query; ++p) {
    for (int64_t key = std::max<int64_t>(0, p - window + 1); key <= p; ++key) {
      blocks.insert(key / block_size);
    }
  }
  return blocks;
}

TEST(SlidingWindowTest, DeadBlocksAreExactlyTheBlocksNoLaterQueryReads) {
  for (const int64_t block_size : {1, 3, 4, 16}) {
    for (const int64_t window : {1, 2, 5, 16, 33}) {
      for (int64_t computed = 0; computed <= 80; ++computed) {
        // Queries after `computed` reach at most a window further; beyond that nothing older
        // becomes readable again, so a finite horizon suffices.
        const std::set<int64_t> read =
            BlocksRead(computed, computed + window + 2 * block_size, block_size, window);
        const int64_t first_read = read.empty() ? 0 : *read.begin();
        EXPECT_EQ(DeadBlocks(computed, block_size, window), first_read)
            << "block size " << block_size << ", window " << window << ", computed " << computed;
      }
    }
  }
  EXPECT_EQ(DeadBlocks(1000, 16, 0), 0) << "no window: nothing is dead";
}

TEST(SlidingWindowTest, PeakBlocksBoundsEveryStepAndIsReached) {
  for (const int64_t block_size : {1, 4, 16}) {
    for (const int64_t window : {1, 6, 16, 40}) {
      for (const int64_t max_chunk : {1, 5, 32}) {
        for (const int64_t num_tokens : {1, 7, 50, 200}) {
          // A step from n with a chunk of c holds the blocks from the first one its queries read
          // (the dead ones are gone) to the one holding its last token.
          int64_t most = 0;
          for (int64_t n = 0; n < num_tokens; ++n) {
            for (int64_t c = 1; c <= max_chunk && n + c <= num_tokens; ++c) {
              const int64_t first = *BlocksRead(n, n + c, block_size, window).begin();
              const int64_t held = (n + c + block_size - 1) / block_size - first;
              most = std::max(most, held);
            }
          }
          const int64_t peak = PeakBlocksPerSequence(num_tokens, block_size, window, max_chunk);
          EXPECT_GE(peak, most) << block_size << "/" << window << "/" << max_chunk << "/"
                                << num_tokens;
          EXPECT_LE(peak, most + 1) << "the bound is at most one block loose";
        }
      }
    }
  }
  EXPECT_EQ(PeakBlocksPerSequence(100, 16, 0, 8), 7) << "no window: every block";
}

std::vector<int32_t> Iota(int32_t n, int32_t start = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::unique_ptr<KvCacheManager> MakeWindowed(int32_t num_blocks, int32_t block_size,
                                             int32_t window) {
  auto kv = KvCacheManager::Create({.num_blocks = num_blocks,
                                    .block_size = block_size,
                                    .enable_prefix_caching = true,
                                    .sliding_window = window});
  EXPECT_TRUE(kv.ok()) << kv.status();
  return *std::move(kv);
}

int32_t NullEntries(const KvCacheManager& kv, SequenceId seq) {
  int32_t n = 0;
  for (const BlockId b : kv.BlockTable(seq)) n += b == kNullBlockId ? 1 : 0;
  return n;
}

TEST(SlidingWindowKvCacheTest, RejectsANegativeWindow) {
  EXPECT_THAT(KvCacheManager::Create({.num_blocks = 8, .sliding_window = -1}).status().message(),
              HasSubstr("sliding_window must be 0 (none) or positive, got -1"));
}

// Decoding one token at a time: before each append the blocks behind the window of the token
// about to be computed go back to the pool, so a sequence longer than the whole pool runs on.
TEST(SlidingWindowKvCacheTest, DecodeReleasesBlocksBehindTheWindowAndOutrunsThePool) {
  constexpr int32_t kBlockSize = 4;
  constexpr int32_t kWindow = 6;
  auto kv = MakeWindowed(/*num_blocks=*/4, kBlockSize, kWindow);  // 3 usable blocks: 12 slots
  const SequenceId seq{1};
  ASSERT_TRUE(kv->AddSequence(seq, kv->FindCachedPrefix(Iota(5)), Iota(5)).ok());
  for (int32_t n = 5; n < 100; ++n) {
    ASSERT_TRUE(kv->Append(seq, {n}).ok()) << "at " << n << " tokens";
    ASSERT_TRUE(kv->CheckInvariants().ok()) << kv->CheckInvariants();
    // Appending token n computes the query at n: blocks whose keys all precede n - 5 are gone.
    const std::set<int64_t> read = BlocksRead(n, n + 1, kBlockSize, kWindow);
    EXPECT_EQ(NullEntries(*kv, seq), *read.begin()) << "at " << n;
    EXPECT_EQ(kv->NumTokens(seq), n + 1);
    EXPECT_EQ(kv->NumReleasedBlocks(seq), *read.begin());
    EXPECT_EQ(kv->Stats().num_tokens, n + 1 - *read.begin() * kBlockSize);
    EXPECT_LE(kv->Stats().num_used_blocks, PeakBlocksPerSequence(n + 1, kBlockSize, kWindow, 1));
  }
  EXPECT_TRUE(kv->Free(seq));
  EXPECT_EQ(kv->num_free_blocks(), 3);
  EXPECT_TRUE(kv->CheckInvariants().ok());
}

TEST(SlidingWindowKvCacheTest, AppendCountsReleasedBlocksAsFreeAndFailsWithoutChange) {
  constexpr int32_t kBlockSize = 4;
  auto kv = MakeWindowed(/*num_blocks=*/4, kBlockSize, /*window=*/4);
  const SequenceId a{1};
  const SequenceId b{2};
  ASSERT_TRUE(kv->AddSequence(a, kv->FindCachedPrefix(Iota(8)), Iota(8)).ok());  // 2 blocks
  ASSERT_TRUE(
      kv->AddSequence(b, kv->FindCachedPrefix(Iota(3, 50)), Iota(3, 50)).ok());  // the third
  EXPECT_EQ(kv->num_free_blocks(), 0);
  // a's next token is at 8 and reads 5..8: block 0 (0..3) is dead, and freeing it pays for the
  // block position 8 needs.
  EXPECT_EQ(kv->BlocksToAppend(a, 1), 0);
  // Five tokens at once need two blocks; only one comes back.
  EXPECT_EQ(kv->BlocksToAppend(a, 5), 1);
  const std::vector<BlockId> before(kv->BlockTable(a).begin(), kv->BlockTable(a).end());
  const absl::Status refused = kv->Append(a, Iota(5, 8));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(),
              HasSubstr("needs 2 KV blocks; 0 are free and its sliding window releases 1"));
  EXPECT_EQ(std::vector<BlockId>(kv->BlockTable(a).begin(), kv->BlockTable(a).end()), before);
  EXPECT_EQ(kv->NumReleasedBlocks(a), 0);
  ASSERT_TRUE(kv->Append(a, {8}).ok());
  EXPECT_EQ(kv->BlockTable(a)[0], kNullBlockId);
  EXPECT_EQ(kv->BlockTable(a)[2], before[0]) << "the released block was reused at once";
  EXPECT_TRUE(kv->CheckInvariants().ok()) << kv->CheckInvariants();
}

TEST(SlidingWindowKvCacheTest, ASharedDeadBlockIsDroppedButNotCountedAsFreed) {
  constexpr int32_t kBlockSize = 4;
  auto kv = MakeWindowed(/*num_blocks=*/6, kBlockSize, /*window=*/2);
  const SequenceId a{1};
  const SequenceId b{2};
  ASSERT_TRUE(kv->AddSequence(a, kv->FindCachedPrefix(Iota(12)), Iota(12)).ok());
  // b shares a's first block through the prefix cache (a hit of 4 tokens, inside b's window).
  std::vector<int32_t> b_prompt = Iota(4);
  b_prompt.push_back(90);
  const PrefixHit hit = kv->FindCachedPrefix(b_prompt);
  ASSERT_EQ(hit.num_cached_tokens, 4);
  ASSERT_TRUE(kv->AddSequence(b, hit, b_prompt).ok());
  EXPECT_EQ(kv->pool().ref_count(kv->BlockTable(a)[0]), 2);
  EXPECT_EQ(kv->num_free_blocks(), 1);
  // a's next query (12) reads 11..12: blocks 0 and 1 are dead, but only block 1 is a's alone.
  EXPECT_EQ(kv->BlocksToAppend(a, 5), 1);  // 2 new blocks, 1 freed
  const BlockId shared = kv->BlockTable(a)[0];
  ASSERT_TRUE(kv->Append(a, Iota(5, 12)).ok());
  EXPECT_EQ(kv->NumReleasedBlocks(a), 2);
  EXPECT_EQ(kv->pool().ref_count(shared), 1) << "b still holds it";
  EXPECT_EQ(kv->BlockTable(b)[0], shared);
  EXPECT_TRUE(kv->CheckInvariants().ok()) << kv->CheckInvariants();
}

TEST(SlidingWindowKvCacheTest, AdmissionLeavesHitBlocksBehindTheWindowInThePool) {
  constexpr int32_t kBlockSize = 4;
  auto kv = MakeWindowed(/*num_blocks=*/8, kBlockSize, /*window=*/5);
  const SequenceId first{1};
  ASSERT_TRUE(kv->AddSequence(first, kv->FindCachedPrefix(Iota(17)), Iota(17)).ok());
  const std::vector<BlockId> first_table(kv->BlockTable(first).begin(),
                                         kv->BlockTable(first).end());
  ASSERT_TRUE(kv->Free(first));
  ASSERT_EQ(kv->num_free_blocks(), 7);
  // A longer prompt with the same start hits 4 blocks (16 tokens); its first query is at 16 and
  // reads 12..16, so hit blocks 0..2 stay in the pool and only block 3 is revived.
  const std::vector<int32_t> prompt = Iota(20);
  const PrefixHit hit = kv->FindCachedPrefix(prompt);
  ASSERT_EQ(hit.num_cached_tokens, 16);
  EXPECT_EQ(hit.blocks[0][0], kNullBlockId) << "a hit names only the blocks the window reads";
  EXPECT_EQ(hit.blocks[0][3], first_table[3]);
  EXPECT_EQ(kv->BlocksToAdmit(hit, 20), 1 + 1);  // block 3 revived + one new block for 16..19
  const SequenceId second{2};
  ASSERT_TRUE(kv->AddSequence(second, hit, prompt).ok());
  const absl::Span<const BlockId> table = kv->BlockTable(second);
  ASSERT_EQ(table.size(), 5u);
  EXPECT_EQ(table[0], kNullBlockId);
  EXPECT_EQ(table[2], kNullBlockId);
  EXPECT_EQ(table[3], hit.blocks[0][3]);
  EXPECT_EQ(kv->num_free_blocks(), 5);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(kv->pool().ref_count(first_table[i]), 0);
    EXPECT_TRUE(kv->pool().hash(first_table[i]).has_value()) << "still cached";
  }
  EXPECT_EQ(kv->Stats().num_tokens, 20 - 3 * kBlockSize);
  EXPECT_EQ(kv->Stats().prefix_hits, 16) << "the whole hit is served, dead blocks included";
  EXPECT_TRUE(kv->CheckInvariants().ok()) << kv->CheckInvariants();
}

TEST(SlidingWindowKvCacheTest, PeakAndReachFollowTheWindow) {
  auto kv = MakeWindowed(/*num_blocks=*/64, /*block_size=*/4, /*window=*/8);
  EXPECT_EQ(kv->PeakBlocks(1000, 1), PeakBlocksPerSequence(1000, 4, 8, 1));
  EXPECT_LT(kv->PeakBlocks(1000, 1), kv->BlocksForTokens(1000));
  const SequenceId seq{1};
  ASSERT_TRUE(kv->AddSequence(seq, kv->FindCachedPrefix(Iota(4)), Iota(4)).ok());
  // To reach 1000 tokens in chunks of 16 it needs at most its peak, less the block it holds.
  EXPECT_EQ(kv->BlocksToReach(seq, 1000, 16), kv->PeakBlocks(1000, 16) - 1);
  // A short growth is what appending it at once takes.
  EXPECT_EQ(kv->BlocksToReach(seq, 9, 16), kv->BlocksToAppend(seq, 5));
}

// Decoding past a pool of 4 blocks reuses the block of tokens 0..3 (its hash is evicted), yet
// a follow-up prompt hits all 20 tokens: its next token (20) reads only 16..20, whose block is
// still cached. A lookup that needed the whole chain would hit nothing.
TEST(SlidingWindowKvCacheTest, APrefixHitNeedsOnlyTheBlocksInsideTheWindow) {
  constexpr int32_t kBlockSize = 4;
  auto kv = MakeWindowed(/*num_blocks=*/5, kBlockSize, /*window=*/5);
  const SequenceId a{1};
  ASSERT_TRUE(kv->AddSequence(a, kv->FindCachedPrefix(Iota(8)), Iota(8)).ok());
  for (int32_t n = 8; n < 20; ++n) ASSERT_TRUE(kv->Append(a, {n}).ok());
  ASSERT_TRUE(kv->Free(a));
  std::vector<int32_t> prompt = Iota(20);
  prompt.push_back(99);
  const std::vector<BlockHash> hashes = PromptBlockHashes(prompt, kBlockSize, "");
  ASSERT_EQ(hashes.size(), 5u);
  EXPECT_FALSE(kv->pool().Lookup(hashes[0]).has_value()) << "tokens 0..3 were evicted";
  const PrefixHit hit = kv->FindCachedPrefix(prompt);
  ASSERT_EQ(hit.num_cached_tokens, 20);
  ASSERT_EQ(hit.blocks[0].size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(hit.blocks[0][i], kNullBlockId) << i;
  EXPECT_EQ(kv->pool().hash(hit.blocks[0][4]), hashes[4]);
  EXPECT_EQ(kv->BlocksToAdmit(hit, 21), 2);  // block 4 revived, one new for token 20
  const SequenceId b{2};
  ASSERT_TRUE(kv->AddSequence(b, hit, prompt).ok());
  EXPECT_EQ(kv->NumReleasedBlocks(b), 4);
  EXPECT_EQ(kv->num_free_blocks(), 2);
  EXPECT_EQ(kv->Stats().prefix_hits, 20);
  EXPECT_TRUE(kv->CheckInvariants().ok()) << kv->CheckInvariants();

  // A window shorter than a block still needs the hit's last block cached: nothing is a hit of
  // nothing.
  auto tiny = MakeWindowed(/*num_blocks=*/4, kBlockSize, /*window=*/1);
  EXPECT_EQ(tiny->FindCachedPrefix(Iota(30)).num_cached_tokens, 0);
}

}  // namespace
}  // namespace headroom::kvcache
