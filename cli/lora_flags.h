// The flags of run-time LoRA adapter loading, shared by `headroom worker` (which reserves the
// slots) and `headroom plan` (which counts them): --allow-runtime-lora-updating (or vLLM's
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True) and --max-loras.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/flags.h"

namespace headroom::cli {

// --max-loras at most: a bound on the slots a typo could reserve (each is planned memory).
inline constexpr int64_t kMaxLoraSlots = 1024;

void AddRuntimeLoraFlags(FlagSet& flags);

// The LoRA slots to reserve for run-time loads: 0 when they are off; else --max-loras (default
// max(1, `num_modules`), the --lora-modules adapters taking the first slots). InvalidArgument for
// a --max-loras outside [max(1, num_modules), kMaxLoraSlots].
[[nodiscard]] absl::StatusOr<int32_t> RuntimeLoraSlots(const FlagSet& flags, int64_t num_modules);

}  // namespace headroom::cli
