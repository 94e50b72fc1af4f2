// Discovery: the set of worker group leader addresses the router places on, and how it changes.
//
// Targets (the `--discovery` flag of `headroom router`, rendered by the Helm chart):
//   static:///host:port,host:port   a fixed list, handed to the callback once, as given
//   host:port,host:port             the same (what `--workers` takes)
//   dns:///name:port                `name` re-resolved (getaddrinfo, A and AAAA) every `interval`;
//                                   each address becomes "ip:port" ("[ip]:port" for IPv6)
// A Kubernetes headless Service resolves to the ready pods' IPs, so a group joins when its pod
// becomes ready and leaves when it stops being ready (or is deleted).
//
// Threads: a dns Discovery resolves once inside Start() (so the router knows its groups before
// it serves) and then on its own thread every `interval`. The callback runs on the thread that
// resolved, never concurrently with itself, and only when the sorted, deduplicated list changed.
// A failed resolution keeps the last list (a DNS hiccup must not empty the cluster); it is logged
// once per distinct error, and again when resolution recovers.
//
// Lifetimes: Stop() (or the destructor) wakes and joins the thread; a getaddrinfo in progress is
// not interruptible, so Stop() can wait for the resolver's own timeout in the worst case.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace headroom::router {

// A parsed discovery target.
struct DiscoveryTarget {
  enum class Scheme { kStatic, kDns };
  Scheme scheme = Scheme::kStatic;
  // kStatic: the host:port list as given, in order.
  std::vector<std::string> addresses;
  // kDns: the name to resolve (no brackets for an IPv6 literal) and the numeric port.
  std::string name;
  std::string port;
};

// Parses `static:///h:p,h:p`, `dns:///name:port` or a bare `h:p,h:p` list. InvalidArgument
// "discovery target must be ..., got "<target>": <what is wrong>" otherwise.
[[nodiscard]] absl::StatusOr<DiscoveryTarget> ParseDiscoveryTarget(std::string_view target);

// Resolves `name` (getaddrinfo, AF_UNSPEC, SOCK_STREAM) and returns its addresses with `port`,
// sorted and deduplicated. UNAVAILABLE naming the name and gai_strerror on failure.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ResolveAddresses(const std::string& name,
                                                                         const std::string& port);

struct DiscoveryOptions {
  // How often a dns target is re-resolved.
  absl::Duration interval = absl::Seconds(5);
  // Where resolution errors (and the recovery) are written; default: stderr, one line each.
  std::function<void(std::string_view line)> log;
  // Resolves a dns target; default: ResolveAddresses (tests substitute a scripted one).
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string& name,
                                                         const std::string& port)>
      resolver;
};

class Discovery {
 public:
  // Receives the complete current address list (not a delta).
  using Callback = std::function<void(std::vector<std::string> addresses)>;

  Discovery(DiscoveryTarget target, DiscoveryOptions options, Callback callback);
  ~Discovery();  // Stop()s

  Discovery(const Discovery&) = delete;
  Discovery& operator=(const Discovery&) = delete;

  // static: calls the callback once, here. dns: resolves once here (calling the callback if it
  // resolved), then starts the re-resolution thread.
  void Start();
  void Stop();

 private:
  void ResolveOnce();  // resolution thread (or Start) only
  void Run();

  const DiscoveryTarget target_;
  const DiscoveryOptions options_;
  const Callback callback_;

  std::vector<std::string> last_;  // the list last handed to the callback; resolving thread only
  bool delivered_ = false;         // the callback has run at least once; resolving thread only
  std::string last_error_;         // the error last logged ("" = none); resolving thread only

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace headroom::router
