#include "router/service/group_monitor.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace headroom::router {
namespace {
constexpr auto kMinBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::milliseconds(2000);
}  // namespace

GroupMonitor::GroupMonitor(std::vector<std::string> addresses, Dispatcher* dispatcher)
    : dispatcher_(dispatcher) {
  for (std::string& address : addresses) {
    auto group = std::make_unique<Group>();
    group->address = std::move(address);
    grpc::ChannelArguments args;
    // Reconnect quickly after a worker restarts.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    group->channel =
        grpc::CreateCustomChannel(group->address, grpc::InsecureChannelCredentials(), args);
    group->stub = v1::Worker::NewStub(group->channel);
    groups_.push_back(std::move(group));
  }
}

GroupMonitor::~GroupMonitor() { Stop(); }

void GroupMonitor::Start() {
  for (size_t i = 0; i < groups_.size(); ++i) {
    groups_[i]->thread = std::thread([this, i] { Watch(i); });
  }
}

void GroupMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  for (auto& group : groups_) {
    {
      std::lock_guard<std::mutex> lock(group->mu);
      if (group->context != nullptr) group->context->TryCancel();
    }
    if (group->thread.joinable()) group->thread.join();
  }
}

void GroupMonitor::Watch(size_t index) {
  Group& group = *groups_[index];
  auto backoff = kMinBackoff;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    grpc::ClientContext context;
    {
      std::lock_guard<std::mutex> lock(group.mu);
      group.context = &context;
    }
    {
      // Stop() may have run between the check above and registering the context.
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) context.TryCancel();
    }
    std::unique_ptr<grpc::ClientReader<v1::LoadReport>> reader =
        group.stub->WatchLoad(&context, v1::WatchLoadRequest());
    v1::LoadReport report;
    while (reader->Read(&report)) {
      dispatcher_->OnReport(index, report);
      backoff = kMinBackoff;
    }
    reader->Finish();
    {
      std::lock_guard<std::mutex> lock(group.mu);
      group.context = nullptr;
    }
    dispatcher_->OnStreamDown(index);
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_cv_.wait_for(lock, backoff, [this] { return stopping_; })) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace headroom::router
