#include "worker/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace headroom::worker {

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  bool own_stream = false;
  void* staging = nullptr;  // [staging_bytes] device; also the barrier's scratch
};

namespace {

absl::Status Cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

// Waits until a non-blocking NCCL call has finished (ncclInProgress -> done) or `deadline`.
absl::Status WaitNccl(ncclComm_t comm, absl::Time deadline, const std::string& what) {
  while (true) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(comm, &state);
    if (query != ncclSuccess) state = query;
    if (state == ncclSuccess) return absl::OkStatus();
    if (state != ncclInProgress) {
      return absl::UnavailableError(absl::StrCat(what, ": ", ncclGetErrorString(state)));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": timed out"));
    }
    std::this_thread::yield();
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    const NcclOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", options.rank, " is not a rank of a group of ", options.world_size));
  }
  if (options.store == nullptr) return absl::InvalidArgumentError("no rendezvous store");
  if (options.staging_bytes < sizeof(uint64_t)) {
    return absl::InvalidArgumentError("staging_bytes must hold at least 8 bytes");
  }
  HR_RETURN_IF_ERROR(Cuda(cudaSetDevice(options.device), "cudaSetDevice"));
  const std::string key = absl::StrCat(options.prefix, "/unique_id");
  ncclUniqueId id;
  if (options.rank == 0) {
    const ncclResult_t made = ncclGetUniqueId(&id);
    if (made != ncclSuccess) {
      return absl::UnavailableError(
          absl::StrCat("ncclGetUniqueId: ", ncclGetErrorString(made)));
    }
    HR_RETURN_IF_ERROR(
        options.store->Set(key, std::string(reinterpret_cast<const char*>(&id), sizeof(id))));
  } else {
    HR_ASSIGN_OR_RETURN(const std::string bytes, options.store->Get(key, options.timeout));
    if (bytes.size() != sizeof(id)) {
      return absl::DataLossError(absl::StrCat("NCCL unique id of ", bytes.size(),
                                              " bytes, expected ", sizeof(id)));
    }
    std::memcpy(&id, bytes.data(), sizeof(id));
  }

  auto state = std::make_unique<State>();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so a peer that never joins cannot hang this rank
  const ncclResult_t init =
      ncclCommInitRankConfig(&state->comm, options.world_size, id, options.rank, &config);
  const std::string what = absl::StrCat("NCCL rendezvous of rank ", options.rank, " of ",
                                        options.world_size, " on device ", options.device);
  absl::Status joined =
      init == ncclSuccess || init == ncclInProgress
          ? WaitNccl(state->comm, absl::Now() + options.timeout, what)
          : absl::UnavailableError(absl::StrCat(what, ": ", ncclGetErrorString(init)));
  if (!joined.ok()) {
    if (state->comm != nullptr) ncclCommAbort(state->comm);
    return absl::UnavailableError(joined.message());
  }
  if (options.stream != nullptr) {
    state->stream = static_cast<cudaStream_t>(options.stream);
  } else {
    HR_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking),
                            "cudaStreamCreateWithFlags"));
    state->own_stream = true;
  }
  HR_RETURN_IF_ERROR(
      Cuda(cudaMalloc(&state->staging, options.staging_bytes), "cudaMalloc (NCCL staging)"));
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(options, std::move(state)));
}

NcclCommunicator::NcclCommunicator(const NcclOptions& options, std::unique_ptr<State> state)
    : options_(options), state_(std::move(state)) {}

NcclCommunicator::~NcclCommunicator() {
  if (state_->comm != nullptr) {
    if (poisoned_.ok()) {
      ncclCommDestroy(state_->comm);
    } else {
      ncclCommAbort(state_->comm);
    }
  }
  if (state_->staging != nullptr) cudaFree(state_->staging);
  if (state_->own_stream) cudaStreamDestroy(state_->stream);
}

absl::Status NcclCommunicator::Finish(const char* what, size_t bytes, int enqueue_result) {
  const auto fail = [&](const std::string& why) {
    ncclCommAbort(state_->comm);
    state_->comm = nullptr;
    poisoned_ = absl::UnavailableError(absl::StrCat(
        "nccl ", what, " of ", bytes, " bytes on rank ", options_.rank, " of ",
        options_.world_size, " failed; the group is unusable: ", why,
        " (collectives time out after ", absl::FormatDuration(options_.timeout), ")"));
    return poisoned_;
  };
  const auto result = static_cast<ncclResult_t>(enqueue_result);
  if (result != ncclSuccess && result != ncclInProgress) return fail(ncclGetErrorString(result));
  // NOTE: host <-> device synchronisation: the collective completes before this returns.
  const absl::Time deadline = absl::Now() + options_.timeout;
  while (true) {
    const cudaError_t query = cudaStreamQuery(state_->stream);
    if (query == cudaSuccess) return absl::OkStatus();
    if (query != cudaErrorNotReady) return fail(cudaGetErrorString(query));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(state_->comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) return fail(ncclGetErrorString(async));
    if (absl::Now() >= deadline) return fail("timed out");
    std::this_thread::yield();
  }
}

absl::Status NcclCommunicator::AllReduceSum(float* data, size_t count) {
  if (!poisoned_.ok()) return poisoned_;
  if (count == 0) return absl::OkStatus();
  return Finish("all-reduce", count * sizeof(float),
                ncclAllReduce(data, data, count, ncclFloat, ncclSum, state_->comm,
                              state_->stream));
}

absl::Status NcclCommunicator::AllGather(const float* in, size_t count, float* out) {
  if (!poisoned_.ok()) return poisoned_;
  if (count == 0) return absl::OkStatus();
  return Finish("all-gather", count * sizeof(float),
                ncclAllGather(in, out, count, ncclFloat, state_->comm, state_->stream));
}

absl::Status NcclCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= options_.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("broadcast root ", root,
                                                   " is not a rank of a group of ",
                                                   options_.world_size));
  }
  if (!poisoned_.ok()) return poisoned_;
  if (bytes == 0) return absl::OkStatus();
  return Finish("broadcast", bytes,
                ncclBroadcast(data, data, bytes, ncclUint8, root, state_->comm, state_->stream));
}

absl::Status NcclCommunicator::Barrier() {
  if (!poisoned_.ok()) return poisoned_;
  return Finish("barrier", sizeof(float),
                ncclAllReduce(state_->staging, state_->staging, 1, ncclFloat, ncclSum,
                              state_->comm, state_->stream));
}

absl::Status NcclCommunicator::BroadcastBytes(std::string* bytes, int root) {
  if (!poisoned_.ok()) return poisoned_;
  const bool sender = options_.rank == root;
  uint64_t size = sender ? bytes->size() : 0;
  // Host bytes travel through the staging buffer: the length first, then chunk by chunk.
  const auto through_staging = [&](void* host, size_t n) -> absl::Status {
    if (sender) {
      HR_RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(state_->staging, host, n, cudaMemcpyHostToDevice,
                                              state_->stream),
                              "cudaMemcpyAsync"));
    }
    HR_RETURN_IF_ERROR(Broadcast(state_->staging, n, root));
    if (!sender) {
      HR_RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(host, state_->staging, n, cudaMemcpyDeviceToHost,
                                              state_->stream),
                              "cudaMemcpyAsync"));
      // NOTE: host <-> device synchronisation: the bytes are read on the host next.
      HR_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize"));
    }
    return absl::OkStatus();
  };
  HR_RETURN_IF_ERROR(through_staging(&size, sizeof(size)));
  if (!sender) bytes->resize(size);
  for (size_t offset = 0; offset < size; offset += options_.staging_bytes) {
    const size_t n = std::min<size_t>(options_.staging_bytes, size - offset);
    HR_RETURN_IF_ERROR(through_staging(bytes->data() + offset, n));
  }
  return absl::OkStatus();
}

}  // namespace headroom::worker
