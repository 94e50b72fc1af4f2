// NcclCommunicator: the GPU group's collectives over NCCL (one rank per GPU).
//
// Rendezvous: rank 0 creates the NCCL unique id and publishes it in the RendezvousStore under
// `prefix`; the others read it. The communicator is created non-blocking, so the rendezvous and
// every collective can be bounded by the timeout: a collective that does not complete in time
// (a peer died or hung) aborts the communicator (ncclCommAbort) and poisons it (communicator.h).
//
// Buffers of AllReduceSum, AllGather and Broadcast are device buffers of this rank's GPU.
// BroadcastBytes stages host bytes through a device buffer allocated at creation (no device
// allocation afterwards). Collectives run on the given CUDA stream (the backend's, so they are
// ordered after its kernels) and return once complete.
// NOTE: host <-> device synchronisation per collective: CUDA-graph capture of decode steps will
// need an asynchronous variant that only enqueues.
//
// One GPU cannot host two ranks of a group (NCCL refuses duplicate devices), so a single-GPU
// machine tests world size 1 (docs/tensor_parallel.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/comm/communicator.h"
#include "worker/comm/rendezvous_store.h"

namespace headroom::worker {

struct NcclOptions {
  int rank = 0;
  int world_size = 1;
  int device = 0;  // CUDA device ordinal of this rank
  RendezvousStore* store = nullptr;
  std::string prefix = "nccl";
  // Bounds the rendezvous and every collective.
  absl::Duration timeout = absl::Seconds(30);
  // cudaStream_t to enqueue on; null: a stream of the communicator's own.
  void* stream = nullptr;
  // Size of the device staging buffer of BroadcastBytes (larger messages go in chunks).
  size_t staging_bytes = size_t{1} << 20;
};

class NcclCommunicator final : public Communicator {
 public:
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(const NcclOptions& options);
  ~NcclCommunicator() override;

  [[nodiscard]] int rank() const override { return options_.rank; }
  [[nodiscard]] int world_size() const override { return options_.world_size; }
  [[nodiscard]] std::string name() const override { return "nccl"; }

  [[nodiscard]] absl::Status AllReduceSum(float* data, size_t count) override;
  [[nodiscard]] absl::Status AllGather(const float* in, size_t count, float* out) override;
  [[nodiscard]] absl::Status Broadcast(void* data, size_t bytes, int root) override;
  [[nodiscard]] absl::Status Barrier() override;
  [[nodiscard]] absl::Status BroadcastBytes(std::string* bytes, int root) override;

 private:
  struct State;  // NCCL and CUDA handles (kept out of this header)

  NcclCommunicator(const NcclOptions& options, std::unique_ptr<State> state);

  // Checks the enqueue result, waits for the stream, polls NCCL's async error and the timeout;
  // a failure aborts and poisons.
  absl::Status Finish(const char* what, size_t bytes, int enqueue_result);

  const NcclOptions options_;
  std::unique_ptr<State> state_;
  absl::Status poisoned_;
};

}  // namespace headroom::worker
