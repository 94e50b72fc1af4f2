#include "worker/engine/engine_loop.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace headroom::worker {

EngineLoop::EngineLoop(std::unique_ptr<Engine> engine, FailureCallback on_group_failure,
                       StepCallback on_step)
    : engine_(std::move(engine)),
      on_group_failure_(std::move(on_group_failure)),
      on_step_(std::move(on_step)),
      stats_(engine_->Stats()),
      // Pending changes of more distinct hashes than 4 pools' worth become a whole-cache reset.
      prefix_cache_(4 * static_cast<size_t>(engine_->options().num_kv_blocks)) {
  engine_->RecordPrefixCacheEvents();
  // Last: from here the engine is the thread's (but for CompileConstraints, which is
  // thread-safe).
  thread_ = std::thread([this] { Run(); });
}

EngineLoop::~EngineLoop() { Stop(); }

template <typename T>
absl::Status EngineLoop::Enqueue(std::vector<T>& inbox, T& item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    return failure_.ok() ? absl::UnavailableError("the engine is stopping") : failure_;
  }
  inbox.push_back(std::move(item));
  wake_.notify_one();
  return absl::OkStatus();
}

void EngineLoop::Submit(Request request, Callback callback) {
  // Here, not on the engine thread: a new guided regex costs milliseconds to build.
  if (absl::Status compiled = engine_->CompileConstraints(&request); !compiled.ok()) {
    callback(compiled);
    return;
  }
  Submission submission{std::move(request), std::move(callback)};
  if (const absl::Status refusal = Enqueue(submissions_, submission); !refusal.ok()) {
    submission.callback(refusal);
  }
}

void EngineLoop::Post(EngineOp op, OpDone done) {
  PostedOp posted{std::move(op), std::move(done)};
  if (const absl::Status refusal = Enqueue(ops_, posted); !refusal.ok()) posted.done(refusal);
}

bool EngineLoop::RunOps(std::vector<PostedOp>& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const absl::Status status = ops[i].op(*engine_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      PublishLocked();
    }
    ops[i].done(status);
    if (engine_->leads_group() && status.code() == absl::StatusCode::kUnavailable) {
      GroupFailed(status);
      for (size_t j = i + 1; j < ops.size(); ++j) ops[j].done(status);
      ops.clear();
      return false;
    }
  }
  ops.clear();
  return true;
}

void EngineLoop::Abort(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  aborts_.push_back(id);
  wake_.notify_one();
}

void EngineLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

EngineStats EngineLoop::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

absl::Duration EngineLoop::StepRunningFor() const {
  std::lock_guard<std::mutex> lock(mu_);
  return step_started_.has_value() ? absl::Now() - *step_started_ : absl::ZeroDuration();
}

kvcache::PrefixCacheDelta EngineLoop::TakePrefixCacheDelta() {
  std::lock_guard<std::mutex> lock(mu_);
  return prefix_cache_.TakeDelta();
}

kvcache::PrefixCacheDelta EngineLoop::PrefixCacheSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prefix_cache_.Snapshot();
}

void EngineLoop::PublishLocked() {
  stats_ = engine_->Stats();
  engine_->UpdatePrefixCache(&prefix_cache_);
}

void EngineLoop::Drain(std::vector<Submission>& submissions, std::vector<RequestId>& aborts) {
  for (Submission& s : submissions) {
    const RequestId id = s.request.id;
    if (callbacks_.contains(id)) {
      s.callback(absl::AlreadyExistsError(absl::StrCat("request ", id.value(), " is running")));
      continue;
    }
    if (absl::Status status = engine_->AddRequest(std::move(s.request)); !status.ok()) {
      s.callback(status);
      continue;
    }
    callbacks_.emplace(id, std::move(s.callback));
  }
  for (const RequestId id : aborts) {
    auto it = callbacks_.find(id);
    if (it == callbacks_.end()) continue;
    engine_->Abort(id);
    it->second(absl::CancelledError(absl::StrCat("request ", id.value(), " was aborted")));
    callbacks_.erase(it);
  }
}

void EngineLoop::FailAll(const absl::Status& status) {
  for (auto& [id, callback] : callbacks_) {
    engine_->Abort(id);
    callback(status);
  }
  callbacks_.clear();
}

void EngineLoop::GroupFailed(const absl::Status& cause) {
  const absl::Status failure = absl::UnavailableError(
      absl::StrCat("the tensor-parallel worker group failed: ", cause.message()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    failure_ = failure;
  }
  FailAll(failure);
  if (on_group_failure_) on_group_failure_(failure);
}

void EngineLoop::Run() {
  std::vector<Submission> submissions;
  std::vector<RequestId> aborts;
  std::vector<PostedOp> ops;
  while (true) {
    bool idle = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto ready = [&] {
        return stopping_ || !submissions_.empty() || !aborts_.empty() || !ops_.empty() ||
               engine_->HasWork();
      };
      if (engine_->leads_group()) {
        idle = !wake_.wait_for(lock, absl::ToChronoSeconds(kKeepAliveInterval), ready);
      } else {
        wake_.wait(lock, ready);
      }
      if (stopping_) break;
      submissions.swap(submissions_);
      aborts.swap(aborts_);
      ops.swap(ops_);
    }
    // Before the submissions: a request posted after a load may name the adapter.
    if (!RunOps(ops)) break;
    if (idle) {
      if (absl::Status alive = engine_->KeepFollowersAlive(); !alive.ok()) {
        GroupFailed(alive);
        break;
      }
      continue;
    }
    Drain(submissions, aborts);
    submissions.clear();
    aborts.clear();
    if (!engine_->HasWork()) {
      // Aborts (and refusals) change the statistics without a step: publish them too.
      std::lock_guard<std::mutex> lock(mu_);
      PublishLocked();
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      step_started_ = absl::Now();
    }
    absl::StatusOr<std::vector<StepToken>> tokens = engine_->Step();
    {
      // Publish before delivering: whoever sees a request's last token also sees its blocks
      // freed and it gone from the running count.
      std::lock_guard<std::mutex> lock(mu_);
      step_started_.reset();
      PublishLocked();
    }
    if (!tokens.ok() && engine_->leads_group() &&
        tokens.status().code() == absl::StatusCode::kUnavailable) {
      GroupFailed(tokens.status());  // a collective failed: the group cannot go on
      break;
    }
    if (tokens.ok() && on_step_ && engine_->last_step_tokens() > 0) {
      on_step_(engine_->last_step_tokens());
    }
    // Requests that waited for a LoRA slot and were refused when the step retried them.
    for (auto& [id, refusal] : engine_->TakeRefused()) {
      auto it = callbacks_.find(id);
      if (it == callbacks_.end()) continue;
      it->second(refusal);
      callbacks_.erase(it);
    }
    if (!tokens.ok()) {
      FailAll(absl::InternalError(absl::StrCat("engine step failed: ", tokens.status().message())));
    } else {
      for (const StepToken& token : *tokens) {
        auto it = callbacks_.find(token.id);
        if (it == callbacks_.end()) continue;
        it->second(token);
        if (token.finish != FinishReason::kNone) callbacks_.erase(it);
      }
    }
  }
  // Stopping: whatever is queued or running is cancelled, never silently dropped.
  std::vector<Submission> pending;
  std::vector<PostedOp> pending_ops;
  absl::Status failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending.swap(submissions_);
    pending_ops.swap(ops_);
    failure = failure_;
  }
  const absl::Status ended = failure.ok() ? absl::CancelledError("the engine stopped") : failure;
  for (Submission& s : pending) s.callback(ended);
  for (PostedOp& op : pending_ops)
    op.done(failure.ok() ? absl::UnavailableError("the engine stopped") : failure);
  FailAll(ended);
  if (failure.ok()) (void)engine_->StopFollowers();  // followers exit cleanly
}

}  // namespace headroom::worker
