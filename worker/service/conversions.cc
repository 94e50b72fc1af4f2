#include "worker/service/conversions.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace headroom::worker {

absl::StatusOr<Request> RequestFromProto(const v1::SubmitRequest& proto, RequestId id,
                                         const SamplingDefaults& defaults) {
  Request request;
  request.id = id;
  request.lora_name = proto.lora_name();  // the engine resolves it (Engine::AddRequest)
  request.prompt.assign(proto.prompt_token_ids().begin(), proto.prompt_token_ids().end());
  request.cache_salt = proto.cache_salt();
  request.priority = proto.priority();
  if (proto.has_pooling()) {
    EmbeddingParams& embedding = request.embedding.emplace();
    embedding.dimensions = proto.pooling().dimensions();
    if (proto.pooling().has_normalize()) embedding.normalize = proto.pooling().normalize();
    embedding.classify = proto.pooling().classify();
    embedding.score_pair = proto.pooling().score_pair();
  }
  const v1::TokenSamplingParams& in = proto.sampling();
  SamplingParams& out = request.sampling;
  // Unset: the model's default (generation_config.json), else vLLM's (SamplingParams).
  out.temperature =
      in.has_temperature() ? in.temperature() : defaults.temperature.value_or(out.temperature);
  if (in.top_k() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k must be >= 0 (0 = all), got ", in.top_k()));
  }
  out.top_k = in.has_top_k() ? in.top_k() : defaults.top_k.value_or(out.top_k);
  out.top_p = in.has_top_p() ? in.top_p() : defaults.top_p.value_or(out.top_p);
  if (in.has_seed()) out.seed = in.seed();
  if (in.has_max_tokens()) out.max_tokens = in.max_tokens();
  out.stop_token_ids.assign(in.stop_token_ids().begin(), in.stop_token_ids().end());
  out.ignore_eos = in.ignore_eos();
  if (in.logprobs() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("logprobs must be >= 0, got ", in.logprobs()));
  }
  out.logprobs = in.logprobs();
  out.repetition_penalty = in.has_repetition_penalty()
                               ? in.repetition_penalty()
                               : defaults.repetition_penalty.value_or(out.repetition_penalty);
  out.frequency_penalty = in.frequency_penalty();
  out.presence_penalty = in.presence_penalty();
  out.min_p = in.has_min_p() ? in.min_p() : defaults.min_p.value_or(out.min_p);
  out.min_tokens = in.min_tokens();
  if (in.has_prompt_logprobs()) out.prompt_logprobs = in.prompt_logprobs();  // engine checks range
  for (const auto& [token, bias] : in.logit_bias()) out.logit_bias.emplace_back(token, bias);
  std::sort(out.logit_bias.begin(), out.logit_bias.end());  // a map's order is unspecified
  out.allowed_token_ids.assign(in.allowed_token_ids().begin(), in.allowed_token_ids().end());
  out.json_object = in.json_object();
  out.json_schema = in.json_schema();
  out.regex = in.regex();
  out.grammar = in.grammar();
  out.structural_tag = in.structural_tag();
  out.constraint_after = in.constraint_after();
  for (const v1::TokenSequence& choice : in.guided_choice()) {
    out.guided_choice.emplace_back(choice.ids().begin(), choice.ids().end());
  }
  for (const v1::TokenSequence& word : in.bad_words()) {
    out.bad_words.emplace_back(word.ids().begin(), word.ids().end());
  }
  return request;
}

v1::FinishReason FinishReasonToProto(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return v1::FINISH_REASON_UNSPECIFIED;
    case FinishReason::kStop:
      return v1::FINISH_REASON_STOP;
    case FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case FinishReason::kAbort:
      return v1::FINISH_REASON_ABORT;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

namespace {

void SetGenerated(int32_t token, float logprob, const std::vector<TokenLogprob>& top_logprobs,
                  v1::GeneratedToken& out) {
  out.set_token_id(token);
  out.set_logprob(logprob);
  for (const TokenLogprob& top : top_logprobs) {
    v1::TokenLogprob* alt = out.add_top_logprobs();
    alt->set_token_id(top.token);
    alt->set_logprob(top.logprob);
  }
}

}  // namespace

void AppendToken(const StepToken& token, v1::SubmitResponse& response) {
  if (!token.embedding.empty()) {
    response.mutable_embedding()->Assign(token.embedding.begin(), token.embedding.end());
    response.set_label(token.label);
    response.set_finish_reason(FinishReasonToProto(token.finish));
    return;
  }
  for (const PromptTokenLogprob& p : token.prompt_logprobs) {
    v1::GeneratedToken& out = *response.add_prompt_logprobs();
    SetGenerated(p.token, p.logprob, p.top_logprobs, out);
    out.set_rank(p.rank);
  }
  SetGenerated(token.token, token.logprob, token.top_logprobs, *response.add_tokens());
  if (token.finish != FinishReason::kNone) {
    response.set_finish_reason(FinishReasonToProto(token.finish));
    response.set_stop_token(token.stop_token);
  }
}

void FillLoadReport(const EngineStats& stats, v1::LoadReport& report) {
  report.clear_lora_adapters();
  for (const ServedLoraAdapter& adapter : *stats.lora_adapters) {
    v1::LoraAdapter* reported = report.add_lora_adapters();
    reported->set_name(adapter.name);
    reported->set_path(adapter.path);
    reported->set_cache_key(adapter.cache_key);
  }
  report.set_total_blocks(stats.kv.num_usable_blocks);
  report.set_free_blocks(stats.kv.num_free_blocks);
  report.set_evictable_blocks(stats.kv.num_evictable_blocks);
  report.set_running(stats.scheduler.num_running);
  report.set_waiting(stats.scheduler.num_waiting);
  report.set_waiting_demand_blocks(stats.scheduler.waiting_demand_blocks);
  report.set_lora_slots_open(stats.lora_slots_open);
}

v1::PrefixCacheDelta ToProto(const kvcache::PrefixCacheDelta& delta) {
  v1::PrefixCacheDelta proto;
  proto.set_reset(delta.reset);
  proto.set_added(kvcache::PackBlockHashes(delta.added));
  proto.set_removed(kvcache::PackBlockHashes(delta.removed));
  return proto;
}

std::optional<kvcache::PrefixCacheDelta> FromProto(const v1::PrefixCacheDelta& proto) {
  std::optional<std::vector<kvcache::BlockHash>> added = kvcache::UnpackBlockHashes(proto.added());
  std::optional<std::vector<kvcache::BlockHash>> removed =
      kvcache::UnpackBlockHashes(proto.removed());
  if (!added.has_value() || !removed.has_value()) return std::nullopt;
  return kvcache::PrefixCacheDelta{
      .reset = proto.reset(), .added = *std::move(added), .removed = *std::move(removed)};
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace headroom::worker
