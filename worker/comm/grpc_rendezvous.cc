#include "worker/comm/grpc_rendezvous.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace headroom::worker {
namespace {

// How long a rank waits for the launcher's service to answer a Set (it is already up when the
// ranks start; this only bounds a launcher that died).
constexpr auto kSetTimeout = std::chrono::seconds(10);

absl::Status FromGrpc(const grpc::Status& status, const std::string& what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

}  // namespace

grpc::Status RendezvousService::Set(grpc::ServerContext*, const v1::RendezvousSetRequest* request,
                                    v1::RendezvousSetResponse*) {
  const absl::Status status = store_.Set(request->key(), request->value());
  return status.ok() ? grpc::Status::OK
                     : grpc::Status(grpc::StatusCode::INTERNAL, std::string(status.message()));
}

grpc::Status RendezvousService::Get(grpc::ServerContext*, const v1::RendezvousGetRequest* request,
                                    v1::RendezvousGetResponse* response) {
  absl::StatusOr<std::string> value =
      store_.Get(request->key(), absl::Milliseconds(request->timeout_ms()));
  if (!value.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(value.status().code()),
                        std::string(value.status().message()));
  }
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

GrpcRendezvousStore::GrpcRendezvousStore(const std::string& target)
    : target_(target),
      stub_(v1::Rendezvous::NewStub(
          grpc::CreateChannel(target, grpc::InsecureChannelCredentials()))) {}

absl::Status GrpcRendezvousStore::Set(const std::string& key, const std::string& value) {
  v1::RendezvousSetRequest request;
  request.set_key(key);
  request.set_value(value);
  v1::RendezvousSetResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kSetTimeout);
  context.set_wait_for_ready(true);
  return FromGrpc(stub_->Set(&context, request, &response),
                  absl::StrCat("rendezvous Set \"", key, "\" at ", target_));
}

absl::StatusOr<std::string> GrpcRendezvousStore::Get(const std::string& key,
                                                     absl::Duration timeout) {
  v1::RendezvousGetRequest request;
  request.set_key(key);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  v1::RendezvousGetResponse response;
  grpc::ClientContext context;
  // The server answers DEADLINE_EXCEEDED itself at `timeout`; the call's own deadline only
  // bounds a server that is gone.
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout + absl::Seconds(5)));
  context.set_wait_for_ready(true);
  HR_RETURN_IF_ERROR(FromGrpc(stub_->Get(&context, request, &response),
                              absl::StrCat("rendezvous Get \"", key, "\" at ", target_)));
  return std::string(response.value());
}

}  // namespace headroom::worker
