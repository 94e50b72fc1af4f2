#include "worker/engine/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status_macros.h"

namespace headroom::worker {

using kvcache::BlockId;
using kvcache::PrefixHit;

Scheduler::Scheduler(const SchedulerConfig& config, kvcache::KvCacheManager* kv)
    : config_(config), kv_(kv) {
  HR_CHECK(kv_ != nullptr);
  HR_CHECK(config_.max_num_seqs > 0 && config_.max_model_len > 0 && config_.vocab_size > 0);
  HR_CHECK_MSG(config_.max_num_batched_tokens >= config_.max_num_seqs,
               "every running sequence must be able to decode in one step");
}

absl::Status Scheduler::Validate(const Request& request) const {
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  // An embedding generates nothing (the engine samples one token from its last row and drops it;
  // that token never needs a KV slot).
  const bool embedding = request.embedding.has_value();
  const int64_t max_tokens = embedding ? 0 : request.sampling.max_tokens;
  if (prompt == 0) return absl::InvalidArgumentError("the prompt is empty");
  for (const int32_t token : request.prompt) {
    if (token < 0 || token >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token id ", token, " is out of vocabulary (size ", config_.vocab_size, ")"));
    }
  }
  if (max_tokens < 1 && !embedding) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_tokens must be at least 1, got ", max_tokens));
  }
  if (embedding && prompt > config_.max_model_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("this model's maximum context length is ", config_.max_model_len,
                     " tokens; the input to embed has ", prompt, " tokens"));
  }
  if (prompt + max_tokens > config_.max_model_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("this model's maximum context length is ", config_.max_model_len,
                     " tokens; the request needs ", prompt + max_tokens, " (", prompt,
                     " in the prompt, ", max_tokens, " max_tokens)"));
  }
  // With a sliding window a sequence holds at most its window's blocks plus a chunk's.
  const int32_t chunk = config_.max_num_batched_tokens;
  const int64_t usable = kv_->pool().num_usable_blocks();
  const int64_t needed = kv_->PeakBlocks(prompt + max_tokens, chunk);
  const int64_t prompt_blocks = kv_->PeakBlocks(prompt, chunk);
  if (needed > usable || prompt_blocks + kv_->watermark_blocks() > usable) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request can never fit the KV cache: ", prompt + max_tokens, " tokens (",
                     prompt, " prompt + ", max_tokens, " max_tokens) need ", needed, " blocks of ",
                     kv_->block_size(), " tokens, the pool has ", usable, " blocks (",
                     kv_->watermark_blocks(), " held back for running sequences)"));
  }
  if (request.priority != 0 && config_.policy != SchedulingPolicy::kPriority) {
    return absl::InvalidArgumentError(
        absl::StrCat("priority ", request.priority,
                     " needs priority scheduling; the worker schedules first come, first served "
                     "(start it with --scheduling-policy priority)"));
  }
  if (sequences_.contains(request.id)) {
    return absl::AlreadyExistsError(absl::StrCat("request ", request.id.value(), " exists"));
  }
  return absl::OkStatus();
}

int64_t Scheduler::PromptDemandBlocks(const Request& request) const {
  return kv_->PeakBlocks(static_cast<int64_t>(request.prompt.size()),
                         config_.max_num_batched_tokens);
}

absl::Status Scheduler::AddRequest(Request request) {
  HR_RETURN_IF_ERROR(Validate(request));
  auto s = std::make_unique<Sequence>();
  s->tokens = request.prompt;
  s->request = std::move(request);
  s->arrival = arrivals_++;
  Sequence& added = *s;
  sequences_.emplace(added.request.id, std::move(s));
  InsertWaiting(added, /*preempted=*/false);
  return absl::OkStatus();
}

StepPlan Scheduler::Schedule() {
  StepPlan plan;
  plan.step = ++step_;
  plan.released = std::move(pending_released_);
  pending_released_.clear();
  int32_t budget = config_.max_num_batched_tokens;

  // Per priority level (one level under kFcfs), in running_'s order: decodes first, then prefill
  // chunks. So every sequence still unscheduled when blocks run short (the victims, taken from
  // the back) has no higher priority than any sequence scheduled before it.
  for (size_t begin = 0; begin < running_.size() && budget > 0;) {
    const int32_t priority = running_[begin]->request.priority;
    for (const bool decodes : {true, false}) {
      for (size_t i = begin;
           i < running_.size() && running_[i]->request.priority == priority && budget > 0; ++i) {
        Sequence& s = *running_[i];
        const bool is_decode = s.num_computed >= s.num_prompt();
        if (s.scheduled_step == step_ || is_decode != decodes) continue;
        if (!ScheduleRunning(s, budget, plan)) --i;  // `s` left running_; index i holds the next
      }
    }
    while (begin < running_.size() && running_[begin]->request.priority == priority) ++begin;
  }
  if (plan.preempted.empty()) AdmitWaiting(budget, plan);
  for (const ScheduledSequence& seq : plan.sequences) {
    plan.num_tokens += static_cast<int32_t>(seq.token_ids.size());
  }
  return plan;
}

bool Scheduler::ScheduleRunning(Sequence& s, int32_t& budget, StepPlan& plan) {
  const int32_t n = std::min(s.num_tokens() - s.num_computed, budget);
  while (kv_->BlocksToAppend(s.request.id, n) > kv_->num_free_blocks()) {
    // The newest running sequence not yet scheduled in this step.
    Sequence* victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      if ((*it)->scheduled_step != step_) {
        victim = *it;
        break;
      }
    }
    HR_CHECK(victim != nullptr);  // `s` itself is unscheduled
    Preempt(*victim, plan);
    if (victim == &s) return false;
  }
  const size_t blocks_before = kv_->BlockTable(s.request.id).size();
  const absl::Status status =
      kv_->Append(s.request.id, absl::MakeConstSpan(s.tokens).subspan(
                                    static_cast<size_t>(s.num_computed), static_cast<size_t>(n)));
  HR_CHECK_MSG(status.ok(), "append after making room failed");
  EmitScheduled(s, n, blocks_before, plan);
  budget -= n;
  return true;
}

void Scheduler::EmitScheduled(Sequence& s, int32_t num_new, size_t blocks_before, StepPlan& plan) {
  ScheduledSequence& out = plan.sequences.emplace_back();
  out.id = s.request.id;
  out.num_computed_tokens = s.num_computed;
  const auto first = s.tokens.begin() + s.num_computed;
  out.token_ids.assign(first, first + num_new);
  out.new_block_ids.clear();
  out.num_released_blocks.clear();
  for (int32_t g = 0; g < kv_->num_groups(); ++g) {
    const absl::Span<const BlockId> table = kv_->BlockTable(s.request.id, g);
    out.new_block_ids.insert(out.new_block_ids.end(),
                             table.begin() + static_cast<std::ptrdiff_t>(blocks_before),
                             table.end());
    out.num_released_blocks.push_back(kv_->NumReleasedBlocks(s.request.id, g));
  }
  s.num_computed += num_new;
  out.sample = s.num_computed == s.num_tokens();
  if (s.request.sampling.prompt_logprobs >= 0) out.prompt_logprobs_end = s.num_prompt() - 1;
  out.lora_slot = s.request.lora_slot;
  s.scheduled_step = step_;
}

int32_t Scheduler::ReservedPrefillBlocks() const {
  int32_t reserved = 0;
  for (const Sequence* s : running_) {
    if (s->num_computed < s->num_tokens()) {
      reserved +=
          kv_->BlocksToReach(s->request.id, s->num_tokens(), config_.max_num_batched_tokens);
    }
  }
  return reserved;
}

void Scheduler::AdmitWaiting(int32_t& budget, StepPlan& plan) {
  int32_t reserved = ReservedPrefillBlocks();
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    Sequence& s = *waiting_.front();
    // A request that wants prompt logprobs, or pools its prompt's hidden states, computes its
    // whole prompt (cached blocks have neither).
    const bool whole_prompt =
        s.request.sampling.prompt_logprobs >= 0 ||
        (s.request.embedding.has_value() && s.request.embedding->pools_prompt());
    const PrefixHit hit = kv_->FindCachedPrefix(s.tokens, s.request.cache_salt,
                                                /*lookup=*/!whole_prompt, s.request.lora_key);
    // The whole current context must fit (anti-thrash), beyond what admitted prefills still need;
    // behind a sliding window that is the most blocks it holds at once. Either bounds what the
    // first chunk's admission below takes.
    const int32_t whole =
        std::min(kv_->BlocksToAdmit(hit, s.num_tokens()), kv_->PeakBlocks(s.num_tokens(), budget));
    if (!kv_->CanAdmit(whole + reserved)) break;
    const int32_t first = std::min(s.num_tokens(), hit.num_cached_tokens + budget);
    const absl::Status status = kv_->AddSequence(
        s.request.id, hit, absl::MakeConstSpan(s.tokens).subspan(0, static_cast<size_t>(first)));
    HR_CHECK_MSG(status.ok(), "admission after the fit check failed");
    waiting_.pop_front();
    s.running = true;
    InsertRunning(s);
    s.num_computed = hit.num_cached_tokens;
    EmitScheduled(s, first - hit.num_cached_tokens, 0, plan);
    budget -= first - hit.num_cached_tokens;
    reserved += kv_->BlocksToReach(s.request.id, s.num_tokens(), config_.max_num_batched_tokens);
  }
}

void Scheduler::Preempt(Sequence& s, StepPlan& plan) {
  kv_->Free(s.request.id);
  running_.erase(std::find(running_.begin(), running_.end(), &s));
  s.running = false;
  s.num_computed = 0;
  ++s.num_preemptions;
  ++num_preemptions_;
  InsertWaiting(s, /*preempted=*/true);
  plan.released.push_back(s.request.id);
  plan.preempted.push_back(s.request.id);
}

bool Scheduler::Before(const Sequence* a, const Sequence* b) {
  if (a->request.priority != b->request.priority) return a->request.priority < b->request.priority;
  return a->arrival < b->arrival;
}

void Scheduler::InsertRunning(Sequence& s) {
  if (config_.policy == SchedulingPolicy::kFcfs) {
    running_.push_back(&s);
  } else {
    running_.insert(std::upper_bound(running_.begin(), running_.end(), &s, Before), &s);
  }
}

void Scheduler::InsertWaiting(Sequence& s, bool preempted) {
  if (config_.policy == SchedulingPolicy::kFcfs) {
    if (preempted) {
      waiting_.push_front(&s);
    } else {
      waiting_.push_back(&s);
    }
  } else {
    waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), &s, Before), &s);
  }
}

FinishReason Scheduler::CheckStop(const Sequence& s, int32_t token) const {
  if (s.request.embedding.has_value()) return FinishReason::kStop;  // its one pass is done (vLLM)
  const SamplingParams& p = s.request.sampling;
  if (token == config_.eos_token_id && !p.ignore_eos) return FinishReason::kStop;
  if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) !=
      p.stop_token_ids.end()) {
    return FinishReason::kStop;
  }
  if (s.num_output() >= p.max_tokens || s.num_tokens() >= config_.max_model_len) {
    return FinishReason::kLength;
  }
  return FinishReason::kNone;
}

std::vector<TokenOutput> Scheduler::Update(const StepPlan& plan, absl::Span<const int32_t> sampled,
                                           absl::Span<const uint8_t> constraint_done) {
  std::vector<TokenOutput> outputs;
  size_t next = 0;
  for (const ScheduledSequence& seq : plan.sequences) {
    if (!seq.sample) continue;
    HR_CHECK_MSG(next < sampled.size(), "fewer sampled tokens than sequences to sample");
    const bool done = next < constraint_done.size() && constraint_done[next] != 0;
    const int32_t token = sampled[next++];
    auto it = sequences_.find(seq.id);
    if (it == sequences_.end() || !it->second->running) continue;  // aborted during the step
    Sequence& s = *it->second;
    s.tokens.push_back(token);
    FinishReason finish = CheckStop(s, token);
    // CheckStop stops only on tokens; a constraint may also end on the EOS it offered (under
    // ignore_eos too), whose text is no more part of the answer.
    const bool stop_token =
        finish == FinishReason::kStop || (done && token == config_.eos_token_id);
    if (finish == FinishReason::kNone && done) finish = FinishReason::kStop;
    outputs.push_back({.id = seq.id,
                       .token = token,
                       .finish = finish,
                       .num_preemptions = s.num_preemptions,
                       .stop_token = stop_token});
    if (finish != FinishReason::kNone) Release(s);
  }
  HR_CHECK_MSG(next == sampled.size(), "more sampled tokens than sequences to sample");
  return outputs;
}

void Scheduler::Release(Sequence& s) {
  const RequestId id = s.request.id;
  if (s.running) {
    kv_->Free(id);
    running_.erase(std::find(running_.begin(), running_.end(), &s));
    pending_released_.push_back(id);
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &s));
  }
  sequences_.erase(id);
}

bool Scheduler::Abort(RequestId id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return false;
  Release(*it->second);
  return true;
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats stats;
  stats.num_running = static_cast<int32_t>(running_.size());
  stats.num_waiting = static_cast<int32_t>(waiting_.size());
  for (const Sequence* s : waiting_)
    stats.waiting_demand_blocks += kv_->PeakBlocks(s->num_tokens(), config_.max_num_batched_tokens);
  stats.num_preemptions = num_preemptions_;
  const auto count = [](const auto& sequences, std::vector<int32_t>& per_slot) {
    for (const Sequence* s : sequences) {
      const int32_t slot = s->request.lora_slot;
      if (slot < 0) continue;
      if (per_slot.size() <= static_cast<size_t>(slot))
        per_slot.resize(static_cast<size_t>(slot) + 1);
      ++per_slot[static_cast<size_t>(slot)];
    }
  };
  count(running_, stats.lora_running);
  count(waiting_, stats.lora_waiting);
  return stats;
}

std::vector<RequestId> Scheduler::RunningIds() const {
  std::vector<RequestId> ids;
  for (const Sequence* s : running_) ids.push_back(s->request.id);
  return ids;
}

std::vector<RequestId> Scheduler::WaitingIds() const {
  std::vector<RequestId> ids;
  for (const Sequence* s : waiting_) ids.push_back(s->request.id);
  return ids;
}

std::vector<int32_t> Scheduler::OutputTokens(RequestId id) const {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return {};
  const Sequence& s = *it->second;
  return {s.tokens.begin() + s.num_prompt(), s.tokens.end()};
}

}  // namespace headroom::worker
