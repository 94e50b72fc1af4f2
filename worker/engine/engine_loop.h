// EngineLoop: runs an Engine on its own thread, the only thread that touches the scheduler and
// the KV state. Other threads (gRPC handlers) post requests and aborts to its inbox and get
// tokens back through callbacks; nothing they call blocks on a step.
//
// Lifetime: callbacks run on the engine thread and must not block. A request's callback is called
// once per token and a last time with the final token (finish != kNone), or once with an error
// status (refused at admission, or the step failed); after that it is never called again. A
// request refused before it is queued (its schema or pattern does not compile, or the loop is
// stopping) gets its error on the thread that called Submit, before Submit returns. Abort()
// and Stop() call the callbacks of the requests they end with a CANCELLED status.
//
// Tensor-parallel leader: while idle the loop sends its followers a keep-alive every
// kKeepAliveInterval, and on Stop() tells them to exit. A collective that fails (a follower died,
// or hung past the communicator's timeout) fails the group: every request ends UNAVAILABLE (the
// router fails over those that streamed nothing), later submissions are refused with the same
// status, the loop thread ends, and `on_group_failure` runs once on it.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/engine/engine.h"

namespace headroom::worker {

class EngineLoop {
 public:
  using Callback = std::function<void(const absl::StatusOr<StepToken>&)>;
  using FailureCallback = std::function<void(const absl::Status&)>;
  // After each step that computed something, with its token count (engine thread; must not
  // block).
  using StepCallback = std::function<void(int32_t tokens)>;

  static constexpr absl::Duration kKeepAliveInterval = absl::Seconds(1);

  // Starts the engine thread.
  explicit EngineLoop(std::unique_ptr<Engine> engine, FailureCallback on_group_failure = {},
                      StepCallback on_step = {});
  // Stops (cancelling what is left) and joins.
  ~EngineLoop();

  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Compiles `request`'s constraints on the calling thread (Engine::CompileConstraints), then
  // queues it; its tokens (or its refusal) arrive through `callback`.
  void Submit(Request request, Callback callback);
  // Ends a request wherever it is; its callback gets CANCELLED. Unknown ids are ignored.
  void Abort(RequestId id);
  // Cancels every request and ends the thread; idempotent.
  void Stop();

  // Runs `op` on the engine thread between steps (Engine::LoadLora, UnloadLora), then `done`
  // with its status, on that thread (it must not block); the statistics are published before.
  // An UNAVAILABLE status of a group's leader fails the group. After Stop(), `done` gets
  // UNAVAILABLE at once, on this thread.
  using EngineOp = std::function<absl::Status(Engine&)>;
  using OpDone = std::function<void(const absl::Status&)>;
  void Post(EngineOp op, OpDone done);

  // Statistics as of the last step.
  [[nodiscard]] EngineStats Stats() const;
  // How long the step now running has run (zero between steps): a step that never ends is a
  // hung engine (a kernel or a collective that does not return).
  [[nodiscard]] absl::Duration StepRunningFor() const;
  // The prefix cache's changes since the last call, as of the last step (a reset delta, the
  // whole cache, when they outgrew their bound); and the whole cache. For LoadReports.
  [[nodiscard]] kvcache::PrefixCacheDelta TakePrefixCacheDelta();
  [[nodiscard]] kvcache::PrefixCacheDelta PrefixCacheSnapshot() const;

 private:
  struct Submission {
    Request request;
    Callback callback;
  };
  struct PostedOp {
    EngineOp op;
    OpDone done;
  };

  void Run();
  // Moves `item` into `inbox` for the engine thread: OK; or, when the loop is stopping, the
  // group's failure or UNAVAILABLE, leaving `item` to the caller.
  template <typename T>
  absl::Status Enqueue(std::vector<T>& inbox, T& item);
  // Applies the inbox on the engine thread.
  void Drain(std::vector<Submission>& submissions, std::vector<RequestId>& aborts);
  // Runs the posted ops; false when one failed the group (the loop must end).
  bool RunOps(std::vector<PostedOp>& ops);
  void FailAll(const absl::Status& status);
  // The group is unusable: fails everything and ends the loop.
  void GroupFailed(const absl::Status& cause);
  // Publishes the engine's statistics and prefix-cache changes; called with mu_ held.
  void PublishLocked();

  std::unique_ptr<Engine> engine_;
  const FailureCallback on_group_failure_;
  const StepCallback on_step_;
  absl::flat_hash_map<RequestId, Callback> callbacks_;  // engine thread only

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Submission> submissions_;       // guarded by mu_
  std::vector<RequestId> aborts_;             // guarded by mu_
  std::vector<PostedOp> ops_;                 // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  absl::Status failure_;                      // guarded by mu_; set when the group failed
  EngineStats stats_;                         // guarded by mu_
  std::optional<absl::Time> step_started_;    // guarded by mu_; set while a step runs
  kvcache::PrefixCacheTracker prefix_cache_;  // guarded by mu_

  std::thread thread_;
};

}  // namespace headroom::worker
