// Communicators: GlooCommunicator ranks as threads of this process over loopback TCP, checked
// against sums and copies computed here; failures (a rank that never calls, a rank that died, a
// rank that never joins) end in UNAVAILABLE, never a hang.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/comm/communicator.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"

namespace headroom::worker {
namespace {

using RankBody = std::function<void(int rank, Communicator& comm)>;

// Starts `world` ranks as threads, each creating its GlooCommunicator and running `body`.
void RunRanks(int world, const RankBody& body, absl::Duration timeout = absl::Seconds(10)) {
  static int group = 0;
  InMemoryRendezvousStore store;
  const std::string prefix = absl::StrCat("test-group-", group++);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<GlooCommunicator>> comm =
          GlooCommunicator::Create({.rank = rank,
                                    .world_size = world,
                                    .store = &store,
                                    .prefix = prefix,
                                    .timeout = timeout});
      ASSERT_TRUE(comm.ok()) << comm.status();
      EXPECT_EQ((*comm)->rank(), rank);
      EXPECT_EQ((*comm)->world_size(), world);
      body(rank, **comm);
    });
  }
  for (std::thread& t : threads) t.join();
}

std::vector<float> RandomData(int rank, size_t count) {
  std::mt19937 random(static_cast<uint32_t>(1000 + rank));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> data(count);
  for (float& x : data) x = dist(random);
  return data;
}

class GlooCollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectivesTest, AllReduceSumIsTheSumAndIdenticalOnEveryRank) {
  const int world = GetParam();
  // 300k floats span several of Gloo's 1 MiB segments.
  for (const size_t count : {size_t{1}, size_t{1000}, size_t{300'000}}) {
    SCOPED_TRACE(count);
    std::vector<std::vector<float>> results(static_cast<size_t>(world));
    RunRanks(world, [&](int rank, Communicator& comm) {
      std::vector<float> data = RandomData(rank, count);
      ASSERT_TRUE(comm.AllReduceSum(data.data(), count).ok());
      results[static_cast<size_t>(rank)] = std::move(data);
    });
    std::vector<double> expected(count, 0.0);
    for (int r = 0; r < world; ++r) {
      const std::vector<float> data = RandomData(r, count);
      for (size_t i = 0; i < count; ++i) expected[i] += static_cast<double>(data[i]);
    }
    for (size_t i = 0; i < count; ++i) {
      ASSERT_NEAR(static_cast<double>(results[0][i]), expected[i], 1e-5) << "element " << i;
    }
    // Tensor-parallel ranks must hold bit-identical activations after the reduction.
    for (int r = 1; r < world; ++r) {
      EXPECT_EQ(std::memcmp(results[0].data(), results[static_cast<size_t>(r)].data(),
                            count * sizeof(float)),
                0)
          << "rank " << r << " differs from rank 0";
    }
  }
}

TEST_P(GlooCollectivesTest, AllGatherPlacesEachRanksSliceAtItsRank) {
  const int world = GetParam();
  constexpr size_t kCount = 777;
  RunRanks(world, [&](int rank, Communicator& comm) {
    const std::vector<float> mine = RandomData(rank, kCount);
    std::vector<float> out(kCount * static_cast<size_t>(world), -1.0f);
    ASSERT_TRUE(comm.AllGather(mine.data(), kCount, out.data()).ok());
    for (int r = 0; r < world; ++r) {
      const std::vector<float> expected = RandomData(r, kCount);
      EXPECT_EQ(std::memcmp(out.data() + static_cast<size_t>(r) * kCount, expected.data(),
                            kCount * sizeof(float)),
                0)
          << "slice of rank " << r << " on rank " << rank;
    }
  });
}

TEST_P(GlooCollectivesTest, BroadcastAndBroadcastBytesCopyTheRootsData) {
  const int world = GetParam();
  const int root = world - 1;
  RunRanks(world, [&](int rank, Communicator& comm) {
    std::vector<float> data = RandomData(rank, 4096);
    ASSERT_TRUE(comm.Broadcast(data.data(), data.size() * sizeof(float), root).ok());
    EXPECT_EQ(data, RandomData(root, 4096)) << "on rank " << rank;
    // Variable length, empty included; several in a row keep their order.
    for (const size_t size : {size_t{0}, size_t{1}, size_t{70'000}}) {
      std::string bytes = rank == root ? std::string(size, static_cast<char>('a' + size % 26))
                                       : std::string("stale");
      ASSERT_TRUE(comm.BroadcastBytes(&bytes, root).ok());
      EXPECT_EQ(bytes, std::string(size, static_cast<char>('a' + size % 26)));
    }
    EXPECT_TRUE(comm.Barrier().ok());
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooCollectivesTest, ::testing::Values(2, 3, 4),
                         [](const auto& param_info) {
                           return absl::StrCat("world", param_info.param);
                         });

TEST(GlooFailureTest, ARankThatNeverCallsTimesOutAndPoisonsTheCommunicator) {
  RunRanks(
      2,
      [](int rank, Communicator& comm) {
        if (rank == 1) {
          // Stays alive (sockets open) past rank 0's timeout without taking part.
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          return;
        }
        float x = 1.0f;
        const absl::Status first = comm.AllReduceSum(&x, 1);
        EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable) << first;
        EXPECT_NE(first.message().find("all-reduce"), std::string::npos) << first;
        // Poisoned: every later collective fails the same way, without touching the network.
        const absl::Status later = comm.Barrier();
        EXPECT_EQ(later, first);
      },
      absl::Milliseconds(400));
}

TEST(GlooFailureTest, ARankThatDiedFailsItsPeersCollectives) {
  InMemoryRendezvousStore store;
  std::promise<void> group_formed;
  std::thread other([&] {
    auto comm = GlooCommunicator::Create(
        {.rank = 1, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
    ASSERT_TRUE(comm.ok()) << comm.status();
    group_formed.get_future().wait();
    // Destroyed here: its sockets close, as when the process is killed.
  });
  auto comm = GlooCommunicator::Create(
      {.rank = 0, .world_size = 2, .store = &store, .timeout = absl::Seconds(30)});
  group_formed.set_value();
  other.join();
  ASSERT_TRUE(comm.ok()) << comm.status();
  std::vector<float> data(1024, 1.0f);
  const absl::Status status = (*comm)->AllReduceSum(data.data(), data.size());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST(GlooFailureTest, ARankThatNeverJoinsFailsTheRendezvousNamingTheGroup) {
  InMemoryRendezvousStore store;
  auto comm = GlooCommunicator::Create(
      {.rank = 0, .world_size = 2, .store = &store, .timeout = absl::Milliseconds(300)});
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnavailable) << comm.status();
  EXPECT_NE(comm.status().message().find("rank 0 of 2"), std::string::npos) << comm.status();
}

TEST(GlooFailureTest, BadOptionsAreInvalidArgument) {
  InMemoryRendezvousStore store;
  EXPECT_EQ(GlooCommunicator::Create({.rank = 2, .world_size = 2, .store = &store}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      GlooCommunicator::Create({.rank = 0, .world_size = 2, .store = nullptr}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(SingleRankCommunicatorTest, CollectivesOfOneRankKeepOrCopyTheData) {
  SingleRankCommunicator comm;
  std::vector<float> data = {1.5f, -2.0f};
  ASSERT_TRUE(comm.AllReduceSum(data.data(), data.size()).ok());
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f}));
  std::vector<float> out(2);
  ASSERT_TRUE(comm.AllGather(data.data(), 2, out.data()).ok());
  EXPECT_EQ(out, data);
  std::string bytes = "plan";
  ASSERT_TRUE(comm.BroadcastBytes(&bytes, 0).ok());
  EXPECT_EQ(bytes, "plan");
  EXPECT_EQ(comm.Broadcast(data.data(), 8, 1).code(), absl::StatusCode::kInvalidArgument);
}

TEST(InMemoryRendezvousStoreTest, GetWaitsForASetAndTimesOutNamingTheKey) {
  InMemoryRendezvousStore store;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(store.Set("nccl/unique_id", "abc").ok());
  });
  absl::StatusOr<std::string> value = store.Get("nccl/unique_id", absl::Seconds(10));
  setter.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "abc");
  const absl::StatusOr<std::string> missing = store.Get("nope", absl::Milliseconds(20));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(missing.status().message().find("\"nope\""), std::string::npos);
}

}  // namespace
}  // namespace headroom::worker
