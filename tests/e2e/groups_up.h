// GroupsUp: waits until a router sees its worker groups, for multi-process tests that must not
// send work before every group has reported (a request that finds one group up goes there).
#pragma once

#include <chrono>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"

namespace headroom::e2e {

// True once the router behind `stub` lists exactly `groups` groups and all are healthy; false
// after `limit` without that.
inline bool GroupsUp(v1::Inference::Stub& stub, int groups,
                     std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    v1::ClusterState state;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    if (stub.GetClusterState(&context, {}, &state).ok() && state.groups_size() == groups) {
      bool all = true;
      for (const v1::GroupState& g : state.groups()) all = all && g.healthy();
      if (all) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace headroom::e2e
