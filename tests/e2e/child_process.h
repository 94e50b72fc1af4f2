// ChildProcess: a real `headroom <command>` process for e2e tests, its stdout read line by line.
// The constructor waits (at most 60 s) for the ready line "headroom <command> listening on
// HOST:PORT"; the destructor SIGKILLs a child still running. The child also gets SIGKILL when the
// thread that started it ends (PR_SET_PDEATHSIG), so a test binary that aborts or is killed
// (a crash, ctest's timeout) leaves no worker or router behind holding ports and memory: start
// children from the test's own thread, not from a short-lived one.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace headroom::e2e {

class ChildProcess {
 public:
  ChildProcess(const std::string& command, std::vector<std::string> flags) {
    std::vector<std::string> args = {HEADROOM_BINARY, command};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (pipe(fds) != 0) return;
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls between fork and exec (the test binary has threads).
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      execve(args[0].c_str(), argv.data(), environ);
      _exit(127);
    }
    close(fds[1]);
    stdout_fd_ = fds[0];
    if (pid_ < 0) {
      pid_ = -1;
      return;
    }
    first_line_ = NextLine(std::chrono::seconds(60));
    const std::string prefix = "headroom " + command + " listening on ";
    if (first_line_.rfind(prefix, 0) == 0) address_ = first_line_.substr(prefix.size());
  }

  ~ChildProcess() {
    if (pid_ > 0 && !exit_status_.has_value()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // "127.0.0.1:PORT", empty if the process did not come up.
  [[nodiscard]] const std::string& address() const { return address_; }

  // The line the constructor waited for (for a command that prints no ready line, its first).
  [[nodiscard]] const std::string& first_line() const { return first_line_; }

  [[nodiscard]] pid_t pid() const { return pid_; }

  void Signal(int signal_number) const { kill(pid_, signal_number); }

  // kill -9, and reap it.
  void Kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    exit_status_ = 128 + SIGKILL;
  }

  // The next line the process prints on stdout (empty after `timeout` or at EOF).
  std::string NextLine(std::chrono::milliseconds timeout) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{.fd = stdout_fd_, .events = POLLIN, .revents = 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char c = 0;
      if (read(stdout_fd_, &c, 1) != 1) break;  // EOF: the process died
      if (c == '\n') return line;
      line.push_back(c);
    }
    return line;
  }

  // The exit status (128 + signal when killed) once the process exited within `timeout`.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exit_status_.has_value() && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return exit_status_;
  }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string first_line_;
  std::string address_;
  std::optional<int> exit_status_;
};

}  // namespace headroom::e2e
