#include "cli/lora_flags.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace headroom::cli {
namespace {

// vLLM reads the variable as a boolean: "1" or "true" in any case.
bool RuntimeLoraFromEnvironment() {
  const char* value = std::getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING");
  if (value == nullptr) return false;
  const std::string text = absl::AsciiStrToLower(value);
  return text == "1" || text == "true";
}

}  // namespace

void AddRuntimeLoraFlags(FlagSet& flags) {
  flags.AddBool("allow-runtime-lora-updating", false,
                "Let routers load and unload LoRA adapters while serving (vLLM's "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, which is read too): --max-loras slots at "
                "--max-lora-rank on every projection are reserved at start and planned; the "
                "--lora-modules adapters take the first.");
  flags.AddInt64("max-loras", std::nullopt,
                 "With --allow-runtime-lora-updating: adapters resident at once (default 1, at "
                 "least the --lora-modules); any mix of them runs in one step. Without it every "
                 "--lora-modules adapter is resident and this is ignored.");
}

absl::StatusOr<int32_t> RuntimeLoraSlots(const FlagSet& flags, int64_t num_modules) {
  if (!flags.GetBool("allow-runtime-lora-updating") && !RuntimeLoraFromEnvironment()) return 0;
  const int64_t slots = flags.GetInt64("max-loras").value_or(std::max<int64_t>(1, num_modules));
  if (slots < std::max<int64_t>(1, num_modules) || slots > kMaxLoraSlots) {
    return absl::InvalidArgumentError(absl::StrCat("--max-loras must be in [max(1, the ",
                                                   num_modules, " --lora-modules), ", kMaxLoraSlots,
                                                   "], got ", slots));
  }
  return static_cast<int32_t>(slots);
}

}  // namespace headroom::cli
