#include "kvcache/kv_cache_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <string_view>
#include <vector>

namespace headroom::kvcache {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int32_t> Iota(int32_t n, int32_t start = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::unique_ptr<KvCacheManager> Make(int32_t num_blocks, int32_t block_size, int32_t watermark = 0,
                                     bool caching = true) {
  auto manager = KvCacheManager::Create({.num_blocks = num_blocks,
                                         .block_size = block_size,
                                         .enable_prefix_caching = caching,
                                         .watermark_blocks = watermark});
  EXPECT_TRUE(manager.ok()) << manager.status();
  return *std::move(manager);
}

// Admits `seq` with whatever prefix is cached and the rest of `prompt` in one chunk.
PrefixHit Admit(KvCacheManager& kv, int64_t seq, const std::vector<int32_t>& prompt,
                std::string_view salt = {}) {
  PrefixHit hit = kv.FindCachedPrefix(prompt, salt);
  const absl::Status status = kv.AddSequence(SequenceId{seq}, hit, prompt);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
  return hit;
}

// PromptBlockHashes (what a router matches) are the hashes the manager registers a sequence's
// full blocks under, salted alike; the partial last block has none.
TEST(KvCacheManagerTest, PromptBlockHashesAreTheHashesTheCacheRegisters) {
  for (const std::string_view salt : {"", "tenant-a"}) {
    auto kv = Make(16, 4);
    const std::vector<int32_t> prompt = Iota(14, 100);  // 3 full blocks of 4, then 2 tokens
    Admit(*kv, 1, prompt, salt);
    const absl::Span<const BlockId> table = kv->BlockTable(SequenceId{1});
    ASSERT_EQ(table.size(), 4u);
    const std::vector<BlockHash> hashes = PromptBlockHashes(prompt, 4, salt);
    ASSERT_EQ(hashes.size(), 3u);
    for (size_t i = 0; i < hashes.size(); ++i) {
      EXPECT_EQ(kv->pool().hash(table[i]), hashes[i]) << "block " << i << " salt " << salt;
    }
    EXPECT_FALSE(kv->pool().hash(table[3]).has_value());
  }
  EXPECT_TRUE(PromptBlockHashes(Iota(3), 4, "").empty());
  EXPECT_TRUE(PromptBlockHashes(Iota(8), 0, "").empty());
}

TEST(KvCacheManagerTest, CreateRejectsBadConfigs) {
  EXPECT_THAT(KvCacheManager::Create({.num_blocks = 1}).status().message(),
              HasSubstr("num_blocks must be at least 2"));
  EXPECT_THAT(KvCacheManager::Create({.num_blocks = 8, .block_size = 0}).status().message(),
              HasSubstr("block_size must be positive, got 0"));
  EXPECT_THAT(KvCacheManager::Create({.num_blocks = 8, .watermark_blocks = 7}).status().message(),
              HasSubstr("watermark_blocks must be in [0, 7), got 7"));
}

TEST(KvCacheManagerTest, AllocatesBlocksAsTokensArrive) {
  auto kv = Make(/*num_blocks=*/10, /*block_size=*/4);
  Admit(*kv, 1, Iota(6));  // 6 tokens: 2 blocks, 2 slots of waste
  EXPECT_EQ(kv->BlockTable(SequenceId{1}).size(), 2u);
  EXPECT_EQ(kv->Stats().internal_waste_slots, 2);
  EXPECT_EQ(kv->BlocksToAppend(SequenceId{1}, 2), 0);
  EXPECT_EQ(kv->BlocksToAppend(SequenceId{1}, 3), 1);
  ASSERT_TRUE(kv->Append(SequenceId{1}, {100, 101}).ok());
  EXPECT_EQ(kv->BlockTable(SequenceId{1}).size(), 2u);
  ASSERT_TRUE(kv->Append(SequenceId{1}, {102}).ok());
  EXPECT_EQ(kv->BlockTable(SequenceId{1}).size(), 3u);
  EXPECT_EQ(kv->NumTokens(SequenceId{1}), 9);
  const KvCacheStats stats = kv->Stats();
  EXPECT_EQ(stats.num_used_blocks, 3);
  EXPECT_EQ(stats.num_free_blocks, 6);
  EXPECT_DOUBLE_EQ(stats.usage, 3.0 / 9.0);
  EXPECT_EQ(stats.internal_waste_slots, 3);
  EXPECT_EQ(stats.num_tokens, 9);
  EXPECT_TRUE(kv->CheckInvariants().ok());
}

TEST(KvCacheManagerTest, SharedPrefixIsServedFromCachedBlocks) {
  auto kv = Make(20, 4);
  const std::vector<int32_t> prompt = Iota(10);
  Admit(*kv, 1, prompt);
  std::vector<int32_t> other = Iota(9);
  other.push_back(555);  // same first 9 tokens: two full blocks in common
  const PrefixHit hit = kv->FindCachedPrefix(other);
  EXPECT_EQ(hit.num_cached_tokens, 8);
  EXPECT_THAT(hit.blocks[0], ElementsAreArray(kv->BlockTable(SequenceId{1}).subspan(0, 2)));
  EXPECT_EQ(kv->BlocksToAdmit(hit, 10), 1);  // the third block only
  ASSERT_TRUE(kv->AddSequence(SequenceId{2}, hit, other).ok());
  EXPECT_EQ(kv->pool().ref_count(hit.blocks[0][0]), 2);
  EXPECT_EQ(kv->Stats().num_used_blocks, 4);
  EXPECT_EQ(kv->Stats().prefix_queries, 20);
  EXPECT_EQ(kv->Stats().prefix_hits, 8);
  EXPECT_TRUE(kv->CheckInvariants().ok());
}

TEST(KvCacheManagerTest, LastPromptTokenIsNeverServedFromCache) {
  auto kv = Make(20, 4);
  const std::vector<int32_t> prompt = Iota(8);  // exactly two full blocks
  Admit(*kv, 1, prompt);
  ASSERT_TRUE(kv->Free(SequenceId{1}));
  const PrefixHit hit = kv->FindCachedPrefix(prompt);
  EXPECT_EQ(hit.num_cached_tokens, 4);  // block 2 would include the last token
  EXPECT_EQ(kv->FindCachedPrefix(Iota(9)).num_cached_tokens, 8);
  EXPECT_EQ(kv->FindCachedPrefix(Iota(1)).num_cached_tokens, 0);
  EXPECT_EQ(kv->FindCachedPrefix({}).num_cached_tokens, 0);
}

TEST(KvCacheManagerTest, SaltIsolatesPrefixes) {
  auto kv = Make(20, 4);
  Admit(*kv, 1, Iota(9), "tenant-a");
  EXPECT_EQ(kv->FindCachedPrefix(Iota(9), "tenant-a").num_cached_tokens, 8);
  EXPECT_EQ(kv->FindCachedPrefix(Iota(9), "tenant-b").num_cached_tokens, 0);
  EXPECT_EQ(kv->FindCachedPrefix(Iota(9)).num_cached_tokens, 0);
}

TEST(KvCacheManagerTest, BlocksFilledByDecodeAreCachedWithTheirChain) {
  auto kv = Make(20, 4);
  Admit(*kv, 1, Iota(3));
  for (int32_t t = 3; t < 9; ++t) ASSERT_TRUE(kv->Append(SequenceId{1}, {t}).ok());
  // Prompt + generated tokens form the same chain as a prompt of those tokens.
  EXPECT_EQ(kv->FindCachedPrefix(Iota(10)).num_cached_tokens, 8);
  EXPECT_THAT(kv->FindCachedPrefix(Iota(10)).blocks[0],
              ElementsAreArray(kv->BlockTable(SequenceId{1}).subspan(0, 2)));
}

TEST(KvCacheManagerTest, FreeEvictsTailBlocksFirst) {
  auto kv = Make(/*num_blocks=*/5, 4);  // 4 usable blocks
  const std::vector<int32_t> prompt = Iota(13);
  Admit(*kv, 1, prompt);  // blocks b1 b2 b3 (full, cached) b4 (1 token)
  const std::vector<BlockId> table(kv->BlockTable(SequenceId{1}).begin(),
                                   kv->BlockTable(SequenceId{1}).end());
  ASSERT_TRUE(kv->Free(SequenceId{1}));
  EXPECT_THAT(kv->pool().FreeOrder(), ElementsAre(table[3], table[2], table[1], table[0]));
  EXPECT_EQ(kv->Stats().num_evictable_blocks, 3);
  // A 2-block allocation evicts the uncached tail, then the third block: the prefix head stays.
  Admit(*kv, 2, Iota(6, 1000));
  EXPECT_EQ(kv->FindCachedPrefix(prompt).num_cached_tokens, 8);
  EXPECT_FALSE(kv->Free(SequenceId{99}));
}

TEST(KvCacheManagerTest, WatermarkHoldsBlocksBackFromAdmissionOnly) {
  auto kv = Make(/*num_blocks=*/7, 4, /*watermark=*/2);  // 6 usable
  Admit(*kv, 1, Iota(16));                               // 4 blocks, 2 left == watermark
  const PrefixHit hit = kv->FindCachedPrefix(Iota(2, 500));
  EXPECT_FALSE(kv->CanAdmit(kv->BlocksToAdmit(hit, 2)));
  const absl::Status refused = kv->AddSequence(SequenceId{2}, hit, Iota(2, 500));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "admitting 2 tokens needs 1 free KV blocks plus the watermark of 2; 2 are free");
  EXPECT_FALSE(kv->Contains(SequenceId{2}));
  // The running sequence may grow into the watermark.
  ASSERT_TRUE(kv->Append(SequenceId{1}, Iota(8, 16)).ok());
  const absl::Status full = kv->Append(SequenceId{1}, {99});
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("needs 1 KV blocks; 0 are free"));
  EXPECT_EQ(kv->NumTokens(SequenceId{1}), 24);
  EXPECT_TRUE(kv->CheckInvariants().ok());
}

TEST(KvCacheManagerTest, RevivingCachedHitBlocksCountsAgainstFreeBlocks) {
  auto kv = Make(/*num_blocks=*/4, 4);  // 3 usable
  Admit(*kv, 1, Iota(9));               // 3 blocks
  ASSERT_TRUE(kv->Free(SequenceId{1}));
  const PrefixHit hit = kv->FindCachedPrefix(Iota(9));
  ASSERT_EQ(hit.blocks[0].size(), 2u);
  // Two revived blocks plus one new block: all three free blocks.
  EXPECT_EQ(kv->BlocksToAdmit(hit, 9), 3);
  ASSERT_TRUE(kv->AddSequence(SequenceId{2}, hit, Iota(9)).ok());
  EXPECT_EQ(kv->num_free_blocks(), 0);
  EXPECT_THAT(kv->BlockTable(SequenceId{2}).subspan(0, 2), ElementsAreArray(hit.blocks[0]));
  EXPECT_TRUE(kv->CheckInvariants().ok());
}

TEST(KvCacheManagerTest, StaleHitIsRefused) {
  auto kv = Make(/*num_blocks=*/3, 4);  // 2 usable
  Admit(*kv, 1, Iota(5));
  ASSERT_TRUE(kv->Free(SequenceId{1}));
  const PrefixHit hit = kv->FindCachedPrefix(Iota(5));
  ASSERT_EQ(hit.blocks[0].size(), 1u);
  Admit(*kv, 2, Iota(8, 100));  // takes both blocks, evicting the hit
  ASSERT_TRUE(kv->Free(SequenceId{2}));
  const absl::Status status = kv->AddSequence(SequenceId{3}, hit, Iota(5));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("stale"));
  EXPECT_TRUE(kv->CheckInvariants().ok());
}

TEST(KvCacheManagerTest, DuplicateAndUnknownSequencesAreErrors) {
  auto kv = Make(10, 4);
  Admit(*kv, 1, Iota(3));
  EXPECT_EQ(kv->AddSequence(SequenceId{1}, kv->FindCachedPrefix(Iota(3)), Iota(3)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(kv->Free(SequenceId{1}));
  // Tokens shorter than the cached prefix they claim to extend.
  const PrefixHit hit = kv->FindCachedPrefix(Iota(9));
  ASSERT_EQ(hit.num_cached_tokens, 0);  // 3 tokens never filled a block
  Admit(*kv, 2, Iota(9));
  const PrefixHit long_hit = kv->FindCachedPrefix(Iota(9));
  ASSERT_EQ(long_hit.num_cached_tokens, 8);
  const absl::Status short_tokens = kv->AddSequence(SequenceId{3}, long_hit, Iota(4));
  EXPECT_EQ(short_tokens.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(short_tokens.message(), "admitting 4 tokens with a prefix hit of 8 tokens");
  EXPECT_EQ(kv->Append(SequenceId{42}, {1}).code(), absl::StatusCode::kNotFound);
}

TEST(KvCacheManagerTest, PrefixCachingOffNeverHits) {
  auto kv = Make(10, 4, 0, /*caching=*/false);
  Admit(*kv, 1, Iota(9));
  ASSERT_TRUE(kv->Free(SequenceId{1}));
  EXPECT_THAT(kv->FindCachedPrefix(Iota(9)).blocks[0], IsEmpty());
  EXPECT_EQ(kv->Stats().num_evictable_blocks, 0);
}

}  // namespace
}  // namespace headroom::kvcache
