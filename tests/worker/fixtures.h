// Locating committed test fixtures (tests/worker/fixtures/<name>/, written by
// scripts/gen_model_fixtures.py) from a test binary.
//
// CTest sets HEADROOM_SOURCE_DIR to the source tree (see tests/CMakeLists.txt); a binary run by
// hand without it falls back to the nearest ancestor of the working directory that has
// tests/worker/fixtures, so `cd build/main && tests/worker/checkpoint_test` also works.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace headroom::worker::testdata {

// The source tree root, or an empty path when it cannot be found.
inline std::filesystem::path SourceDir() {
  if (const char* env = std::getenv("HEADROOM_SOURCE_DIR"); env != nullptr && env[0] != '\0') {
    return std::filesystem::path(env);
  }
  std::error_code error;
  for (std::filesystem::path dir = std::filesystem::current_path(error); !dir.empty();
       dir = dir.parent_path()) {
    if (std::filesystem::is_directory(dir / "tests" / "worker" / "fixtures", error)) return dir;
    if (dir == dir.parent_path()) break;
  }
  return {};
}

// tests/worker/fixtures/<name> in the source tree, e.g. FixtureDir("llama-gqa").
inline std::filesystem::path FixtureDir(std::string_view name) {
  return SourceDir() / "tests" / "worker" / "fixtures" / std::string(name);
}

}  // namespace headroom::worker::testdata
