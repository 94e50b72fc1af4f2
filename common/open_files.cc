#include "common/open_files.h"

#include <sys/resource.h>

#include <algorithm>

namespace headroom {

OpenFileLimit CurrentOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  return {.soft = limit.rlim_cur, .hard = limit.rlim_max};
}

OpenFileLimit RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  const rlim_t target = std::min<rlim_t>(limit.rlim_max, kMaxRaisedOpenFiles);
  if (limit.rlim_cur < target) {
    rlimit raised = limit;
    raised.rlim_cur = target;
    setrlimit(RLIMIT_NOFILE, &raised);  // on failure the old limit stays, and is reported
  }
  return CurrentOpenFileLimit();
}

}  // namespace headroom
