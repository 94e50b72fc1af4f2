// RaiseOpenFileLimit lifts a low soft limit to the hard one, and the descriptors it allows can
// then be opened (checked by opening them).
#include "common/open_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace headroom {
namespace {

// Opens /dev/null until `count` are open or the kernel refuses; returns how many opened, and
// closes them.
int OpenUpTo(int count) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  for (const int fd : fds) close(fd);
  return static_cast<int>(fds.size());
}

TEST(OpenFilesTest, RaisesALowSoftLimitToTheHardOne) {
  const OpenFileLimit start = CurrentOpenFileLimit();
  ASSERT_GE(start.hard, 256u) << "this test needs a hard limit of at least 256";
  rlimit low{.rlim_cur = 64, .rlim_max = start.hard};
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  EXPECT_LT(OpenUpTo(200), 64);  // 64 descriptors in all, some already taken

  const OpenFileLimit raised = RaiseOpenFileLimit();
  EXPECT_EQ(raised.soft, std::min<uint64_t>(start.hard, kMaxRaisedOpenFiles));
  EXPECT_EQ(raised.hard, start.hard);
  EXPECT_EQ(CurrentOpenFileLimit().soft, raised.soft);
  EXPECT_EQ(OpenUpTo(200), 200);

  // Already at the hard limit: nothing changes.
  EXPECT_EQ(RaiseOpenFileLimit().soft, raised.soft);
}

}  // namespace
}  // namespace headroom
