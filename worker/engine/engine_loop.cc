#include "worker/engine/engine_loop.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace headroom::worker {

EngineLoop::EngineLoop(std::unique_ptr<Engine> engine)
    : engine_(std::move(engine)), stats_(engine_->Stats()), thread_([this] { Run(); }) {}

EngineLoop::~EngineLoop() { Stop(); }

void EngineLoop::Submit(Request request, Callback callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      submissions_.push_back({std::move(request), std::move(callback)});
      wake_.notify_one();
      return;
    }
  }
  callback(absl::UnavailableError("the engine is stopping"));
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

void EngineLoop::Run() {
  std::vector<Submission> submissions;
  std::vector<RequestId> aborts;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] {
        return stopping_ || !submissions_.empty() || !aborts_.empty() || engine_->HasWork();
      });
      if (stopping_) break;
      submissions.swap(submissions_);
      aborts.swap(aborts_);
    }
    Drain(submissions, aborts);
    submissions.clear();
    aborts.clear();
    if (!engine_->HasWork()) {
      // Aborts (and refusals) change the statistics without a step: publish them too.
      std::lock_guard<std::mutex> lock(mu_);
      stats_ = engine_->Stats();
      continue;
    }
    absl::StatusOr<std::vector<StepToken>> tokens = engine_->Step();
    {
      // Publish before delivering: whoever sees a request's last token also sees its blocks
      // freed and it gone from the running count.
      std::lock_guard<std::mutex> lock(mu_);
      stats_ = engine_->Stats();
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending.swap(submissions_);
  }
  for (Submission& s : pending) s.callback(absl::CancelledError("the engine stopped"));
  FailAll(absl::CancelledError("the engine stopped"));
}

}  // namespace headroom::worker
