// Scheduler: continuous batching over the KV-cache manager, one step at a time.
//
// Each step (Schedule), for each priority level in turn (kPriority; kFcfs has one):
//   1. running sequences that decode get one token each, in running order;
//   2. running sequences still prefilling get the next chunk of their prompt, in running order;
//   3. if nothing was preempted in this step, waiting requests are admitted in order (strict: the
//      first one that does not fit stops admission) while running < max_num_seqs and the token
//      budget (max_num_batched_tokens) lasts.
// When a running sequence needs a block that is not free, the last running sequence not yet
// scheduled in this step is preempted (recompute: its blocks are freed and it goes back to the
// waiting queue); if there is none, the sequence preempts itself. Prefix-cached free blocks are
// evicted before anything is preempted (the KV-cache manager does that).
// Order, by policy (vLLM's --scheduling-policy):
//   kFcfs: running in admission order (the newest is preempted first), waiting in arrival order
//          with preempted requests at the front;
//   kPriority: running and waiting both sorted by (priority, arrival): higher priorities (lower
//          values) are scheduled and admitted first, the lowest priority (newest among equals) is
//          preempted first, and a preempted request waits in its (priority, arrival) place. A
//          waiting request does not preempt running ones of lower priority (as in vLLM); it is
//          admitted first once room frees.
// Anti-thrash: a waiting request (fresh or preempted) is admitted only when its *whole* current
// context fits above the watermark, after the blocks that running prefills still need; so a
// resumed request cannot be admitted for one chunk and preempted again the next step.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kvcache/kv_cache_manager.h"
#include "worker/engine/request.h"
#include "worker/engine/step_plan.h"

namespace headroom::worker {

struct SchedulerConfig {
  // Running sequences at most.
  int32_t max_num_seqs = 256;
  // Tokens computed per step at most (prefill chunks + decodes).
  int32_t max_num_batched_tokens = 8192;
  // Prompt + generated tokens of one sequence at most.
  int32_t max_model_len = 0;
  // Token ids are in [0, vocab_size).
  int32_t vocab_size = 0;
  // End-of-sequence token (finishes a request unless ignore_eos); -1 for none.
  int32_t eos_token_id = -1;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
};

// One sampled token, reported by Update().
struct TokenOutput {
  RequestId id;
  int32_t token = 0;
  // kNone while the request goes on; otherwise why it finished with this token.
  FinishReason finish = FinishReason::kNone;
  // Times the request has been preempted so far.
  int32_t num_preemptions = 0;
  // kStop because this token is EOS or one of the request's stop tokens (vLLM's stop_terminated:
  // the router leaves its text out), not because a constraint was satisfied.
  bool stop_token = false;
};

struct SchedulerStats {
  // Sequences holding KV blocks (decoding or prefilling).
  int32_t num_running = 0;
  // Requests waiting for admission, preempted ones included.
  int32_t num_waiting = 0;
  // KV blocks the waiting requests' current contexts would need (ignoring prefix hits).
  int64_t waiting_demand_blocks = 0;
  // Preemptions since start (vllm:num_preemptions).
  int64_t num_preemptions = 0;
  // Of those running and waiting, the requests of each LoRA adapter slot (indexed by slot; only
  // as long as the highest slot in use).
  std::vector<int32_t> lora_running = {};
  std::vector<int32_t> lora_waiting = {};
};

class Scheduler {
 public:
  // `kv` must outlive the scheduler; the scheduler is its only user.
  Scheduler(const SchedulerConfig& config, kvcache::KvCacheManager* kv);

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. InvalidArgument (with the numbers) for one that can never run: empty
  // prompt, out-of-vocabulary token, max_tokens < 1, prompt + max_tokens beyond max_model_len,
  // or more KV blocks than the pool has; and for a priority other than 0 under kFcfs.
  // AlreadyExists for a duplicate id.
  [[nodiscard]] absl::Status AddRequest(Request request);
  // AddRequest's refusals, without queueing (for a request the engine holds back a while).
  [[nodiscard]] absl::Status Validate(const Request& request) const;
  // The KV blocks `request`'s prompt would need (SchedulerStats::waiting_demand_blocks' share
  // of one waiting request).
  [[nodiscard]] int64_t PromptDemandBlocks(const Request& request) const;

  // Decides the next step and assigns its KV slots. An empty plan means there is nothing to do.
  [[nodiscard]] StepPlan Schedule();

  // Applies the tokens sampled for `plan` (one per sequence with sample == true, in plan order):
  // appends them, checks stop conditions and releases finished sequences. A sequence whose
  // `constraint_done` entry (same order; may be empty) is nonzero stops (kStop) unless it
  // finished otherwise: its structured output is whole.
  std::vector<TokenOutput> Update(const StepPlan& plan, absl::Span<const int32_t> sampled,
                                  absl::Span<const uint8_t> constraint_done = {});

  // Removes a request wherever it is and frees its blocks. False if unknown (or finished).
  bool Abort(RequestId id);

  [[nodiscard]] bool HasWork() const { return !running_.empty() || !waiting_.empty(); }
  [[nodiscard]] SchedulerStats Stats() const;
  // Ids in order (admission order for running, queue order for waiting); for tests and logs.
  [[nodiscard]] std::vector<RequestId> RunningIds() const;
  [[nodiscard]] std::vector<RequestId> WaitingIds() const;
  // Generated tokens of a live request (empty if unknown).
  [[nodiscard]] std::vector<int32_t> OutputTokens(RequestId id) const;

 private:
  struct Sequence {
    Request request;
    // Prompt followed by the generated tokens.
    std::vector<int32_t> tokens;
    // Tokens whose KV is in the cache (or is being computed by the current step).
    int32_t num_computed = 0;
    int32_t num_preemptions = 0;
    // Order of arrival (AddRequest), the tie-break among equal priorities.
    uint64_t arrival = 0;
    bool running = false;
    // Step in which it was last scheduled.
    int64_t scheduled_step = -1;

    [[nodiscard]] int32_t num_prompt() const { return static_cast<int32_t>(request.prompt.size()); }
    [[nodiscard]] int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
    [[nodiscard]] int32_t num_output() const { return num_tokens() - num_prompt(); }
  };

  // Schedules the next tokens of running sequence `s`, preempting newer ones if blocks are short.
  // Returns false if `s` had to preempt itself.
  bool ScheduleRunning(Sequence& s, int32_t& budget, StepPlan& plan);
  // Admits waiting requests while they fit (step 3).
  void AdmitWaiting(int32_t& budget, StepPlan& plan);
  void Preempt(Sequence& s, StepPlan& plan);
  // Put `s` into running_ / waiting_ at its place under the policy (`preempted`: it comes back
  // from running, which kFcfs puts at the front of the waiting queue).
  void InsertRunning(Sequence& s);
  void InsertWaiting(Sequence& s, bool preempted);
  // kPriority's order: lower priority values first, then earlier arrivals.
  static bool Before(const Sequence* a, const Sequence* b);
  // Frees `s`'s blocks and forgets it; its id is reported in the next plan's `released`.
  void Release(Sequence& s);
  // Blocks running prefills still need to finish their prompts.
  [[nodiscard]] int32_t ReservedPrefillBlocks() const;
  [[nodiscard]] FinishReason CheckStop(const Sequence& s, int32_t token) const;
  void EmitScheduled(Sequence& s, int32_t num_new, size_t blocks_before, StepPlan& plan);

  const SchedulerConfig config_;
  kvcache::KvCacheManager* const kv_;
  absl::flat_hash_map<RequestId, std::unique_ptr<Sequence>> sequences_;
  std::vector<Sequence*> running_;  // kFcfs: admission order; kPriority: (priority, arrival)
  std::deque<Sequence*> waiting_;   // kFcfs: arrival, preempted first; kPriority: as running_
  std::vector<RequestId> pending_released_;
  uint64_t arrivals_ = 0;
  int64_t step_ = 0;
  int64_t num_preemptions_ = 0;
};

}  // namespace headroom::worker
