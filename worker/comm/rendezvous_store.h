// RendezvousStore: the key-value store the ranks of a group meet in before their communicator
// exists (Gloo's peer addresses, NCCL's unique id). In a group it is served by the leader's gRPC
// service; InMemoryRendezvousStore serves ranks that are threads of one process (tests).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace headroom::worker {

class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;

  // Sets `key` (a later Set of the same key replaces it).
  [[nodiscard]] virtual absl::Status Set(const std::string& key, const std::string& value) = 0;
  // The value of `key`, waiting until some rank has set it; DeadlineExceeded after `timeout`
  // naming the key.
  [[nodiscard]] virtual absl::StatusOr<std::string> Get(const std::string& key,
                                                        absl::Duration timeout) = 0;
};

class InMemoryRendezvousStore final : public RendezvousStore {
 public:
  [[nodiscard]] absl::Status Set(const std::string& key, const std::string& value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(const std::string& key,
                                                absl::Duration timeout) override;

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  absl::flat_hash_map<std::string, std::string> values_;  // guarded by mu_
};

}  // namespace headroom::worker
