// The RendezvousStore over gRPC (protos/headroom/v1/rendezvous.proto): RendezvousService serves
// an InMemoryRendezvousStore (the group launcher runs it on loopback), GrpcRendezvousStore is
// what each rank process uses to reach it.
#pragma once

#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "headroom/v1/rendezvous.grpc.pb.h"
#include "worker/comm/rendezvous_store.h"

namespace headroom::worker {

// Synchronous handlers: Get blocks a server thread until the key is set (a group has a handful of
// ranks, and they meet once, at start).
class RendezvousService final : public v1::Rendezvous::Service {
 public:
  grpc::Status Set(grpc::ServerContext* context, const v1::RendezvousSetRequest* request,
                   v1::RendezvousSetResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::RendezvousGetRequest* request,
                   v1::RendezvousGetResponse* response) override;

 private:
  InMemoryRendezvousStore store_;
};

class GrpcRendezvousStore final : public RendezvousStore {
 public:
  // `target` is "host:port" of a RendezvousService.
  explicit GrpcRendezvousStore(const std::string& target);

  [[nodiscard]] absl::Status Set(const std::string& key, const std::string& value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(const std::string& key,
                                                absl::Duration timeout) override;

 private:
  const std::string target_;
  std::unique_ptr<v1::Rendezvous::Stub> stub_;
};

}  // namespace headroom::worker
