// NcclCommunicator on the GPU at world size 1 (one GPU cannot host two ranks of a group): the
// collectives on device buffers against what SingleRankCommunicator gives on the host, and
// BroadcastBytes of messages larger than its staging buffer. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "worker/comm/communicator.h"
#include "worker/comm/nccl_communicator.h"
#include "worker/comm/rendezvous_store.h"

namespace headroom::worker {
namespace {

TEST(NcclCommunicatorTest, WorldOfOneMatchesTheSingleRankCommunicator) {
  HR_REQUIRE_GPU();
  InMemoryRendezvousStore store;
  auto nccl = NcclCommunicator::Create(
      {.rank = 0, .world_size = 1, .device = 0, .store = &store, .staging_bytes = 4096});
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  SingleRankCommunicator cpu;

  constexpr size_t kCount = 1000;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> host(kCount);
  for (float& x : host) x = dist(random);
  void* device_bytes = nullptr;
  void* gathered_bytes = nullptr;
  ASSERT_EQ(cudaMalloc(&device_bytes, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&gathered_bytes, kCount * sizeof(float)), cudaSuccess);
  float* device = static_cast<float*>(device_bytes);
  float* gathered = static_cast<float*>(gathered_bytes);
  ASSERT_EQ(cudaMemcpy(device, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemset(gathered, 0xff, kCount * sizeof(float)), cudaSuccess);  // poison

  std::vector<float> expected = host;
  ASSERT_TRUE(cpu.AllReduceSum(expected.data(), kCount).ok());
  ASSERT_TRUE((*nccl)->AllReduceSum(device, kCount).ok());
  ASSERT_TRUE((*nccl)->AllGather(device, kCount, gathered).ok());
  ASSERT_TRUE((*nccl)->Broadcast(device, kCount * sizeof(float), 0).ok());
  ASSERT_TRUE((*nccl)->Barrier().ok());
  std::vector<float> reduced(kCount), all(kCount);
  ASSERT_EQ(cudaMemcpy(reduced.data(), device, kCount * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(all.data(), gathered, kCount * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(reduced, expected);
  EXPECT_EQ(all, expected);

  // Host bytes through the 4 KiB staging buffer: empty, smaller, and several chunks.
  for (const size_t size : {size_t{0}, size_t{100}, size_t{10'000}}) {
    std::string bytes(size, 'x');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 31);
    const std::string sent = bytes;
    ASSERT_TRUE((*nccl)->BroadcastBytes(&bytes, 0).ok());
    EXPECT_EQ(bytes, sent);
  }
  EXPECT_EQ((*nccl)->Broadcast(device, 4, 1).code(), absl::StatusCode::kInvalidArgument);
  cudaFree(device);
  cudaFree(gathered);
}

}  // namespace
}  // namespace headroom::worker
