// Tensor-parallel forward passes: the committed HF fixtures sharded over 2 and 4 Gloo ranks
// (threads of this process, loopback TCP) against the same model on one rank. Greedy decoding of
// two sequences batched together: every step's logits within 1e-4 + 1e-4 * |x| of the
// single-rank ones (only the summation order of the all-reduces differs), the same greedy
// tokens, and identical logits on every rank of the group.
//
// The fixtures cover both GQA rules: llama-gqa (4 query / 2 KV heads) splits the KV heads at
// TP=2 and replicates them at TP=4; qwen2-bias adds q/k/v biases; llama-tied ties the LM head to
// the vocab-parallel embedding (MHA, 4 KV heads split at both sizes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fixture_model.h"
#include "kv_groups_input.h"
#include "worker/backend/cpu_backend.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"
#include "worker/model/llama_model.h"
#include "worker/model/shard_weights.h"

namespace headroom::worker {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int32_t kMaxModelLen = 128;
constexpr int kNewTokens = 12;

struct Sequence {
  std::vector<int32_t> tokens;  // prompt, then the greedy tokens
  int32_t computed = 0;         // tokens whose KV is cached
  int32_t first_block = 0;      // its blocks are first_block, first_block + 1, ...
};

// The next step of every sequence: the rest of the prompt on the first step, then one token.
// Blocks per KV layer group: both sequences' tables.
constexpr int32_t kGroupStride = 2 * kMaxModelLen / kBlockSize;

ForwardInput NextStep(const std::vector<Sequence>& seqs, int32_t max_blocks_per_seq,
                      int32_t kv_groups) {
  ForwardInput in;
  in.query_start.push_back(0);
  for (const Sequence& s : seqs) {
    const int32_t end = static_cast<int32_t>(s.tokens.size());
    for (int32_t p = s.computed; p < end; ++p) {
      in.token_ids.push_back(s.tokens[static_cast<size_t>(p)]);
      in.positions.push_back(p);
      in.slot_mapping.push_back(int64_t{s.first_block + p / kBlockSize} * kBlockSize +
                                p % kBlockSize);
    }
    in.logits_rows.push_back(static_cast<int32_t>(in.token_ids.size()) - 1);
    in.query_start.push_back(static_cast<int32_t>(in.token_ids.size()));
    in.context_lens.push_back(end);
    for (int32_t b = 0; b < max_blocks_per_seq; ++b) {
      in.block_tables.push_back(b * kBlockSize < end ? s.first_block + b : 0);
    }
  }
  testing::SpreadOverKvGroups(kv_groups, kGroupStride, kBlockSize, in);
  return in;
}

int32_t Argmax(const float* row, int64_t vocab) {
  int32_t best = 0;
  for (int32_t v = 1; v < vocab; ++v) {
    if (row[v] > row[best]) best = v;
  }
  return best;
}

struct DecodeRun {
  std::vector<std::vector<float>> logits;    // per step, [seqs, vocab]
  std::vector<std::vector<int32_t>> tokens;  // per sequence, prompt + greedy tokens
};

// Greedy decoding of `fixture` on one rank of a group (comm null: one rank, the whole model),
// with the rank's shard loaded as a worker rank loads it.
DecodeRun Decode(const std::string& fixture, Communicator* comm) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(fixture);
  DecodeRun run;
  const ModelWeights shard =
      comm == nullptr ? m.weights
                      : testdata::LoadFixtureShard(fixture, comm->world_size(), comm->rank());
  CpuBackend backend(1);
  auto model = LlamaModel::Create(
      m.config, shard,
      {.max_num_batched_tokens = 256,
       .max_num_seqs = 4,
       .max_model_len = kMaxModelLen,
       .num_kv_blocks = 1 + kGroupStride * KvCacheLayerGroups(m.config).num_groups(),
       .block_size = kBlockSize},
      &backend, comm);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return run;
  // Two sequences batched together (prompts of 21 and 5 tokens, each id < the vocab of 256).
  std::vector<Sequence> seqs(2);
  for (int32_t i = 0; i < 21; ++i) seqs[0].tokens.push_back((i * 37 + 11) % 256);
  seqs[1].tokens = {3, 141, 59, 26, 53};
  seqs[0].first_block = 1;
  seqs[1].first_block = 1 + kMaxModelLen / kBlockSize;
  const int64_t vocab = m.config.vocab_size;
  for (int step = 0; step < kNewTokens; ++step) {
    const ForwardInput in =
        NextStep(seqs, (*model)->max_blocks_per_seq(), (*model)->kv_groups().num_groups());
    std::vector<float> logits;
    const absl::Status status = (*model)->Forward(in, &logits);
    EXPECT_TRUE(status.ok()) << status;
    if (!status.ok()) return run;
    for (size_t s = 0; s < seqs.size(); ++s) {
      seqs[s].computed = static_cast<int32_t>(seqs[s].tokens.size());
      seqs[s].tokens.push_back(Argmax(logits.data() + static_cast<int64_t>(s) * vocab, vocab));
    }
    run.logits.push_back(std::move(logits));
  }
  for (const Sequence& s : seqs) run.tokens.push_back(s.tokens);
  return run;
}

// Every rank's run of a group of `tp` Gloo ranks.
std::vector<DecodeRun> DecodeSharded(const std::string& fixture, int tp) {
  testdata::LoadFixtureModel(fixture);  // loaded (and cached) before the rank threads read it
  InMemoryRendezvousStore store;
  std::vector<DecodeRun> runs(static_cast<size_t>(tp));
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < tp; ++rank) {
    ranks.emplace_back([&, rank] {
      auto comm = GlooCommunicator::Create(
          {.rank = rank, .world_size = tp, .store = &store, .timeout = absl::Seconds(30)});
      ASSERT_TRUE(comm.ok()) << comm.status();
      runs[static_cast<size_t>(rank)] = Decode(fixture, comm->get());
    });
  }
  for (std::thread& t : ranks) t.join();
  return runs;
}

struct Case {
  std::string fixture;
  int tp;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.fixture << " at TP=" << c.tp; }

class TensorParallelTest : public ::testing::TestWithParam<Case> {};

TEST_P(TensorParallelTest, ShardedGreedyDecodingMatchesOneRank) {
  const DecodeRun reference = Decode(GetParam().fixture, nullptr);
  ASSERT_EQ(reference.logits.size(), static_cast<size_t>(kNewTokens));
  const std::vector<DecodeRun> ranks = DecodeSharded(GetParam().fixture, GetParam().tp);
  const DecodeRun& leader = ranks[0];
  ASSERT_EQ(leader.logits.size(), reference.logits.size());
  EXPECT_EQ(leader.tokens, reference.tokens);
  double max_error = 0;
  for (size_t step = 0; step < reference.logits.size(); ++step) {
    ASSERT_EQ(leader.logits[step].size(), reference.logits[step].size());
    for (size_t i = 0; i < reference.logits[step].size(); ++i) {
      const double want = reference.logits[step][i];
      const double got = leader.logits[step][i];
      max_error = std::max(max_error, std::abs(got - want));
      ASSERT_LE(std::abs(got - want), 1e-4 + 1e-4 * std::abs(want))
          << "step " << step << ", logit " << i;
    }
  }
  RecordProperty("max_abs_error", std::to_string(max_error));
  for (size_t r = 1; r < ranks.size(); ++r) {
    EXPECT_EQ(ranks[r].logits, leader.logits) << "rank " << r << " differs from rank 0";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, TensorParallelTest,
    ::testing::Values(Case{"llama-gqa", 2}, Case{"llama-gqa", 4}, Case{"qwen2-bias", 2},
                      Case{"qwen2-bias", 4}, Case{"llama-tied", 2}, Case{"llama-tied", 4},
                      Case{"qwen3-qknorm", 2}, Case{"mixtral-moe", 2}, Case{"qwen3-moe", 2},
                      Case{"gemma2-softcap", 2}, Case{"phi3-fused", 2}, Case{"phi3-longrope", 2},
                      Case{"gemma3-local-rope", 2}, Case{"gemma3-mm-text", 2},
                      Case{"granite-mup", 2}, Case{"granite-moe", 2}, Case{"qwen2-yarn", 2},
                      Case{"smollm3-nope", 2}, Case{"glm4-sandwich", 2}, Case{"glm-interleaved", 2},
                      Case{"gemma-mqa", 2}, Case{"qwen2-moe", 2}, Case{"olmo2-postnorm", 2},
                      Case{"olmo2-postnorm", 4}, Case{"olmoe", 2}, Case{"olmo3-hybrid", 2},
                      Case{"exaone4-hybrid", 2}, Case{"seed-oss-bias", 2}, Case{"glm4-moe", 2},
                      Case{"dots1-moe", 2}),
    [](const auto& param_info) {
      std::string name = absl::StrCat(param_info.param.fixture, "_tp", param_info.param.tp);
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

// The test's own statement of docs/tensor_parallel.md's table, applied to the whole model:
// what rank `rank` of a group of `tp` must hold. Rows past a tensor are zero.
HostTensor RowsOf(const HostTensor& t, int64_t start, int64_t rows) {
  if (t.empty()) return {};
  const int64_t width = t.shape.size() > 1 ? t.shape[1] : 1;
  HostTensor out{.shape = t.shape, .data = std::vector<float>(static_cast<size_t>(rows * width))};
  out.shape[0] = rows;
  for (int64_t r = start; r < std::min(start + rows, t.shape[0]); ++r) {
    for (int64_t c = 0; c < width; ++c) {
      out.data[static_cast<size_t>((r - start) * width + c)] =
          t.data[static_cast<size_t>(r * width + c)];
    }
  }
  return out;
}

HostTensor ColumnsOf(const HostTensor& t, int64_t start, int64_t cols) {
  HostTensor out{.shape = {t.shape[0], cols},
                 .data = std::vector<float>(static_cast<size_t>(t.shape[0] * cols))};
  for (int64_t r = 0; r < t.shape[0]; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      out.data[static_cast<size_t>(r * cols + c)] =
          t.data[static_cast<size_t>(r * t.shape[1] + start + c)];
    }
  }
  return out;
}

ModelWeights ExpectedShard(const ModelConfig& c, const ModelWeights& full, int64_t tp,
                           int64_t rank) {
  const int64_t hd = c.head_dim;
  const int64_t heads = c.num_attention_heads / tp;
  // KV heads split when tp divides them, else each rank copies the one its query heads use.
  const bool split_kv = c.num_key_value_heads % tp == 0;
  const int64_t kv_heads = split_kv ? c.num_key_value_heads / tp : 1;
  const int64_t kv_head = split_kv ? rank * kv_heads : rank / (tp / c.num_key_value_heads);
  const int64_t inter = c.intermediate_size / tp;
  const int64_t vocab_rows = (c.vocab_size + tp - 1) / tp;
  ModelWeights out;
  out.embed_tokens = RowsOf(full.embed_tokens, rank * vocab_rows, vocab_rows);
  out.lm_head = RowsOf(full.lm_head, rank * vocab_rows, vocab_rows);
  out.norm = full.norm;
  for (const LayerWeights& l : full.layers) {
    LayerWeights& o = out.layers.emplace_back();
    o.input_layernorm = l.input_layernorm;
    o.post_attention_layernorm = l.post_attention_layernorm;
    o.q_proj = RowsOf(l.q_proj, rank * heads * hd, heads * hd);
    o.q_proj_bias = RowsOf(l.q_proj_bias, rank * heads * hd, heads * hd);
    o.k_proj = RowsOf(l.k_proj, kv_head * hd, kv_heads * hd);
    o.k_proj_bias = RowsOf(l.k_proj_bias, kv_head * hd, kv_heads * hd);
    o.v_proj = RowsOf(l.v_proj, kv_head * hd, kv_heads * hd);
    o.v_proj_bias = RowsOf(l.v_proj_bias, kv_head * hd, kv_heads * hd);
    o.o_proj = ColumnsOf(l.o_proj, rank * heads * hd, heads * hd);
    if (rank == 0) o.o_proj_bias = l.o_proj_bias;
    o.gate_proj = RowsOf(l.gate_proj, rank * inter, inter);
    o.gate_proj_bias = RowsOf(l.gate_proj_bias, rank * inter, inter);
    o.up_proj = RowsOf(l.up_proj, rank * inter, inter);
    o.up_proj_bias = RowsOf(l.up_proj_bias, rank * inter, inter);
    o.down_proj = ColumnsOf(l.down_proj, rank * inter, inter);
    if (rank == 0) o.down_proj_bias = l.down_proj_bias;
  }
  return out;
}

TEST(ShardedLoadTest, EveryRankReadsExactlyItsSliceOfEveryTensor) {
  // Sizes with split KV heads, replicated KV heads (llama-gqa at 4), biases on rank 0 only
  // (qwen2-bias has none on o_proj, q/k/v biases everywhere), a tied and an untied LM head.
  for (const char* fixture : {"llama-gqa", "qwen2-bias", "llama-tied"}) {
    const testdata::FixtureModel& m = testdata::LoadFixtureModel(fixture);
    for (const int64_t tp : {1, 2, 4}) {
      for (int64_t rank = 0; rank < tp; ++rank) {
        SCOPED_TRACE(absl::StrCat(fixture, " rank ", rank, " of ", tp));
        testdata::ExpectSameWeights(testdata::LoadFixtureShard(fixture, tp, rank),
                                    ExpectedShard(m.config, m.weights, tp, rank));
      }
    }
  }
}

TEST(ShardedLoadTest, DummyShardsAreSlicesOfTheWholeDummyModel) {
  // Vocabularies that 4 does not divide: the last rank's rows past it are zero. With 5 tokens
  // (rows of 2 per rank) the last rank's whole slice lies past the vocabulary.
  ModelConfig config = testdata::LoadFixtureModel("llama-gqa").config;
  config.qkv_bias = config.o_proj_bias = config.mlp_bias = true;
  for (const int64_t vocab : {5, 254}) {
    config.vocab_size = vocab;
    const absl::StatusOr<ModelWeights> whole = DummyWeights(config, 7);
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (const int64_t tp : {2, 4}) {
      for (int64_t rank = 0; rank < tp; ++rank) {
        SCOPED_TRACE(absl::StrCat("vocabulary ", vocab, ", rank ", rank, " of ", tp));
        const absl::StatusOr<ModelWeights> shard =
            DummyWeights(config, 7, {.tensor_parallel_size = tp, .rank = rank});
        ASSERT_TRUE(shard.ok()) << shard.status();
        testdata::ExpectSameWeights(*shard, ExpectedShard(config, *whole, tp, rank));
      }
    }
  }
  const absl::StatusOr<ModelWeights> last = DummyWeights(config, 7, {4, 3});
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->embed_tokens.shape, (std::vector<int64_t>{64, config.hidden_size}));
  EXPECT_EQ(last->embed_tokens.data.back(), 0.0f);
  EXPECT_NE(last->embed_tokens.data.front(), 0.0f);
}

TEST(ShardedLoadTest, AGroupSizeThatCannotShardNamesTheReasonAndTheSizesThatCan) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  const absl::StatusOr<ModelWeights> shard =
      LoadWeights(m.config, testdata::FixtureDir("llama-gqa").string(), {3, 0});
  ASSERT_EQ(shard.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(shard.status().message());
  EXPECT_NE(message.find("4 attention heads are not divisible by 3"), std::string::npos) << message;
  EXPECT_NE(message.find("sizes that can: 1, 2, 4"), std::string::npos) << message;
  // A model handed weights that are not its rank's shard refuses them.
  CpuBackend backend(1);
  SingleRankCommunicator one;
  const ModelWeights half = testdata::LoadFixtureShard("llama-gqa", 2, 0);
  const auto model = LlamaModel::Create(m.config, half,
                                        {.max_num_batched_tokens = 16,
                                         .max_num_seqs = 1,
                                         .max_model_len = 16,
                                         .num_kv_blocks = 2,
                                         .block_size = 16},
                                        &backend, &one);
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("not rank 0's shard of a group of 1"), std::string::npos)
      << model.status();
}

}  // namespace
}  // namespace headroom::worker
