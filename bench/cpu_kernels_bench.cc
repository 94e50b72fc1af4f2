// CPU kernel benchmarks: paged attention decode at a Llama-3-8B-like shape, the Linear layer
// (OpenBLAS) at decode (m = 1), small-batch (m = 2 to 16) and prefill-chunk (m = 256) sizes, and
// the mixture-of-experts MLP. Results go to docs/performance.md.
//   paged attention: bytes/s counts the K and V rows read (the kernel is bound by them);
//   Linear: GFLOP/s counts 2*m*n*k; bytes/s counts the weight read once.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/logprobs.h"
#include "kernels/cpu/lora.h"
#include "kernels/cpu/moe.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/sampling.h"
#include "kernels/cpu/threads.h"
#include "kernels/moe_view.h"
#include "kernels/paged_kv.h"

namespace headroom::kernels::cpu {
namespace {

std::vector<float> Random(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = dist(rng);
  return values;
}

// Decode step: batch 32, context 1024, 32 query heads / 8 kv heads, head_dim 128, block size 16.
// Arg 0: threads; arg 1: sliding window (0: none); arg 2: score softcap (0: none).
void BM_PagedAttentionDecode(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto window = static_cast<int32_t>(state.range(1));
  const auto softcap = static_cast<float>(state.range(2));
  constexpr int32_t kBatch = 32;
  constexpr int32_t kContext = 1024;
  constexpr int32_t kHeads = 32;
  constexpr int32_t kKvHeads = 8;
  constexpr int32_t kHeadDim = 128;
  constexpr int32_t kBlockSize = 16;
  constexpr int32_t kBlocksPerSeq = kContext / kBlockSize;
  constexpr int32_t kNumBlocks = kBatch * kBlocksPerSeq;
  const int64_t pool = int64_t{kNumBlocks} * kBlockSize * kKvHeads * kHeadDim;
  std::vector<float> k_cache = Random(pool, 1);
  std::vector<float> v_cache = Random(pool, 2);
  const std::vector<float> q = Random(int64_t{kBatch} * kHeads * kHeadDim, 3);
  std::vector<float> out(q.size());
  // Shuffled blocks, as a real pool hands them out.
  std::vector<int32_t> block_tables(static_cast<size_t>(kNumBlocks));
  std::iota(block_tables.begin(), block_tables.end(), 0);
  std::shuffle(block_tables.begin(), block_tables.end(), std::mt19937_64(4));
  std::vector<int32_t> query_start(kBatch + 1);
  std::iota(query_start.begin(), query_start.end(), 0);
  const std::vector<int32_t> context_lens(kBatch, kContext);
  const PagedKvView view{k_cache.data(), v_cache.data(), kNumBlocks,
                         kBlockSize,     kKvHeads,       kHeadDim};
  const AttentionMetadata meta{query_start.data(), context_lens.data(), block_tables.data(), kBatch,
                               kBlocksPerSeq};
  const int before = NumThreads();
  SetNumThreads(threads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  for (auto _ : state) {
    const absl::Status status = PagedAttention(
        q.data(), kBatch, kHeads, view, meta,
        AttentionParams{.scale = scale, .softcap = softcap, .sliding_window = window}, out.data());
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetNumThreads(before);
  // The K/V rows read: the window's, or the whole context's.
  const int64_t read_tokens = window > 0 ? std::min(window, kContext) : kContext;
  const int64_t kv_bytes =
      2 * int64_t{kBatch} * read_tokens * kKvHeads * kHeadDim * static_cast<int64_t>(sizeof(float));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kv_bytes);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(kBatch) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PagedAttentionDecode)
    ->Args({1, 0, 0})
    ->Args({2, 0, 0})
    ->Args({2, 256, 0})  // Mistral-style window, a quarter of the context
    ->Args({2, 0, 50})   // Gemma 2's score softcap
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// out [m, 4096] = x [m, 4096] @ w^T, w [4096, 4096]. Arg 0: m, arg 1: threads.
void BM_Linear(benchmark::State& state) {
  const int64_t m = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  constexpr int64_t kN = 4096;
  constexpr int64_t kK = 4096;
  const std::vector<float> x = Random(m * kK, 5);
  const std::vector<float> w = Random(kN * kK, 6);
  std::vector<float> out(static_cast<size_t>(m * kN));
  const int before = NumThreads();
  SetNumThreads(threads);
  for (auto _ : state) {
    const absl::Status status = Linear(x.data(), w.data(), nullptr, m, kN, kK, out.data());
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetNumThreads(before);
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kN * kK *
                          static_cast<int64_t>(sizeof(float)));
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(m * kN * kK) * iterations * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Linear)
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({2, 2})
    ->Args({4, 2})
    ->Args({8, 1})
    ->Args({8, 2})
    ->Args({16, 2})
    ->Args({256, 1})
    ->Args({256, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A mixture-of-experts MLP at one tensor-parallel rank's share of Mixtral-8x7B (hidden 4096, 8
// experts of 14336 / 8 = 1792, top 2). Arg 0: tokens. GFLOP/s counts the routed experts' GEMMs,
// 2 * tokens * top_k * 3 * hidden * inter; at 1 token the time is the two experts' weights read.
void BM_MoeMlp(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  constexpr int64_t kHidden = 4096;
  constexpr int64_t kExperts = 8;
  constexpr int64_t kInter = 1792;
  constexpr int64_t kTopK = 2;
  const std::vector<float> x = Random(tokens * kHidden, 7);
  const std::vector<float> router = Random(kExperts * kHidden, 8);
  const std::vector<float> gate_up = Random(kExperts * 2 * kInter * kHidden, 9);
  const std::vector<float> down = Random(kExperts * kHidden * kInter, 10);
  const MoeExpertsView experts{router.data(), gate_up.data(), down.data(), kExperts,
                               kTopK,         kInter,         true};
  std::vector<float> out(static_cast<size_t>(tokens * kHidden));
  for (auto _ : state) {
    const absl::Status status = MoeMlp(x.data(), experts, tokens, kHidden, out.data());
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(tokens * kTopK * 3 * kHidden * kInter) *
                             static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MoeMlp)->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

// LoRA's update of a 4096 x 4096 projection: out [m, 4096] += (x A^T) B^T for rank 16, four
// adapter slots, the m rows cut into `segments` runs of one adapter each (1: every row one
// adapter; m: each sequence of a decode step its own). Arg 0: m, arg 1: segments. Compare with
// BM_Linear at the same m and 2 threads: the update's share of a projection.
void BM_LoraAdd(benchmark::State& state) {
  const int64_t m = state.range(0);
  const int64_t segments = state.range(1);
  constexpr int64_t kDim = 4096;
  constexpr int64_t kRank = 16;
  constexpr int64_t kSlots = 4;
  const std::vector<float> x = Random(m * kDim, 11);
  const std::vector<float> a = Random(kSlots * kRank * kDim, 12);
  const std::vector<float> b = Random(kSlots * kDim * kRank, 13);
  std::vector<float> scratch(static_cast<size_t>(m * kRank));
  std::vector<float> out(static_cast<size_t>(m * kDim));
  std::vector<int32_t> starts;
  std::vector<int32_t> slots;
  for (int64_t s = 0; s <= segments; ++s) starts.push_back(static_cast<int32_t>(s * m / segments));
  for (int64_t s = 0; s < segments; ++s) slots.push_back(static_cast<int32_t>(s % kSlots));
  const kernels::LoraWeightsView lora{a.data(), b.data(), kSlots, kRank, kDim, kDim};
  const kernels::LoraSegmentsView view{starts.data(), slots.data(), static_cast<int32_t>(segments)};
  const int before = NumThreads();
  SetNumThreads(2);
  for (auto _ : state) {
    const absl::Status status = LoraAdd(x.data(), lora, view, m, kDim, scratch.data(), out.data());
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetNumThreads(before);
}
BENCHMARK(BM_LoraAdd)
    ->Args({1, 1})
    ->Args({16, 1})
    ->Args({16, 16})
    ->Args({256, 1})
    ->Args({256, 64})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Prompt logprobs' per-row work after the LM head: TokenLogprobs over 32 rows of a 32000-entry
// vocabulary (dummy:small's), with the top 1. Arg 0: vocabulary size.
void BM_TokenLogprobs(benchmark::State& state) {
  const int64_t vocab = state.range(0);
  constexpr int64_t kRows = 32;
  const std::vector<float> logits = Random(kRows * vocab, 9);
  std::vector<int32_t> targets(kRows);
  for (int64_t r = 0; r < kRows; ++r) targets[static_cast<size_t>(r)] = static_cast<int32_t>(r * 7);
  std::vector<float> token(kRows);
  std::vector<int32_t> ids(kRows * kMaxLogprobs);
  std::vector<float> top(kRows * kMaxLogprobs);
  std::vector<int32_t> ranks(kRows);
  for (auto _ : state) {
    const absl::Status status = TokenLogprobs(logits.data(), kRows, vocab, targets.data(),
                                              static_cast<int32_t>(state.range(1)),
                                              {.token_logprobs = token.data(),
                                               .top_ids = ids.data(),
                                               .top_logprobs = top.data(),
                                               .target_ranks = ranks.data()});
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(token.data());
  }
  state.counters["us/row"] =
      benchmark::Counter(static_cast<double>(kRows) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_TokenLogprobs)
    ->Args({32000, 1})
    ->Args({128256, 0})
    ->Args({128256, 1})
    ->Args({128256, 20})
    ->Unit(benchmark::kMillisecond);

// One row sampled (temperature 1) from a Llama-3-sized vocabulary (128256) under a constraint's
// tokens: Arg 0 tokens allowed (0: no constraint), given as ids (Arg 1 = 0) or as a bitmask (1), as
// the engine's caches keep a large state's. A JSON string's text allows ~98% of a real
// vocabulary, a value's start ~15%, a number ~13% (docs/performance.md).
void BM_SampleAllowed(benchmark::State& state) {
  constexpr int64_t kVocab = 128256;
  const std::vector<float> logits = Random(kVocab, 13);
  std::vector<int32_t> allowed(static_cast<size_t>(state.range(0)));
  std::iota(allowed.begin(), allowed.end(), 0);
  std::vector<uint32_t> bitmask(kVocab / 32, 0);
  for (const int32_t t : allowed) bitmask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
  SamplingParams params{.temperature = 1.0f, .seed = 5};
  if (state.range(1) == 0) {
    params.allowed_tokens = allowed.data();
    params.num_allowed_tokens = static_cast<int64_t>(allowed.size());
  } else {
    params.allowed_bitmask = bitmask.data();
    params.allowed_bitmask_words = static_cast<int64_t>(bitmask.size());
  }
  int32_t token = 0;
  float logprob = 0.0f;
  for (auto _ : state) {
    const absl::Status status = Sample(logits.data(), 1, kVocab, &params,
                                       {.token_ids = &token,
                                        .token_logprobs = &logprob,
                                        .top_ids = nullptr,
                                        .top_logprobs = nullptr});
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(token);
  }
}
BENCHMARK(BM_SampleAllowed)
    ->Args({0, 0})
    ->Args({17000, 0})
    ->Args({17000, 1})
    ->Args({125000, 0})
    ->Args({125000, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace headroom::kernels::cpu
