// The tensor-parallel collectives on CPU: two Gloo ranks (threads of this process, loopback TCP,
// as the ranks of a local group are processes on loopback) and what one engine step sends.
//
//   BM_AllReduce/<floats>        one all-reduce of [tokens, hidden] activations, both ranks
//   BM_AllGather/<floats>        the LM head's logits slices
//   BM_BroadcastPlan/<bytes>     the leader's step plan (BroadcastBytes: length, then bytes)
//
// Rank 1 mirrors every call of rank 0 on its own thread; the timing is rank 0's.
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"

namespace headroom::worker {
namespace {

enum class Op { kAllReduce, kAllGather, kBroadcastBytes };

// Runs `op` of `size` elements on two ranks for every iteration of `state`.
void RunPair(benchmark::State& state, Op op) {
  const size_t size = static_cast<size_t>(state.range(0));
  InMemoryRendezvousStore store;
  std::atomic<int64_t> iterations{-1};  // set by rank 0 once it knows how many it ran
  std::atomic<bool> failed{false};
  auto work = [&](Communicator& comm, std::vector<float>& data, std::vector<float>& out,
                  std::string& bytes) {
    absl::Status status;
    switch (op) {
      case Op::kAllReduce:
        status = comm.AllReduceSum(data.data(), size);
        break;
      case Op::kAllGather:
        status = comm.AllGather(data.data(), size, out.data());
        break;
      case Op::kBroadcastBytes:
        if (comm.rank() == 0) bytes.assign(size, 'p');
        status = comm.BroadcastBytes(&bytes, 0);
        break;
    }
    if (!status.ok()) failed = true;
  };
  std::thread peer([&] {
    auto comm = GlooCommunicator::Create(
        {.rank = 1, .world_size = 2, .store = &store, .timeout = absl::Seconds(60)});
    if (!comm.ok()) {
      failed = true;
      return;
    }
    std::vector<float> data(size, 1.0f), out(2 * size);
    std::string bytes;
    // Mirror rank 0 until it says how many iterations it ran (one extra call ends the loop).
    for (int64_t i = 0; iterations < 0 || i < iterations; ++i) {
      work(**comm, data, out, bytes);
      if (failed) return;
    }
  });
  auto comm = GlooCommunicator::Create(
      {.rank = 0, .world_size = 2, .store = &store, .timeout = absl::Seconds(60)});
  if (!comm.ok()) {
    state.SkipWithError("rendezvous failed");
    peer.join();
    return;
  }
  std::vector<float> data(size, 1.0f), out(2 * size);
  std::string bytes;
  int64_t ran = 0;
  for (auto _ : state) {
    work(**comm, data, out, bytes);
    ++ran;
  }
  iterations = ran + 1;
  work(**comm, data, out, bytes);  // releases the peer's last call
  peer.join();
  if (failed) state.SkipWithError("a collective failed");
  const size_t element = op == Op::kBroadcastBytes ? 1 : sizeof(float);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size * element));
}

void BM_AllReduce(benchmark::State& state) { RunPair(state, Op::kAllReduce); }
void BM_AllGather(benchmark::State& state) { RunPair(state, Op::kAllGather); }
void BM_BroadcastPlan(benchmark::State& state) { RunPair(state, Op::kBroadcastBytes); }

// [tokens, hidden] for hidden 768 (dummy:small) at 1, 32 and 256 tokens, and 4096 (Llama-3-8B)
// at 32 tokens; logits slices of 32 rows of half of a 32000 vocabulary; plans of 32 decodes
// (~1.5 KB) and of a 2048-token prefill chunk (~8 KB).
BENCHMARK(BM_AllReduce)->Arg(768)->Arg(32 * 768)->Arg(256 * 768)->Arg(32 * 4096)->UseRealTime();
BENCHMARK(BM_AllGather)->Arg(32 * 16000)->UseRealTime();
BENCHMARK(BM_BroadcastPlan)->Arg(1536)->Arg(8192)->UseRealTime();

}  // namespace
}  // namespace headroom::worker
