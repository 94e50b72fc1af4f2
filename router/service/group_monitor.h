// GroupMonitor: one channel and one WatchLoad stream per worker group, feeding the Dispatcher.
//
// Threads: one thread per group with a blocking reader (the group count is small and static, so a
// thread each is simpler than a callback client reactor and costs nothing that matters). Each
// thread opens WatchLoad, hands every report to Dispatcher::OnReport, and when the stream ends
// (worker gone, loading, stopping) calls OnStreamDown and reconnects with exponential backoff
// (100 ms doubling to 2 s, reset by a report). A group that stays connected but sends no report
// for 2 s is marked down by the Dispatcher's staleness check.
//
// Lifetimes: the Dispatcher must outlive the monitor. Stop() cancels every stream and joins.
#pragma once

#include <atomic>
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
  GroupMonitor(std::vector<std::string> addresses, Dispatcher* dispatcher);
  ~GroupMonitor();  // Stop()s

  GroupMonitor(const GroupMonitor&) = delete;
  GroupMonitor& operator=(const GroupMonitor&) = delete;

  void Start();
  void Stop();

  [[nodiscard]] size_t size() const { return groups_.size(); }
  [[nodiscard]] const std::string& address(size_t group) const { return groups_[group]->address; }
  // Thread-safe stub of the group's leader (Submit, Abort).
  [[nodiscard]] v1::Worker::Stub* stub(size_t group) const { return groups_[group]->stub.get(); }

 private:
  struct Group {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::Worker::Stub> stub;
    std::thread thread;
    std::mutex mu;
    grpc::ClientContext* context = nullptr;  // the open WatchLoad call, guarded by mu
  };

  void Watch(size_t index);

  Dispatcher* const dispatcher_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by mu_
};

}  // namespace headroom::router
