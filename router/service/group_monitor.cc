#include "router/service/group_monitor.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/check.h"

namespace headroom::router {
namespace {
constexpr auto kMinBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::milliseconds(2000);
}  // namespace

GroupMonitor::GroupMonitor(std::vector<std::string> addresses, Dispatcher* dispatcher)
    : dispatcher_(dispatcher) {
  SetGroups(std::move(addresses));
}

GroupMonitor::~GroupMonitor() { Stop(); }

size_t GroupMonitor::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return groups_.size();
}

std::string GroupMonitor::address(size_t group) const {
  std::lock_guard<std::mutex> lock(mu_);
  return groups_[group]->address;
}

v1::Worker::Stub* GroupMonitor::stub(size_t group) const {
  std::lock_guard<std::mutex> lock(mu_);
  return groups_[group]->stub.get();
}

std::vector<size_t> GroupMonitor::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<size_t> groups;
  for (const auto& group : groups_) {
    if (group->current) groups.push_back(group->index);
  }
  return groups;
}

void GroupMonitor::SetGroups(std::vector<std::string> addresses) {
  std::lock_guard<std::mutex> set_lock(set_mu_);
  const std::vector<GroupSlot> slots = dispatcher_->SetGroups(addresses);
  // New slots get their channel outside mu_ (creating one does not connect; it is cheap anyway).
  std::vector<std::unique_ptr<Group>> created;
  const size_t known = size();
  HR_CHECK(slots.size() >= known);
  for (size_t i = known; i < slots.size(); ++i) {
    auto group = std::make_unique<Group>();
    group->index = i;
    group->address = slots[i].address;
    grpc::ChannelArguments args;
    // Reconnect quickly after a worker restarts.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    group->channel =
        grpc::CreateCustomChannel(group->address, grpc::InsecureChannelCredentials(), args);
    group->stub = v1::Worker::NewStub(group->channel);
    created.push_back(std::move(group));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& group : created) groups_.push_back(std::move(group));
    for (size_t i = 0; i < slots.size(); ++i) {
      HR_CHECK(groups_[i]->address == slots[i].address);
      groups_[i]->current = slots[i].current;
    }
  }
  stop_cv_.notify_all();  // wakes retired watchers sleeping in their backoff
  ReconcileLocked();
}

void GroupMonitor::Start() {
  std::lock_guard<std::mutex> set_lock(set_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
  }
  ReconcileLocked();
}

void GroupMonitor::Stop() {
  std::lock_guard<std::mutex> set_lock(set_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  ReconcileLocked();
}

void GroupMonitor::ReconcileLocked() {
  std::vector<Group*> start;
  std::vector<Group*> stop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool run = started_ && !stopping_;
    for (auto& group : groups_) {
      const bool want = run && group->current;
      if (want && !group->watching) start.push_back(group.get());
      if (!want && group->watching) stop.push_back(group.get());
    }
  }
  // Outside mu_: the watchers take it, and a join waits for one to notice.
  for (Group* group : stop) {
    {
      std::lock_guard<std::mutex> lock(group->mu);
      if (group->context != nullptr) group->context->TryCancel();
    }
    group->thread.join();
    group->watching = false;
  }
  for (Group* group : start) {
    group->watching = true;
    group->thread = std::thread([this, group] { Watch(group); });
  }
}

void GroupMonitor::Watch(Group* group_ptr) {
  Group& group = *group_ptr;
  const auto done = [this, &group] { return stopping_ || !group.current; };  // under mu_
  auto backoff = kMinBackoff;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done()) return;
    }
    grpc::ClientContext context;
    {
      std::lock_guard<std::mutex> lock(group.mu);
      group.context = &context;
    }
    {
      // Stop() or a SetGroups that retired the group may have run between the check above and
      // registering the context.
      std::lock_guard<std::mutex> lock(mu_);
      if (done()) context.TryCancel();
    }
    std::unique_ptr<grpc::ClientReader<v1::LoadReport>> reader =
        group.stub->WatchLoad(&context, v1::WatchLoadRequest());
    v1::LoadReport report;
    while (reader->Read(&report)) {
      dispatcher_->OnReport(group.index, std::move(report));
      backoff = kMinBackoff;
    }
    reader->Finish();
    {
      std::lock_guard<std::mutex> lock(group.mu);
      group.context = nullptr;
    }
    dispatcher_->OnStreamDown(group.index);
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_cv_.wait_for(lock, backoff, done)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace headroom::router
