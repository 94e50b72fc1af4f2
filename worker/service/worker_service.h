// WorkerService: the headroom.v1.Worker gRPC service of a worker group's leader, over an
// EngineLoop, on gRPC's callback API.
//
// Threads: reactions run on gRPC's threads and only parse, post to the EngineLoop and start
// writes; tokens come back on the engine thread through EngineLoop callbacks, which queue them in
// their Submit reactor; a LoadPublisher thread polls EngineLoop::Stats() every 50 ms and fans
// reports out to WatchLoad reactors. No reaction waits; the only locks are short ones around a
// reactor's queue and the subscriber list.
//
// Life cycle: constructed "loading" (Submit/WatchLoad answer UNAVAILABLE, health NOT_SERVING),
// SetReady(loop) -> serving, StartDrain() -> draining (new Submits FAILED_PRECONDITION "draining",
// running ones finish, health NOT_SERVING), Shutdown() -> WatchLoad streams end OK and new calls
// get UNAVAILABLE. Call Shutdown() before grpc::Server::Shutdown(), and keep the EngineLoop
// running until the server has shut down: a Submit stream finishes only after its request's
// terminal event, which the loop delivers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "headroom/v1/worker.grpc.pb.h"
#include "worker/engine/engine_loop.h"
#include "worker/model/generation_config.h"
#include "worker/model/lora_adapter.h"

namespace headroom::worker {

// The name health checks of this service use ("" reports the same).
inline constexpr char kWorkerServiceName[] = "headroom.v1.Worker";

// Where the time of a request that produced a first token went (vLLM's intervals): `queue` from
// its Submit's arrival to the first step that scheduled it, `prefill` from there to the first
// token (prefill chunks, and any preemption before it), `decode` from the first token to the
// last. queue + prefill is the time to first token.
struct RequestPhases {
  absl::Duration queue;
  absl::Duration prefill;
  absl::Duration decode;
};

// A request that ended: how, when, and its sizes.
struct FinishedRequest {
  FinishReason reason = FinishReason::kNone;  // kAbort when cancelled
  absl::Duration e2e;                         // from its Submit's arrival
  // When it produced a first token (a request cancelled before has none).
  std::optional<RequestPhases> phases;
  int32_t prompt_tokens = 0;
  int32_t generation_tokens = 0;  // tokens streamed, the final one included
  int32_t max_tokens = 0;         // as the request asked
  // Times it was preempted, as of its last token (a request cancelled while preempted again
  // after its last token counts the earlier ones).
  int32_t num_preemptions = 0;
};

// Per-request events of Submit streams, for metrics. Called on the engine thread, in order, for
// one request at a time: it must not block. A request refused at admission or failed by the
// engine produces no event; a cancelled one ends with OnFinish(kAbort), even before its first
// token.
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  // The request's first token, `ttft` after its Submit arrived; its prompt had `prompt_tokens`.
  virtual void OnFirstToken(absl::Duration ttft, int32_t prompt_tokens) = 0;
  // Each later token, `inter_token` after the previous one.
  virtual void OnNextToken(absl::Duration inter_token) = 0;
  // The request ended.
  virtual void OnFinish(const FinishedRequest& request) = 0;
};

struct WorkerServiceOptions {
  // --model as given (reported in LoadReport.model).
  std::string model;
  // Reported in every LoadReport.
  int32_t max_model_len = 0;
  int32_t block_size = 16;
  // KvCacheSlidingWindow of the model (0: none) and --max-num-batched-tokens: with them a router
  // counts the blocks a request holds at most.
  int32_t sliding_window = 0;
  // The KV cache's layer groups' windows (LoadReport.kv_group_windows; empty: one group).
  std::vector<int32_t> kv_group_windows = {};
  int32_t max_num_batched_tokens = 0;
  // --scheduling-policy priority (reported in LoadReport.priority_scheduling).
  bool priority_scheduling = false;
  // Adapters not loaded are loaded from a directory on first use (--lora-resolver-dir; reported
  // in LoadReport.lora_resolver).
  bool lora_resolver = false;
  // The model is a sequence classifier, and one converted from a causal LM (reported in
  // LoadReport.classifier and LoadReport.reranker).
  bool classifier = false;
  bool reranker = false;
  int32_t num_labels = 0;  // LoadReport.num_labels
  // Changes are reported at most this often...
  absl::Duration min_report_interval = absl::Milliseconds(50);
  // ...and a report is sent at least this often.
  absl::Duration max_report_interval = absl::Seconds(1);
  // A step running longer than this is taken as a hung engine: no report is sent until it ends,
  // so routers stop placing here and, after their --group-silence-timeout-s, give up the
  // requests they placed here (docs/worker_service.md). Infinite: never.
  absl::Duration step_stall_timeout = absl::InfiniteDuration();
  // Told about every Submit's tokens (null: nobody); must outlive the service's streams.
  RequestObserver* observer = nullptr;
  // What a Submit's unset sampling fields take (--generation-config).
  SamplingDefaults sampling_defaults;
};

class WatchLoadReactor;

// Polls the engine's statistics and sends reports to every WatchLoad stream.
class LoadPublisher {
 public:
  // `on_stall(stalled)` is called on the publisher's thread, with no lock held, when a step
  // starts or stops outlasting options.step_stall_timeout.
  LoadPublisher(EngineLoop* loop, v1::LoadReport base, const WorkerServiceOptions& options,
                const std::atomic<bool>* draining, std::function<void(bool stalled)> on_stall);
  // Stops (if not yet) and joins.
  ~LoadPublisher();

  LoadPublisher(const LoadPublisher&) = delete;
  LoadPublisher& operator=(const LoadPublisher&) = delete;

  // Adds a stream and hands it the latest report; after Stop() the stream is finished at once.
  void Subscribe(WatchLoadReactor* reactor);
  // Removes a stream (from its OnDone).
  void Unsubscribe(WatchLoadReactor* reactor);
  // Ends every stream with OK and stops polling; idempotent.
  void Stop();
  // The sequence of the next report: the first to reflect what the engine loop has published by
  // now.
  [[nodiscard]] uint64_t NextSequence();

 private:
  void Run();
  [[nodiscard]] v1::LoadReport Poll() const;

  EngineLoop* const loop_;
  const v1::LoadReport base_;  // model, block_size, max_model_len
  const WorkerServiceOptions options_;
  const std::atomic<bool>* const draining_;
  const std::function<void(bool stalled)> on_stall_;

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  v1::LoadReport latest_;  // guarded by mu_
  bool stalled_ = false;   // Run's thread only: reports are held back for a stalled step
  absl::flat_hash_set<WatchLoadReactor*> subscribers_;  // guarded by mu_
  std::thread thread_;
};

class WorkerService final : public v1::Worker::CallbackService {
 public:
  explicit WorkerService(WorkerServiceOptions options);
  ~WorkerService() override;

  WorkerService(const WorkerService&) = delete;
  WorkerService& operator=(const WorkerService&) = delete;

  // The server's default health service (grpc::EnableDefaultHealthCheckService(true)); its status
  // follows the life cycle from now on. May be null (no health reporting).
  void SetHealthService(grpc::HealthCheckServiceInterface* health);
  // Loading is over: serve requests on `loop` (which must outlive this service's streams).
  void SetReady(EngineLoop* loop);
  // Refuse new Submits from now on; running ones go on. Idempotent.
  void StartDrain();
  [[nodiscard]] bool draining() const { return draining_.load(); }
  // Blocks until no Submit stream is open, or `deadline`; true when idle. Not for gRPC threads.
  bool WaitForIdle(absl::Time deadline);
  // Ends WatchLoad streams; new calls get UNAVAILABLE. Idempotent.
  void Shutdown();

  grpc::ServerWriteReactor<v1::SubmitResponse>* Submit(grpc::CallbackServerContext* context,
                                                       const v1::SubmitRequest* request) override;
  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* context,
                                  const v1::AbortRequest* request,
                                  v1::AbortResponse* response) override;
  grpc::ServerWriteReactor<v1::LoadReport>* WatchLoad(grpc::CallbackServerContext* context,
                                                      const v1::WatchLoadRequest* request) override;
  grpc::ServerUnaryReactor* Drain(grpc::CallbackServerContext* context,
                                  const v1::DrainRequest* request,
                                  v1::DrainResponse* response) override;
  grpc::ServerUnaryReactor* LoadLoraAdapter(grpc::CallbackServerContext* context,
                                            const v1::LoadLoraAdapterRequest* request,
                                            v1::LoadLoraAdapterResponse* response) override;
  grpc::ServerUnaryReactor* UnloadLoraAdapter(grpc::CallbackServerContext* context,
                                              const v1::UnloadLoraAdapterRequest* request,
                                              v1::UnloadLoraAdapterResponse* response) override;

 private:
  friend class SubmitReactor;

  // A Submit stream ended (its OnDone).
  void StreamDone();
  // Runs `op` on the engine thread and finishes `reactor` with its status, after `on_success`
  // filled the response from the statistics it published and the sequence of the first load
  // report to reflect them.
  void RunEngineOp(grpc::ServerUnaryReactor* reactor, EngineLoop::EngineOp op,
                   std::function<void(const EngineStats&, uint64_t report_sequence)> on_success);
  void UpdateHealth();

  const WorkerServiceOptions options_;
  std::atomic<EngineLoop*> loop_{nullptr};
  std::atomic<bool> draining_{false};
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> stalled_{false};  // an engine step outlasts options_.step_stall_timeout
  // Ids for requests that bring none: negative, so they never collide with a router's.
  std::atomic<int64_t> next_local_id_{-1};

  std::mutex mu_;
  std::condition_variable idle_;
  int64_t open_streams_ = 0;                             // guarded by mu_
  grpc::HealthCheckServiceInterface* health_ = nullptr;  // guarded by mu_
  std::unique_ptr<LoadPublisher> publisher_;             // set once by SetReady, under mu_
};

}  // namespace headroom::worker
