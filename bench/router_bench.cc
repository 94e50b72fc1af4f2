// Hot paths of the router's placement, as the dispatch thread runs them.
//   BM_Placement/G: one LeastLoadedByBlocks decision over G up groups (group names are pod-IP
//     addresses, "10.244.x.y:50061", as in a Kubernetes deployment).
//   BM_PlacementShortNames/G: the same with names of at most 15 characters ("10.0.x.y:5006"), which
//     fit std::string's inline buffer: the difference is the cost of copying the names.
//   BM_PrefixAffinePlacement/G: what prefix affinity adds to one decision over G groups whose
//     indexes each hold 4096 blocks: hashing a 2048-token prompt (128 blocks), matching it against
//     every group (one holds the whole prefix, the others miss at once), the decision, and
//     recording the prompt on the chosen group (LRU refresh).
//   BM_AdmissionOfferPlace: one Offer + Place cycle of an AdmissionQueue holding 1k requests over
//     8 groups, where the groups have room for exactly one request per cycle (a finished request
//     freed blocks on one group; the head goes there and the next head must wait).
//   BM_DispatcherRoundTrip/G: the Dispatcher's whole path in-process, one request at a time:
//     Submit -> dispatch thread wakes, runs a pass -> OnPlaced on the listener -> Finished. The
//     p50/p99 counters are Submit -> OnPlaced (as seen on the dispatch thread), in microseconds.
//   BM_DispatcherBurst/B: B requests submitted back to back, then all waited for (8 groups): the
//     dispatch thread places several per pass, as under load.
// items_per_second reads as placement decisions per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/check.h"
#include "common/percentile.h"
#include "headroom/v1/worker.pb.h"
#include "router/admission/admission_queue.h"
#include "router/placement/placement.h"
#include "router/placement/prefix_index.h"
#include "router/service/dispatcher.h"

namespace headroom::router {
namespace {

using Clock = std::chrono::steady_clock;

// A Kubernetes-style pod address (16..19 characters).
std::string PodAddress(int64_t g) {
  return absl::StrCat("10.244.", g / 250, ".", g % 250 + 2, ":50061");
}

// An address of at most 15 characters (std::string keeps it inline).
std::string ShortAddress(int64_t g) {
  return absl::StrCat("10.0.", g / 250, ".", g % 250, ":5006");
}

// `n` up groups of 4096 blocks of 16 tokens; free blocks and load vary so the policy compares.
std::vector<GroupLoad> Groups(int64_t n, std::string (*name)(int64_t)) {
  std::vector<GroupLoad> groups(static_cast<size_t>(n));
  for (int64_t g = 0; g < n; ++g) {
    GroupLoad& load = groups[static_cast<size_t>(g)];
    load.group = name(g);
    load.up = true;
    load.total_blocks = 4096;
    load.free_blocks = static_cast<int32_t>(1024 + (g * 7919) % 2048);
    load.block_size = 16;
    load.running = static_cast<int32_t>(g % 32);
    load.waiting = static_cast<int32_t>(g % 3);
    load.waiting_demand_blocks = g % 3 * 40;
    load.max_model_len = 8192;
  }
  return groups;
}

// Prompt + max_tokens of the requests, cycled (128..4096 tokens).
constexpr int64_t kRequestTokens[] = {128, 640, 1536, 300, 4096, 900, 2048, 260};

void RunPlacement(benchmark::State& state, std::string (*name)(int64_t)) {
  const std::vector<GroupLoad> groups = Groups(state.range(0), name);
  const LeastLoadedByBlocks policy;
  size_t i = 0;
  for (auto _ : state) {
    const PlacementDecision d =
        policy(groups, {.max_total_tokens = kRequestTokens[i++ % 8], .cached_blocks = {}});
    benchmark::DoNotOptimize(d.group);
  }
  HR_CHECK(policy(groups, {.max_total_tokens = 512, .cached_blocks = {}}).outcome ==
           PlacementOutcome::kPlaced);
  state.SetItemsProcessed(state.iterations());
}

void BM_Placement(benchmark::State& state) { RunPlacement(state, PodAddress); }
BENCHMARK(BM_Placement)->Arg(2)->Arg(8)->Arg(64)->Arg(512);

void BM_PlacementShortNames(benchmark::State& state) { RunPlacement(state, ShortAddress); }
BENCHMARK(BM_PlacementShortNames)->Arg(2)->Arg(8)->Arg(64)->Arg(512);

// One decision for a 2048-token prompt over n groups: hash it, match it on every group (whose
// model attends `window` positions, 0 = all), place it and record it.
void RunPrefixAffinePlacement(benchmark::State& state, int32_t window) {
  const int64_t n = state.range(0);
  const std::vector<GroupLoad> groups = Groups(n, PodAddress);
  std::vector<int32_t> prompt(2048);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i * 7 % 32000);
  // Every group's index full (4096 blocks of other prompts); group n/2 also holds this prompt.
  PrefixIndex index;
  for (int64_t g = 0; g < n; ++g) {
    for (int32_t other = 0; other < 32; ++other) {
      std::vector<int32_t> tokens(2048, static_cast<int32_t>(g * 100 + other + 1));
      index.Record(static_cast<size_t>(g), kvcache::PromptBlockHashes(tokens, 16, ""), 4096);
    }
  }
  const size_t home = static_cast<size_t>(n / 2);
  index.Record(home, kvcache::PromptBlockHashes(prompt, 16, ""), 4096);
  const LeastLoadedByBlocks policy;
  std::vector<int64_t> cached(groups.size());
  for (auto _ : state) {
    const std::vector<kvcache::BlockHash> hashes = kvcache::PromptBlockHashes(prompt, 16, "");
    for (size_t g = 0; g < groups.size(); ++g) cached[g] = index.Match(g, hashes, 16, window);
    const PlacementDecision d =
        policy(groups, {.max_total_tokens = 2048 + 256, .cached_blocks = cached});
    index.Record(d.group, hashes, 4096);
    benchmark::DoNotOptimize(d.group);
  }
  HR_CHECK(cached[home] == 128);
  state.SetItemsProcessed(state.iterations());
}

void BM_PrefixAffinePlacement(benchmark::State& state) { RunPrefixAffinePlacement(state, 0); }
BENCHMARK(BM_PrefixAffinePlacement)->Arg(2)->Arg(8)->Arg(64);

// The same with a 4096-token window (Mistral-7B-v0.1): a group that misses the first block still
// looks up every block, since its window could hold the prompt's last ones.
void BM_PrefixAffinePlacementWindowed(benchmark::State& state) {
  RunPrefixAffinePlacement(state, 4096);
}
BENCHMARK(BM_PrefixAffinePlacementWindowed)->Arg(2)->Arg(8)->Arg(64);

void BM_AdmissionOfferPlace(benchmark::State& state) {
  constexpr int64_t kQueued = 1000;
  constexpr int64_t kGroups = 8;
  constexpr int64_t kTokens = 512;  // 32 blocks
  AdmissionQueue queue({.high_watermark = 2048, .low_watermark = 1536});
  std::vector<GroupLoad> groups = Groups(kGroups, PodAddress);
  for (GroupLoad& g : groups) g.waiting_demand_blocks = 0;
  const LeastLoadedByBlocks policy;
  int64_t id = 0;
  for (; id < kQueued; ++id) {
    HR_CHECK(queue.Offer(id, kTokens, absl::InfiniteFuture()).accepted);
  }
  int64_t placed = 0;
  for (auto _ : state) {
    // Blocks freed on one group (round robin): room for exactly one request there, none elsewhere.
    const size_t freed = static_cast<size_t>(id % kGroups);
    for (size_t g = 0; g < groups.size(); ++g) {
      groups[g].reserved_blocks = groups[g].free_blocks - (g == freed ? 40 : 20);
    }
    HR_CHECK(queue.Offer(id++, kTokens, absl::InfiniteFuture()).accepted);
    const std::vector<PlacedRequest> out = queue.Place(absl::MakeSpan(groups), policy, absl::Now());
    placed += static_cast<int64_t>(out.size());
  }
  HR_CHECK(placed == state.iterations());
  HR_CHECK(queue.size() == kQueued);
  state.SetItemsProcessed(placed);
}
BENCHMARK(BM_AdmissionOfferPlace);

// The pass held groups make longer: 1,000 queued requests of 6,000 tokens that only group 0 (the
// one group serving 8,192 tokens, full) can take wait there, and each cycle offers one short
// request that the other 7 groups (max_model_len 4,096) place. Every pass decides each waiting
// request again (none holds the other groups), so this is the cost per queued request of a
// cluster whose groups differ.
void BM_AdmissionPlaceBehindHeldGroup(benchmark::State& state) {
  constexpr int64_t kQueued = 1000;
  constexpr int64_t kGroups = 8;
  AdmissionQueue queue({.high_watermark = 2048, .low_watermark = 1536});
  std::vector<GroupLoad> groups = Groups(kGroups, PodAddress);
  for (GroupLoad& g : groups) {
    g.waiting_demand_blocks = 0;
    g.max_model_len = 4096;
  }
  groups[0].max_model_len = 8192;
  groups[0].reserved_blocks = groups[0].free_blocks;  // full
  const LeastLoadedByBlocks policy;
  int64_t id = 0;
  for (; id < kQueued; ++id) HR_CHECK(queue.Offer(id, 6000, absl::InfiniteFuture()).accepted);
  int64_t placed = 0;
  for (auto _ : state) {
    for (size_t g = 1; g < groups.size(); ++g) groups[g].reserved_blocks = 0;
    HR_CHECK(queue.Offer(id++, 512, absl::InfiniteFuture()).accepted);
    const std::vector<PlacedRequest> out = queue.Place(absl::MakeSpan(groups), policy, absl::Now());
    placed += static_cast<int64_t>(out.size());
  }
  HR_CHECK(placed == state.iterations());
  HR_CHECK(queue.size() == kQueued);
  state.SetItemsProcessed(placed);
}
BENCHMARK(BM_AdmissionPlaceBehindHeldGroup);

// Counts placements; the benchmark thread waits on `placed` (C++20 atomic wait, a futex).
class CountingListener : public PlacementListener {
 public:
  void OnPlaced(size_t /*group*/) override {
    placed_at_ = Clock::now();
    placed_.fetch_add(1, std::memory_order_release);
    placed_.notify_one();
  }
  void OnRejected(const absl::Status& status) override {
    HR_CHECK_MSG(status.ok(), std::string(status.message()).c_str());  // never rejected here
  }

  // Blocks until at least `n` placements happened.
  void WaitFor(int64_t n) {
    for (int64_t seen = placed_.load(std::memory_order_acquire); seen < n;
         seen = placed_.load(std::memory_order_acquire)) {
      placed_.wait(seen, std::memory_order_acquire);
    }
  }
  [[nodiscard]] Clock::time_point placed_at() const { return placed_at_; }

 private:
  std::atomic<int64_t> placed_{0};
  Clock::time_point placed_at_;  // written before the release increment
};

v1::LoadReport Report() {
  v1::LoadReport report;
  report.set_sequence(1);
  report.set_total_blocks(4096);
  report.set_free_blocks(4096);
  report.set_block_size(16);
  report.set_max_model_len(8192);
  report.set_model("dummy:tiny");
  return report;
}

// A started Dispatcher over `n` groups that have all reported (and never go stale here).
std::unique_ptr<Dispatcher> StartedDispatcher(int64_t n) {
  DispatcherOptions options;
  for (int64_t g = 0; g < n; ++g) options.groups.push_back(PodAddress(g));
  options.stale_after = absl::Hours(24);
  auto dispatcher = std::make_unique<Dispatcher>(std::move(options));
  dispatcher->Start();
  for (size_t g = 0; g < static_cast<size_t>(n); ++g) dispatcher->OnReport(g, Report());
  HR_CHECK(dispatcher->any_up());
  return dispatcher;
}

void BM_DispatcherRoundTrip(benchmark::State& state) {
  std::unique_ptr<Dispatcher> dispatcher = StartedDispatcher(state.range(0));
  auto listener = std::make_shared<CountingListener>();
  std::vector<double> latency_us;
  latency_us.reserve(1 << 20);
  int64_t id = 0;
  for (auto _ : state) {
    const Clock::time_point submitted = Clock::now();
    HR_CHECK(dispatcher->Submit(++id, 512, absl::InfiniteFuture(), listener).status.ok());
    listener->WaitFor(id);
    latency_us.push_back(
        std::chrono::duration<double, std::micro>(listener->placed_at() - submitted).count());
    dispatcher->Finished(id);
  }
  dispatcher->Stop();
  state.SetItemsProcessed(id);
  state.counters["p50_us"] = Percentile(latency_us, 50);
  state.counters["p99_us"] = Percentile(latency_us, 99);
}
BENCHMARK(BM_DispatcherRoundTrip)->Arg(2)->Arg(8)->Arg(64)->UseRealTime();

void BM_DispatcherBurst(benchmark::State& state) {
  const int64_t burst = state.range(0);
  std::unique_ptr<Dispatcher> dispatcher = StartedDispatcher(8);
  auto listener = std::make_shared<CountingListener>();
  int64_t id = 0;
  for (auto _ : state) {
    const int64_t first = id + 1;
    for (int64_t i = 0; i < burst; ++i) {
      HR_CHECK(dispatcher->Submit(++id, 512, absl::InfiniteFuture(), listener).status.ok());
    }
    listener->WaitFor(id);
    for (int64_t r = first; r <= id; ++r) dispatcher->Finished(r);
  }
  dispatcher->Stop();
  state.SetItemsProcessed(id);
}
BENCHMARK(BM_DispatcherBurst)->Arg(16)->Arg(256)->UseRealTime();

}  // namespace
}  // namespace headroom::router
