// GlooCommunicator: the CPU group's collectives over Gloo's TCP transport (Debian's libgloo).
//
// Rendezvous: each rank opens a listening socket on `host`, publishes its address in the
// RendezvousStore under `prefix`, and connects to every other rank (a full mesh). Every
// collective has the timeout of the options; Gloo reports a timeout or a peer that closed its
// sockets (a rank that died) as an exception, which becomes UNAVAILABLE and poisons the
// communicator (see communicator.h).
//
// Not thread-safe: one thread (the rank's engine thread) calls the collectives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/comm/communicator.h"
#include "worker/comm/rendezvous_store.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace headroom::worker {

struct GlooOptions {
  int rank = 0;
  int world_size = 1;
  // Where the ranks meet; must outlive Create() only.
  RendezvousStore* store = nullptr;
  // Store keys are "<prefix>/..."; a new group (a restart) uses a new prefix.
  std::string prefix = "gloo";
  // The address this rank listens on for its peers.
  std::string host = "127.0.0.1";
  // Bounds every collective.
  absl::Duration timeout = absl::Seconds(10);
  // Bounds the rendezvous (every rank joining); zero = `timeout`. Ranks that load their weights
  // first meet with a long one, since loading times differ.
  absl::Duration rendezvous_timeout = absl::ZeroDuration();
};

class GlooCommunicator final : public Communicator {
 public:
  // Blocks until every rank has joined (or the timeout).
  static absl::StatusOr<std::unique_ptr<GlooCommunicator>> Create(const GlooOptions& options);
  ~GlooCommunicator() override;

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override { return world_size_; }
  [[nodiscard]] std::string name() const override { return "gloo"; }

  [[nodiscard]] absl::Status AllReduceSum(float* data, size_t count) override;
  [[nodiscard]] absl::Status AllGather(const float* in, size_t count, float* out) override;
  [[nodiscard]] absl::Status Broadcast(void* data, size_t bytes, int root) override;
  [[nodiscard]] absl::Status Barrier() override;

 private:
  GlooCommunicator(int rank, int world_size, absl::Duration timeout,
                   std::shared_ptr<gloo::Context> context);

  // Runs one collective: the poisoned status if an earlier one failed, otherwise `op` with
  // Gloo's exceptions turned into UNAVAILABLE naming `what` (which poisons).
  template <typename Op>
  absl::Status Run(const char* what, size_t bytes, Op&& op);

  const int rank_;
  const int world_size_;
  const absl::Duration timeout_;
  std::shared_ptr<gloo::Context> context_;
  absl::Status poisoned_;
  uint32_t next_tag_ = 0;  // one per collective, so a late message never matches a later op
};

}  // namespace headroom::worker
