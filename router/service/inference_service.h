// InferenceService: headroom.v1.Inference (protos/headroom/v1/inference.proto) on gRPC's callback
// API — the router's public gRPC front.
//
// Generate runs as a GenerateReactor (inference_service.cc) with this state machine:
//   validating -> queued (Dispatcher) -> streaming (a WorkerCall: callback client reactor on the
//   chosen group's Submit) -> [failover: back to queued, once per group, only before any token]
//   -> finishing (outbox written, then Finish) -> done.
// Threads: reactions run on gRPC threads; a text prompt is tokenized and validated on the
// service's HandlerPool (a 1 MiB prompt takes 70-200 ms, too long for gRPC's callback threads,
// which every other stream shares), a prompt of token ids at once on the calling thread;
// placement decisions arrive on the Dispatcher thread; worker messages on gRPC's client threads.
// Every path takes the reactor's mutex only to update its state and queue output;
// StartWrite/Finish/StartCall/TryCancel happen after it is released.
//
// Lifetimes: a GenerateReactor is held by a shared_ptr to itself from creation until OnDone, and
// by its WorkerCall (until that call's OnDone) and, weakly, by the Dispatcher. The service must
// outlive all of them: WaitForIdle() before destroying it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "common/handler_pool.h"
#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "router/service/dispatcher.h"
#include "router/service/group_monitor.h"
#include "router/service/router_metrics.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router {

struct InferenceServiceOptions {
  // Encodes text prompts and decodes outputs; must outlive the service.
  const Tokenizer* tokenizer = nullptr;
  // ListModels' id; empty = the model the workers report.
  std::string served_model_name;
  // Deadline of a Generate whose client set none.
  absl::Duration default_timeout = absl::Seconds(600);
  // Refusals, failovers, placement latency; may be null. Must outlive the service.
  RouterMetrics* metrics = nullptr;
  // Threads that tokenize text prompts (Generate, Tokenize), and how many calls may wait for one;
  // beyond that a call is refused RESOURCE_EXHAUSTED with retry-after.
  int handler_threads = 2;
  size_t max_queued_requests = 256;
};

class InferenceService final : public v1::Inference::CallbackService {
 public:
  InferenceService(InferenceServiceOptions options, Dispatcher* dispatcher, GroupMonitor* monitor);

  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const v1::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* GetClusterState(grpc::CallbackServerContext* context,
                                            const v1::GetClusterStateRequest* request,
                                            v1::ClusterState* response) override;

  // Blocks until no Generate reactor, worker call or Tokenize call is alive, or `deadline`. Not
  // for gRPC threads.
  bool WaitForIdle(absl::Time deadline);

  // The served model id ("" when unknown yet).
  [[nodiscard]] std::string ModelName() const;
  // What ListModels answers: the base model, then each LoRA adapter the groups report (parent:
  // the base model's name).
  [[nodiscard]] v1::ListModelsResponse Models() const;

  // vLLM's run-time adapter routes (/v1/load_lora_adapter, /v1/unload_lora_adapter): asks every
  // group watched now to load (or unload) the adapter, all at once, and returns once the groups
  // that did have reported it, so the next request is placed by it. OK carries vLLM's success
  // text; a failure names each group that failed and why (and those that succeeded: the adapter
  // is served there). A group that joins or restarts later serves its --lora-modules only.
  // Blocks: not for gRPC threads.
  // `load_inplace` (vLLM's): an adapter loaded under the name is replaced.
  [[nodiscard]] grpc::Status LoadLoraAdapter(const std::string& name, const std::string& path,
                                             bool load_inplace = false);
  [[nodiscard]] grpc::Status UnloadLoraAdapter(const std::string& name);

  // Generate calls open from clients of this router's own (not the HTTP front's choices, which
  // it counts itself), from their arrival to their end: vLLM's /load.
  [[nodiscard]] int64_t OpenRequests() const { return open_requests_.load(); }

 private:
  friend class GenerateReactor;
  friend class WorkerCall;

  void Acquire();
  void ReleaseOne();
  // Runs `call` against every current group's stub at once (it sets the response's
  // report_sequence); then LoadLoraAdapter's answer.
  grpc::Status UpdateLora(const std::string& name, bool load,
                          const std::function<grpc::Status(v1::Worker::Stub&, grpc::ClientContext&,
                                                           uint64_t* report_sequence)>& call);
  uint64_t NextRequestId() { return next_request_id_.fetch_add(1); }

  const InferenceServiceOptions options_;
  Dispatcher* const dispatcher_;
  GroupMonitor* const monitor_;
  std::atomic<uint64_t> next_request_id_;
  std::atomic<int64_t> open_requests_{0};

  std::mutex mu_;
  std::condition_variable idle_;
  int64_t live_ = 0;  // reactors + worker calls + Tokenize calls alive, guarded by mu_
  // Last: destroyed first, so its queued jobs still find every member above.
  HandlerPool pool_;
};

}  // namespace headroom::router
