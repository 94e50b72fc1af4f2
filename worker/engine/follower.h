// Follower: a tensor-parallel rank other than the leader (docs/tensor_parallel.md).
//
// It holds its shard of the model and KV pool and a copy of every running sequence's block table,
// and runs the leader's steps: receive the GroupMessage (the leader broadcasts it before each
// step), apply the plan to the block tables (drop the released sequences, append each scheduled
// sequence's new blocks), build the same ForwardInput and run its shard of the forward pass,
// whose collectives meet the leader's. It never schedules or samples.
//
// Not thread-safe: one thread calls Run.
#pragma once

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/backend/backend.h"
#include "worker/comm/communicator.h"
#include "worker/engine/engine.h"
#include "worker/engine/group_message.h"
#include "worker/model/llama_model.h"

namespace headroom::worker {

class Follower {
 public:
  // `weights` is this rank's shard; `options` the leader's (same limits and pool size); `comm`
  // and `backend` must outlive the follower.
  static absl::StatusOr<std::unique_ptr<Follower>> Create(const ModelConfig& config,
                                                          const ModelWeights& weights,
                                                          const EngineOptions& options,
                                                          Backend* backend, Communicator* comm);

  // Runs the leader's steps until it says stop (OK) or the group fails: UNAVAILABLE when a
  // collective failed (the leader died or hung past the timeout), the error of a bad message.
  [[nodiscard]] absl::Status Run();

  // Applies one message; false for kStop. Exposed for tests.
  [[nodiscard]] absl::StatusOr<bool> Apply(const GroupMessage& message);

  [[nodiscard]] int64_t steps() const { return steps_; }
  [[nodiscard]] size_t num_sequences() const { return tables_.size(); }

 private:
  Follower(const EngineOptions& options, Communicator* comm, std::unique_ptr<LlamaModel> model);
  // kLoadLora: loads this rank's shard, then tells the group whether it could (RanksThatFailed);
  // an error only when the group failed.
  absl::Status LoadLora(const LoraLoad& load);

  const EngineOptions options_;
  Communicator* const comm_;
  std::unique_ptr<LlamaModel> model_;
  absl::flat_hash_map<RequestId, BlockTables> tables_;
  std::string message_;
  ForwardInput input_;
  std::vector<float> logits_;
  int64_t steps_ = 0;
};

}  // namespace headroom::worker
