// Threads of the CPU kernels: one process-wide knob for the kernels' own std::thread parallelism
// (paged attention) and for OpenBLAS (Linear). Not an op; a helper the ops share.
//
// The default is std::thread::hardware_concurrency(). A worker that shares the machine with other
// ranks (TP > 1 on one CPU host) should give each rank cores / ranks, so that the ranks do not
// oversubscribe the cores.
#pragma once

#include <cstdint>
#include <functional>

namespace headroom::kernels::cpu {

// Sets the number of threads the CPU kernels and OpenBLAS use; values < 1 mean 1.
void SetNumThreads(int num_threads);

// The number of threads the CPU kernels use.
[[nodiscard]] int NumThreads();

// Runs fn(i) for every i in [0, num_items) on up to NumThreads() threads (the calling thread is
// one of them) and returns when all have run. Items are handed out one at a time from a shared
// counter, so uneven items balance. fn must not throw and must be safe to call concurrently for
// different i. With one thread or one item everything runs on the caller.
void ParallelFor(int64_t num_items, const std::function<void(int64_t)>& fn);

}  // namespace headroom::kernels::cpu
