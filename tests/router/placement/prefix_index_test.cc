// PrefixIndex: which prompt blocks a group holds, as the router placed them and the worker
// reports them.
#include "router/placement/prefix_index.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "kvcache/block_hash.h"
#include "kvcache/kv_cache_manager.h"

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
  index.Forget(7, hashes);                                               // an unknown group
  EXPECT_EQ(index.size(0), 3);
  index.Record(0, {hashes[2]}, 100);  // cached again
  EXPECT_EQ(index.Match(0, hashes), 4);
}

// With a window of 8 positions and 4-token blocks, the token after n >= 2 blocks reads only the
// last two (its keys are (4n - 7, 4n]): a conversation whose first blocks were evicted still
// matches them, where the leading count finds nothing.
TEST(PrefixIndexTest, AWindowedGroupMatchesTheBlocksItsWindowStillReads) {
  const std::vector<kvcache::BlockHash> a = kvcache::PromptBlockHashes(Tokens(0, 24), 4, "");
  PrefixIndex index;
  index.Record(0, {a[2], a[3]}, 100);  // blocks 0 and 1 were evicted
  EXPECT_EQ(index.Match(0, a), 0);
  EXPECT_EQ(index.Match(0, a, 4, 8), 4);
  // Block 3 alone: four blocks need 2 and 3; a window of 4 positions (one block read) serves 4.
  PrefixIndex last;
  last.Record(0, {a[3]}, 100);
  EXPECT_EQ(last.Match(0, a, 4, 8), 0);
  EXPECT_EQ(last.Match(0, a, 4, 4), 4);
  // A hole inside the window ends the run; the longest servable prefix before it counts.
  PrefixIndex holes;
  holes.Record(0, {a[0], a[1], a[2], a[4], a[5]}, 100);
  EXPECT_EQ(holes.Match(0, a, 4, 8), 6);   // blocks 4 and 5 are the window of 6 blocks
  EXPECT_EQ(holes.Match(0, a, 4, 12), 3);  // 6 blocks would need 3, 4 and 5
  EXPECT_EQ(holes.Match(0, a), 3);
}

// The router's count is the worker's hit: a real KvCacheManager with a sliding window runs
// multi-turn conversations through a small pool (admissions, decode appends, frees, evictions),
// and after each turn the index built from the pool's cached hashes matches every conversation's
// next prompt exactly as FindCachedPrefix does.
TEST(PrefixIndexTest, WindowedMatchEqualsTheWorkersPrefixHit) {
  constexpr int32_t kBlockSize = 4;
  int64_t windowed_hits = 0;
  for (const int32_t window : {5, 8, 13}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(window));
      auto kv = kvcache::KvCacheManager::Create(
          {.num_blocks = 24, .block_size = kBlockSize, .sliding_window = window});
      ASSERT_TRUE(kv.ok()) << kv.status();
      std::vector<std::vector<int32_t>> chats(4);
      for (size_t c = 0; c < chats.size(); ++c)
        chats[c] = Tokens(static_cast<int32_t>(c) * 1000, 6);
      int64_t next_seq = 0;
      for (int turn = 0; turn < 40; ++turn) {
        std::vector<int32_t>& chat = chats[rng() % chats.size()];
        for (int k = static_cast<int>(rng() % 9); k > 0; --k)
          chat.push_back(static_cast<int32_t>(rng() % 50));
        const kvcache::SequenceId seq(next_seq++);
        const kvcache::PrefixHit hit = (*kv)->FindCachedPrefix(chat);
        if (!(*kv)->CanAdmit((*kv)->BlocksToAdmit(hit, static_cast<int32_t>(chat.size())))) {
          chat.resize(6);  // too long for the pool now: start the conversation over
          continue;
        }
        ASSERT_TRUE((*kv)->AddSequence(seq, hit, chat).ok());
        for (int k = static_cast<int>(rng() % 12); k > 0; --k) {
          const int32_t token = static_cast<int32_t>(rng() % 50);
          if (!(*kv)->Append(seq, {token}).ok()) break;
          chat.push_back(token);
        }
        (*kv)->Free(seq);

        PrefixIndex index;
        index.Record(0, (*kv)->pool().CachedHashes(), 1 << 20);
        for (const std::vector<int32_t>& other : chats) {
          std::vector<int32_t> prompt = other;
          prompt.push_back(7);  // the next turn's first token
          const int64_t worker = (*kv)->FindCachedPrefix(prompt).num_cached_tokens / kBlockSize;
          // The worker serves at most (size - 1) tokens; the router hashes every full block.
          const std::vector<kvcache::BlockHash> hashes = kvcache::PromptBlockHashes(
              absl::MakeConstSpan(prompt).first(prompt.size() - 1), kBlockSize, "");
          ASSERT_EQ(index.Match(0, hashes, kBlockSize, window), worker)
              << "window " << window << " seed " << seed << " turn " << turn;
          windowed_hits += worker > index.Match(0, hashes) ? 1 : 0;
        }
      }
    }
  }
  // The runs reach the case this is for: hits the leading count misses.
  EXPECT_GT(windowed_hits, 0);
}

}  // namespace
}  // namespace headroom::router
