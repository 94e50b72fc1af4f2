// HandlerPool: jobs run on the pool's threads in FIFO order, the queue is bounded, and nothing
// accepted is dropped at destruction.
#include "common/handler_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace headroom {
namespace {

TEST(HandlerPoolTest, RunsJobsOffTheCallingThreadInOrder) {
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread::id> ran_on;
  {
    HandlerPool pool(1, 100);
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(pool.Post([&, i] {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(i);
        ran_on.push_back(std::this_thread::get_id());
      }));
    }
  }  // the destructor runs what is still queued
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  for (const std::thread::id id : ran_on) EXPECT_NE(id, std::this_thread::get_id());
}

TEST(HandlerPoolTest, RefusesBeyondTheQueueBoundAndRunsEveryAcceptedJob) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> busy;
  std::atomic<int> ran{0};
  {
    HandlerPool pool(1, 3);
    // The one thread takes this job and blocks in it; then exactly 3 more may wait.
    ASSERT_TRUE(pool.Post([&] {
      busy.set_value();
      released.wait();
      ++ran;
    }));
    busy.get_future().wait();
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(pool.Post([&] { ++ran; })) << i;
    bool refused_ran = false;
    EXPECT_FALSE(pool.Post([&] { refused_ran = true; }));
    release.set_value();
    // Once the queue drained, Post accepts again.
    while (ran.load() < 4) std::this_thread::yield();
    EXPECT_TRUE(pool.Post([&] { ++ran; }));
    EXPECT_FALSE(refused_ran);
  }
  EXPECT_EQ(ran.load(), 5);
}

TEST(HandlerPoolTest, SeveralThreadsRunJobsConcurrently) {
  // Two jobs that each wait for the other finish only if two threads run them at once.
  std::promise<void> a_started, b_started;
  std::shared_future<void> a = a_started.get_future().share();
  std::shared_future<void> b = b_started.get_future().share();
  std::atomic<int> done{0};
  {
    HandlerPool pool(2, 10);
    ASSERT_TRUE(pool.Post([&] {
      a_started.set_value();
      b.wait();
      ++done;
    }));
    ASSERT_TRUE(pool.Post([&] {
      b_started.set_value();
      a.wait();
      ++done;
    }));
  }
  EXPECT_EQ(done.load(), 2);
}

}  // namespace
}  // namespace headroom
