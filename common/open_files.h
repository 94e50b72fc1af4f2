// The process's open-file limit (RLIMIT_NOFILE). A router holds one descriptor per HTTP client,
// so the soft limit, 1024 in many containers, caps its concurrent streams well below what it can
// serve. Like vLLM's set_ulimit, the router lifts the soft limit to the hard one at start.
#pragma once

#include <cstdint>

namespace headroom {

struct OpenFileLimit {
  uint64_t soft = 0;  // in force
  uint64_t hard = 0;  // the most the soft limit may be raised to (unprivileged)
};

// The limit now.
OpenFileLimit CurrentOpenFileLimit();

// Raises the soft limit to the hard limit, at most kMaxRaisedOpenFiles (Linux's default
// fs.nr_open; an unlimited hard limit would be refused), and returns the limit now in force (the
// old one if the kernel refused).
inline constexpr uint64_t kMaxRaisedOpenFiles = uint64_t{1} << 20;
OpenFileLimit RaiseOpenFileLimit();

}  // namespace headroom
