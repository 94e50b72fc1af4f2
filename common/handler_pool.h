// HandlerPool: threads that run a server's CPU work (JSON parsing, chat rendering, tokenization)
// so that its I/O threads only move bytes. The router has two: one for the HTTP API's POST routes
// (router/frontend/http_frontend.h), one for the gRPC text prompts and Tokenize calls
// (router/service/inference_service.h).
//
// Why: a prompt may be 1 MiB, and tokenizing that takes 70-200 ms (docs/performance.md,
// tokenizer encode at 5-15 MB/s). On the HTTP server's two event threads (or gRPC's callback
// threads), a few such requests stalled every other connection, open token streams included, for
// that long. Here they queue for the pool.
//
// Bounded: at most `max_queued` jobs wait (each holds its request); Post refuses more, and the
// caller answers 429 / RESOURCE_EXHAUSTED with retry-after. Jobs run in FIFO order. The destructor
// runs the jobs still queued (nothing accepted is dropped), then joins the threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace headroom {

class HandlerPool {
 public:
  HandlerPool(int threads, size_t max_queued);
  ~HandlerPool();

  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  // Queues `job` for a pool thread; false (and `job` is dropped unrun) when `max_queued` jobs
  // already wait.
  bool Post(std::function<void()> job);

  [[nodiscard]] size_t max_queued() const { return max_queued_; }

 private:
  void Run();

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace headroom
