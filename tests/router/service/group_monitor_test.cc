// GroupMonitor with groups that come and go: an in-process fake worker that streams LoadReports,
// and the real Dispatcher behind the monitor.
#include "router/service/group_monitor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace headroom::router {
namespace {

// Streams a report every 20 ms until the call is cancelled.
class FakeWorker final : public v1::Worker::Service {
 public:
  grpc::Status WatchLoad(grpc::ServerContext* context, const v1::WatchLoadRequest* /*request*/,
                         grpc::ServerWriter<v1::LoadReport>* writer) override {
    uint64_t sequence = 0;
    while (!context->IsCancelled()) {
      v1::LoadReport r;
      r.set_sequence(++sequence);
      r.set_total_blocks(100);
      r.set_free_blocks(100);
      r.set_block_size(16);
      r.set_max_model_len(512);
      r.set_model("m");
      if (!writer->Write(r)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return grpc::Status::OK;
  }
};

bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 250; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool Healthy(const Dispatcher& dispatcher, const std::string& address) {
  const v1::ClusterState state = dispatcher.Snapshot();
  for (const v1::GroupState& g : state.groups()) {
    if (g.address() == address) return g.healthy();
  }
  return false;
}

TEST(GroupMonitorTest, WatchersFollowSetGroupsAndRetiredStubsStayValid) {
  FakeWorker worker;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&worker);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string live = "127.0.0.1:" + std::to_string(port);
  const std::string dead = "127.0.0.1:1";  // nobody listens: stays down

  DispatcherOptions options;
  options.tick = absl::Milliseconds(10);
  Dispatcher dispatcher(options);
  dispatcher.Start();
  GroupMonitor monitor({}, &dispatcher);
  monitor.Start();
  EXPECT_EQ(monitor.size(), 0u);

  monitor.SetGroups({dead, live});
  ASSERT_EQ(monitor.size(), 2u);
  EXPECT_EQ(monitor.address(0), dead);
  EXPECT_EQ(monitor.address(1), live);
  ASSERT_TRUE(WaitUntil([&] { return Healthy(dispatcher, live); }));
  EXPECT_FALSE(Healthy(dispatcher, dead));
  v1::Worker::Stub* const stub = monitor.stub(1);

  monitor.SetGroups({dead});  // returns once the live group's watcher has stopped
  EXPECT_FALSE(dispatcher.any_up());
  EXPECT_EQ(dispatcher.Snapshot().groups_size(), 1);
  EXPECT_EQ(monitor.stub(1), stub);  // kept for calls in flight
  {
    grpc::ClientContext context;  // and still usable
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    auto reader = stub->WatchLoad(&context, v1::WatchLoadRequest());
    v1::LoadReport report;
    EXPECT_TRUE(reader->Read(&report));
    context.TryCancel();
    reader->Finish();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(dispatcher.any_up());  // no watcher feeds the retired slot

  monitor.SetGroups({live});  // comes back: its old slot
  EXPECT_EQ(monitor.size(), 2u);
  ASSERT_TRUE(WaitUntil([&] { return Healthy(dispatcher, live); }));
  EXPECT_EQ(dispatcher.Snapshot().groups_size(), 1);

  monitor.Stop();
  dispatcher.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

}  // namespace
}  // namespace headroom::router
