// GroupMonitor: one channel and one WatchLoad stream per worker group, feeding the Dispatcher.
//
// Threads: one thread per current group with a blocking reader (the group count is small, so a
// thread each is simpler than a callback client reactor and costs nothing that matters). Each
// thread opens WatchLoad, hands every report to Dispatcher::OnReport, and when the stream ends
// (worker gone, loading, stopping) calls OnStreamDown and reconnects with exponential backoff
// (100 ms doubling to 2 s, reset by a report). A group that stays connected but sends no report
// for 2 s is marked down by the Dispatcher's staleness check.
//
// Groups come and go: SetGroups first updates the Dispatcher (Dispatcher::SetGroups, which owns
// the slot numbering; see GroupTable), then matches the watchers to its slots: a new or revived
// slot gets a watcher thread, a retired one has its stream cancelled and its thread joined. The
// join happens with no lock a watcher or a reactor takes held (only set_mu_, which serialises
// SetGroups/Start/Stop), so a watcher finishing its last OnReport cannot deadlock with it.
//
// Lifetimes: the Dispatcher must outlive the monitor. Group objects (channel, stub) are never
// destroyed before the monitor, retired ones included: stub(group) stays valid for Submit and
// Abort calls still in flight on a group that left. Stop() cancels every stream and joins.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "headroom/v1/worker.grpc.pb.h"
#include "router/service/dispatcher.h"

namespace headroom::router {

class GroupMonitor {
 public:
  // Watches `addresses` (SetGroups(addresses); usually the groups the Dispatcher was built with,
  // or none when discovery supplies them later).
  GroupMonitor(std::vector<std::string> addresses, Dispatcher* dispatcher);
  ~GroupMonitor();  // Stop()s

  GroupMonitor(const GroupMonitor&) = delete;
  GroupMonitor& operator=(const GroupMonitor&) = delete;

  // Makes `addresses` the watched groups, and the Dispatcher's (see the header comment).
  // Blocks until the watchers of removed groups have stopped. After Stop() it only updates the
  // Dispatcher's table.
  void SetGroups(std::vector<std::string> addresses);
  void Start();
  void Stop();

  // Slots ever created (retired included).
  [[nodiscard]] size_t size() const;
  [[nodiscard]] std::string address(size_t group) const;
  // Thread-safe stub of the group's leader (Submit, Abort); valid until the monitor is destroyed.
  [[nodiscard]] v1::Worker::Stub* stub(size_t group) const;
  // The slots of the groups watched now, ascending.
  [[nodiscard]] std::vector<size_t> current() const;

 private:
  struct Group {
    size_t index = 0;
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::Worker::Stub> stub;
    bool current = false;   // guarded by GroupMonitor::mu_; the watcher exits when false
    bool watching = false;  // a thread runs (or ran and is not joined yet); guarded by set_mu_
    std::thread thread;     // guarded by set_mu_
    std::mutex mu;
    grpc::ClientContext* context = nullptr;  // the open WatchLoad call, guarded by mu
  };

  // Under set_mu_: starts the watchers of current groups and stops (cancel + join, outside mu_)
  // those of groups no longer current.
  void ReconcileLocked();
  void Watch(Group* group);

  Dispatcher* const dispatcher_;
  std::mutex set_mu_;  // serialises SetGroups, Start and Stop; never taken by watchers/reactors
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  std::vector<std::unique_ptr<Group>> groups_;  // guarded by mu_ (the Groups themselves stay put)
  bool started_ = false;                        // guarded by mu_
  bool stopping_ = false;                       // guarded by mu_
};

}  // namespace headroom::router
