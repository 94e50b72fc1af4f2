#include "kernels/cpu/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

TEST(EmbeddingTest, CopiesRowsOfTheTable) {
  std::mt19937_64 rng(1);
  for (const auto& [vocab, hidden, tokens] :
       {std::tuple{1, 1, 1}, std::tuple{7, 3, 5}, std::tuple{1001, 67, 33}}) {
    const std::vector<float> table = RandomFloats(rng, int64_t{vocab} * hidden);
    std::uniform_int_distribution<int32_t> id_dist(0, vocab - 1);
    std::vector<int32_t> ids(static_cast<size_t>(tokens));
    for (int32_t& id : ids) id = id_dist(rng);
    ids[static_cast<size_t>(tokens - 1)] = vocab - 1;  // the last row of the table
    std::vector<float> out = Poisoned(int64_t{tokens} * hidden);
    ASSERT_TRUE(Embedding(ids.data(), tokens, table.data(), vocab, hidden, 1.0f, out.data()).ok());
    for (int t = 0; t < tokens; ++t) {
      for (int j = 0; j < hidden; ++j) {
        // A copy: exact.
        ASSERT_EQ(out[static_cast<size_t>(t * hidden + j)],
                  table[static_cast<size_t>(ids[static_cast<size_t>(t)] * hidden + j)])
            << "vocab=" << vocab << " token=" << t << " j=" << j;
      }
    }
  }
}

TEST(EmbeddingTest, ZeroTokensIsANoOp) {
  const std::vector<float> table(6, 1.0f);
  EXPECT_TRUE(Embedding(nullptr, 0, table.data(), 3, 2, 1.0f, nullptr).ok());
}

TEST(EmbeddingTest, OutOfRangeIdIsInvalidArgumentAndWritesNothing) {
  const std::vector<float> table(12, 1.0f);  // [4, 3]
  for (int32_t bad : {-1, 4, 1 << 30}) {
    const std::vector<int32_t> ids = {0, bad, 1};
    std::vector<float> out = Poisoned(9);
    const absl::Status status = Embedding(ids.data(), 3, table.data(), 4, 3, 1.0f, out.data());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(testing::AllNaN(out)) << "nothing may be written on error";
  }
}

TEST(EmbeddingTest, BadSizesAreInvalidArgument) {
  const std::vector<float> table(12, 1.0f);
  const std::vector<int32_t> ids = {0};
  std::vector<float> out(3);
  EXPECT_EQ(Embedding(ids.data(), -1, table.data(), 4, 3, 1.0f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Embedding(ids.data(), 1, table.data(), 0, 3, 1.0f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Embedding(ids.data(), 1, nullptr, 4, 3, 1.0f, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Embedding(ids.data(), 1, table.data(), 4, 3, NAN, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EmbeddingTest, ScaleMultipliesEachCopiedRow) {
  // Gemma's sqrt(hidden_size): every element is the table's times the scale, rounded once.
  std::mt19937_64 rng(2);
  const int vocab = 13, hidden = 37, tokens = 9;
  const std::vector<float> table = RandomFloats(rng, int64_t{vocab} * hidden);
  const std::vector<int32_t> ids = {12, 0, 5, 5, 7, 1, 12, 3, 9};
  const float scale = std::sqrt(37.0f);
  std::vector<float> out = Poisoned(int64_t{tokens} * hidden);
  ASSERT_TRUE(Embedding(ids.data(), tokens, table.data(), vocab, hidden, scale, out.data()).ok());
  for (int t = 0; t < tokens; ++t) {
    for (int j = 0; j < hidden; ++j) {
      const float want =
          table[static_cast<size_t>(ids[static_cast<size_t>(t)] * hidden + j)] * scale;
      ASSERT_EQ(out[static_cast<size_t>(t * hidden + j)], want) << t << "," << j;
    }
  }
}

}  // namespace
}  // namespace headroom::kernels::cpu
