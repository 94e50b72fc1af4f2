// Engine's LoRA slots: resolving a request's adapter, and loading and unloading adapters at run
// time (docs/engine.md, "LoRA adapters").
#include <algorithm>
#include <deque>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
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

int32_t Engine::ServingSlot(const std::string& name) const {
  for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
    if (lora_slots_[slot].serving && lora_slots_[slot].name == name) {
      return static_cast<int32_t>(slot);
    }
  }
  return -1;
}

absl::StatusOr<Engine::LoraResolution> Engine::ResolveLora(Request& request) {
  if (!request.lora_name.empty()) {
    request.lora_slot = ServingSlot(request.lora_name);
    if (request.lora_slot >= 0 && lora_slots_[static_cast<size_t>(request.lora_slot)].yielding) {
      return LoraResolution::kWaitForSlot;  // its slot goes to an adapter requests wait for
    }
    if (request.lora_slot < 0 && !options_.lora_resolver_dir.empty()) {
      HR_ASSIGN_OR_RETURN(const LoraResolution resolved, ResolveFromDir(request.lora_name));
      if (resolved == LoraResolution::kWaitForSlot) return resolved;
      request.lora_slot = ServingSlot(request.lora_name);
    }
    if (request.lora_slot < 0) {
      return absl::NotFoundError(
          absl::StrCat("LoRA adapter \"", request.lora_name,
                       "\" is not served here (LoRA adapters: ", ServedLoraNames(), ")"));
    }
    lora_slots_[static_cast<size_t>(request.lora_slot)].last_used = ++lora_requests_;
  }
  if (request.lora_slot < -1 || request.lora_slot >= model_->num_lora_slots() ||
      (request.lora_slot >= 0 && !lora_slots_[static_cast<size_t>(request.lora_slot)].serving)) {
    return absl::InvalidArgumentError(absl::StrCat("LoRA slot ", request.lora_slot,
                                                   " holds no adapter (the model has ",
                                                   model_->num_lora_slots(), " LoRA slots)"));
  }
  request.lora_key =
      request.lora_slot < 0 ? "" : lora_slots_[static_cast<size_t>(request.lora_slot)].cache_key;
  return LoraResolution::kResolved;
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

absl::StatusOr<int32_t> Engine::FreeLoraSlot(const SchedulerStats& stats) const {
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

std::optional<int32_t> Engine::IdleResolvedSlot(const SchedulerStats& stats) const {
  std::optional<int32_t> idle;
  for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
    const LoraSlot& held = lora_slots_[slot];
    if (!held.serving || !held.resolved || InFlight(stats, slot) > 0) continue;
    if (!idle.has_value() || held.last_used < lora_slots_[static_cast<size_t>(*idle)].last_used) {
      idle = static_cast<int32_t>(slot);
    }
  }
  return idle;
}

absl::Status Engine::LoadLora(const LoraModuleSpec& spec, bool replace) {
  return LoadLoraInto(spec, replace, /*resolved=*/false, scheduler_->Stats());
}

absl::StatusOr<Engine::LoraResolution> Engine::ResolveFromDir(const std::string& name) {
  // An earlier request waits for this adapter: this one waits with it, for the same slot.
  if (std::find(lora_wanted_.begin(), lora_wanted_.end(), name) != lora_wanted_.end()) {
    return LoraResolution::kWaitForSlot;
  }
  // A name is one directory under the resolver's: never a path out of it.
  const bool plain = name != "." && name != ".." &&
                     name.find_first_of(std::string_view("/\\\0", 3)) == std::string::npos;
  const std::filesystem::path path = std::filesystem::path(options_.lora_resolver_dir) / name;
  std::error_code error;
  if (!plain || !std::filesystem::is_regular_file(path / "adapter_config.json", error)) {
    return absl::NotFoundError(
        absl::StrCat("LoRA adapter \"", name, "\" does not exist: ",
                     plain ? absl::StrCat(path.string(), "/adapter_config.json is not a file")
                           : "its name is not a directory name under --lora-resolver-dir",
                     " (LoRA adapters: ", ServedLoraNames(), ")"));
  }
  const SchedulerStats stats = scheduler_->Stats();
  // First come, first served: a slot open now goes to the requests already waiting (none is
  // open while some wait).
  if (OpenLoraSlots(stats) > 0) {
    const absl::Status loaded = LoadLoraInto({.name = name, .path = path.string()},
                                             /*replace=*/false, /*resolved=*/true, stats);
    if (loaded.ok()) return LoraResolution::kResolved;
    if (loaded.code() == absl::StatusCode::kUnavailable) return loaded;
    return absl::InvalidArgumentError(
        absl::StrCat("LoRA adapter \"", name, "\" was found (", path.string(),
                     ") but could not be loaded: ", loaded.message()));
  }
  if (AwaitLoraSlot(name, stats)) return LoraResolution::kWaitForSlot;
  return absl::ResourceExhaustedError(absl::StrCat(
      "LoRA adapter \"", name, "\" was found (", path.string(),
      ") but no slot can take it (adapters loaded at start or by /v1/load_lora_adapter keep "
      "theirs): ",
      FreeLoraSlot(stats).status().message()));
}

bool Engine::AwaitLoraSlot(const std::string& name, const SchedulerStats& stats) {
  // Slots there, or to be there, for the adapters waited for: free ones, those whose unloaded
  // adapter finishes its requests, idle resolved ones, and those already giving way.
  size_t freeing = 0;
  std::optional<size_t> candidate;  // the least recently requested resolved adapter in use
  for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
    const LoraSlot& held = lora_slots_[slot];
    if (!held.serving || held.yielding || (held.resolved && InFlight(stats, slot) == 0)) {
      ++freeing;
    } else if (held.resolved &&
               (!candidate.has_value() || held.last_used < lora_slots_[*candidate].last_used)) {
      candidate = slot;
    }
  }
  if (freeing <= lora_wanted_.size() && candidate.has_value()) {
    lora_slots_[*candidate].yielding = true;
    ++freeing;
  }
  if (freeing == 0) return false;
  lora_wanted_.push_back(name);
  return true;
}

int32_t Engine::OpenLoraSlots(const SchedulerStats& stats) const {
  if (!lora_waiting_.empty()) return 0;  // a slot that opens goes to those waiting
  int32_t open = 0;
  for (size_t slot = 0; slot < lora_slots_.size(); ++slot) {
    const LoraSlot& held = lora_slots_[slot];
    if (InFlight(stats, slot) == 0 && (!held.serving || held.resolved)) ++open;
  }
  return open;
}

absl::Status Engine::RetryLoraWaiting() {
  if (lora_waiting_.empty()) return absl::OkStatus();
  // Who gives way, and to which adapters, is decided again from the requests still waiting.
  for (LoraSlot& slot : lora_slots_) slot.yielding = false;
  lora_wanted_.clear();
  std::deque<Request> waiting = std::exchange(lora_waiting_, {});
  for (auto it = waiting.begin(); it != waiting.end(); ++it) {
    const RequestId id = it->id;
    absl::StatusOr<LoraResolution> lora = ResolveLora(*it);
    if (lora.ok() && *lora == LoraResolution::kWaitForSlot) {
      lora_waiting_.push_back(std::move(*it));
      continue;
    }
    if (!lora.ok() && lora.status().code() == absl::StatusCode::kUnavailable) {
      // The group failed (a load's collective): the step fails with it, which ends them all.
      std::move(it, waiting.end(), std::back_inserter(lora_waiting_));
      return lora.status();
    }
    absl::Status status = lora.ok() ? Enqueue(std::move(*it)) : lora.status();
    if (!status.ok()) refused_.emplace_back(id, std::move(status));
  }
  return absl::OkStatus();
}

absl::Status Engine::LoadLoraInto(const LoraModuleSpec& spec, bool replace, bool resolved,
                                  const SchedulerStats& stats) {
  HR_RETURN_IF_ERROR(RuntimeLoraAllowed());
  const int32_t served = ServingSlot(spec.name);
  const std::optional<int32_t> old = served < 0 ? std::nullopt : std::optional<int32_t>(served);
  if (old.has_value() && !replace) {
    return absl::AlreadyExistsError(
        absl::StrCat("LoRA adapter \"", spec.name, "\" is already loaded (from ",
                     lora_slots_[static_cast<size_t>(*old)].path,
                     "); unload it first, or load it with load_inplace to replace it"));
  }
  absl::StatusOr<int32_t> free = FreeLoraSlot(stats);
  // Replacing with no other slot free: the adapter's own, unless requests of it are in flight
  // (they finish with the weights they started with, so they need the slot as it is). Else an
  // idle adapter loaded on first use gives way (it loads again when next requested).
  const int32_t old_requests = old.has_value() ? InFlight(stats, static_cast<size_t>(*old)) : 0;
  std::optional<int32_t> overwritten;
  if (!free.ok()) {
    overwritten = old.has_value() && old_requests == 0 ? old : IdleResolvedSlot(stats);
    if (!overwritten.has_value() && !old.has_value()) return free.status();
    if (!overwritten.has_value()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(free.status().message(), " (replacing \"", spec.name,
                       "\" needs another slot while its ", old_requests, " requests finish)"));
    }
  }
  const int32_t slot = free.ok() ? *free : *overwritten;
  const ShardSpec shard{.tensor_parallel_size = comm_ == nullptr ? 1 : comm_->world_size(),
                        .rank = comm_ == nullptr ? 0 : comm_->rank()};
  // This rank's shard first: an adapter that does not load here is refused before the followers
  // hear of it, and before anything is overwritten.
  HR_ASSIGN_OR_RETURN(const LoraAdapter adapter,
                      LoadLoraAdapter(model_->config(), spec, options_.max_lora_rank, shard));
  LoraSlot& target = lora_slots_[static_cast<size_t>(slot)];
  const std::string overwritten_name = target.name;
  if (overwritten.has_value()) target.serving = false;  // being overwritten
  if (const absl::Status written = WriteLoraSlot(slot, spec, adapter); !written.ok()) {
    if (!overwritten.has_value()) return written;  // the old adapter, if any, still serves
    PublishServedLora();
    return absl::Status(written.code(),
                        absl::StrCat(written.message(), "; the LoRA adapter \"", overwritten_name,
                                     "\" that was in its slot is unloaded"));
  }
  if (old.has_value() && slot != *old) {
    lora_slots_[static_cast<size_t>(*old)].serving = false;  // its requests finish there
  }
  target = {.name = spec.name,
            .path = spec.path,
            .cache_key = adapter.cache_key,
            .serving = true,
            .resolved = resolved,
            .last_used = lora_requests_};
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
