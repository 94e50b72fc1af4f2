// Communicator: the collectives a tensor-parallel worker group runs (docs/tensor_parallel.md).
//
// One object per rank. Every rank of the group calls the same collectives in the same order (the
// leader's StepPlan makes that so); a call blocks until the group has finished it or the timeout
// given at creation has passed. A failed collective (timeout, a peer that died) poisons the
// communicator: that call and every later one return the same UNAVAILABLE status, because a group
// whose ranks disagree on what completed cannot be trusted again. The group then goes down as one.
//
// Buffers are device buffers of the rank's backend (host memory for the CPU backend, GPU memory
// for NcclCommunicator); BroadcastBytes is for host bytes (a serialized StepPlan).
//
// Implementations: SingleRankCommunicator (world size 1, no peers: every call is a no-op),
// GlooCommunicator (CPU, TCP on loopback or the pod network), NcclCommunicator (GPU).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace headroom::worker {

class Communicator {
 public:
  virtual ~Communicator() = default;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int world_size() const = 0;
  // "single", "gloo", "nccl" (logs and errors).
  [[nodiscard]] virtual std::string name() const = 0;

  // data[i] = sum over ranks of data[i], in place.
  [[nodiscard]] virtual absl::Status AllReduceSum(float* data,  // [count]
                                                  size_t count) = 0;
  // out[r * count + i] = in[i] of rank r.
  [[nodiscard]] virtual absl::Status AllGather(const float* in,  // [count]
                                               size_t count,
                                               float* out) = 0;  // [world_size * count]
  // data (bytes) = root's data, on every rank.
  [[nodiscard]] virtual absl::Status Broadcast(void* data, size_t bytes, int root) = 0;
  // Every rank waits until all ranks have called it.
  [[nodiscard]] virtual absl::Status Barrier() = 0;

  // Host bytes of any length: on root `bytes` is sent, on the others it is replaced by root's.
  // Two broadcasts (the length, then the bytes) through host memory.
  [[nodiscard]] virtual absl::Status BroadcastBytes(std::string* bytes, int root);
};

// World size 1: the group is this process alone; collectives leave the data as it is.
class SingleRankCommunicator final : public Communicator {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int world_size() const override { return 1; }
  [[nodiscard]] std::string name() const override { return "single"; }
  [[nodiscard]] absl::Status AllReduceSum(float*, size_t) override { return absl::OkStatus(); }
  [[nodiscard]] absl::Status AllGather(const float* in, size_t count, float* out) override;
  [[nodiscard]] absl::Status Broadcast(void*, size_t, int root) override;
  [[nodiscard]] absl::Status Barrier() override { return absl::OkStatus(); }
  [[nodiscard]] absl::Status BroadcastBytes(std::string*, int root) override;
};

}  // namespace headroom::worker
