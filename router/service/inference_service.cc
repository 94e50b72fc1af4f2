#include "router/service/inference_service.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "router/service/call_metadata.h"
#include "router/service/request_validation.h"
#include "router/tokenizer/incremental_detokenizer.h"
#include "router/tokenizer/stop_matcher.h"

namespace headroom::router {

namespace {

// A worker's token (and its alternatives) as the public API reports it.
void CopyLogprob(const v1::GeneratedToken& token, v1::Logprob& out) {
  out.set_token_id(token.token_id());
  out.set_logprob(token.logprob());
  *out.mutable_top_logprobs() = token.top_logprobs();
  out.set_rank(token.rank());
}

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

std::string BusyMessage(size_t max_queued) {
  return absl::StrCat("the router's request handlers are busy: ", max_queued,
                      " calls wait to be tokenized; retry after 1 s");
}

}  // namespace

class GenerateReactor;

// The Submit call to one worker group for one GenerateReactor (callback client reactor).
// Lifetime: holds itself (self_) from Start until OnDone; holds its parent until then.
class WorkerCall final : public grpc::ClientReadReactor<v1::SubmitResponse> {
 public:
  WorkerCall(std::shared_ptr<GenerateReactor> parent, size_t group)
      : parent_(std::move(parent)), group_(group) {}
  void Start(std::shared_ptr<WorkerCall> self, v1::Worker::Stub* stub, absl::Time deadline) {
    self_ = std::move(self);
    context_.set_deadline(absl::ToChronoTime(deadline));
    stub->async()->Submit(&context_, &request_, this);
    StartRead(&response_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  v1::SubmitRequest& request() { return request_; }

  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  std::shared_ptr<GenerateReactor> parent_;
  const size_t group_;
  std::shared_ptr<WorkerCall> self_;
  grpc::ClientContext context_;
  v1::SubmitRequest request_;
  v1::SubmitResponse response_;
};

// One Generate stream (state machine in inference_service.h).
class GenerateReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse>,
                              public PlacementListener,
                              public std::enable_shared_from_this<GenerateReactor> {
 public:
  GenerateReactor(InferenceService* service, grpc::CallbackServerContext* context)
      : service_(service),
        context_(context),
        id_(static_cast<int64_t>(service->NextRequestId())),
        counts_as_request_(context->client_metadata().find(kOpenAiChoiceMetadataKey) ==
                           context->client_metadata().end()) {
    if (counts_as_request_) service_->open_requests_.fetch_add(1);
  }

  // Holds the reactor until OnDone; called once right after construction, before gRPC sees it.
  void Hold(std::shared_ptr<GenerateReactor> self) { self_ = std::move(self); }

  // Validates and queues; called once after Hold, on the gRPC thread or the service's pool.
  void Begin(const v1::GenerateRequest& request) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_.has_value()) return;  // cancelled while it waited for the pool
    }
    const std::string served = service_->ModelName();
    if (!request.model().empty() && request.model() != served) {
      // A LoRA adapter's name runs the base model with it (vLLM's --lora-modules), as does one a
      // group loads on first use (its NOT_FOUND then says when there is no such adapter).
      if (service_->dispatcher_->lora_adapter_servable(request.model())) {
        lora_adapter_ = request.model();
      } else {
        std::vector<std::string> adapters;
        for (const v1::LoraAdapter& adapter : service_->dispatcher_->reported_lora_adapters()) {
          adapters.push_back(adapter.name());
        }
        Refused(RefusalReason::kUnknownModel);
        End(grpc::Status(
            grpc::StatusCode::NOT_FOUND,
            absl::StrCat("model \"", request.model(), "\" is not served here (", served,
                         adapters.empty()
                             ? std::string()
                             : absl::StrCat("; LoRA adapters: ", absl::StrJoin(adapters, ", ")),
                         ")")));
        return;
      }
    }
    absl::StatusOr<ValidatedRequest> validated = ValidateGenerateRequest(
        request, *service_->options_.tokenizer, service_->dispatcher_->largest_max_model_len());
    if (!validated.ok()) {
      Refused(RefusalReason::kInvalid);
      End(ToGrpc(validated.status()));
      return;
    }
    req_ = *std::move(validated);
    const auto client_deadline = context_->deadline();
    deadline_ = client_deadline >= std::chrono::system_clock::now() + std::chrono::hours(24 * 365)
                    ? absl::Now() + service_->options_.default_timeout
                    : absl::FromChrono(client_deadline);
    const Tokenizer& tokenizer = *service_->options_.tokenizer;
    const size_t context_tokens = std::min<size_t>(req_.prompt.size(), 4);
    detokenizer_.emplace(
        tokenizer, DecodeOptions{.skip_special_tokens = req_.skip_special_tokens},
        std::span<const int32_t>(req_.prompt.data() + req_.prompt.size() - context_tokens,
                                 context_tokens));
    stop_.emplace(StopMatcherOptions{req_.stop, req_.include_stop_str_in_output});
    admitted_at_ = absl::Now();
    const SubmitResult submitted = service_->dispatcher_->Submit(
        id_, req_.max_total_tokens(), deadline_, weak_from_this(), Prefix(), req_.priority);
    if (!submitted.status.ok()) {
      Refused(RefusalReasonOf(submitted.status.code()));
      if (submitted.retry_after_s > 0) {
        context_->AddTrailingMetadata("retry-after", std::to_string(submitted.retry_after_s));
      }
      End(ToGrpc(submitted.status));
      return;
    }
    // Begun on the pool: the client may have cancelled during it, before there was an id to
    // cancel at the dispatcher (OnCancel sets cancelled_ before its Cancel, so one of the two
    // Cancel calls comes after Submit).
    bool cancelled = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled = cancelled_;
    }
    if (cancelled) service_->dispatcher_->Cancel(id_);
  }

  void OnPlaced(size_t group) override {
    std::shared_ptr<WorkerCall> call;
    bool first_placement = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_.has_value()) {
        call = nullptr;
      } else {
        first_placement = tried_.empty();
        group_ = group;
        lost_after_.reset();
        tried_.insert(group);
        call = std::make_shared<WorkerCall>(shared_from_this(), group);
        v1::SubmitRequest& submit = call->request();
        submit.set_request_id(static_cast<uint64_t>(id_));
        submit.mutable_prompt_token_ids()->Assign(req_.prompt.begin(), req_.prompt.end());
        *submit.mutable_sampling() = req_.sampling;
        submit.set_cache_salt(req_.cache_salt);
        submit.set_priority(req_.priority);
        submit.set_lora_name(lora_adapter_);
        if (req_.pooling.has_value()) *submit.mutable_pooling() = *req_.pooling;
        worker_call_ = call;
      }
    }
    if (call == nullptr) {
      service_->dispatcher_->Finished(id_);
      return;
    }
    if (first_placement && service_->options_.metrics != nullptr) {
      service_->options_.metrics->OnPlaced(absl::Now() - admitted_at_);
    }
    service_->Acquire();
    call->Start(call, service_->monitor_->stub(group), deadline_);
  }

  void OnRejected(const absl::Status& status) override {
    Refused(RefusalReasonOf(status.code()));
    End(ToGrpc(status));
  }

  // The group serving this request went silent: give the call up. Its OnWorkerDone then fails
  // over (no token yet) or ends the request UNAVAILABLE saying why.
  void OnGroupLost(size_t group, absl::Duration silence) override {
    std::shared_ptr<WorkerCall> call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_.has_value() || group != group_ || worker_call_ == nullptr) return;
      lost_after_ = silence;
      call = worker_call_;
    }
    call->Cancel();
  }

  // The service's pool is full: refused before tokenization.
  void Busy(size_t max_queued) {
    Refused(RefusalReason::kBusy);
    context_->AddTrailingMetadata("retry-after", "1");
    End(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, BusyMessage(max_queued)));
  }

  [[nodiscard]] InferenceService* service() const { return service_; }

  // A message from the worker (WorkerCall::OnReadDone).
  void OnWorkerMessage(const v1::SubmitResponse& message) {
    bool first_token = false;
    bool abort = false;
    int32_t finished_tokens = -1;  // the output's length once it finished
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_.has_value()) return;
      v1::GenerateResponse out;
      std::vector<int32_t> ids;
      for (const v1::GeneratedToken& token : message.tokens()) {
        ids.push_back(token.token_id());
        out.add_token_ids(token.token_id());
        CopyLogprob(token, *out.add_logprobs());
      }
      for (const v1::GeneratedToken& token : message.prompt_logprobs()) {
        CopyLogprob(token, *out.add_prompt_logprobs());
      }
      if (!ids.empty() && completion_tokens_ == 0) {
        first_token = true;
        if (req_.sampling.has_prompt_logprobs() || req_.return_prompt_token_ids) {
          out.mutable_prompt_token_ids()->Assign(req_.prompt.begin(), req_.prompt.end());
        }
      }
      completion_tokens_ += static_cast<int32_t>(ids.size());
      *out.mutable_embedding() = message.embedding();
      out.set_label(message.label());
      const bool last = message.finish_reason() != v1::FINISH_REASON_UNSPECIFIED;
      // The token that stopped the request (EOS, a stop token) is in token_ids but not in the
      // text unless include_stop_str_in_output, as in vLLM (its text would be "</s>", or a
      // stop token's word).
      const size_t shown = message.stop_token() && !req_.include_stop_str_in_output && !ids.empty()
                               ? ids.size() - 1
                               : ids.size();
      std::string text = detokenizer_->Push(std::span<const int32_t>(ids.data(), shown));
      if (last) text += detokenizer_->Finish();
      // vLLM checks stop strings only once the output is longer than min_tokens.
      StopResult stopped = stop_->Push(text, completion_tokens_ > req_.min_tokens);
      out.set_text(std::move(stopped.text));
      if (stopped.stopped) {
        out.set_finish_reason(v1::FINISH_REASON_STOP);
        out.set_stop_string(req_.stop[*stopped.stop_index]);
        abort = !last;
      } else if (last) {
        *out.mutable_text() += stop_->Finish();
        out.set_finish_reason(message.finish_reason());
        if (message.finish_reason() == v1::FINISH_REASON_STOP && !ids.empty()) {
          const auto& stops = req_.sampling.stop_token_ids();
          if (std::find(stops.begin(), stops.end(), ids.back()) != stops.end()) {
            out.set_stop_token_id(ids.back());
          }
        }
      }
      // Every message says how far the request got (vLLM's continuous_usage_stats reads it).
      out.mutable_usage()->set_prompt_tokens(static_cast<int32_t>(req_.prompt.size()));
      out.mutable_usage()->set_completion_tokens(completion_tokens_);
      if (out.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
        finish_ = grpc::Status::OK;
        finished_tokens = completion_tokens_;
      }
      if (!ids.empty() || out.finish_reason() != v1::FINISH_REASON_UNSPECIFIED ||
          !out.text().empty()) {
        outbox_.push_back(std::move(out));
      }
    }
    if (first_token) service_->dispatcher_->FirstToken(id_);
    if (finished_tokens >= 0 && counts_as_request_ && service_->options_.metrics != nullptr) {
      service_->options_.metrics->OnRequestFinished(service_->ModelName(), 1, finished_tokens);
    }
    if (abort) SendAbort();
    Pump();
  }

  // The worker call ended (WorkerCall::OnDone).
  void OnWorkerDone(const grpc::Status& status, size_t group) {
    service_->dispatcher_->Finished(id_);
    bool failover = false;
    std::optional<grpc::Status> end;
    {
      std::lock_guard<std::mutex> lock(mu_);
      worker_call_.reset();
      if (finish_.has_value()) return;  // already ending (stop string, cancel, final message)
      const grpc::StatusCode code = status.error_code();
      const bool worker_failed = code == grpc::StatusCode::UNAVAILABLE ||
                                 code == grpc::StatusCode::CANCELLED ||
                                 code == grpc::StatusCode::FAILED_PRECONDITION;
      if (status.ok()) {
        end = grpc::Status(grpc::StatusCode::INTERNAL,
                           "the worker ended the stream without a finish reason");
      } else if (worker_failed && completion_tokens_ == 0 && !cancelled_) {
        failover = true;
      } else if (worker_failed && !cancelled_) {
        const std::string why =
            lost_after_.has_value()
                ? absl::StrCat("it sent no load report for ", absl::FormatDuration(*lost_after_),
                               ": hung or cut off")
                : status.error_message();
        end = grpc::Status(
            grpc::StatusCode::UNAVAILABLE,
            absl::StrCat("worker group ", service_->monitor_->address(group), " failed after ",
                         completion_tokens_, " tokens were streamed (", why,
                         "); a partly streamed request is not retried"));
      } else {
        end = status;
        // A worker that cannot take the request now (every LoRA slot's adapter busy): 429 with
        // retry info, as the router's own refusals carry. Added before finish_ is set, so
        // before Finish.
        if (code == grpc::StatusCode::RESOURCE_EXHAUSTED) {
          context_->AddTrailingMetadata("retry-after", "1");
        }
      }
    }
    if (failover) {
      if (service_->options_.metrics != nullptr) service_->options_.metrics->OnFailover();
      service_->dispatcher_->Resubmit(id_, req_.max_total_tokens(), deadline_, tried_,
                                      weak_from_this(), Prefix(), req_.priority);
    } else if (end.has_value()) {
      End(*end);
    }
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok && !finish_.has_value()) finish_ = grpc::Status::CANCELLED;
      if (!ok) outbox_.clear();
    }
    Pump();
  }

  void OnCancel() override {
    std::shared_ptr<WorkerCall> call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      call = worker_call_;
    }
    service_->dispatcher_->Cancel(id_);
    if (call != nullptr) call->Cancel();
    End(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    std::shared_ptr<WorkerCall> call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      call = worker_call_;
    }
    service_->dispatcher_->Cancel(id_);
    if (call != nullptr) call->Cancel();  // e.g. the write failed: nobody reads the rest
    if (counts_as_request_) service_->open_requests_.fetch_sub(1);
    service_->ReleaseOne();
    self_.reset();  // may destroy this
  }

 private:
  // The prompt, for prefix-affine placement.
  PromptPrefix Prefix() const {
    return {.tokens = req_.prompt, .cache_salt = req_.cache_salt, .lora_adapter = lora_adapter_};
  }

  // Ends the stream with `status` after what is already queued (errors drop the queue).
  void End(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_.has_value()) return;
      finish_ = status;
      if (!status.ok()) outbox_.clear();
    }
    Pump();
  }

  void Refused(RefusalReason reason) {
    if (service_->options_.metrics != nullptr) service_->options_.metrics->OnRefused(reason);
  }

  // Starts the next write, or Finish once the outbox is empty and an end is set.
  void Pump() {
    enum { kNothing, kWrite, kFinish } action = kNothing;
    grpc::Status status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (writing_ || finish_called_ || done_) return;
      if (!outbox_.empty()) {
        current_ = std::move(outbox_.front());
        outbox_.pop_front();
        writing_ = true;
        action = kWrite;
      } else if (finish_.has_value()) {
        finish_called_ = true;
        status = *finish_;
        action = kFinish;
      }
    }
    if (action == kWrite) StartWrite(&current_);
    if (action == kFinish) Finish(status);
  }

  // Stop string matched: end the worker's request (its stream then ends CANCELLED).
  void SendAbort() {
    struct AbortCall {
      grpc::ClientContext context;
      v1::AbortRequest request;
      v1::AbortResponse response;
    };
    size_t group = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      group = group_;
    }
    auto* call = new AbortCall();
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    call->request.set_request_id(static_cast<uint64_t>(id_));
    service_->monitor_->stub(group)->async()->Abort(&call->context, &call->request, &call->response,
                                                    [call](const grpc::Status&) { delete call; });
  }

  InferenceService* const service_;
  grpc::CallbackServerContext* const context_;
  const int64_t id_;
  // A request of its own (not one choice of an OpenAI request, which the HTTP front counts).
  const bool counts_as_request_;
  std::shared_ptr<GenerateReactor> self_;
  // Set in Begin (before any other thread sees the reactor), read-only afterwards.
  ValidatedRequest req_;
  // The LoRA adapter the request's model names ("": the base model); set by Begin.
  std::string lora_adapter_;
  absl::Time deadline_;
  absl::Time admitted_at_;  // set in Begin before Submit

  std::mutex mu_;
  std::optional<IncrementalDetokenizer> detokenizer_;  // guarded by mu_ after Begin
  std::optional<StopMatcher> stop_;                    // guarded by mu_ after Begin
  std::deque<v1::GenerateResponse> outbox_;            // guarded by mu_
  v1::GenerateResponse current_;                       // the write in flight
  bool writing_ = false;                               // guarded by mu_
  std::optional<grpc::Status> finish_;                 // guarded by mu_: how it will end
  bool finish_called_ = false;                         // guarded by mu_
  bool done_ = false;                                  // guarded by mu_
  bool cancelled_ = false;                             // guarded by mu_: client cancelled
  int32_t completion_tokens_ = 0;                      // guarded by mu_
  size_t group_ = 0;                                   // guarded by mu_
  // Set when the dispatcher found group_ silent and the worker call was cancelled for it.
  std::optional<absl::Duration> lost_after_;  // guarded by mu_
  absl::flat_hash_set<size_t> tried_;         // guarded by mu_
  std::shared_ptr<WorkerCall> worker_call_;   // guarded by mu_
};

void WorkerCall::OnReadDone(bool ok) {
  if (!ok) return;  // OnDone follows
  parent_->OnWorkerMessage(response_);
  StartRead(&response_);
}

void WorkerCall::OnDone(const grpc::Status& status) {
  std::shared_ptr<GenerateReactor> parent = std::move(parent_);
  InferenceService* service = parent->service();
  parent->OnWorkerDone(status, group_);
  parent.reset();
  service->ReleaseOne();
  self_.reset();  // may destroy this
}

InferenceService::InferenceService(InferenceServiceOptions options, Dispatcher* dispatcher,
                                   GroupMonitor* monitor)
    : options_(std::move(options)),
      dispatcher_(dispatcher),
      monitor_(monitor),
      pool_(options_.handler_threads, options_.max_queued_requests) {
  std::random_device random;
  // Ids start at a random point below 2^62 so two router replicas rarely collide on a worker.
  const uint64_t start = ((uint64_t{random()} << 32) | random()) & ((uint64_t{1} << 62) - 1);
  next_request_id_.store(start + 1);
}

void InferenceService::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  ++live_;
}

void InferenceService::ReleaseOne() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--live_ == 0) idle_.notify_all();
}

bool InferenceService::WaitForIdle(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_until(lock, absl::ToChronoTime(deadline), [this] { return live_ == 0; });
}

std::string InferenceService::ModelName() const {
  if (!options_.served_model_name.empty()) return options_.served_model_name;
  return dispatcher_->reported_model();
}

v1::ListModelsResponse InferenceService::Models() const {
  v1::ListModelsResponse models;
  const std::string name = ModelName();
  if (name.empty()) return models;  // nothing has reported yet
  const int32_t max_model_len = dispatcher_->largest_max_model_len();
  v1::ModelInfo* base = models.add_models();
  base->set_id(name);
  base->set_max_model_len(max_model_len);
  base->set_root(dispatcher_->reported_model());
  for (const v1::LoraAdapter& adapter : dispatcher_->reported_lora_adapters()) {
    v1::ModelInfo* card = models.add_models();
    card->set_id(adapter.name());
    card->set_max_model_len(max_model_len);
    card->set_root(adapter.path());
    card->set_parent(name);
  }
  return models;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* InferenceService::Generate(
    grpc::CallbackServerContext* context, const v1::GenerateRequest* request) {
  Acquire();
  auto reactor = std::make_shared<GenerateReactor>(this, context);
  GenerateReactor* raw = reactor.get();
  raw->Hold(reactor);
  if (request->prompt_case() != v1::GenerateRequest::kText &&
      request->sampling().guided_choice_size() == 0) {
    raw->Begin(*request);  // token ids and nothing to tokenize: validation is cheap
    return raw;
  }
  // A copy: the call's request may be gone if the client cancels while the job waits.
  if (!pool_.Post([reactor, request = *request] { reactor->Begin(request); })) {
    raw->Busy(pool_.max_queued());
  }
  return raw;
}

grpc::ServerUnaryReactor* InferenceService::Tokenize(grpc::CallbackServerContext* context,
                                                     const v1::TokenizeRequest* request,
                                                     v1::TokenizeResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Acquire();
  // `request` and `response` live until Finish: the call cannot end before it.
  const bool queued = pool_.Post([this, reactor, request, response] {
    absl::StatusOr<std::vector<int32_t>> ids = options_.tokenizer->Encode(
        request->text(), {.add_special_tokens = request->add_special_tokens()});
    if (ids.ok()) {
      response->mutable_token_ids()->Assign(ids->begin(), ids->end());
      response->set_max_model_len(dispatcher_->largest_max_model_len());
      reactor->Finish(grpc::Status::OK);
    } else {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   absl::StrCat("text: ", std::string(ids.status().message()))));
    }
    ReleaseOne();
  });
  if (!queued) {
    if (options_.metrics != nullptr) options_.metrics->OnRefused(RefusalReason::kBusy);
    context->AddTrailingMetadata("retry-after", "1");
    reactor->Finish(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, BusyMessage(pool_.max_queued())));
    ReleaseOne();
  }
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::ListModels(grpc::CallbackServerContext* context,
                                                       const v1::ListModelsRequest* /*request*/,
                                                       v1::ListModelsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  *response = Models();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::GetClusterState(
    grpc::CallbackServerContext* context, const v1::GetClusterStateRequest* /*request*/,
    v1::ClusterState* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  *response = dispatcher_->Snapshot();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace headroom::router
