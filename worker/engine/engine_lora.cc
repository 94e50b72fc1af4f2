// Engine's LoRA slots: resolving a request's adapter, and loading and unloading adapters at run
// time (docs/engine.md, "LoRA adapters").
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "worker/engine/engine.h"

namespace headroom::worker {

std::string Engine::ServedLoraNames() const {
  std::vector<std::string> names;
  for (const LoraSlot& slot : lora_slots_) {
    if (slot.serving) names.push_back(slot.name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

void Engine::PublishServedLora() {
  auto served = std::make_shared<std::vector<ServedLoraAdapter>>();
  for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
    const LoraSlot& held = lora_slots_[slot];
    if (!held.serving) continue;
    served->push_back({.slot = static_cast<int32_t>(slot),
                       .name = held.name,
                       .path = held.path,
                       .cache_key = held.cache_key});
  }
  served_lora_ = std::move(served);
}

absl::Status Engine::ResolveLora(Request& request) const {
  if (!request.lora_name.empty()) {
    request.lora_slot = -1;
    for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
      if (lora_slots_[slot].serving && lora_slots_[slot].name == request.lora_name) {
        request.lora_slot = static_cast<int32_t>(slot);
      }
    }
    if (request.lora_slot < 0) {
      return absl::NotFoundError(
          absl::StrCat("LoRA adapter \"", request.lora_name,
                       "\" is not served here (LoRA adapters: ", ServedLoraNames(), ")"));
    }
  }
  if (request.lora_slot < -1 || request.lora_slot >= model_->num_lora_slots() ||
      (request.lora_slot >= 0 && !lora_slots_[static_cast<size_t>(request.lora_slot)].serving)) {
    return absl::InvalidArgumentError(absl::StrCat("LoRA slot ", request.lora_slot,
                                                   " holds no adapter (the model has ",
                                                   model_->num_lora_slots(), " LoRA slots)"));
  }
  request.lora_key =
      request.lora_slot < 0 ? "" : lora_slots_[static_cast<size_t>(request.lora_slot)].cache_key;
  return absl::OkStatus();
}

namespace {

// Requests of `slot` queued or running.
int32_t InFlight(const SchedulerStats& stats, size_t slot) {
  const auto count = [slot](const std::vector<int32_t>& per_slot) {
    return slot < per_slot.size() ? per_slot[slot] : 0;
  };
  return count(stats.lora_running) + count(stats.lora_waiting);
}

}  // namespace

absl::StatusOr<int32_t> Engine::FreeLoraSlot() const {
  const SchedulerStats stats = scheduler_->Stats();
  std::vector<std::string> draining;
  for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
    if (lora_slots_[slot].serving) continue;
    const int32_t requests = InFlight(stats, slot);
    if (requests == 0) return static_cast<int32_t>(slot);
    draining.push_back(absl::StrCat(lora_slots_[slot].name, " (", requests, " requests)"));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "all ", lora_slots_.size(), " LoRA slots (--max-loras) are taken: serving ",
      ServedLoraNames(),
      draining.empty()
          ? std::string()
          : absl::StrCat("; unloaded, finishing their requests: ", absl::StrJoin(draining, ", ")),
      ". Unload an adapter, or start the workers with more --max-loras"));
}

absl::Status Engine::RuntimeLoraAllowed() const {
  if (options_.lora_slots > 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this worker loads and unloads no LoRA adapters at run time: start it with "
      "--allow-runtime-lora-updating (or VLLM_ALLOW_RUNTIME_LORA_UPDATING=True) and --max-loras");
}

absl::Status Engine::WriteLoraSlot(int32_t slot, const LoraModuleSpec& spec,
                                   const LoraAdapter& adapter) {
  HR_RETURN_IF_ERROR(model_->LoadLoraSlot(slot, adapter));
  if (!leads_group()) return absl::OkStatus();
  HR_RETURN_IF_ERROR(
      Broadcast({.kind = GroupMessageKind::kLoadLora,
                 .plan = {},
                 .lora_load = {.slot = slot, .name = spec.name, .path = spec.path}}));
  HR_ASSIGN_OR_RETURN(const std::vector<int> failed, RanksThatFailed(*comm_, /*failed=*/false));
  if (failed.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "LoRA adapter \"", spec.name, "\" (", spec.path, ") did not load on rank",
      failed.size() > 1 ? "s " : " ", absl::StrJoin(failed, ", "),
      " of the group (its log says why; the path must hold the same files on every rank)"));
}

absl::Status Engine::LoadLora(const LoraModuleSpec& spec, bool replace) {
  HR_RETURN_IF_ERROR(RuntimeLoraAllowed());
  std::optional<int32_t> old;
  for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
    if (lora_slots_[slot].serving && lora_slots_[slot].name == spec.name) {
      old = static_cast<int32_t>(slot);
    }
  }
  if (old.has_value() && !replace) {
    return absl::AlreadyExistsError(
        absl::StrCat("LoRA adapter \"", spec.name, "\" is already loaded (from ",
                     lora_slots_[static_cast<size_t>(*old)].path,
                     "); unload it first, or load it with load_inplace to replace it"));
  }
  absl::StatusOr<int32_t> free = FreeLoraSlot();
  // Replacing with no other slot free: the adapter's own, unless requests of it are in flight
  // (they finish with the weights they started with, so they need the slot as it is).
  const int32_t old_requests =
      old.has_value() ? InFlight(scheduler_->Stats(), static_cast<size_t>(*old)) : 0;
  const bool in_place = !free.ok() && old.has_value() && old_requests == 0;
  if (!free.ok() && !in_place) {
    if (!old.has_value()) return free.status();
    return absl::ResourceExhaustedError(absl::StrCat(free.status().message(), " (replacing \"",
                                                     spec.name, "\" needs another slot while its ",
                                                     old_requests, " requests finish)"));
  }
  const int32_t slot = in_place ? *old : *free;
  const ShardSpec shard{.tensor_parallel_size = comm_ == nullptr ? 1 : comm_->world_size(),
                        .rank = comm_ == nullptr ? 0 : comm_->rank()};
  // This rank's shard first: an adapter that does not load here is refused before the followers
  // hear of it, and before anything is overwritten.
  HR_ASSIGN_OR_RETURN(const LoraAdapter adapter,
                      LoadLoraAdapter(model_->config(), spec, options_.max_lora_rank, shard));
  if (in_place) lora_slots_[static_cast<size_t>(slot)].serving = false;  // being overwritten
  if (const absl::Status written = WriteLoraSlot(slot, spec, adapter); !written.ok()) {
    if (!in_place) return written;  // the old adapter, if any, still serves
    PublishServedLora();
    return absl::Status(written.code(),
                        absl::StrCat(written.message(), "; the LoRA adapter \"", spec.name,
                                     "\" it was replacing in the same slot is unloaded"));
  }
  if (old.has_value() && !in_place) {
    lora_slots_[static_cast<size_t>(*old)].serving = false;  // its requests finish there
  }
  lora_slots_[static_cast<size_t>(slot)] = {
      .name = spec.name, .path = spec.path, .cache_key = adapter.cache_key, .serving = true};
  PublishServedLora();
  return absl::OkStatus();
}

absl::Status Engine::UnloadLora(const std::string& name) {
  // Without reserved slots an unloaded adapter could never come back.
  HR_RETURN_IF_ERROR(RuntimeLoraAllowed());
  for (LoraSlot& slot : lora_slots_) {
    if (slot.serving && slot.name == name) {
      slot.serving = false;
      PublishServedLora();
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "LoRA adapter \"", name, "\" is not loaded (LoRA adapters: ", ServedLoraNames(), ")"));
}

}  // namespace headroom::worker
