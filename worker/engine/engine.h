// Engine: one worker's inference loop body. It owns the KV-cache manager, the scheduler and the
// model, and runs steps: schedule -> build the step's tensors -> forward -> sample -> update.
//
// Not thread-safe: one thread (the engine loop) owns it; request handlers post to that thread.
//
// Tensor parallelism: with a communicator of N > 1 ranks this engine is the group's leader (rank
// 0): it schedules, broadcasts every step's plan (GroupMessage) before running its own shard,
// and samples; the other ranks run a Follower. While idle the loop calls KeepFollowersAlive, and
// StopFollowers when it stops.
// Every device buffer is allocated in Create(); Step() never allocates device memory, which the
// backend's allocation counter makes testable.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kernels/cpu/sampling.h"
#include "kvcache/kv_cache_manager.h"
#include "kvcache/prefix_cache_delta.h"
#include "worker/backend/backend.h"
#include "worker/comm/communicator.h"
#include "worker/engine/allowed_tokens.h"
#include "worker/engine/constraint_compiler.h"
#include "worker/engine/grammar_tokens.h"
#include "worker/engine/group_message.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_schema.h"
#include "worker/engine/regex_matcher.h"
#include "worker/engine/regex_tokens.h"
#include "worker/engine/request.h"
#include "worker/engine/scheduler.h"
#include "worker/engine/structural_tag.h"
#include "worker/model/checkpoint.h"
#include "worker/model/llama_model.h"
#include "worker/model/lora_adapter.h"
#include "worker/model/model_config.h"
#include "worker/model/pooling_config.h"

namespace headroom::worker {

struct EngineOptions {
  // Running sequences at most (--max-num-seqs).
  int32_t max_num_seqs = 256;
  // Tokens per step at most (--max-num-batched-tokens).
  int32_t max_num_batched_tokens = 8192;
  // Prompt + output tokens per sequence at most (--max-model-len); 0 = the model's maximum.
  int32_t max_model_len = 0;
  // Tokens per KV block (--block-size).
  int32_t block_size = 16;
  // KV blocks including the null block (from the memory plan or --num-gpu-blocks-override).
  int32_t num_kv_blocks = 0;
  bool enable_prefix_caching = true;
  // Share of the KV blocks admissions leave free for running sequences to grow into.
  double watermark = 0.01;
  // End-of-sequence token id (-1: none).
  int32_t eos_token_id = -1;
  // The model's other end-of-sequence ids (config.json's / generation_config.json's eos_token_id
  // lists: Llama-3.1's <|eom_id|> and <|eot_id|>, Qwen2.5's <|endoftext|>). As in vLLM they stop
  // a request as its stop_token_ids do (stop_reason names the id), unless it ignores EOS.
  std::vector<int32_t> extra_eos_token_ids = {};
  // Seed of requests that bring none (each still gets its own stream, keyed by request id).
  uint64_t seed = 0;
  // --scheduling-policy.
  SchedulingPolicy scheduling_policy = SchedulingPolicy::kFcfs;
  // The vocabulary's token bytes (Tokenizer::TokenBytes; "" for special tokens and ids without
  // any), for JSON mode and json_schema; null: requests with either are refused.
  std::shared_ptr<const JsonVocabulary> json_vocabulary = nullptr;
  // How the model pools embeddings (its sentence-transformers files; LoadPoolingConfig): a model
  // that pools other than by its last token refuses embedding requests.
  PoolingConfig pooling = {};
  // LoRA adapters (this rank's shards, LoadLoraAdapter), slots 0, 1, ... in this order; uploaded
  // by Create, which then lets go of them.
  std::shared_ptr<const std::vector<LoraAdapter>> lora_adapters = nullptr;
  // Adapters loaded at run time (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING; Engine::LoadLora): > 0
  // reserves this many slots (--max-loras; lora_adapters take the first ones) at rank
  // max_lora_rank on every projection, which the memory plan counts. 0: no run-time loads.
  int32_t lora_slots = 0;
  // The largest rank a run-time load takes (--max-lora-rank).
  int64_t max_lora_rank = 0;
  // vLLM's lora_filesystem_resolver (--lora-resolver-dir, VLLM_LORA_RESOLVER_CACHE_DIR): a request
  // naming an adapter not served loads the PEFT directory <dir>/<name> into a slot first, and an
  // adapter loaded this way gives its slot to another (least recently requested first) once no
  // request of it is queued or running. "": off. Needs lora_slots > 0.
  std::string lora_resolver_dir = {};
};

// The buffer sizes the model of an engine with `options` is allocated for (leader and followers
// alike).
[[nodiscard]] ModelLimits ModelLimitsOf(const EngineOptions& options);
// The adapters of `options` (none when lora_adapters is null).
[[nodiscard]] absl::Span<const LoraAdapter> LoraAdaptersOf(const EngineOptions& options);

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// A prompt token's logprob given the tokens before it, with the top-N alternatives.
struct PromptTokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  // 1 + the tokens the model found more likely (vLLM's rank).
  int32_t rank = 0;
  std::vector<TokenLogprob> top_logprobs;
};

// One token produced by a step.
struct StepToken {
  RequestId id;
  int32_t token = 0;
  // Log-probability of `token` under the model's (unmodified) distribution.
  float logprob = 0.0f;
  // The request's top-N alternatives, most likely first (N = SamplingParams::logprobs).
  std::vector<TokenLogprob> top_logprobs;
  // kNone while the request goes on.
  FinishReason finish = FinishReason::kNone;
  // The request stopped because `token` is EOS or one of its stop tokens (TokenOutput).
  bool stop_token = false;
  // On the request's first token only: when a step first scheduled it (its queue time ends
  // there; a request preempted later keeps its first). InfinitePast on every later token.
  absl::Time first_scheduled = absl::InfinitePast();
  // Times the request has been preempted so far (recompute), on every token.
  int32_t num_preemptions = 0;
  // On the request's first token only, when it asked for prompt logprobs: prompt tokens 1.. in
  // order (the first prompt token has no logprob).
  std::vector<PromptTokenLogprob> prompt_logprobs = {};
  // An embedding request's vector (its only StepToken, whose token means nothing): the
  // final-normed hidden state of its last prompt token, truncated and normalized as it asked.
  std::vector<float> embedding = {};
  // A classification (EmbeddingParams::classify): `embedding` holds the label scores, and this
  // names the highest (config.json's id2label).
  std::string label = {};
};

// A LoRA adapter the engine serves.
struct ServedLoraAdapter {
  int32_t slot = 0;
  std::string name;
  std::string path;
  std::string cache_key;  // LoraAdapter::cache_key
};

struct EngineStats {
  SchedulerStats scheduler;
  // In slot order; shared with the engine, which replaces the list on each load and unload (so
  // publishing the statistics after every step copies no strings).
  std::shared_ptr<const std::vector<ServedLoraAdapter>> lora_adapters =
      std::make_shared<const std::vector<ServedLoraAdapter>>();
  // Requests waiting for a LoRA slot (Engine::AddRequest); scheduler.num_waiting and its demand
  // count them too.
  int32_t lora_slot_waiting = 0;
  // LoRA slots an adapter not served would load into now (free, or holding an idle resolved
  // adapter); 0 while requests wait for one.
  int32_t lora_slots_open = 0;
  kvcache::KvCacheStats kv;
  // Device allocations so far (constant after Create).
  int64_t device_allocations = 0;
  int64_t steps = 0;
};

class Engine {
 public:
  // `weights` is this rank's shard (LoadWeights with a ShardSpec) when `comm` has several ranks;
  // `comm` (null: a group of one) must outlive the engine.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const ModelConfig& config,
                                                        const ModelWeights& weights,
                                                        const EngineOptions& options,
                                                        Backend* backend,
                                                        Communicator* comm = nullptr);

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request (validated by the scheduler: InvalidArgument with the numbers for one that
  // can never fit). Sampling parameters are validated here. A request whose adapter needs a LoRA
  // slot that another adapter's requests in flight hold waits here until one frees (taken: OK;
  // counted as waiting), and may then be refused (TakeRefused).
  [[nodiscard]] absl::Status AddRequest(Request request);
  // Compiles `request`'s json_schema, guided regex and grammar into request->constraints, refusing
  // them as AddRequest would (INVALID_ARGUMENT with the reason). Thread-safe, unlike the rest of
  // the engine: EngineLoop::Submit calls it on the submitting thread, so a new pattern's grouping
  // (~8 ms on a 128k vocabulary) does not hold up the steps.
  [[nodiscard]] absl::Status CompileConstraints(Request* request) {
    return constraints_.Compile(request->sampling, &request->constraints);
  }
  // Drops a request wherever it is. False if unknown or finished.
  bool Abort(RequestId id);
  // Loads the PEFT adapter `spec` into a free slot (options.lora_slots) between steps: this
  // rank's shard here, the followers' in theirs (they read `spec.path` themselves, and all ranks
  // then share whether they could). Requests naming it are taken from now on. No device memory is
  // allocated. `replace` (vLLM's load_inplace): an adapter served under the name gives way to
  // this one, its requests in flight finishing with it in its slot; with no other slot free it is
  // overwritten in its own, if none are in flight. FAILED_PRECONDITION without reserved slots,
  // ALREADY_EXISTS for a name served (without `replace`), RESOURCE_EXHAUSTED when every slot
  // holds an adapter (or one still finishing requests; an idle one loaded on first use from
  // options.lora_resolver_dir gives way instead), LoadLoraAdapter's errors (for this rank,
  // or naming the ranks that failed), UNAVAILABLE when the group failed. On an error the adapter
  // served before still is, but for a failed overwrite of its own slot (the message says so).
  [[nodiscard]] absl::Status LoadLora(const LoraModuleSpec& spec, bool replace = false);
  // Stops serving the adapter `name` (any, --lora-modules ones too): requests naming it are
  // refused from now on; those queued or running finish with it, and its slot takes another
  // adapter only after they have. FAILED_PRECONDITION without reserved slots, NOT_FOUND for a
  // name not served.
  [[nodiscard]] absl::Status UnloadLora(const std::string& name);
  // Runs one step; the tokens it produced (possibly none, e.g. a step of prefill chunks).
  [[nodiscard]] absl::StatusOr<std::vector<StepToken>> Step();

  [[nodiscard]] bool HasWork() const { return scheduler_->HasWork() || !lora_waiting_.empty(); }
  // The requests AddRequest took to wait for a LoRA slot and a step then refused (their adapter
  // did not load, or no slot can free any more), with why, since the last call.
  [[nodiscard]] std::vector<std::pair<RequestId, absl::Status>> TakeRefused() {
    return std::exchange(refused_, {});
  }
  // Tokens the last Step computed (prompt chunks and decodes; 0 for a step with nothing to do).
  [[nodiscard]] int32_t last_step_tokens() const { return last_step_tokens_; }
  // This engine leads a tensor-parallel group (its followers wait for its messages).
  [[nodiscard]] bool leads_group() const { return comm_ != nullptr && comm_->world_size() > 1; }
  // Tells idle followers the leader is alive (their wait for the next plan is bounded by the
  // communicator's timeout) and which sequences ended since the last step. Does nothing while
  // there is work (Step sends the plans). UNAVAILABLE when the group failed.
  [[nodiscard]] absl::Status KeepFollowersAlive();
  // Tells the followers to exit cleanly; nothing is sent after it.
  [[nodiscard]] absl::Status StopFollowers();
  [[nodiscard]] EngineStats Stats() const;
  [[nodiscard]] const EngineOptions& options() const { return options_; }

  // Starts logging the prefix cache's changes (a group's leader publishes them to routers).
  void RecordPrefixCacheEvents();
  // Applies the changes logged since the last call to `tracker` (the whole cache, when the log
  // overflowed).
  void UpdatePrefixCache(kvcache::PrefixCacheTracker* tracker);

 private:
  struct Sampling {
    SamplingParams params;
    uint64_t seed = 0;
    // Tokens generated so far: the RNG counter of the next one.
    int64_t generated = 0;
    // When a step first scheduled the request (InfinitePast: not yet).
    absl::Time first_scheduled = absl::InfinitePast();
    // For the penalties, guided choice and bad words only (empty without them): the prompt
    // (repetition_penalty) and the tokens generated so far.
    std::vector<int32_t> prompt;
    std::vector<int32_t> output;
    // What min_tokens keeps from being sampled early: the stop token ids and EOS.
    std::vector<int32_t> min_tokens_banned;
    // This step's bans where the request has bad words: those of min_tokens while they hold, and
    // the bad words' (rebuilt each step).
    std::vector<int32_t> banned;
    // logit_bias, as the sampler takes it.
    std::vector<int32_t> bias_tokens;
    std::vector<float> bias_values;
    // JSON mode: what the output so far reads as.
    std::optional<JsonMatcher> json;
    // json_schema: the schema as requests share it, and what the output so far reads as against
    // it.
    std::shared_ptr<SharedJsonSchema> schema;
    std::optional<JsonSchemaMatcher> schema_matcher;
    // regex: the pattern as requests share it, and where the output so far leaves its automaton.
    std::shared_ptr<SharedGuidedRegex> regex;
    std::optional<RegexMatcher> regex_matcher;
    // grammar: the grammar as requests share it, and the output so far read against it.
    std::shared_ptr<SharedGrammar> grammar;
    std::optional<GrammarMatcher> grammar_matcher;
    // structural_tag: the tag as requests share it, and the output so far read against it.
    std::shared_ptr<SharedStructuralTag> structural_tag;
    std::optional<StructuralTagMatcher> tag_matcher;
    // JSON mode, json_schema, regex, grammar and structural_tag: this step's token list where it
    // came from a cache (held: the shared cache may drop it while the step runs).
    TokenMaskCache<std::string>::List cached_allowed;
    // constraint_after: the constraint is off until the output shows that text; the output's last
    // bytes meanwhile (fewer than the text's), where it may have begun.
    bool constraint_on = true;
    std::string awaited_tail;
    // Guided choice: the tokens the sampler may take this step (rebuilt each step).
    std::vector<int32_t> choice_allowed;
    // Prompt logprobs computed so far (entry i is prompt token i + 1); a recomputation after a
    // preemption does not add them again.
    std::vector<PromptTokenLogprob> prompt_logprobs;
    // An embedding request: how to shape its vector (Request::embedding).
    std::optional<EmbeddingParams> embedding;
    // Mean or CLS pooling: the sum of the pooled rows' hidden states so far, and how many (reset
    // when a preempted request computes its prompt again from position 0).
    std::vector<double> pooled = {};
    int64_t pooled_count = 0;
  };

  // JSON mode and json_schema: the tokens whose bytes continue the output as `matcher` reads
  // it, and EOS (AddEos) where the document may end (`can_end`: a top-level number).
  template <typename Matcher>
  void JsonTokens(const Matcher& matcher, bool can_end, std::vector<int32_t>* allowed) const {
    JsonAllowedTokens(matcher, *options_.json_vocabulary, allowed);
    AddEos(can_end, allowed);
  }
  // JSON mode and json_schema: this step's tokens for `matcher` (JsonTokens), from `masks` by the
  // matcher's state key (s.cached_allowed holds them). Trying tokens costs 0.4-3 ms on a real
  // vocabulary outside strings and copying ~125k ids of string text ~50 µs inside them, and a
  // generation keeps coming back to the same states; string text's tokens are kept as a 16 KB
  // bitmask (AllowedTokens).
  template <typename Matcher>
  AllowedView JsonStepTokens(const Matcher& matcher, bool can_end,
                             TokenMaskCache<std::string>& masks, Sampling& s) {
    state_key_.clear();
    matcher.AppendStateKey(&state_key_);
    s.cached_allowed = masks.Get(
        state_key_, [&](std::vector<int32_t>* list) { JsonTokens(matcher, can_end, list); });
    return s.cached_allowed->view();
  }
  // A constraint's list gets EOS where the output may end (`can_end`: a regex match that may go
  // on, ...) or no token continues it (a vocabulary without some byte the text needs).
  void AddEos(bool can_end, std::vector<int32_t>* allowed) const {
    if ((can_end || allowed->empty()) && options_.eos_token_id >= 0) {
      allowed->push_back(options_.eos_token_id);
    }
  }
  // Feeds the sampled `token` to `matcher`: true when that ends the request (the value is whole,
  // or the token adds no bytes, the EOS of a dead end or of a document that may end).
  template <typename Matcher>
  bool JsonDone(Matcher& matcher, int32_t token) const {
    const std::string& bytes = options_.json_vocabulary->token_bytes()[static_cast<size_t>(token)];
    return bytes.empty() || !matcher.Feed(bytes) || matcher.Complete();
  }

  // `f(matcher)` for the request's byte matcher (JSON mode, json_schema, regex, grammar or
  // structural tag; each has Feed, Complete and CanEnd); false where it has none.
  template <typename F>
  static bool WithByteMatcher(Sampling& s, F f) {
    if (s.json.has_value()) return f(*s.json);
    if (s.schema_matcher.has_value()) return f(*s.schema_matcher);
    if (s.regex_matcher.has_value()) return f(*s.regex_matcher);
    if (s.grammar_matcher.has_value()) return f(*s.grammar_matcher);
    if (s.tag_matcher.has_value()) return f(*s.tag_matcher);
    return false;
  }

  // constraint_after: reads the sampled `token` while the constraint is off; once the output
  // shows the text, turns it on and feeds it what the token holds past the text. True when that
  // ends the request (the constraint refuses those bytes, or is satisfied by them).
  bool AwaitConstraint(Sampling& s, int32_t token) const;

  // Refuses embedding parameters the model cannot honour (INVALID_ARGUMENT with the sizes).
  absl::Status ValidateEmbedding(const EmbeddingParams& params) const;
  // `hidden` ([hidden_size]) shaped as `params` asks (normalize resolved): truncated, then
  // L2-normalized.
  static std::vector<float> EmbeddingOf(const float* hidden, int64_t hidden_size,
                                        const EmbeddingParams& params);
  // What an embedding request answers for its pooled row `hidden`: the vector (EmbeddingOf), or
  // for a classification the label scores, with their top label in `out.label`.
  void PooledOutput(const float* hidden, const EmbeddingParams& params, StepToken& out) const;

  // The rows of this step's embeddings that pool their prompt (input_.pooled_rows, and the
  // request of each in pooled_owner_).
  void CollectPooledRows(const StepPlan& plan);
  // The model's pooled-rows sink: adds `rows` ([count, hidden]) to their requests' sums.
  void OnPooledRows(size_t first, int64_t count, const float* rows);
  // The model's prompt-logits sink: logprobs of the prompt tokens that `logits` predict.
  absl::Status OnPromptLogits(const StepPlan& plan, size_t first, int64_t count,
                              const float* logits);

  // A LoRA slot: the adapter it holds, and whether requests may name it (an unloaded adapter's
  // slot still serves its requests in flight).
  struct LoraSlot {
    std::string name;
    std::string path;
    std::string cache_key;
    bool serving = false;
    // Loaded on first use from options.lora_resolver_dir (it may give way to another).
    bool resolved = false;
    // lora_requests_ when a request last named it.
    int64_t last_used = 0;
    // A resolved adapter giving its slot up to one that requests wait for: its new requests wait
    // too, so its requests in flight drain (recomputed by each RetryLoraWaiting).
    bool yielding = false;
  };
  // What ResolveLora decided for a request.
  enum class LoraResolution { kResolved, kWaitForSlot };

  Engine(const EngineOptions& options, Backend* backend, Communicator* comm);
  absl::Status Broadcast(const GroupMessage& message);
  // Resolves `request`'s adapter (lora_name, else lora_slot) to its slot and cache key, loading
  // it from options.lora_resolver_dir when it is not served. kWaitForSlot: it must wait for a
  // slot (behind the requests already waiting for one, first come first served), or its adapter
  // is giving its slot up.
  absl::StatusOr<LoraResolution> ResolveLora(Request& request);
  // Loads the adapter `name` from options.lora_resolver_dir, or has the request wait for a slot;
  // NOT_FOUND when the directory has no such adapter, INVALID_ARGUMENT saying why one there did
  // not load, RESOURCE_EXHAUSTED when no slot can ever free (each holds an adapter loaded
  // explicitly).
  absl::StatusOr<LoraResolution> ResolveFromDir(const std::string& name);
  // A slot will free for a request waiting for the adapter `name`: one more resolved adapter
  // with requests in flight gives way (yielding), unless the slots already freeing are enough
  // for the adapters waited for. False when none ever will.
  bool AwaitLoraSlot(const std::string& name, const SchedulerStats& stats);
  // At the start of a step: the requests waiting for a LoRA slot that can go now are queued (or
  // refused into refused_), in order; the rest wait on. UNAVAILABLE when the group failed.
  absl::Status RetryLoraWaiting();
  // EngineStats::lora_slots_open, given the scheduler's `stats`.
  int32_t OpenLoraSlots(const SchedulerStats& stats) const;
  // Queues `request`, its adapter resolved to its slot (the rest of AddRequest).
  absl::Status Enqueue(Request request);
  // LoadLora; `resolved`: the adapter was loaded on first use and may give way to another;
  // `stats`: the scheduler's now (which slots have requests in flight).
  absl::Status LoadLoraInto(const LoraModuleSpec& spec, bool replace, bool resolved,
                            const SchedulerStats& stats);
  // The slot of the least recently requested adapter loaded on first use with no request in
  // flight in `stats` (none: nullopt).
  std::optional<int32_t> IdleResolvedSlot(const SchedulerStats& stats) const;
  // FAILED_PRECONDITION saying how to allow them, without reserved slots.
  absl::Status RuntimeLoraAllowed() const;
  // Writes this rank's shard of `adapter` into `slot`, and has the followers load theirs.
  absl::Status WriteLoraSlot(int32_t slot, const LoraModuleSpec& spec, const LoraAdapter& adapter);
  // The slot a run-time load takes: not serving, and no request in flight in `stats` uses it.
  absl::StatusOr<int32_t> FreeLoraSlot(const SchedulerStats& stats) const;
  // The slot serving the adapter `name` (none: -1).
  int32_t ServingSlot(const std::string& name) const;
  // "a, b" of the adapters served ("none").
  std::string ServedLoraNames() const;
  // Rebuilds served_lora_ from lora_slots_ (after a load or an unload).
  void PublishServedLora();

  EngineOptions options_;
  Backend* const backend_;
  Communicator* const comm_;
  std::unique_ptr<kvcache::KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<LlamaModel> model_;
  // A classifier's score head ([num_labels, hidden], ModelWeights::score); empty otherwise.
  std::vector<float> classifier_head_;
  std::vector<LoraSlot> lora_slots_;  // model_->num_lora_slots() entries
  int64_t lora_requests_ = 0;         // requests that named an adapter so far
  // Requests waiting for a LoRA slot, in arrival order, and the adapters not served that they
  // wait for (this round: RetryLoraWaiting starts it again).
  std::deque<Request> lora_waiting_;
  std::vector<std::string> lora_wanted_;
  std::vector<std::pair<RequestId, absl::Status>> refused_;  // TakeRefused
  // EngineStats::lora_adapters: the slots serving, as of the last change.
  std::shared_ptr<const std::vector<ServedLoraAdapter>> served_lora_;
  absl::flat_hash_map<RequestId, Sampling> sampling_;
  // Per-step buffers, reused: the step's tensors, its logits, the sampler's rows and outputs.
  ForwardInput input_;
  std::vector<float> logits_;
  // The hidden states of the sampler's rows, in steps with an embedding request (else empty).
  std::vector<float> hidden_;
  std::vector<kernels::cpu::SamplingParams> rows_;
  // The request of each sampler row (valid during a step).
  std::vector<Sampling*> row_sampling_;
  // Per sampler row: its constraint is satisfied and the request must end (Scheduler::Update).
  std::vector<uint8_t> constraint_done_;
  // The request of each of input_.pooled_rows (valid during a step).
  std::vector<Sampling*> pooled_owner_;
  // json_schema, guided regex and grammar, compiled (thread-safe: EngineLoop::Submit's callers use
  // it).
  ConstraintCompiler constraints_;
  // JSON mode's token lists by state (JsonStepTokens), for all its requests (one grammar).
  TokenMaskCache<std::string> json_masks_;
  std::string state_key_;  // JsonStepTokens's buffer, reused
  std::vector<int32_t> tokens_;
  std::vector<float> token_logprobs_;
  std::vector<int32_t> top_ids_;
  std::vector<float> top_logprobs_;
  std::string message_;                            // the encoded GroupMessage being broadcast
  std::vector<kvcache::CacheEvent> cache_events_;  // UpdatePrefixCache's buffer, reused
  int32_t last_step_tokens_ = 0;
  int64_t steps_ = 0;
};

}  // namespace headroom::worker
