// In-process tensor-parallel groups of two for tests: the follower (rank 1 over Gloo) on a thread
// of its own, running the leader's steps until the leader stops it, and rank 0's communicator.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <utility>

#include "absl/time/time.h"
#include "worker/backend/cpu_backend.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"
#include "worker/engine/follower.h"

namespace headroom::worker::testing {

class FollowerThread {
 public:
  // Rank 1 of the group meeting at `store` (which must outlive the thread), holding `shard` of
  // `config` (which must outlive it too) with `options`.
  FollowerThread(InMemoryRendezvousStore& store, const ModelConfig& config, ModelWeights shard,
                 EngineOptions options)
      : thread_([&store, &config, shard = std::move(shard), options = std::move(options)] {
          auto comm = GlooCommunicator::Create(
              {.rank = 1, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
          ASSERT_TRUE(comm.ok()) << comm.status();
          CpuBackend backend(1);
          auto rank = Follower::Create(config, shard, options, &backend, comm->get());
          ASSERT_TRUE(rank.ok()) << rank.status();
          const absl::Status run = (*rank)->Run();
          EXPECT_TRUE(run.ok()) << run;
        }) {}
  FollowerThread(const FollowerThread&) = delete;
  FollowerThread& operator=(const FollowerThread&) = delete;
  ~FollowerThread() { Join(); }

  // Waits for the follower to return (after the leader's StopFollowers).
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

// Rank 0's communicator of the group meeting at `store`; null (a test failure) if it cannot.
inline std::unique_ptr<GlooCommunicator> LeaderComm(InMemoryRendezvousStore& store) {
  auto comm = GlooCommunicator::Create(
      {.rank = 0, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
  EXPECT_TRUE(comm.ok()) << comm.status();
  return comm.ok() ? *std::move(comm) : nullptr;
}

}  // namespace headroom::worker::testing
