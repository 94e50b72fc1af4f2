// The flags of run-time LoRA adapter loading, shared by `headroom worker` (which reserves the
// slots) and `headroom plan` (which counts them): --allow-runtime-lora-updating (or vLLM's
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True), --max-loras and --lora-resolver-dir (or vLLM's
// VLLM_LORA_RESOLVER_CACHE_DIR).
#pragma once

#include <cstdint>
#include <string>

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

// The directory adapters named by requests load from on first use (vLLM's
// lora_filesystem_resolver): --lora-resolver-dir, else VLLM_LORA_RESOLVER_CACHE_DIR where
// VLLM_PLUGINS is unset or lists lora_filesystem_resolver; "" for none. `runtime_slots`:
// RuntimeLoraSlots. InvalidArgument for a path that is not a directory, and for the flag without
// run-time slots (vLLM's variable is then ignored, as vLLM resolves only with run-time updating).
[[nodiscard]] absl::StatusOr<std::string> LoraResolverDir(const FlagSet& flags,
                                                          int32_t runtime_slots);

}  // namespace headroom::cli
