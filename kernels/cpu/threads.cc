#include "kernels/cpu/threads.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace headroom::kernels::cpu {
namespace {

int DefaultThreads() {
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

std::atomic<int>& ThreadCount() {
  static std::atomic<int> count{DefaultThreads()};
  return count;
}

}  // namespace

void SetNumThreads(int num_threads) {
  const int n = std::max(1, num_threads);
  ThreadCount().store(n, std::memory_order_relaxed);
  openblas_set_num_threads(n);
}

int NumThreads() { return ThreadCount().load(std::memory_order_relaxed); }

void ParallelFor(int64_t num_items, const std::function<void(int64_t)>& fn) {
  if (num_items <= 0) return;
  const int64_t threads = std::min<int64_t>(NumThreads(), num_items);
  if (threads <= 1) {
    for (int64_t i = 0; i < num_items; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  auto drain = [&] {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < num_items;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(i);
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t) helpers.emplace_back(drain);
  drain();
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace headroom::kernels::cpu
