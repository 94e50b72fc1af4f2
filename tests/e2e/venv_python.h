// The Python of build/venv (scripts/setup-deps) for e2e tests that drive a real Python client.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace headroom::e2e {

// build/venv/bin/python under `source_dir`.
inline std::string VenvPython(const std::string& source_dir) {
  return source_dir + "/build/venv/bin/python";
}

// Why `python` cannot run a client needing `modules` ("openai", "grpc, grpc_tools"), or nullopt
// when it can: the reason a test skips with.
inline std::optional<std::string> VenvPythonMissing(const std::string& python,
                                                    const std::string& modules) {
  if (access(python.c_str(), X_OK) != 0) {
    return python + " does not exist (run scripts/setup-deps)";
  }
  if (std::system((python + " -c 'import " + modules + "' 2>/dev/null").c_str()) != 0) {
    return python + " cannot import " + modules +
           " (scripts/setup-deps installs examples/requirements.txt)";
  }
  return std::nullopt;
}

}  // namespace headroom::e2e
