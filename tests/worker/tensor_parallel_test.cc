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

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fixture_model.h"
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
ForwardInput NextStep(const std::vector<Sequence>& seqs, int32_t max_blocks_per_seq) {
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

// Greedy decoding on rank `rank` of a group (comm null: one rank, the whole model).
DecodeRun Decode(const testdata::FixtureModel& m, Communicator* comm) {
  const int64_t tp = comm == nullptr ? 1 : comm->world_size();
  const int64_t rank = comm == nullptr ? 0 : comm->rank();
  DecodeRun run;
  absl::StatusOr<ModelWeights> shard = ShardWeights(m.config, m.weights, tp, rank);
  EXPECT_TRUE(shard.ok()) << shard.status();
  if (!shard.ok()) return run;
  CpuBackend backend(1);
  auto model = LlamaModel::Create(m.config, *shard,
                                  {.max_num_batched_tokens = 256,
                                   .max_num_seqs = 4,
                                   .max_model_len = kMaxModelLen,
                                   .num_kv_blocks = 32,
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
    const ForwardInput in = NextStep(seqs, (*model)->max_blocks_per_seq());
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
std::vector<DecodeRun> DecodeSharded(const testdata::FixtureModel& m, int tp) {
  InMemoryRendezvousStore store;
  std::vector<DecodeRun> runs(static_cast<size_t>(tp));
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < tp; ++rank) {
    ranks.emplace_back([&, rank] {
      auto comm = GlooCommunicator::Create(
          {.rank = rank, .world_size = tp, .store = &store, .timeout = absl::Seconds(30)});
      ASSERT_TRUE(comm.ok()) << comm.status();
      runs[static_cast<size_t>(rank)] = Decode(m, comm->get());
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
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(GetParam().fixture);
  const DecodeRun reference = Decode(m, nullptr);
  ASSERT_EQ(reference.logits.size(), static_cast<size_t>(kNewTokens));
  const std::vector<DecodeRun> ranks = DecodeSharded(m, GetParam().tp);
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

INSTANTIATE_TEST_SUITE_P(Fixtures, TensorParallelTest,
                         ::testing::Values(Case{"llama-gqa", 2}, Case{"llama-gqa", 4},
                                           Case{"qwen2-bias", 2}, Case{"qwen2-bias", 4},
                                           Case{"llama-tied", 2}, Case{"llama-tied", 4}),
                         [](const auto& param_info) {
                           std::string name =
                               absl::StrCat(param_info.param.fixture, "_tp", param_info.param.tp);
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(ShardWeightsTest, ShardsSliceTheHeadsAndTheMlpAndPadTheVocabulary) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  // TP=4 of 4 query / 2 KV heads: rank 3 holds query head 3 and replicates KV head 1.
  absl::StatusOr<ModelWeights> shard = ShardWeights(m.config, m.weights, 4, 3);
  ASSERT_TRUE(shard.ok()) << shard.status();
  const int64_t hd = m.config.head_dim;
  const int64_t hidden = m.config.hidden_size;
  const LayerWeights& full = m.weights.layers[0];
  const LayerWeights& mine = shard->layers[0];
  ASSERT_EQ(mine.q_proj.shape, (std::vector<int64_t>{hd, hidden}));
  EXPECT_EQ(mine.q_proj.data, std::vector<float>(full.q_proj.data.begin() + 3 * hd * hidden,
                                                 full.q_proj.data.begin() + 4 * hd * hidden));
  ASSERT_EQ(mine.k_proj.shape, (std::vector<int64_t>{hd, hidden}));
  EXPECT_EQ(mine.k_proj.data,
            std::vector<float>(full.k_proj.data.begin() + hd * hidden, full.k_proj.data.end()));
  // o_proj: the columns of query head 3.
  ASSERT_EQ(mine.o_proj.shape, (std::vector<int64_t>{hidden, hd}));
  EXPECT_EQ(mine.o_proj.data[0], full.o_proj.data[static_cast<size_t>(3 * hd)]);
  EXPECT_EQ(mine.o_proj.data[static_cast<size_t>(hd)],
            full.o_proj.data[static_cast<size_t>(m.config.num_attention_heads * hd + 3 * hd)]);
  // down_proj: the last quarter of the MLP columns.
  const int64_t inter = m.config.intermediate_size / 4;
  ASSERT_EQ(mine.down_proj.shape, (std::vector<int64_t>{hidden, inter}));
  EXPECT_EQ(mine.down_proj.data[0], full.down_proj.data[static_cast<size_t>(3 * inter)]);
  EXPECT_EQ(shard->embed_tokens.shape, (std::vector<int64_t>{m.config.vocab_size / 4, hidden}));
}

TEST(ShardWeightsTest, AGroupSizeThatCannotShardNamesTheReasonAndTheSizesThatCan) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  const absl::StatusOr<ModelWeights> shard = ShardWeights(m.config, m.weights, 3, 0);
  ASSERT_EQ(shard.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(shard.status().message());
  EXPECT_NE(message.find("4 attention heads are not divisible by 3"), std::string::npos) << message;
  EXPECT_NE(message.find("sizes that can: 1, 2, 4"), std::string::npos) << message;
  // A model handed weights that are not its rank's shard refuses them.
  CpuBackend backend(1);
  SingleRankCommunicator one;
  absl::StatusOr<ModelWeights> half = ShardWeights(m.config, m.weights, 2, 0);
  ASSERT_TRUE(half.ok());
  const auto model = LlamaModel::Create(m.config, *half,
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
