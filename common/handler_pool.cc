#include "common/handler_pool.h"

#include <algorithm>
#include <utility>

namespace headroom {

HandlerPool::HandlerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  threads_.reserve(static_cast<size_t>(std::max(threads, 1)));
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Run(); });
}

HandlerPool::~HandlerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

bool HandlerPool::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (jobs_.size() >= max_queued_) return false;
    jobs_.push_back(std::move(job));
  }
  ready_.notify_one();
  return true;
}

void HandlerPool::Run() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and everything queued has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace headroom
