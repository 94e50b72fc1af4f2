#include "worker/comm/gloo_communicator.h"

#include <chrono>
#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/store.h"
#include "gloo/transport/tcp/device.h"

namespace headroom::worker {
namespace {

std::chrono::milliseconds ToMillis(absl::Duration d) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
}

// Gloo's store interface over a RendezvousStore; failures become Gloo's IoException, which
// connectFullMesh passes up to Create.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  StoreAdapter(RendezvousStore* store, std::string prefix, absl::Duration timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    const absl::Status status = store_->Set(Key(key), std::string(data.begin(), data.end()));
    if (!status.ok()) throw gloo::IoException(std::string(status.message()));
  }

  std::vector<char> get(const std::string& key) override {
    absl::StatusOr<std::string> value = store_->Get(Key(key), timeout_);
    if (!value.ok()) throw gloo::IoException(std::string(value.status().message()));
    return std::vector<char>(value->begin(), value->end());
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, ToMillis(timeout_)); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys) {
      absl::StatusOr<std::string> value = store_->Get(Key(key), absl::FromChrono(timeout));
      if (!value.ok()) throw gloo::IoException(std::string(value.status().message()));
    }
  }

 private:
  std::string Key(const std::string& key) const { return absl::StrCat(prefix_, "/", key); }

  RendezvousStore* const store_;
  const std::string prefix_;
  const absl::Duration timeout_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GlooCommunicator>> GlooCommunicator::Create(
    const GlooOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", options.rank,
                                                   " is not a rank of a group of ",
                                                   options.world_size));
  }
  if (options.store == nullptr) return absl::InvalidArgumentError("no rendezvous store");
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout must be positive, got ", absl::FormatDuration(options.timeout)));
  }
  const absl::Duration rendezvous_timeout = options.rendezvous_timeout > absl::ZeroDuration()
                                                ? options.rendezvous_timeout
                                                : options.timeout;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.host;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world_size);
    context->setTimeout(ToMillis(rendezvous_timeout));
    StoreAdapter store(options.store, options.prefix, rendezvous_timeout);
    context->connectFullMesh(store, device);
    context->setTimeout(ToMillis(options.timeout));
    return std::unique_ptr<GlooCommunicator>(new GlooCommunicator(
        options.rank, options.world_size, options.timeout, std::move(context)));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("gloo rendezvous of rank ", options.rank, " of ",
                                               options.world_size, " on ", options.host,
                                               " failed: ", e.what()));
  }
}

GlooCommunicator::GlooCommunicator(int rank, int world_size, absl::Duration timeout,
                                   std::shared_ptr<gloo::Context> context)
    : rank_(rank), world_size_(world_size), timeout_(timeout), context_(std::move(context)) {}

GlooCommunicator::~GlooCommunicator() = default;

template <typename Op>
absl::Status GlooCommunicator::Run(const char* what, size_t bytes, Op&& op) {
  if (!poisoned_.ok()) return poisoned_;
  if (world_size_ == 1 || bytes == 0) return absl::OkStatus();
  try {
    op(next_tag_++);
    return absl::OkStatus();
  } catch (const std::exception& e) {
    poisoned_ = absl::UnavailableError(
        absl::StrCat("gloo ", what, " of ", bytes, " bytes on rank ", rank_, " of ", world_size_,
                     " failed; the group is unusable: ", e.what(), " (collectives time out after ",
                     absl::FormatDuration(timeout_), ")"));
    return poisoned_;
  }
}

absl::Status GlooCommunicator::AllReduceSum(float* data, size_t count) {
  return Run("all-reduce", count * sizeof(float), [&](uint32_t tag) {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(data, count);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(
        &gloo::sum<float>));
    opts.setTag(tag);
    gloo::allreduce(opts);
  });
}

absl::Status GlooCommunicator::AllGather(const float* in, size_t count, float* out) {
  return Run("all-gather", count * sizeof(float), [&](uint32_t tag) {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(const_cast<float*>(in), count);  // NOLINT: Gloo's API is not const-correct
    opts.setOutput(out, count * static_cast<size_t>(world_size_));
    opts.setTag(tag);
    gloo::allgather(opts);
  });
}

absl::Status GlooCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= world_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast root ", root, " is not a rank of a group of ", world_size_));
  }
  return Run("broadcast", bytes, [&](uint32_t tag) {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTag(tag);
    gloo::broadcast(opts);
  });
}

absl::Status GlooCommunicator::Barrier() {
  return Run("barrier", 1, [&](uint32_t tag) {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag);
    gloo::barrier(opts);
  });
}

}  // namespace headroom::worker
