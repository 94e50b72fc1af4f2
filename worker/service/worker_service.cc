#include "worker/service/worker_service.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <iostream>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/check.h"
#include "worker/service/conversions.h"

namespace headroom::worker {

// One Submit stream.
//
// State machine (all fields under mu_):
//   streaming: tokens arrive from the engine thread into queue_; at most one write is in flight
//              (writing_), the next one starts from OnWriteDone with everything queued since;
//   terminal_: the engine delivered its last event (final token or an error status); once the
//              queue is written, Finish(status_);
//   cancelled_: the client went away (or its deadline passed): the request is aborted in the
//              engine, the queue is dropped, and the stream finishes CANCELLED on the terminal
//              event the abort produces.
// Lifetime: two owners, gRPC (until OnDone, which it calls after Finish) and the engine (until
// its terminal event's callback returns); the last to let go deletes the reactor. Finish is only
// called after the terminal event was queued, but that callback may still be inside Advance()
// when another thread's Finish leads to OnDone, so OnDone alone must not delete (ASan saw it).
// Actions (StartWrite, Finish) are the last thing a method does, outside mu_.
class SubmitReactor final : public grpc::ServerWriteReactor<v1::SubmitResponse> {
 public:
  SubmitReactor(WorkerService* service, EngineLoop* loop, Request request)
      : service_(service),
        loop_(loop),
        id_(request.id),
        prompt_tokens_(static_cast<int32_t>(request.prompt.size())),
        max_tokens_(request.sampling.max_tokens),
        embedding_(request.embedding.has_value()),
        observer_(service->options_.observer),
        arrival_(absl::Now()) {
    loop_->Submit(std::move(request),
                  [this](const absl::StatusOr<StepToken>& event) { OnEngineEvent(event); });
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) cancelled_ = true;  // the stream is broken; OnCancel aborts the request
    }
    Advance();
  }

  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      queue_.clear();
    }
    loop_->Abort(id_);  // the engine answers with a terminal CANCELLED event
    Advance();
  }

  void OnDone() override { Release(); }

 private:
  // Engine thread (or Submit's caller, for a refusal). The terminal event's call is the engine's
  // last touch: it lets go of the reactor when it returns.
  void OnEngineEvent(const absl::StatusOr<StepToken>& event) {
    if (observer_ != nullptr) Observe(event);
    const bool last = !event.ok() || event->finish != FinishReason::kNone;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!event.ok()) {
        status_ = ToGrpcStatus(event.status());
      } else {
        if (!cancelled_) queue_.push_back(*event);
        if (!embedding_) ++completion_tokens_;
      }
      if (last) terminal_ = true;
    }
    Advance();
    if (last) Release();
  }

  // One owner lets go; the last one deletes the reactor and tells the service.
  void Release() {
    if (owners_.fetch_sub(1) != 1) return;
    WorkerService* service = service_;
    delete this;
    service->StreamDone();
  }

  // Engine thread: tells the observer (timing fields are only touched here, so no lock).
  void Observe(const absl::StatusOr<StepToken>& event) {
    const absl::Time now = absl::Now();
    if (!event.ok()) {
      if (absl::IsCancelled(event.status())) {
        observer_->OnFinish(Finished(FinishReason::kAbort, now));
      }
      return;
    }
    if (embedding_) {
      // An embedding has no tokens: no time to first token, and no generation in its counts.
      scheduled_ = std::clamp(event->first_scheduled, arrival_, now);
      first_token_ = last_token_ = now;
      observer_->OnFinish(Finished(event->finish, now));
      return;
    }
    if (observed_tokens_ == 0) {
      observer_->OnFirstToken(now - arrival_, prompt_tokens_);
      first_token_ = now;
      // The engine's clock is the same; clamped so that no phase is negative.
      scheduled_ = std::clamp(event->first_scheduled, arrival_, now);
    } else {
      observer_->OnNextToken(now - last_token_);
    }
    ++observed_tokens_;
    num_preemptions_ = event->num_preemptions;
    last_token_ = now;
    if (event->finish != FinishReason::kNone) {
      observer_->OnFinish(Finished(event->finish, now));
    }
  }

  FinishedRequest Finished(FinishReason reason, absl::Time now) const {
    FinishedRequest finished{.reason = reason,
                             .e2e = now - arrival_,
                             .phases = std::nullopt,
                             .prompt_tokens = prompt_tokens_,
                             .generation_tokens = observed_tokens_,
                             .max_tokens = max_tokens_,
                             .num_preemptions = num_preemptions_};
    if (observed_tokens_ > 0 || (embedding_ && reason != FinishReason::kAbort)) {
      finished.phases = RequestPhases{.queue = scheduled_ - arrival_,
                                      .prefill = first_token_ - scheduled_,
                                      .decode = last_token_ - first_token_};
    }
    return finished;
  }

  // Starts the next write, or finishes, if the state allows; otherwise nothing.
  void Advance() {
    enum class Action { kNone, kWrite, kFinish } action = Action::kNone;
    grpc::Status status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || writing_) return;
      if (cancelled_) queue_.clear();
      if (!queue_.empty()) {
        out_.Clear();
        for (const StepToken& token : queue_) AppendToken(token, out_);
        queue_.clear();
        if (out_.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
          out_.set_prompt_tokens(prompt_tokens_);
          out_.set_completion_tokens(completion_tokens_);
        }
        writing_ = true;
        action = Action::kWrite;
      } else if (terminal_) {
        finished_ = true;
        status = cancelled_ && status_.ok() ? grpc::Status::CANCELLED : status_;
        action = Action::kFinish;
      }
    }
    if (action == Action::kWrite) {
      StartWrite(&out_);
    } else if (action == Action::kFinish) {
      Finish(status);
    }
  }

  WorkerService* const service_;
  EngineLoop* const loop_;
  const RequestId id_;
  const int32_t prompt_tokens_;
  const int32_t max_tokens_;
  const bool embedding_;  // an embedding request (no tokens)
  RequestObserver* const observer_;
  const absl::Time arrival_;
  absl::Time scheduled_;         // engine thread only: first scheduled (set at the first token)
  absl::Time first_token_;       // engine thread only
  absl::Time last_token_;        // engine thread only
  int32_t observed_tokens_ = 0;  // engine thread only
  int32_t num_preemptions_ = 0;  // engine thread only: as of the last token

  std::atomic<int> owners_{2};  // gRPC and the engine

  std::mutex mu_;
  std::deque<StepToken> queue_;  // tokens not yet written
  v1::SubmitResponse out_;       // the write in flight (owned by gRPC while writing_)
  int32_t completion_tokens_ = 0;
  bool writing_ = false;
  bool terminal_ = false;
  bool cancelled_ = false;
  bool finished_ = false;
  grpc::Status status_;  // the engine's terminal status (OK for a finished request)
};

// One WatchLoad stream: writes the newest report it was offered, dropping older ones that came
// while a write was in flight (a load report supersedes the previous one).
// State (under mu_): idle -> writing (one write in flight, maybe a pending report) -> finished.
// Lifetime: gRPC owns it; OnDone unsubscribes from the publisher and deletes it. The publisher
// calls Offer/End only while the reactor is subscribed, under the publisher's lock.
class WatchLoadReactor final : public grpc::ServerWriteReactor<v1::LoadReport> {
 public:
  explicit WatchLoadReactor(LoadPublisher* publisher) : publisher_(publisher) {
    if (publisher_ == nullptr) {
      End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is loading"));
    } else {
      publisher_->Subscribe(this);
    }
  }

  // Writes `report`, or keeps it as the one to write next when a write is in flight: only the
  // newest report waits, carrying the prefix-cache changes of those it replaced.
  void Offer(const v1::LoadReport& report) {
    std::optional<grpc::Status> fell_behind;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_status_.has_value()) return;
      if (writing_) {
        if (pending_.has_value()) {
          fell_behind = MergePrefixCache(*pending_, report);
        } else {
          pending_ = report;
        }
        if (!fell_behind.has_value()) return;
      } else {
        out_ = report;
        writing_ = true;
      }
    }
    if (fell_behind.has_value()) {
      End(*fell_behind);
    } else {
      StartWrite(&out_);
    }
  }

  // Finishes with `status` once the write in flight (if any) is done.
  void End(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_status_.has_value()) return;
      finish_status_ = status;
      if (writing_) return;  // OnWriteDone finishes
    }
    Finish(status);
  }

  void OnWriteDone(bool ok) override {
    grpc::Status finish;
    bool write = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok && !finish_status_.has_value()) finish_status_ = grpc::Status::CANCELLED;
      if (finish_status_.has_value()) {
        finish = *finish_status_;
      } else if (pending_.has_value()) {
        out_ = *std::move(pending_);
        pending_.reset();
        writing_ = true;
        write = true;
      } else {
        return;
      }
    }
    if (write) {
      StartWrite(&out_);
    } else {
      Finish(finish);
    }
  }

  void OnCancel() override { End(grpc::Status::CANCELLED); }

  void OnDone() override {
    if (publisher_ != nullptr) publisher_->Unsubscribe(this);
    delete this;
  }

 private:
  // pending_ becomes `newer` with the prefix-cache changes of both. A reader so far behind that
  // they exceed 4 pools' worth of hashes gets its stream ended (its reconnect starts from the
  // whole cache); the status says so. With mu_ held.
  std::optional<grpc::Status> MergePrefixCache(v1::LoadReport& pending,
                                               const v1::LoadReport& newer) {
    std::optional<kvcache::PrefixCacheDelta> merged = FromProto(pending.prefix_cache());
    const std::optional<kvcache::PrefixCacheDelta> later = FromProto(newer.prefix_cache());
    HR_CHECK(merged.has_value() && later.has_value());  // both packed by this process
    kvcache::MergeInto(&*merged, *later);
    const size_t limit = 4 * static_cast<size_t>(std::max(newer.total_blocks(), 1));
    if (merged->size() > limit) {
      pending_.reset();
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("the reader fell behind by ", merged->size(),
                                       " prefix-cache changes (limit ", limit, "); reconnect"));
    }
    pending = newer;
    *pending.mutable_prefix_cache() = ToProto(*merged);
    return std::nullopt;
  }

  LoadPublisher* const publisher_;
  std::mutex mu_;
  v1::LoadReport out_;                     // the write in flight
  std::optional<v1::LoadReport> pending_;  // newest report not yet written
  bool writing_ = false;
  std::optional<grpc::Status> finish_status_;  // set once: finishing or finished
};

LoadPublisher::LoadPublisher(EngineLoop* loop, v1::LoadReport base,
                             const WorkerServiceOptions& options, const std::atomic<bool>* draining,
                             std::function<void(bool stalled)> on_stall)
    : loop_(loop),
      base_(std::move(base)),
      options_(options),
      draining_(draining),
      on_stall_(std::move(on_stall)) {
  latest_ = Poll();
  latest_.set_sequence(1);
  thread_ = std::thread([this] { Run(); });
}

LoadPublisher::~LoadPublisher() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

v1::LoadReport LoadPublisher::Poll() const {
  v1::LoadReport report = base_;
  FillLoadReport(loop_->Stats(), report);
  report.set_draining(draining_->load());
  return report;
}

void LoadPublisher::Subscribe(WatchLoadReactor* reactor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    reactor->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is stopping"));
    return;
  }
  subscribers_.insert(reactor);
  // A new stream starts from the whole cache. Taken under mu_, like every delta in Run, so the
  // deltas this stream gets next are all later than its snapshot (or repeat what it already has:
  // set-valued changes are idempotent).
  v1::LoadReport first = latest_;
  *first.mutable_prefix_cache() = ToProto(loop_->PrefixCacheSnapshot());
  reactor->Offer(first);
}

void LoadPublisher::Unsubscribe(WatchLoadReactor* reactor) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.erase(reactor);
}

void LoadPublisher::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  stopping_ = true;
  for (WatchLoadReactor* reactor : subscribers_) reactor->End(grpc::Status::OK);
  wake_.notify_all();
}

uint64_t LoadPublisher::NextSequence() {
  // Under mu_: a report Run is making now may hold statistics polled before the caller's change,
  // so the next one is the first sure to be made after it.
  std::lock_guard<std::mutex> lock(mu_);
  return latest_.sequence() + 1;
}

void LoadPublisher::Run() {
  absl::Time last_sent = absl::Now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, absl::ToChronoMilliseconds(options_.min_report_interval),
                   [this] { return stopping_; });
    if (stopping_) break;
    // A step that does not end: say nothing (the prefix-cache changes wait for the next report)
    // and let health say NOT_SERVING. The callback runs unlocked: it takes the service's lock,
    // which Shutdown holds while it stops this publisher.
    const absl::Duration step = loop_->StepRunningFor();
    if (const bool stalled = step > options_.step_stall_timeout; stalled != stalled_) {
      stalled_ = stalled;
      std::cerr << (stalled ? absl::StrCat("headroom worker: an engine step has run for ",
                                           absl::FormatDuration(step),
                                           ", over --step-stall-timeout-s; load reports stop and "
                                           "health is NOT_SERVING until it ends\n")
                            : std::string("headroom worker: the stalled engine step ended; load "
                                          "reports and health resume\n"));
      if (on_stall_) {
        lock.unlock();
        on_stall_(stalled);
        lock.lock();
        if (stopping_) break;
      }
    }
    if (stalled_) continue;
    // Under mu_ (Subscribe's snapshot and the deltas must not interleave); both calls only copy
    // what the engine loop published after its last step.
    v1::LoadReport report = Poll();
    const kvcache::PrefixCacheDelta delta = loop_->TakePrefixCacheDelta();
    const absl::Time now = absl::Now();
    report.set_sequence(latest_.sequence());
    const bool changed =
        !delta.empty() || report.SerializeAsString() != latest_.SerializeAsString();
    if (!changed && now - last_sent < options_.max_report_interval) continue;
    report.set_sequence(latest_.sequence() + 1);
    latest_ = std::move(report);  // without the delta: each stream gets each delta once
    last_sent = now;
    v1::LoadReport sent = latest_;
    *sent.mutable_prefix_cache() = ToProto(delta);
    for (WatchLoadReactor* reactor : subscribers_) reactor->Offer(sent);
  }
}

WorkerService::WorkerService(WorkerServiceOptions options) : options_(std::move(options)) {}

WorkerService::~WorkerService() { Shutdown(); }

void WorkerService::SetHealthService(grpc::HealthCheckServiceInterface* health) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    health_ = health;
  }
  UpdateHealth();
}

void WorkerService::UpdateHealth() {
  const bool serving =
      loop_.load() != nullptr && !draining_.load() && !shut_down_.load() && !stalled_.load();
  std::lock_guard<std::mutex> lock(mu_);
  if (health_ == nullptr) return;
  health_->SetServingStatus(kWorkerServiceName, serving);
  health_->SetServingStatus(serving);
}

void WorkerService::SetReady(EngineLoop* loop) {
  v1::LoadReport base;
  base.set_model(options_.model);
  base.set_block_size(options_.block_size);
  base.set_max_model_len(options_.max_model_len);
  base.set_sliding_window(options_.sliding_window);
  for (const int32_t window : options_.kv_group_windows) base.add_kv_group_windows(window);
  base.set_max_num_batched_tokens(options_.max_num_batched_tokens);
  base.set_priority_scheduling(options_.priority_scheduling);
  base.set_lora_resolver(options_.lora_resolver);
  base.set_classifier(options_.classifier);
  base.set_reranker(options_.reranker);
  base.set_num_labels(options_.num_labels);
  {
    std::lock_guard<std::mutex> lock(mu_);
    publisher_ = std::make_unique<LoadPublisher>(loop, std::move(base), options_, &draining_,
                                                 [this](bool stalled) {
                                                   stalled_.store(stalled);
                                                   UpdateHealth();
                                                 });
  }
  loop_.store(loop);
  UpdateHealth();
}

void WorkerService::StartDrain() {
  draining_.store(true);
  UpdateHealth();
}

bool WorkerService::WaitForIdle(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_until(lock, absl::ToChronoTime(deadline),
                          [this] { return open_streams_ == 0; });
}

void WorkerService::Shutdown() {
  if (shut_down_.exchange(true)) return;
  UpdateHealth();
  // The publisher object stays until the service goes (streams ending later unsubscribe from it);
  // its thread is joined then.
  std::lock_guard<std::mutex> lock(mu_);
  if (publisher_ != nullptr) publisher_->Stop();
}

void WorkerService::StreamDone() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--open_streams_ == 0) idle_.notify_all();
}

namespace {

// A Submit refused before it reaches the engine.
class RefusedWriteReactor final : public grpc::ServerWriteReactor<v1::SubmitResponse> {
 public:
  explicit RefusedWriteReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<v1::SubmitResponse>* WorkerService::Submit(
    grpc::CallbackServerContext* /*context*/, const v1::SubmitRequest* request) {
  EngineLoop* loop = loop_.load();
  if (shut_down_.load()) {
    return new RefusedWriteReactor(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is stopping"));
  }
  if (loop == nullptr) {
    return new RefusedWriteReactor(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is loading"));
  }
  if (draining_.load()) {
    return new RefusedWriteReactor(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "draining"));
  }
  RequestId id{next_local_id_.fetch_sub(1)};
  if (request->request_id() != 0) {
    if (request->request_id() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return new RefusedWriteReactor(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       absl::StrCat("request_id ", request->request_id(), " is above 2^63-1")));
    }
    id = RequestId{static_cast<int64_t>(request->request_id())};
  }
  absl::StatusOr<Request> parsed = RequestFromProto(*request, id, options_.sampling_defaults);
  if (!parsed.ok()) return new RefusedWriteReactor(ToGrpcStatus(parsed.status()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++open_streams_;
  }
  return new SubmitReactor(this, loop, *std::move(parsed));
}

grpc::ServerUnaryReactor* WorkerService::Abort(grpc::CallbackServerContext* context,
                                               const v1::AbortRequest* request,
                                               v1::AbortResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  EngineLoop* loop = loop_.load();
  if (loop != nullptr && request->request_id() != 0 &&
      request->request_id() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    loop->Abort(RequestId{static_cast<int64_t>(request->request_id())});
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<v1::LoadReport>* WorkerService::WatchLoad(
    grpc::CallbackServerContext* /*context*/, const v1::WatchLoadRequest* /*request*/) {
  LoadPublisher* publisher = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    publisher = publisher_.get();
  }
  return new WatchLoadReactor(publisher);
}

grpc::ServerUnaryReactor* WorkerService::Drain(grpc::CallbackServerContext* context,
                                               const v1::DrainRequest* /*request*/,
                                               v1::DrainResponse* response) {
  StartDrain();
  if (EngineLoop* loop = loop_.load(); loop != nullptr) {
    const EngineStats stats = loop->Stats();
    response->set_running(stats.scheduler.num_running);
    response->set_waiting(stats.scheduler.num_waiting);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::LoadLoraAdapter(grpc::CallbackServerContext* context,
                                                         const v1::LoadLoraAdapterRequest* request,
                                                         v1::LoadLoraAdapterResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (request->lora_name().empty() || request->lora_path().empty()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "a LoRA adapter load needs lora_name and lora_path"));
    return reactor;
  }
  const LoraModuleSpec spec{.name = request->lora_name(), .path = request->lora_path()};
  RunEngineOp(
      reactor,
      [spec, replace = request->load_inplace()](Engine& engine) {
        return engine.LoadLora(spec, replace);
      },
      [response, name = spec.name](const EngineStats& stats, uint64_t report_sequence) {
        response->set_report_sequence(report_sequence);
        for (const ServedLoraAdapter& adapter : *stats.lora_adapters) {
          if (adapter.name != name) continue;
          response->mutable_adapter()->set_name(adapter.name);
          response->mutable_adapter()->set_path(adapter.path);
          response->mutable_adapter()->set_cache_key(adapter.cache_key);
        }
      });
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::UnloadLoraAdapter(
    grpc::CallbackServerContext* context, const v1::UnloadLoraAdapterRequest* request,
    v1::UnloadLoraAdapterResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  RunEngineOp(
      reactor, [name = request->lora_name()](Engine& engine) { return engine.UnloadLora(name); },
      [response](const EngineStats&, uint64_t report_sequence) {
        response->set_report_sequence(report_sequence);
      });
  return reactor;
}

void WorkerService::RunEngineOp(
    grpc::ServerUnaryReactor* reactor, EngineLoop::EngineOp op,
    std::function<void(const EngineStats&, uint64_t report_sequence)> on_success) {
  EngineLoop* loop = loop_.load();
  if (loop == nullptr || shut_down_.load()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, loop == nullptr
                                                                    ? "the worker is loading"
                                                                    : "the worker is stopping"));
    return;
  }
  LoadPublisher* publisher = nullptr;  // set before loop_, kept until the service goes
  {
    std::lock_guard<std::mutex> lock(mu_);
    publisher = publisher_.get();
  }
  loop->Post(std::move(op), [reactor, loop, publisher,
                             on_success = std::move(on_success)](const absl::Status& status) {
    // The loop published the op's statistics before calling this.
    if (status.ok()) on_success(loop->Stats(), publisher->NextSequence());
    reactor->Finish(ToGrpcStatus(status));
  });
}

}  // namespace headroom::worker
