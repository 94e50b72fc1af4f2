#include "kernels/cpu/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/kv_cache_write.h"
#include "kernels/cpu/threads.h"
#include "kvcache/sliding_window.h"
#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

// Outputs are convex combinations of values in [-1, 1]; the fp32 online softmax stays within this
// absolute error of the double reference (observed <= 4.3e-7 on these cases).
constexpr double kTolerance = 5e-6;

struct SeqSpec {
  int q_len;
  int context_len;
};

struct Case {
  int block_size;
  int num_heads;
  int num_kv_heads;
  int head_dim;
  std::vector<SeqSpec> seqs;
  float q_magnitude = 1.0f;  // larger values give peaked softmaxes (exercises max rescaling)
  float softcap = 0.0f;      // AttentionParams::softcap
  int sliding_window = 0;    // AttentionParams::sliding_window
  // Point each sequence's block-table entries behind the window of its first query (the blocks
  // the KV cache releases, kvcache/sliding_window.h) at a block never written (all NaN).
  bool release_dead_blocks = false;
};

// Everything one PagedAttention call reads, plus each sequence's K/V as contiguous arrays for the
// reference.
struct Batch {
  std::vector<float> k_cache;  // [num_blocks, block_size, num_kv_heads, head_dim]
  std::vector<float> v_cache;
  PagedKvView view{};
  std::vector<std::vector<float>> k_seq;  // per sequence [context_len, num_kv_heads, head_dim]
  std::vector<std::vector<float>> v_seq;
  std::vector<int32_t> query_start;   // [num_seqs + 1]
  std::vector<int32_t> context_lens;  // [num_seqs]
  std::vector<int32_t> block_tables;  // [num_seqs, max_blocks_per_seq]
  int32_t max_blocks_per_seq = 0;
  int64_t num_released_blocks = 0;  // entries pointed at a never-written block
  std::vector<float> q;             // [num_tokens, num_heads, head_dim]
  int64_t num_tokens = 0;

  AttentionMetadata Metadata() const {
    return AttentionMetadata{query_start.data(), context_lens.data(), block_tables.data(),
                             static_cast<int32_t>(context_lens.size()), max_blocks_per_seq};
  }
};

// Builds a batch whose sequences own shuffled, non-contiguous blocks. The pool starts as NaN and
// only the sequences' tokens are written (through KvCacheWrite), so a kernel that reads any other
// slot produces NaN. Unused block-table entries hold a huge id that must never be read.
Batch MakeBatch(const Case& c, std::mt19937_64& rng) {
  Batch b;
  const int64_t row = int64_t{c.num_kv_heads} * c.head_dim;
  int32_t total_blocks = 0;
  for (const SeqSpec& s : c.seqs) {
    const int32_t blocks = (s.context_len + c.block_size - 1) / c.block_size;
    total_blocks += blocks;
    b.max_blocks_per_seq = std::max(b.max_blocks_per_seq, blocks + 1);
  }
  const int32_t num_blocks = total_blocks + 2;
  b.k_cache = Poisoned(int64_t{num_blocks} * c.block_size * row);
  b.v_cache = Poisoned(int64_t{num_blocks} * c.block_size * row);
  b.view = PagedKvView{b.k_cache.data(), b.v_cache.data(), num_blocks,
                       c.block_size,     c.num_kv_heads,   c.head_dim};
  std::vector<int32_t> free_blocks(static_cast<size_t>(num_blocks));
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);

  const size_t num_seqs = c.seqs.size();
  b.block_tables.assign(num_seqs * static_cast<size_t>(b.max_blocks_per_seq), 1 << 30);
  b.query_start.push_back(0);
  size_t next_free = 0;
  for (size_t s = 0; s < num_seqs; ++s) {
    const SeqSpec& spec = c.seqs[s];
    b.query_start.push_back(b.query_start.back() + spec.q_len);
    b.context_lens.push_back(spec.context_len);
    int32_t* table = b.block_tables.data() + s * static_cast<size_t>(b.max_blocks_per_seq);
    std::vector<int64_t> slot_mapping;
    for (int32_t p = 0; p < spec.context_len; ++p) {
      if (p % c.block_size == 0) table[p / c.block_size] = free_blocks[next_free++];
      slot_mapping.push_back(int64_t{table[p / c.block_size]} * c.block_size + p % c.block_size);
    }
    b.k_seq.push_back(RandomFloats(rng, spec.context_len * row));
    b.v_seq.push_back(RandomFloats(rng, spec.context_len * row));
    EXPECT_TRUE(KvCacheWrite(b.k_seq.back().data(), b.v_seq.back().data(), slot_mapping.data(),
                             spec.context_len, b.view)
                    .ok());
  }
  if (c.release_dead_blocks) {
    const int32_t never_written = free_blocks[next_free];
    for (size_t s = 0; s < num_seqs; ++s) {
      const SeqSpec& spec = c.seqs[s];
      const int64_t dead =
          kvcache::DeadBlocks(spec.context_len - spec.q_len, c.block_size, c.sliding_window);
      int32_t* table = b.block_tables.data() + s * static_cast<size_t>(b.max_blocks_per_seq);
      std::fill(table, table + dead, never_written);
      b.num_released_blocks += dead;
    }
  }
  b.num_tokens = b.query_start.back();
  b.q = RandomFloats(rng, b.num_tokens * c.num_heads * c.head_dim, -c.q_magnitude, c.q_magnitude);
  return b;
}

// softmax(softcap(scale * Q K^T) + causal mask) V per sequence and head, in double, from the
// contiguous per-sequence K/V; with a sliding window W, the keys more than W - 1 positions before
// the query are masked too (HF's mask: key <= query - W is out).
std::vector<double> Reference(const Case& c, const Batch& b, double scale) {
  std::vector<double> out(b.q.size());
  const int64_t hd = c.head_dim;
  const int64_t group = c.num_heads / c.num_kv_heads;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const int64_t q_len = c.seqs[s].q_len;
    const int64_t ctx = c.seqs[s].context_len;
    for (int64_t i = 0; i < q_len; ++i) {
      const int64_t token = b.query_start[s] + i;
      const int64_t position = ctx - q_len + i;
      for (int64_t h = 0; h < c.num_heads; ++h) {
        const int64_t kv = h / group;
        const float* q_row = b.q.data() + (token * c.num_heads + h) * hd;
        std::vector<double> scores(static_cast<size_t>(position + 1), -INFINITY);
        double max_score = -INFINITY;
        for (int64_t j = 0; j <= position; ++j) {
          if (c.sliding_window > 0 && j <= position - c.sliding_window) continue;
          const float* k_row = b.k_seq[s].data() + (j * c.num_kv_heads + kv) * hd;
          double dot = 0.0;
          for (int64_t d = 0; d < hd; ++d) {
            dot += static_cast<double>(q_row[d]) * static_cast<double>(k_row[d]);
          }
          double score = dot * scale;
          if (c.softcap > 0) {
            const double cap = static_cast<double>(c.softcap);
            score = cap * std::tanh(score / cap);
          }
          scores[static_cast<size_t>(j)] = score;
          max_score = std::max(max_score, score);
        }
        double sum = 0.0;
        for (double& score : scores) {
          score = std::exp(score - max_score);  // 0 for a masked key
          sum += score;
        }
        double* out_row = out.data() + (token * c.num_heads + h) * hd;
        for (int64_t d = 0; d < hd; ++d) out_row[d] = 0.0;
        for (int64_t j = 0; j <= position; ++j) {
          const float* v_row = b.v_seq[s].data() + (j * c.num_kv_heads + kv) * hd;
          const double p = scores[static_cast<size_t>(j)] / sum;
          for (int64_t d = 0; d < hd; ++d) out_row[d] += p * static_cast<double>(v_row[d]);
        }
      }
    }
  }
  return out;
}

void RunAndCompare(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b = MakeBatch(c, rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> out = Poisoned(static_cast<int64_t>(b.q.size()));
  const AttentionParams params{
      .scale = scale, .softcap = c.softcap, .sliding_window = c.sliding_window};
  ASSERT_TRUE(PagedAttention(b.q.data(), b.num_tokens, c.num_heads, b.view, b.Metadata(), params,
                             out.data())
                  .ok());
  const std::vector<double> want = Reference(c, b, static_cast<double>(scale));
  double max_error = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(std::isnan(out[i])) << "element " << i << " unwritten or read a poisoned slot";
    max_error = std::max(max_error, std::abs(static_cast<double>(out[i]) - want[i]));
  }
  EXPECT_LE(max_error, kTolerance)
      << "block_size=" << c.block_size << " heads=" << c.num_heads << "/" << c.num_kv_heads
      << " head_dim=" << c.head_dim << " softcap=" << c.softcap << " window=" << c.sliding_window;
}

TEST(PagedAttentionTest, PrefillBlockSizeOne) {
  RunAndCompare(Case{1, 4, 4, 64, {{1, 1}, {17, 17}}}, 1);
}

TEST(PagedAttentionTest, MixedBatchGqa4BlockSize3) {
  // Decode, prefill, chunked prefill over cached blocks and a sequence without queries together.
  RunAndCompare(Case{3, 8, 2, 128, {{1, 1}, {17, 17}, {1, 131}, {5, 103}, {0, 20}, {40, 40}}}, 2);
}

TEST(PagedAttentionTest, LongContextsGenericHeadDim) {
  RunAndCompare(Case{16, 8, 8, 80, {{1, 1037}, {33, 1100}, {16, 16}}}, 3);
}

TEST(PagedAttentionTest, DecodeBatchAroundBlockBoundariesPeakedSoftmax) {
  Case c{16, 32, 8, 128, {{1, 1}, {1, 15}, {1, 16}, {1, 17}, {1, 255}, {1, 256}, {1, 257}}};
  c.q_magnitude = 4.0f;
  RunAndCompare(c, 4);
}

TEST(PagedAttentionTest, OtherHeadDims) {
  RunAndCompare(Case{3, 2, 1, 256, {{3, 50}, {1, 7}}}, 5);
  RunAndCompare(Case{16, 3, 1, 5, {{4, 9}, {19, 19}}}, 6);
  RunAndCompare(Case{1, 4, 2, 64, {{2, 100}, {1, 2}}}, 7);
}

TEST(PagedAttentionTest, SlidingWindowAcrossChunksTilesAndBlocks) {
  // Windows shorter than, equal to and longer than a key chunk (32) and a query tile (16), in
  // prefill, chunked prefill and decode; contexts shorter than the window attend everything.
  for (const int window : {1, 5, 16, 33, 100}) {
    Case c{16, 8, 2, 128, {{1, 1}, {40, 40}, {7, 90}, {1, 130}, {1, 3}, {70, 200}}};
    c.sliding_window = window;
    RunAndCompare(c, 20 + static_cast<uint64_t>(window));
  }
  Case odd{1, 3, 1, 5, {{19, 19}, {1, 64}}};
  odd.sliding_window = 4;
  RunAndCompare(odd, 30);
  Case gemma{32, 4, 2, 256, {{61, 61}, {1, 93}}};
  gemma.sliding_window = 16;
  RunAndCompare(gemma, 31);
}

TEST(PagedAttentionTest, NeverReadsBlocksReleasedBehindTheWindow) {
  // Decode and chunked prefill far past the window: the KV cache has released the leading
  // blocks (here they point at a NaN block), and the output must not change.
  for (const int block_size : {1, 4, 16}) {
    for (const int window : {1, 7, 32, 40}) {
      Case c{block_size, 8, 2, 128, {{1, 300}, {13, 140}, {40, 90}, {1, 41}, {3, 3}}};
      c.sliding_window = window;
      c.release_dead_blocks = true;
      std::mt19937_64 rng(50);
      EXPECT_GT(MakeBatch(c, rng).num_released_blocks, 0) << block_size << "/" << window;
      RunAndCompare(c, 50 + static_cast<uint64_t>(block_size * 100 + window));
    }
  }
}

TEST(PagedAttentionTest, SoftcapPeakedScores) {
  // Large q makes the scaled scores far beyond the cap, where tanh bends them most.
  Case c{16, 8, 2, 128, {{1, 77}, {33, 33}, {5, 60}}};
  c.q_magnitude = 8.0f;
  c.softcap = 5.0f;
  RunAndCompare(c, 40);
  c.softcap = 50.0f;
  c.sliding_window = 20;
  RunAndCompare(c, 41);
}

TEST(PagedAttentionTest, SameBitsWithAnyThreadCount) {
  const int before = NumThreads();
  const Case c{3, 8, 2, 128, {{1, 130}, {20, 45}, {7, 7}, {1, 1}}};
  std::mt19937_64 rng(8);
  Batch b = MakeBatch(c, rng);
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    std::vector<float> out = Poisoned(static_cast<int64_t>(b.q.size()));
    ASSERT_TRUE(PagedAttention(b.q.data(), b.num_tokens, c.num_heads, b.view, b.Metadata(),
                               AttentionParams{.scale = 0.0883883f}, out.data())
                    .ok());
    if (first.empty()) {
      first = out;
    } else {
      EXPECT_EQ(out, first) << threads << " threads";
    }
  }
  SetNumThreads(before);
}

TEST(PagedAttentionTest, EmptyBatchIsANoOp) {
  std::vector<float> cache(16);
  const PagedKvView view{cache.data(), cache.data(), 1, 4, 1, 4};
  const std::vector<int32_t> query_start = {0};
  const AttentionMetadata meta{query_start.data(), nullptr, nullptr, 0, 0};
  EXPECT_TRUE(
      PagedAttention(nullptr, 0, 2, view, meta, AttentionParams{.scale = 0.5f}, nullptr).ok());
}

// Each bad input is InvalidArgument and leaves the output untouched.
class PagedAttentionValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(9);
    batch_ = MakeBatch(case_, rng);
    out_ = Poisoned(static_cast<int64_t>(batch_.q.size()));
  }
  void ExpectInvalid(const AttentionMetadata& meta, int64_t num_heads = 4,
                     AttentionParams params = {.scale = 0.25f}, int64_t num_tokens = -2) {
    if (num_tokens == -2) num_tokens = batch_.num_tokens;
    const absl::Status status = PagedAttention(batch_.q.data(), num_tokens, num_heads, batch_.view,
                                               meta, params, out_.data());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_TRUE(testing::AllNaN(out_));
  }

  Case case_{3, 4, 2, 16, {{2, 7}, {1, 4}}};
  Batch batch_;
  std::vector<float> out_;
};

TEST_F(PagedAttentionValidationTest, ValidBatchPasses) {
  EXPECT_TRUE(PagedAttention(batch_.q.data(), batch_.num_tokens, 4, batch_.view, batch_.Metadata(),
                             AttentionParams{.scale = 0.25f}, out_.data())
                  .ok());
}

TEST_F(PagedAttentionValidationTest, BlockIdOutOfRange) {
  batch_.block_tables[1] = batch_.view.num_blocks;  // sequence 0, block 1 (used: 7 tokens / 3)
  ExpectInvalid(batch_.Metadata());
  batch_.block_tables[1] = -1;
  ExpectInvalid(batch_.Metadata());
}

TEST_F(PagedAttentionValidationTest, QueryLongerThanContext) {
  batch_.context_lens[1] = 0;
  ExpectInvalid(batch_.Metadata());
}

TEST_F(PagedAttentionValidationTest, ContextBeyondBlockTable) {
  batch_.context_lens[0] = batch_.max_blocks_per_seq * 3 + 1;
  ExpectInvalid(batch_.Metadata());
}

TEST_F(PagedAttentionValidationTest, HeadsNotAMultipleOfKvHeads) {
  ExpectInvalid(batch_.Metadata(), /*num_heads=*/3);
}

TEST_F(PagedAttentionValidationTest, BadQueryStart) {
  batch_.query_start[0] = 1;
  ExpectInvalid(batch_.Metadata());
  batch_.query_start = {0, 2, 1};
  ExpectInvalid(batch_.Metadata());
  batch_.query_start = {0, 2, 3};
  ExpectInvalid(batch_.Metadata(), 4, {.scale = 0.25f}, /*num_tokens=*/2);
}

TEST_F(PagedAttentionValidationTest, NonFiniteScale) {
  ExpectInvalid(batch_.Metadata(), 4, {.scale = NAN});
}

TEST_F(PagedAttentionValidationTest, NegativeOrNonFiniteSoftcapAndNegativeWindow) {
  ExpectInvalid(batch_.Metadata(), 4, {.scale = 0.25f, .softcap = -1.0f});
  ExpectInvalid(batch_.Metadata(), 4, {.scale = 0.25f, .softcap = INFINITY});
  ExpectInvalid(batch_.Metadata(), 4, {.scale = 0.25f, .sliding_window = -1});
}

}  // namespace
}  // namespace headroom::kernels::cpu
