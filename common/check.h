// HR_CHECK: aborts on a broken internal invariant. Never use it for input a server must survive;
// such input gets an absl::Status. The message says which invariant broke and where.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace headroom::internal {
[[noreturn]] inline void CheckFailed(const char* file, int line, const char* condition,
                                     const char* message) {
  std::fprintf(stderr, "%s:%d: invariant violated: %s%s%s\n", file, line, condition,
               message[0] != '\0' ? ": " : "", message);
  std::abort();
}
}  // namespace headroom::internal

#define HR_CHECK(condition)                                                      \
  do {                                                                           \
    if (!(condition)) [[unlikely]] {                                             \
      ::headroom::internal::CheckFailed(__FILE__, __LINE__, #condition, "");     \
    }                                                                            \
  } while (false)

#define HR_CHECK_MSG(condition, message)                                         \
  do {                                                                           \
    if (!(condition)) [[unlikely]] {                                             \
      ::headroom::internal::CheckFailed(__FILE__, __LINE__, #condition, message); \
    }                                                                            \
  } while (false)

#ifdef NDEBUG
#define HR_DCHECK(condition) \
  do {                       \
  } while (false && (condition))
#else
#define HR_DCHECK(condition) HR_CHECK(condition)
#endif
