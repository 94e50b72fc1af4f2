#include "kvcache/block_hash.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace headroom::kvcache {
namespace {

TEST(BlockHashTest, DependsOnParentTokensAndOrder) {
  const BlockHash root = RootBlockHash("");
  const std::vector<int32_t> tokens = {1, 2, 3, 4};
  const std::vector<int32_t> swapped = {2, 1, 3, 4};
  const BlockHash h = HashBlock(root, tokens);
  EXPECT_EQ(h, HashBlock(root, tokens));
  EXPECT_NE(h, HashBlock(root, swapped));
  EXPECT_NE(h, HashBlock(h, tokens));  // same tokens one block later: another prefix
  EXPECT_NE(h, HashBlock(root, std::vector<int32_t>{1, 2, 3}));
}

TEST(BlockHashTest, SaltSeparatesTenants) {
  const std::vector<int32_t> tokens = {7, 7, 7, 7};
  EXPECT_EQ(RootBlockHash("tenant-a"), RootBlockHash("tenant-a"));
  EXPECT_NE(RootBlockHash("tenant-a"), RootBlockHash("tenant-b"));
  EXPECT_NE(RootBlockHash(""), RootBlockHash("tenant-a"));
  EXPECT_NE(HashBlock(RootBlockHash("tenant-a"), tokens),
            HashBlock(RootBlockHash("tenant-b"), tokens));
}

TEST(BlockHashTest, AdaptersSeparateKvFromTheBaseModelAndEachOther) {
  EXPECT_EQ(RootBlockHash("", "sql"), RootBlockHash("", "sql"));
  EXPECT_EQ(RootBlockHash("tenant-a", ""), RootBlockHash("tenant-a"));  // no adapter: as before
  const std::vector<BlockHash> roots = {RootBlockHash(""),
                                        RootBlockHash("", "sql"),
                                        RootBlockHash("", "chat"),
                                        RootBlockHash("sql", ""),
                                        RootBlockHash("t", "sql"),
                                        RootBlockHash("sql", "t"),
                                        RootBlockHash("", "sqlt"),
                                        RootBlockHash("qlt", "s"),
                                        RootBlockHash("tenant-a", "sql"),
                                        RootBlockHash("tenant-b", "sql")};
  for (size_t i = 0; i < roots.size(); ++i) {
    for (size_t j = i + 1; j < roots.size(); ++j) EXPECT_NE(roots[i], roots[j]) << i << " " << j;
  }
  // A salt cannot forge an adapter's root: not even the bytes the adapter's root hashes.
  std::string forged(8, '\0');
  forged[0] = 3;
  forged += "sql";
  EXPECT_NE(RootBlockHash(forged), RootBlockHash("", "sql"));
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(PromptBlockHashes(tokens, 4, "", "sql").front(),
            HashBlock(RootBlockHash("", "sql"), std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_NE(PromptBlockHashes(tokens, 4, "", "sql"), PromptBlockHashes(tokens, 4, ""));
}

TEST(BlockHashTest, LargeBlocksHashWholeContent) {
  // Block sizes past the stack buffer take the heap path; every token still counts.
  std::vector<int32_t> tokens(1000);
  std::iota(tokens.begin(), tokens.end(), 0);
  const BlockHash h = HashBlock(RootBlockHash(""), tokens);
  tokens.back() = -1;
  EXPECT_NE(h, HashBlock(RootBlockHash(""), tokens));
}

TEST(BlockHashTest, NoCollisionsAcrossManyChains) {
  absl::flat_hash_set<uint64_t> lows;
  BlockHash parent = RootBlockHash("");
  for (int32_t i = 0; i < 100000; ++i) {
    parent = HashBlock(parent, std::vector<int32_t>{i % 7, i % 3});
    EXPECT_TRUE(lows.insert(parent.low).second) << "collision at " << i;
  }
}

}  // namespace
}  // namespace headroom::kvcache
