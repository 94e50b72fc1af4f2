#include "worker/engine/follower.h"

#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "worker/engine/forward_input_builder.h"

namespace headroom::worker {

absl::StatusOr<std::unique_ptr<Follower>> Follower::Create(const ModelConfig& config,
                                                           const ModelWeights& weights,
                                                           const EngineOptions& options,
                                                           Backend* backend, Communicator* comm) {
  if (comm == nullptr || comm->rank() == 0) {
    return absl::InvalidArgumentError("a follower is a rank > 0 of a tensor-parallel group");
  }
  HR_ASSIGN_OR_RETURN(std::unique_ptr<LlamaModel> model,
                      LlamaModel::Create(config, weights, ModelLimitsOf(options), backend, comm,
                                         LoraAdaptersOf(options)));
  EngineOptions kept = options;
  kept.lora_adapters = nullptr;  // on the device now
  return std::unique_ptr<Follower>(new Follower(kept, comm, std::move(model)));
}

Follower::Follower(const EngineOptions& options, Communicator* comm,
                   std::unique_ptr<LlamaModel> model)
    : options_(options), comm_(comm), model_(std::move(model)) {}

absl::StatusOr<bool> Follower::Apply(const GroupMessage& message) {
  switch (message.kind) {
    case GroupMessageKind::kStop:
      return false;
    case GroupMessageKind::kKeepAlive:
      return true;
    case GroupMessageKind::kLoadLora:
      HR_RETURN_IF_ERROR(LoadLora(message.lora_load));
      return true;
    case GroupMessageKind::kPlan:
      break;
  }
  const StepPlan& plan = message.plan;
  for (const RequestId id : plan.released) tables_.erase(id);
  for (const ScheduledSequence& seq : plan.sequences) {
    BlockTables& tables = tables_[seq.id];
    tables.resize(static_cast<size_t>(model_->kv_groups().num_groups()));
    if (!ApplyToBlockTable(seq, tables)) {
      return absl::DataLossError(absl::StrCat(
          "step ", plan.step, " gives sequence ", seq.id.value(), " ", seq.new_block_ids.size(),
          " new blocks and releases [", absl::StrJoin(seq.num_released_blocks, ", "),
          "] blocks of its ", tables.size(), " tables of ", tables.front().size(), " blocks"));
    }
    if (tables.front().size() > static_cast<size_t>(model_->max_blocks_per_seq())) {
      return absl::DataLossError(absl::StrCat(
          "step ", plan.step, " gives sequence ", seq.id.value(), " ", tables.front().size(),
          " blocks, more than the ", model_->max_blocks_per_seq(), " max_model_len allows"));
    }
  }
  if (plan.empty()) return true;
  BuildForwardInput(
      plan,
      [this](RequestId id, int32_t group) -> absl::Span<const kvcache::BlockId> {
        return tables_.at(id)[static_cast<size_t>(group)];
      },
      model_->kv_groups().num_groups(), options_.block_size, model_->max_blocks_per_seq(), &input_);
  HR_RETURN_IF_ERROR(model_->Forward(input_, &logits_));
  ++steps_;
  return true;
}

absl::Status Follower::LoadLora(const LoraLoad& load) {
  const absl::Status loaded = [&]() -> absl::Status {
    HR_ASSIGN_OR_RETURN(
        const LoraAdapter adapter,
        LoadLoraAdapter(model_->config(), {.name = load.name, .path = load.path},
                        options_.max_lora_rank,
                        {.tensor_parallel_size = comm_->world_size(), .rank = comm_->rank()}));
    return model_->LoadLoraSlot(load.slot, adapter);
  }();
  if (!loaded.ok()) {
    // The leader refuses the load naming this rank; why is only known here.
    std::cerr << "headroom worker rank " << comm_->rank() << ": " << loaded.message() << "\n";
  }
  return RanksThatFailed(*comm_, !loaded.ok()).status();
}

absl::Status Follower::Run() {
  while (true) {
    HR_RETURN_IF_ERROR(comm_->BroadcastBytes(&message_, 0));
    HR_ASSIGN_OR_RETURN(const GroupMessage message, DecodeGroupMessage(message_));
    HR_ASSIGN_OR_RETURN(const bool go_on, Apply(message));
    if (!go_on) return absl::OkStatus();
  }
}

}  // namespace headroom::worker
