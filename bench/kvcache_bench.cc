// Hot paths of the KV-cache manager, as the engine loop runs them every step.
//   BM_DecodeAppend256/W: one new token appended to each of 256 running sequences (one decode
//     step); W = 256: with a 256-token sliding window, so every 16th append per sequence also
//     releases the block that left the window (W = 0: no window).
//   BM_PrefixLookup8k: longest cached prefix of an 8192-token prompt whose blocks are all cached.
//   BM_AdmitFree2k: admission of a 2048-token prompt with a half-cached prefix, then its release.
//   BM_AdmitFree2kNewHalf/P: the same, the second half new each time (64 blocks evicted and 64
//     cached); P = 1 also logs those changes and applies them to a PrefixCacheTracker after each
//     step, as a group leader's engine loop does for its LoadReports (P = 0: the cost without).
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "common/check.h"
#include "kvcache/kv_cache_manager.h"
#include "kvcache/prefix_cache_delta.h"

namespace headroom::kvcache {
namespace {

std::unique_ptr<KvCacheManager> MakeManager(int32_t num_blocks, int32_t sliding_window = 0) {
  auto kv = KvCacheManager::Create({.num_blocks = num_blocks,
                                    .block_size = 16,
                                    .enable_prefix_caching = true,
                                    .watermark_blocks = 0,
                                    .sliding_window = sliding_window});
  HR_CHECK(kv.ok());
  return *std::move(kv);
}

std::vector<int32_t> Tokens(int32_t n, int32_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = (i * 7919 + seed * 104729) % 128256;
  return t;
}

void BM_DecodeAppend256(benchmark::State& state) {
  constexpr int32_t kSeqs = 256;
  constexpr int32_t kPrompt = 512;
  constexpr int32_t kSteps = 1024;  // decode steps before the sequences are recycled
  auto kv = MakeManager(kSeqs * (kPrompt + kSteps) / 16 + kSeqs + 1,
                        static_cast<int32_t>(state.range(0)));
  auto admit_all = [&] {
    for (int32_t s = 0; s < kSeqs; ++s) {
      const std::vector<int32_t> prompt = Tokens(kPrompt, s);
      HR_CHECK(kv->AddSequence(SequenceId{s}, kv->FindCachedPrefix(prompt), prompt).ok());
    }
  };
  admit_all();
  int32_t step = 0;
  int32_t token = 0;
  for (auto _ : state) {
    for (int32_t s = 0; s < kSeqs; ++s) {
      const int32_t sampled = ++token;
      HR_CHECK(kv->Append(SequenceId{s}, {&sampled, 1}).ok());
    }
    if (++step == kSteps) {
      state.PauseTiming();
      for (int32_t s = 0; s < kSeqs; ++s) kv->Free(SequenceId{s});
      admit_all();
      step = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * kSeqs);
}
BENCHMARK(BM_DecodeAppend256)->Arg(0)->Arg(256)->Unit(benchmark::kMicrosecond);

void BM_PrefixLookup8k(benchmark::State& state) {
  auto kv = MakeManager(1024);
  const std::vector<int32_t> prompt = Tokens(8192, 1);
  HR_CHECK(kv->AddSequence(SequenceId{1}, kv->FindCachedPrefix(prompt), prompt).ok());
  for (auto _ : state) {
    const PrefixHit hit = kv->FindCachedPrefix(prompt);
    benchmark::DoNotOptimize(hit.num_cached_tokens);
  }
  HR_CHECK(kv->FindCachedPrefix(prompt).num_cached_tokens == 8176);
}
BENCHMARK(BM_PrefixLookup8k)->Unit(benchmark::kMicrosecond);

void BM_AdmitFree2k(benchmark::State& state) {
  auto kv = MakeManager(1024);
  std::vector<int32_t> prompt = Tokens(2048, 2);
  HR_CHECK(kv->AddSequence(SequenceId{1}, kv->FindCachedPrefix(prompt), prompt).ok());
  kv->Free(SequenceId{1});
  std::fill(prompt.begin() + 1024, prompt.end(), 3);  // second half differs: 1024 cached tokens
  int64_t id = 2;
  for (auto _ : state) {
    const PrefixHit hit = kv->FindCachedPrefix(prompt);
    HR_CHECK(kv->AddSequence(SequenceId{id}, hit, prompt).ok());
    kv->Free(SequenceId{id++});
  }
}
BENCHMARK(BM_AdmitFree2k)->Unit(benchmark::kMicrosecond);

void BM_AdmitFree2kNewHalf(benchmark::State& state) {
  const bool published = state.range(0) == 1;
  auto kv = MakeManager(1024);
  if (published) kv->RecordCacheEvents(2 * 1024);
  PrefixCacheTracker tracker(4 * 1024);
  std::vector<CacheEvent> events;
  std::vector<int32_t> prompt = Tokens(2048, 2);
  HR_CHECK(kv->AddSequence(SequenceId{1}, kv->FindCachedPrefix(prompt), prompt).ok());
  kv->Free(SequenceId{1});
  int64_t id = 2;
  for (auto _ : state) {
    std::fill(prompt.begin() + 1024, prompt.end(), static_cast<int32_t>(id % 1000));
    const PrefixHit hit = kv->FindCachedPrefix(prompt);
    HR_CHECK(kv->AddSequence(SequenceId{id}, hit, prompt).ok());
    kv->Free(SequenceId{id++});
    if (!published) continue;
    events.clear();
    HR_CHECK(kv->TakeCacheEvents(&events));
    tracker.Apply(events);
    if (id % 4 == 0) benchmark::DoNotOptimize(tracker.TakeDelta());  // a report every 4 steps
  }
}
BENCHMARK(BM_AdmitFree2kNewHalf)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace headroom::kvcache
