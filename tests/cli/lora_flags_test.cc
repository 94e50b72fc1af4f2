// The run-time LoRA flags in process (cli/lora_flags.h): which of vLLM's environment variables
// turn the adapter resolver on, and when it is refused.
#include "cli/lora_flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <string_view>
#include <vector>

namespace headroom::cli {
namespace {

// The resolver directory of a worker given `args`, with VLLM_PLUGINS set to `plugins` (null:
// unset) and VLLM_LORA_RESOLVER_CACHE_DIR to this test's temporary directory.
absl::StatusOr<std::string> ResolverDir(std::vector<std::string_view> args, const char* plugins,
                                        int32_t slots = 1) {
  FlagSet flags("headroom worker", "test");
  AddRuntimeLoraFlags(flags);
  EXPECT_TRUE(flags.Parse(args).ok());
  EXPECT_EQ(::setenv("VLLM_LORA_RESOLVER_CACHE_DIR", ::testing::TempDir().c_str(), 1), 0);
  if (plugins == nullptr) {
    ::unsetenv("VLLM_PLUGINS");
  } else {
    EXPECT_EQ(::setenv("VLLM_PLUGINS", plugins, 1), 0);
  }
  absl::StatusOr<std::string> dir = LoraResolverDir(flags, slots);
  ::unsetenv("VLLM_LORA_RESOLVER_CACHE_DIR");
  ::unsetenv("VLLM_PLUGINS");
  return dir;
}

// vLLM loads every plugin when VLLM_PLUGINS is unset, else those it lists (comma-separated).
TEST(LoraFlagsTest, TheCacheDirectoryVariableCountsWhereVllmWouldLoadTheResolver) {
  EXPECT_EQ(ResolverDir({}, nullptr).value_or("?"), ::testing::TempDir());
  EXPECT_EQ(ResolverDir({}, "other,lora_filesystem_resolver").value_or("?"), ::testing::TempDir());
  EXPECT_EQ(ResolverDir({}, "other").value_or("?"), "");
  EXPECT_EQ(ResolverDir({}, "").value_or("?"), "");
  // Without run-time slots vLLM resolves nothing: the variable is ignored, the flag refused.
  EXPECT_EQ(ResolverDir({}, nullptr, /*slots=*/0).value_or("?"), "");
  const std::string tmp = ::testing::TempDir();
  EXPECT_NE(ResolverDir({"--lora-resolver-dir", tmp}, "other", /*slots=*/0)
                .status()
                .message()
                .find("give --allow-runtime-lora-updating"),
            std::string::npos);
  // The flag wins over the variable.
  EXPECT_EQ(ResolverDir({"--lora-resolver-dir", "/"}, nullptr).value_or("?"), "/");
}

}  // namespace
}  // namespace headroom::cli
