#include "worker/comm/communicator.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace headroom::worker {
namespace {

absl::Status CheckRoot(int root, int world_size) {
  if (root < 0 || root >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast root ", root, " is not a rank of a group of ", world_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Communicator::BroadcastBytes(std::string* bytes, int root) {
  HR_RETURN_IF_ERROR(CheckRoot(root, world_size()));
  uint64_t size = rank() == root ? bytes->size() : 0;
  HR_RETURN_IF_ERROR(Broadcast(&size, sizeof(size), root));
  if (rank() != root) bytes->resize(size);
  if (size == 0) return absl::OkStatus();
  return Broadcast(bytes->data(), size, root);
}

absl::Status SingleRankCommunicator::AllGather(const float* in, size_t count, float* out) {
  if (in != out && count > 0) std::memmove(out, in, count * sizeof(float));
  return absl::OkStatus();
}

absl::Status SingleRankCommunicator::Broadcast(void*, size_t, int root) {
  return CheckRoot(root, 1);
}

absl::Status SingleRankCommunicator::BroadcastBytes(std::string*, int root) {
  return CheckRoot(root, 1);
}

}  // namespace headroom::worker
