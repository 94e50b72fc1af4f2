#include "worker/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "common/status_macros.h"
#include "kernels/cpu/sampling.h"
#include "worker/engine/bad_words.h"
#include "worker/engine/forward_input_builder.h"
#include "worker/engine/guided_choice.h"

namespace headroom::worker {
namespace {

// Seed of a request that brings none: the engine seed mixed with the request id (splitmix64), so
// unseeded requests get independent, reproducible streams.
uint64_t DefaultSeed(uint64_t engine_seed, RequestId id) {
  uint64_t z = engine_seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(id.value()) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

absl::Status ValidateSamplingParams(const SamplingParams& p, int64_t vocab_size) {
  if (!std::isfinite(p.temperature) || p.temperature < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperature must be a finite number >= 0, got ", p.temperature));
  }
  if (p.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k must be >= 0 (0 disables it), got ", p.top_k));
  }
  if (!(p.top_p > 0 && p.top_p <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("top_p must be in (0, 1], got ", p.top_p));
  }
  if (p.prompt_logprobs < -1 || p.prompt_logprobs > kernels::cpu::kMaxLogprobs) {
    return absl::InvalidArgumentError(absl::StrCat("prompt_logprobs must be in [0, ",
                                                   kernels::cpu::kMaxLogprobs, "], got ",
                                                   p.prompt_logprobs));
  }
  if (p.logprobs < 0 || p.logprobs > kernels::cpu::kMaxLogprobs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "logprobs must be in [0, ", kernels::cpu::kMaxLogprobs, "], got ", p.logprobs));
  }
  if (!(p.repetition_penalty > 0) || !std::isfinite(p.repetition_penalty)) {
    return absl::InvalidArgumentError(
        absl::StrCat("repetition_penalty must be a finite number > 0, got ", p.repetition_penalty));
  }
  for (const auto& [name, value] : {std::pair{"frequency_penalty", p.frequency_penalty},
                                    std::pair{"presence_penalty", p.presence_penalty}}) {
    if (!(value >= -2 && value <= 2)) {
      return absl::InvalidArgumentError(absl::StrCat(name, " must be in [-2, 2], got ", value));
    }
  }
  if (!(p.min_p >= 0 && p.min_p <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("min_p must be in [0, 1], got ", p.min_p));
  }
  for (const auto& [token, bias] : p.logit_bias) {
    if (token < 0 || token >= vocab_size || !std::isfinite(bias)) {
      return absl::InvalidArgumentError(absl::StrCat("logit_bias: token ", token, " (bias ", bias,
                                                     ") must be in [0, ", vocab_size,
                                                     ") with a finite bias"));
    }
  }
  for (size_t i = 0; i < p.allowed_token_ids.size(); ++i) {
    if (p.allowed_token_ids[i] < 0 || p.allowed_token_ids[i] >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("allowed_token_ids[", i,
                                                     "] = ", p.allowed_token_ids[i],
                                                     " is outside [0, ", vocab_size, ")"));
    }
  }
  if (int{!p.guided_choice.empty()} + int{!p.allowed_token_ids.empty()} + int{p.json_object} +
          int{!p.json_schema.empty()} + int{!p.regex.empty()} + int{!p.grammar.empty()} +
          int{!p.structural_tag.empty()} >
      1) {
    return absl::InvalidArgumentError(
        "at most one of guided_choice, allowed_token_ids, json_object, json_schema, regex, "
        "grammar and structural_tag may be set");
  }
  if (!p.constraint_after.empty() && !p.json_object && p.json_schema.empty() && p.regex.empty() &&
      p.grammar.empty() && p.structural_tag.empty()) {
    return absl::InvalidArgumentError(
        "constraint_after needs json_object, json_schema, regex, grammar or structural_tag (the "
        "constraint it delays)");
  }
  for (size_t i = 0; i < p.guided_choice.size(); ++i) {
    if (p.guided_choice[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("guided_choice[", i, "] has no tokens"));
    }
    for (int32_t id : p.guided_choice[i]) {
      if (id < 0 || id >= vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("guided_choice[", i, "]: token ", id,
                                                       " is outside [0, ", vocab_size, ")"));
      }
    }
  }
  for (size_t i = 0; i < p.bad_words.size(); ++i) {
    if (p.bad_words[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("bad_words[", i, "] has no tokens"));
    }
    for (int32_t id : p.bad_words[i]) {
      if (id < 0 || id >= vocab_size) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad_words[", i, "]: token ", id, " is outside [0, ", vocab_size, ")"));
      }
    }
  }
  if (p.min_tokens < 0 || p.min_tokens > p.max_tokens) {
    return absl::InvalidArgumentError(absl::StrCat("min_tokens must be in [0, max_tokens (",
                                                   p.max_tokens, ")], got ", p.min_tokens));
  }
  return absl::OkStatus();
}

// The engine keeps the output so far for the penalties (repetition_penalty reads the prompt too),
// guided choice and bad words.
bool KeepsOutput(const SamplingParams& p) {
  return p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f ||
         p.presence_penalty != 0.0f || !p.guided_choice.empty() || !p.bad_words.empty();
}

// The token that ends a guided choice where a longer choice could go on: EOS unless ignored,
// else the first stop token; -1 when there is none.
int32_t GuidedChoiceEnd(const SamplingParams& p, int32_t eos_token_id) {
  if (!p.ignore_eos && eos_token_id >= 0) return eos_token_id;
  return p.stop_token_ids.empty() ? -1 : p.stop_token_ids.front();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const ModelConfig& config,
                                                       const ModelWeights& weights,
                                                       const EngineOptions& options,
                                                       Backend* backend, Communicator* comm) {
  EngineOptions o = options;
  const int64_t max_context = MaxContextLength(config);
  if (o.max_model_len == 0) o.max_model_len = static_cast<int32_t>(max_context);
  if (o.max_model_len <= 0 || o.max_model_len > max_context) {
    const std::string source = MaxContextSource(config);
    return absl::InvalidArgumentError(
        absl::StrCat("--max-model-len ", o.max_model_len, " is outside [1, ", max_context,
                     "] (the model's ", source.empty() ? "max_position_embeddings" : source, ")"));
  }
  if (o.watermark < 0 || o.watermark >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("watermark must be in [0, 1), got ", o.watermark));
  }
  if (o.json_vocabulary != nullptr &&
      static_cast<int64_t>(o.json_vocabulary->token_bytes().size()) != config.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("the token byte table has ", o.json_vocabulary->token_bytes().size(),
                     " entries for a vocabulary of ", config.vocab_size));
  }
  if (!o.lora_resolver_dir.empty() && o.lora_slots <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lora-resolver-dir ", o.lora_resolver_dir,
        " loads adapters into run-time slots: give --allow-runtime-lora-updating too"));
  }
  std::unique_ptr<Engine> engine(new Engine(o, backend, comm));
  const int32_t usable = o.num_kv_blocks - 1;
  HR_ASSIGN_OR_RETURN(
      engine->kv_, kvcache::KvCacheManager::Create(
                       {.num_blocks = o.num_kv_blocks,
                        .block_size = o.block_size,
                        .enable_prefix_caching = o.enable_prefix_caching,
                        .watermark_blocks = static_cast<int32_t>(std::floor(o.watermark * usable)),
                        .group_windows = KvCacheLayerGroups(config).windows}));
  if (o.max_num_seqs <= 0 || o.max_num_batched_tokens < o.max_num_seqs) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-num-batched-tokens (", o.max_num_batched_tokens,
                     ") must be at least --max-num-seqs (", o.max_num_seqs,
                     ") so every running sequence can decode each step"));
  }
  engine->scheduler_ = std::make_unique<Scheduler>(
      SchedulerConfig{.max_num_seqs = o.max_num_seqs,
                      .max_num_batched_tokens = o.max_num_batched_tokens,
                      .max_model_len = o.max_model_len,
                      .vocab_size = static_cast<int32_t>(config.vocab_size),
                      .eos_token_id = o.eos_token_id,
                      .policy = o.scheduling_policy},
      engine->kv_.get());
  HR_ASSIGN_OR_RETURN(engine->model_, LlamaModel::Create(config, weights, ModelLimitsOf(o), backend,
                                                         comm, LoraAdaptersOf(o)));
  engine->lora_slots_.resize(static_cast<size_t>(engine->model_->num_lora_slots()));
  for (size_t slot = 0; slot < LoraAdaptersOf(o).size(); ++slot) {
    const LoraAdapter& adapter = LoraAdaptersOf(o)[slot];
    // An adapter built in memory has no files to key it: its name does, apart from the files'.
    engine->lora_slots_[slot] = {
        .name = adapter.name,
        .path = adapter.path,
        .cache_key = adapter.cache_key.empty() ? "name:" + adapter.name : adapter.cache_key,
        .serving = true};
  }
  engine->classifier_head_ = weights.score.data;
  engine->PublishServedLora();
  engine->options_.lora_adapters = nullptr;  // on the device now
  return engine;
}

absl::Span<const LoraAdapter> LoraAdaptersOf(const EngineOptions& options) {
  if (options.lora_adapters == nullptr) return {};
  return *options.lora_adapters;
}

ModelLimits ModelLimitsOf(const EngineOptions& options) {
  return {.max_num_batched_tokens = options.max_num_batched_tokens,
          .max_num_seqs = options.max_num_seqs,
          .max_model_len = options.max_model_len,
          .num_kv_blocks = options.num_kv_blocks,
          .block_size = options.block_size,
          .lora_slots = options.lora_slots,
          .lora_rank = options.max_lora_rank};
}

Engine::Engine(const EngineOptions& options, Backend* backend, Communicator* comm)
    : options_(options), backend_(backend), comm_(comm), constraints_(options_.json_vocabulary) {}

absl::Status Engine::Broadcast(const GroupMessage& message) {
  message_ = EncodeGroupMessage(message);
  return comm_->BroadcastBytes(&message_, 0);
}

absl::Status Engine::KeepFollowersAlive() {
  if (!leads_group() || HasWork()) return absl::OkStatus();  // the next Step speaks to them
  // Idle: an empty plan carries the releases since the last step (the last finished request's
  // blocks), so the followers' tables never keep a finished sequence.
  StepPlan plan = scheduler_->Schedule();
  HR_CHECK(plan.empty());
  if (plan.released.empty()) return Broadcast({.kind = GroupMessageKind::kKeepAlive, .plan = {}});
  return Broadcast({.kind = GroupMessageKind::kPlan, .plan = std::move(plan)});
}

absl::Status Engine::StopFollowers() {
  if (!leads_group()) return absl::OkStatus();
  return Broadcast({.kind = GroupMessageKind::kStop, .plan = {}});
}

namespace {

// sentence-transformers' pooling_mode_* keys headroom pools by.
std::optional<Pooling> PoolingOf(const std::string& mode) {
  if (mode == "lasttoken") return Pooling::kLast;
  if (mode == "mean_tokens") return Pooling::kMean;
  if (mode == "cls_token") return Pooling::kCls;
  return std::nullopt;
}

// What a classifier answers instead of `request` ("generation", "embeddings").
absl::Status ClassifierRefuses(const ModelConfig& config, const char* request) {
  return absl::InvalidArgumentError(absl::StrCat(
      "model \"", config.source, "\" is a sequence classifier (", config.classifier->architecture,
      "): it answers classification requests (/classify), not ", request));
}

}  // namespace

absl::Status Engine::ValidateEmbedding(const EmbeddingParams& params) const {
  const ModelConfig& config = model_->config();
  if (params.classify != config.classifier.has_value()) {
    return params.classify ? absl::InvalidArgumentError(absl::StrCat(
                                 "model \"", config.source, "\" is not a sequence classifier (",
                                 config.architecture,
                                 "): classification needs a *ForSequenceClassification checkpoint"))
                           : ClassifierRefuses(config, "embeddings");
  }
  if (params.classify && params.dimensions != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dimensions (", params.dimensions,
                     ") shapes embeddings; a classification answers one score per label (",
                     config.classifier->num_labels(), ")"));
  }
  if (!PoolingOf(options_.pooling.mode).has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this model pools its embeddings by ", options_.pooling.mode, " (", options_.pooling.source,
        "); headroom pools by the last token, the mean or the first (CLS) token only, which "
        "would not give this model's vectors"));
  }
  if (params.dimensions == 0) return absl::OkStatus();
  // vLLM's checks and words: truncating a model not trained for it gives poor embeddings.
  if (!config.is_matryoshka) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model \"", config.source,
        "\" does not support matryoshka representation, changing output dimensions will lead "
        "to poor results (config.json sets neither is_matryoshka nor matryoshka_dimensions)"));
  }
  if (params.dimensions < 1 || params.dimensions > config.hidden_size) {
    return absl::InvalidArgumentError(absl::StrCat("dimensions must be in [1, ", config.hidden_size,
                                                   "] (the model's hidden "
                                                   "size), got ",
                                                   params.dimensions));
  }
  const std::vector<int64_t>& sizes = config.matryoshka_dimensions;
  if (!sizes.empty() && std::find(sizes.begin(), sizes.end(), params.dimensions) == sizes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model \"", config.source, "\" only supports [", absl::StrJoin(sizes, ", "),
                     "] matryoshka dimensions, use other output dimensions will lead to poor "
                     "results; got ",
                     params.dimensions));
  }
  return absl::OkStatus();
}

std::vector<float> Engine::EmbeddingOf(const float* hidden, int64_t hidden_size,
                                       const EmbeddingParams& params) {
  const int64_t size = params.dimensions > 0 ? params.dimensions : hidden_size;
  std::vector<float> out(hidden, hidden + size);
  if (params.normalize.value_or(true)) {
    double squares = 0;
    for (const float v : out) squares += static_cast<double>(v) * static_cast<double>(v);
    // As torch.nn.functional.normalize (sentence-transformers' Normalize): the norm clamped to
    // 1e-12, so a zero vector stays zero.
    const double norm = std::max(std::sqrt(squares), 1e-12);
    for (float& v : out) v = static_cast<float>(static_cast<double>(v) / norm);
  }
  return out;
}

void Engine::PooledOutput(const float* hidden, const EmbeddingParams& params,
                          StepToken& out) const {
  const ModelConfig& config = model_->config();
  if (!params.classify) {
    out.embedding = EmbeddingOf(hidden, config.hidden_size, params);
    return;
  }
  const ClassifierActivation activation = !params.normalize.value_or(true)
                                              ? ClassifierActivation::kNone
                                          : params.score_pair ? config.classifier->score_activation
                                                              : config.classifier->activation;
  out.embedding = ClassScores(*config.classifier, classifier_head_,
                              {hidden, static_cast<size_t>(config.hidden_size)}, activation);
  out.label = TopLabel(*config.classifier, out.embedding);
}

absl::Status Engine::AddRequest(Request request) {
  if (!request.embedding.has_value() && model_->config().classifier.has_value()) {
    return ClassifierRefuses(model_->config(), "generation");
  }
  if (request.embedding.has_value()) {
    HR_RETURN_IF_ERROR(ValidateEmbedding(*request.embedding));
    if (!request.embedding->normalize.has_value()) {
      // A classification activates unless told not to (vLLM's use_activation); an embedding is
      // normalized as the model's files say.
      request.embedding->normalize = request.embedding->classify || options_.pooling.normalize;
    }
    request.embedding->pooling = *PoolingOf(options_.pooling.mode);
    // One greedy token from the last row: the cheapest pass through the sampler, whose token is
    // dropped (the scheduler ends an embedding after it).
    request.sampling = SamplingParams{};
    request.sampling.temperature = 0.0f;
    request.sampling.max_tokens = 1;
  }
  HR_RETURN_IF_ERROR(ValidateSamplingParams(request.sampling, model_->config().vocab_size));
  if (!request.lora_name.empty()) {
    // Refused before an adapter loads for it, or before it waits for a slot.
    HR_RETURN_IF_ERROR(scheduler_->Validate(request));
  }
  if (std::any_of(lora_waiting_.begin(), lora_waiting_.end(),
                  [&](const Request& r) { return r.id == request.id; })) {
    return absl::AlreadyExistsError(absl::StrCat("request ", request.id.value(), " exists"));
  }
  HR_ASSIGN_OR_RETURN(const LoraResolution lora, ResolveLora(request));
  if (lora == LoraResolution::kWaitForSlot) {
    lora_waiting_.push_back(std::move(request));
    return absl::OkStatus();
  }
  return Enqueue(std::move(request));
}

absl::Status Engine::Enqueue(Request request) {
  if (!request.sampling.ignore_eos) {
    std::vector<int32_t>& stops = request.sampling.stop_token_ids;
    for (int32_t id : options_.extra_eos_token_ids) {
      if (std::find(stops.begin(), stops.end(), id) == stops.end()) stops.push_back(id);
    }
  }
  const SamplingParams& p = request.sampling;
  Sampling sampling{.params = p,
                    .seed = p.seed.value_or(DefaultSeed(options_.seed, request.id)),
                    .generated = 0,
                    .first_scheduled = absl::InfinitePast(),
                    .prompt = {},
                    .output = {},
                    .min_tokens_banned = {},
                    .banned = {},
                    .bias_tokens = {},
                    .bias_values = {},
                    .json = std::nullopt,
                    .schema = nullptr,
                    .schema_matcher = std::nullopt,
                    .regex = nullptr,
                    .regex_matcher = std::nullopt,
                    .grammar = nullptr,
                    .grammar_matcher = std::nullopt,
                    .structural_tag = nullptr,
                    .tag_matcher = std::nullopt,
                    .cached_allowed = nullptr,
                    .constraint_on = p.constraint_after.empty(),
                    .awaited_tail = {},
                    .choice_allowed = {},
                    .prompt_logprobs = {},
                    .embedding = request.embedding,
                    .pooled = {},
                    .pooled_count = 0};
  if (p.repetition_penalty != 1.0f || p.prompt_logprobs >= 0) sampling.prompt = request.prompt;
  if (p.prompt_logprobs >= 0) sampling.prompt_logprobs.reserve(request.prompt.size());
  if (p.min_tokens > 0) {
    // Ids outside the vocabulary can never be sampled anyway (and the sampler refuses them).
    const int64_t vocab = model_->config().vocab_size;
    for (int32_t id : p.stop_token_ids) {
      if (id >= 0 && id < vocab) sampling.min_tokens_banned.push_back(id);
    }
    if (!p.ignore_eos && options_.eos_token_id >= 0 && options_.eos_token_id < vocab) {
      sampling.min_tokens_banned.push_back(options_.eos_token_id);
    }
  }
  if (KeepsOutput(p)) sampling.output.reserve(static_cast<size_t>(p.max_tokens));
  for (const auto& [token, bias] : p.logit_bias) {
    sampling.bias_tokens.push_back(token);
    sampling.bias_values.push_back(bias);
  }
  HR_RETURN_IF_ERROR(constraints_.Compile(p, &request.constraints));
  if (p.json_object) sampling.json.emplace();
  if (request.constraints.schema != nullptr) {
    sampling.schema = request.constraints.schema;
    sampling.schema_matcher.emplace(sampling.schema->schema.get());
  }
  if (request.constraints.regex != nullptr) {
    sampling.regex = request.constraints.regex;
    sampling.regex_matcher.emplace(&sampling.regex->regex);
  }
  if (request.constraints.grammar != nullptr) {
    sampling.grammar = request.constraints.grammar;
    sampling.grammar_matcher.emplace(sampling.grammar->grammar);
  }
  if (request.constraints.structural_tag != nullptr) {
    sampling.structural_tag = request.constraints.structural_tag;
    sampling.tag_matcher.emplace(sampling.structural_tag->tag.get());
  }
  const RequestId id = request.id;
  HR_RETURN_IF_ERROR(scheduler_->AddRequest(std::move(request)));
  sampling_[id] = std::move(sampling);
  return absl::OkStatus();
}

bool Engine::AwaitConstraint(Sampling& s, int32_t token) const {
  const std::string& after = s.params.constraint_after;
  s.awaited_tail += options_.json_vocabulary->token_bytes()[static_cast<size_t>(token)];
  const size_t at = s.awaited_tail.find(after);
  if (at == std::string::npos) {
    // Keep only what may still be the text's beginning.
    if (s.awaited_tail.size() >= after.size()) {
      s.awaited_tail.erase(0, s.awaited_tail.size() - (after.size() - 1));
    }
    return false;
  }
  s.constraint_on = true;
  const std::string rest = s.awaited_tail.substr(at + after.size());
  s.awaited_tail.clear();
  if (rest.empty()) return false;
  // The token ran past the text into what the constraint reads; it was sampled free, so the
  // constraint may refuse it (a dead end: the request stops there).
  return WithByteMatcher(s,
                         [&](auto& matcher) { return !matcher.Feed(rest) || matcher.Complete(); });
}

bool Engine::Abort(RequestId id) {
  const auto waiting = std::find_if(lora_waiting_.begin(), lora_waiting_.end(),
                                    [id](const Request& r) { return r.id == id; });
  if (waiting != lora_waiting_.end()) {
    lora_waiting_.erase(waiting);
    return true;
  }
  sampling_.erase(id);
  return scheduler_->Abort(id);
}

absl::StatusOr<std::vector<StepToken>> Engine::Step() {
  HR_RETURN_IF_ERROR(RetryLoraWaiting());
  StepPlan plan = scheduler_->Schedule();
  if (leads_group() && (!plan.empty() || !plan.released.empty())) {
    // Followers apply the same plan to their block tables before the step's collectives.
    GroupMessage message{.kind = GroupMessageKind::kPlan, .plan = std::move(plan)};
    HR_RETURN_IF_ERROR(Broadcast(message));
    plan = std::move(message.plan);
  }
  last_step_tokens_ = plan.num_tokens;
  if (plan.empty()) return std::vector<StepToken>{};
  ++steps_;
  // One pass over the step's sequences: when each was first scheduled, and the sampler's row of
  // each that samples.
  const absl::Time step_start = absl::Now();
  rows_.clear();
  row_sampling_.clear();
  bool embeds = false;
  bool pools = false;  // some embedding of the step pools its prompt (mean, CLS)
  for (const ScheduledSequence& seq : plan.sequences) {
    Sampling& s = sampling_.at(seq.id);
    if (s.first_scheduled == absl::InfinitePast()) s.first_scheduled = step_start;
    pools = pools || (s.embedding.has_value() && s.embedding->pools_prompt());
    if (!seq.sample) continue;
    row_sampling_.push_back(&s);
    embeds = embeds || s.embedding.has_value();
    // min_tokens' bans while they hold; with bad words, a copy the words' bans are added to.
    std::span<const int32_t> banned;
    if (s.generated < s.params.min_tokens) banned = s.min_tokens_banned;
    if (!s.params.bad_words.empty()) {
      s.banned.assign(banned.begin(), banned.end());
      AppendBadWordBans(s.params.bad_words, s.output, &s.banned);
      banned = s.banned;
    }
    AllowedView allowed{.ids = s.params.allowed_token_ids};
    if (!s.constraint_on) {
      // Free until constraint_after shows (AwaitConstraint).
    } else if (!s.params.guided_choice.empty()) {
      GuidedChoiceAllowed(s.params.guided_choice, s.output,
                          GuidedChoiceEnd(s.params, options_.eos_token_id), &s.choice_allowed);
      allowed = {.ids = s.choice_allowed};
    } else if (s.json.has_value()) {
      allowed = JsonStepTokens(*s.json, /*can_end=*/false, json_masks_, s);
    } else if (s.schema_matcher.has_value()) {
      allowed = JsonStepTokens(*s.schema_matcher, s.schema_matcher->CanEnd(), s.schema->masks, s);
    } else if (s.regex_matcher.has_value()) {
      s.cached_allowed =
          s.regex->masks.Get(*s.regex_matcher, [this, &s](std::vector<int32_t>* list) {
            RegexAllowedTokens(*s.regex_matcher, s.regex->classes, *options_.json_vocabulary, list);
            AddEos(s.regex_matcher->CanEnd(), list);
          });
      allowed = s.cached_allowed->view();
    } else if (s.grammar_matcher.has_value()) {
      s.cached_allowed =
          s.grammar->Allowed(*s.grammar_matcher, [this, &s](std::vector<int32_t>* list) {
            GrammarAllowedTokens(*s.grammar_matcher, s.grammar->trie, list);
            AddEos(s.grammar_matcher->CanEnd(), list);
          });
      allowed = s.cached_allowed->view();
    } else if (s.tag_matcher.has_value()) {
      allowed = JsonStepTokens(*s.tag_matcher, s.tag_matcher->CanEnd(), s.structural_tag->masks, s);
    }
    rows_.push_back({.temperature = s.params.temperature,
                     .top_k = s.params.top_k,
                     .top_p = s.params.top_p,
                     .seed = s.seed,
                     .counter = static_cast<uint64_t>(s.generated),
                     .num_logprobs = s.params.logprobs,
                     .repetition_penalty = s.params.repetition_penalty,
                     .frequency_penalty = s.params.frequency_penalty,
                     .presence_penalty = s.params.presence_penalty,
                     .min_p = s.params.min_p,
                     .prompt_tokens = s.prompt.data(),
                     .num_prompt_tokens = static_cast<int64_t>(s.prompt.size()),
                     .output_tokens = s.output.data(),
                     .num_output_tokens = static_cast<int64_t>(s.output.size()),
                     .banned_tokens = banned.data(),
                     .num_banned_tokens = static_cast<int64_t>(banned.size()),
                     .bias_tokens = s.bias_tokens.data(),
                     .bias_values = s.bias_values.data(),
                     .num_bias = static_cast<int64_t>(s.bias_tokens.size()),
                     .allowed_tokens = allowed.ids.data(),
                     .num_allowed_tokens = static_cast<int64_t>(allowed.ids.size()),
                     .allowed_bitmask = allowed.bitmask.data(),
                     .allowed_bitmask_words = static_cast<int64_t>(allowed.bitmask.size())});
  }
  BuildForwardInput(
      plan, [this](RequestId id, int32_t group) { return kv_->BlockTable(id, group); },
      kv_->num_groups(), options_.block_size, model_->max_blocks_per_seq(), &input_);
  input_.pooled_rows.clear();
  if (pools) CollectPooledRows(plan);
  HR_RETURN_IF_ERROR(model_->Forward(
      input_, &logits_,
      [this, &plan](size_t first, int64_t count, const float* logits) {
        return OnPromptLogits(plan, first, count, logits);
      },
      embeds ? &hidden_ : nullptr,
      [this](size_t first, int64_t count, const float* rows) {
        OnPooledRows(first, count, rows);
        return absl::OkStatus();
      }));

  const size_t num_rows = rows_.size();
  tokens_.resize(num_rows);
  token_logprobs_.resize(num_rows);
  top_ids_.resize(num_rows * kernels::cpu::kMaxLogprobs);
  top_logprobs_.resize(num_rows * kernels::cpu::kMaxLogprobs);
  HR_RETURN_IF_ERROR(kernels::cpu::Sample(logits_.data(), static_cast<int64_t>(num_rows),
                                          model_->config().vocab_size, rows_.data(),
                                          {.token_ids = tokens_.data(),
                                           .token_logprobs = token_logprobs_.data(),
                                           .top_ids = top_ids_.data(),
                                           .top_logprobs = top_logprobs_.data()}));

  std::vector<StepToken> out;
  // The sampled token joins the output the penalties and guided choice read (a request that
  // finishes now drops it with its Sampling). A satisfied constraint ends the request: a whole
  // guided choice that no other extends; a closed JSON object, or a token that adds no bytes
  // (the EOS of a dead end) or one the matcher refuses.
  constraint_done_.assign(num_rows, 0);
  for (size_t i = 0; i < num_rows; ++i) {
    Sampling& s = *row_sampling_[i];
    if (KeepsOutput(s.params)) s.output.push_back(tokens_[i]);
    if (!s.constraint_on) {
      constraint_done_[i] = AwaitConstraint(s, tokens_[i]) ? 1 : 0;
    } else if (!s.params.guided_choice.empty()) {
      constraint_done_[i] = GuidedChoiceComplete(s.params.guided_choice, s.output) ? 1 : 0;
    } else {
      const int32_t token = tokens_[i];
      constraint_done_[i] =
          WithByteMatcher(s, [&](auto& matcher) { return JsonDone(matcher, token); }) ? 1 : 0;
    }
  }
  const std::vector<TokenOutput> updates = scheduler_->Update(plan, tokens_, constraint_done_);
  HR_CHECK(updates.size() == num_rows);  // no request can vanish during a step
  for (size_t i = 0; i < num_rows; ++i) {
    StepToken& t = out.emplace_back();
    t.id = updates[i].id;
    t.token = updates[i].token;
    t.logprob = token_logprobs_[i];
    for (int32_t j = 0; j < rows_[i].num_logprobs; ++j) {
      const size_t at = i * kernels::cpu::kMaxLogprobs + static_cast<size_t>(j);
      t.top_logprobs.push_back({top_ids_[at], top_logprobs_[at]});
    }
    t.finish = updates[i].finish;
    t.stop_token = updates[i].stop_token;
    t.num_preemptions = updates[i].num_preemptions;
    Sampling& s = sampling_.at(t.id);
    if (s.generated == 0) {
      t.first_scheduled = s.first_scheduled;
      t.prompt_logprobs = std::move(s.prompt_logprobs);
    }
    if (s.embedding.has_value()) {
      const int64_t hidden = model_->config().hidden_size;
      if (s.embedding->pools_prompt()) {
        // The mean of the pooled rows (CLS pooling pooled one row, the first).
        std::vector<float> pooled(static_cast<size_t>(hidden));
        for (size_t d = 0; d < pooled.size(); ++d) {
          pooled[d] = static_cast<float>(s.pooled[d] / static_cast<double>(s.pooled_count));
        }
        PooledOutput(pooled.data(), *s.embedding, t);
      } else {
        PooledOutput(hidden_.data() + static_cast<int64_t>(i) * hidden, *s.embedding, t);
      }
    }
    if (t.finish == FinishReason::kNone) {
      ++s.generated;
    } else {
      sampling_.erase(t.id);
    }
  }
  return out;
}

void Engine::CollectPooledRows(const StepPlan& plan) {
  pooled_owner_.clear();
  const auto hidden = static_cast<size_t>(model_->config().hidden_size);
  for (size_t q = 0; q < plan.sequences.size(); ++q) {
    const ScheduledSequence& seq = plan.sequences[q];
    Sampling& s = sampling_.at(seq.id);
    if (!s.embedding.has_value() || !s.embedding->pools_prompt()) continue;
    if (seq.num_computed_tokens == 0) {  // the prompt's first chunk, or its recomputation
      s.pooled.assign(hidden, 0.0);
      s.pooled_count = 0;
    }
    // Such a request takes no prefix-cache hits (Scheduler), so its first chunk is at position 0.
    HR_CHECK_MSG(!s.pooled.empty(), "a pooled prompt's first chunk is past position 0");
    const int32_t begin = input_.query_start[q];
    const int32_t end = s.embedding->pooling == Pooling::kCls
                            ? (seq.num_computed_tokens == 0 ? begin + 1 : begin)
                            : input_.query_start[q + 1];
    for (int32_t row = begin; row < end; ++row) {
      input_.pooled_rows.push_back(row);
      pooled_owner_.push_back(&s);
    }
  }
}

void Engine::OnPooledRows(size_t first, int64_t count, const float* rows) {
  const int64_t hidden = model_->config().hidden_size;
  for (int64_t r = 0; r < count; ++r) {
    Sampling& s = *pooled_owner_[first + static_cast<size_t>(r)];
    const float* row = rows + r * hidden;
    for (int64_t d = 0; d < hidden; ++d) {
      s.pooled[static_cast<size_t>(d)] += static_cast<double>(row[d]);
    }
    ++s.pooled_count;
  }
}

absl::Status Engine::OnPromptLogits(const StepPlan& plan, size_t first, int64_t count,
                                    const float* logits) {
  const int64_t vocab = model_->config().vocab_size;
  for (int64_t r = 0; r < count; ++r) {
    const int32_t row = input_.prompt_logits_rows[first + static_cast<size_t>(r)];
    // The row's sequence: the last whose rows start at or before it.
    const auto seq = std::upper_bound(input_.query_start.begin(), input_.query_start.end(), row) -
                     input_.query_start.begin() - 1;
    Sampling& s = sampling_.at(plan.sequences[static_cast<size_t>(seq)].id);
    const int64_t position = input_.positions[static_cast<size_t>(row)];
    // Logits at `position` predict the token after it; positions done before a preemption are
    // computed again but not reported twice.
    if (position != static_cast<int64_t>(s.prompt_logprobs.size())) continue;
    const int32_t target = s.prompt[static_cast<size_t>(position) + 1];
    float logprob = 0.0f;
    int32_t rank = 0;
    int32_t top_ids[kernels::cpu::kMaxLogprobs];
    float top_logprobs[kernels::cpu::kMaxLogprobs];
    HR_RETURN_IF_ERROR(kernels::cpu::TokenLogprobs(logits + r * vocab, 1, vocab, &target,
                                                   s.params.prompt_logprobs,
                                                   {.token_logprobs = &logprob,
                                                    .top_ids = top_ids,
                                                    .top_logprobs = top_logprobs,
                                                    .target_ranks = &rank}));
    PromptTokenLogprob& out = s.prompt_logprobs.emplace_back();
    out.token = target;
    out.logprob = logprob;
    out.rank = rank;
    for (int32_t j = 0; j < s.params.prompt_logprobs; ++j) {
      out.top_logprobs.push_back({top_ids[j], top_logprobs[j]});
    }
  }
  return absl::OkStatus();
}

void Engine::RecordPrefixCacheEvents() {
  // The log is taken after every step; in one step a block is rarely evicted and cached more than
  // once each, so two pools' worth is ample (beyond it UpdatePrefixCache re-reads the index).
  const size_t capacity = 2 * static_cast<size_t>(options_.num_kv_blocks);
  kv_->RecordCacheEvents(capacity);
  cache_events_.reserve(capacity);
}

void Engine::UpdatePrefixCache(kvcache::PrefixCacheTracker* tracker) {
  cache_events_.clear();
  if (kv_->TakeCacheEvents(&cache_events_)) {
    tracker->Apply(cache_events_);
  } else {
    tracker->Resync(kv_->pool().CachedHashes());
  }
}

EngineStats Engine::Stats() const {
  EngineStats stats{.scheduler = scheduler_->Stats(),
                    .lora_adapters = served_lora_,
                    .lora_slot_waiting = static_cast<int32_t>(lora_waiting_.size()),
                    .kv = kv_->Stats(),
                    .device_allocations = backend_->num_allocations(),
                    .steps = steps_};
  // Requests waiting for a LoRA slot wait as those in the scheduler's queue do.
  stats.lora_slots_open = OpenLoraSlots(stats.scheduler);
  stats.scheduler.num_waiting += stats.lora_slot_waiting;
  for (const Request& r : lora_waiting_) {
    stats.scheduler.waiting_demand_blocks += scheduler_->PromptDemandBlocks(r);
  }
  return stats;
}

}  // namespace headroom::worker
