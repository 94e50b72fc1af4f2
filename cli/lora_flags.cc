#include "cli/lora_flags.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace headroom::cli {
namespace {

// vLLM reads the variable as a boolean: "1" or "true" in any case.
bool RuntimeLoraFromEnvironment() {
  const char* value = std::getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING");
  if (value == nullptr) return false;
  const std::string text = absl::AsciiStrToLower(value);
  return text == "1" || text == "true";
}

// VLLM_LORA_RESOLVER_CACHE_DIR, where vLLM would load its lora_filesystem_resolver plugin: every
// plugin when VLLM_PLUGINS is unset, else the comma-separated ones it names.
std::string ResolverDirFromEnvironment() {
  const char* dir = std::getenv("VLLM_LORA_RESOLVER_CACHE_DIR");
  if (dir == nullptr || *dir == '\0') return "";
  const char* plugins = std::getenv("VLLM_PLUGINS");
  if (plugins == nullptr) return dir;
  for (const absl::string_view plugin : absl::StrSplit(plugins, ',')) {
    if (absl::StripAsciiWhitespace(plugin) == "lora_filesystem_resolver") return dir;
  }
  return "";
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
  flags.AddString("lora-resolver-dir", std::nullopt,
                  "With --allow-runtime-lora-updating: a request naming an adapter not loaded "
                  "loads the PEFT directory <dir>/<name> into a free --max-loras slot first, or "
                  "into the slot of the least recently requested adapter loaded this way that no "
                  "request is using (vLLM's lora_filesystem_resolver with "
                  "VLLM_LORA_RESOLVER_CACHE_DIR, which is read too). The path is as this worker "
                  "sees it.");
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

absl::StatusOr<std::string> LoraResolverDir(const FlagSet& flags, int32_t runtime_slots) {
  const std::optional<std::string> flag = flags.GetString("lora-resolver-dir");
  if (flag.has_value() && runtime_slots <= 0) {
    return absl::InvalidArgumentError(
        "--lora-resolver-dir loads adapters into the slots of run-time loading: give "
        "--allow-runtime-lora-updating (or VLLM_ALLOW_RUNTIME_LORA_UPDATING=True) too");
  }
  const std::string dir = flag.has_value() ? *flag : ResolverDirFromEnvironment();
  if (dir.empty() || runtime_slots <= 0) return std::string();
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag.has_value() ? "--lora-resolver-dir " : "VLLM_LORA_RESOLVER_CACHE_DIR ", dir,
        " is not a directory", error ? absl::StrCat(" (", error.message(), ")") : ""));
  }
  return dir;
}

}  // namespace headroom::cli
