#include "router/service/request_validation.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "router/jinja/text.h"
#include "worker/engine/constraint_check.h"

namespace headroom::router {

namespace {

// guided_choice: each string tokenized without special tokens, into the worker's sampling.
absl::Status TokenizeGuidedChoices(const v1::SamplingParams& s, const Tokenizer& tokenizer,
                                   v1::TokenSamplingParams& w) {
  if (s.guided_choice_size() > kMaxGuidedChoices) {
    return absl::InvalidArgumentError(absl::StrCat("sampling.guided_choice has ",
                                                   s.guided_choice_size(), " strings, at most ",
                                                   kMaxGuidedChoices, " are allowed"));
  }
  int64_t choice_tokens = 0;
  for (int i = 0; i < s.guided_choice_size(); ++i) {
    absl::StatusOr<std::vector<int32_t>> ids =
        tokenizer.Encode(s.guided_choice(i), {.add_special_tokens = false});
    if (!ids.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.guided_choice[", i, "]: ", std::string(ids.status().message())));
    }
    if (ids->empty()) {  // "" (or text that tokenizes to nothing)
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.guided_choice[", i, "] must not be empty"));
    }
    choice_tokens += static_cast<int64_t>(ids->size());
    if (choice_tokens > kMaxGuidedChoiceTokens) {
      return absl::InvalidArgumentError(absl::StrCat("sampling.guided_choice has more than ",
                                                     kMaxGuidedChoiceTokens, " tokens in all"));
    }
    w.add_guided_choice()->mutable_ids()->Assign(ids->begin(), ids->end());
  }
  return absl::OkStatus();
}

// The rest of an embedding request, its prompt read into `out`: no sampling, a prompt that fits
// max_model_len by itself, dimensions >= 0 (the worker knows the model's sizes).
absl::StatusOr<ValidatedRequest> ValidateEmbedding(const v1::GenerateRequest& request,
                                                   int32_t largest_max_model_len,
                                                   ValidatedRequest& out) {
  if (request.has_sampling()) {
    return absl::InvalidArgumentError(
        "sampling must be unset for an embedding request (it generates no tokens)");
  }
  const v1::EmbeddingParams& e = request.embedding();
  if (e.dimensions() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding.dimensions must be >= 1 (0 keeps all), got ", e.dimensions()));
  }
  out.max_tokens = 0;
  if (largest_max_model_len > 0 && out.prompt.size() > static_cast<size_t>(largest_max_model_len)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this model's maximum context length is ", largest_max_model_len,
        " tokens (the largest worker group's); the input to ", e.classify() ? "classify" : "embed",
        " has ", out.prompt.size(), " tokens. Please reduce the length of the input"));
  }
  v1::PoolingParams& pooling = out.pooling.emplace();
  pooling.set_dimensions(e.dimensions());
  if (e.has_normalize()) pooling.set_normalize(e.normalize());  // unset: the model's default
  pooling.set_classify(e.classify());
  pooling.set_score_pair(e.score_pair());
  // What the worker runs: one greedy pass whose token it drops.
  out.sampling.set_temperature(0.0f);
  out.sampling.set_max_tokens(1);
  out.cache_salt = request.cache_salt();
  out.priority = request.priority();
  return std::move(out);
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int32_t>>> BadWordsTokenIds(const v1::SamplingParams& s,
                                                                   const Tokenizer& tokenizer) {
  std::vector<std::vector<int32_t>> out;
  int64_t tokens = 0;
  for (int i = 0; i < s.bad_words_size(); ++i) {
    const std::string_view word = jinja::text::LStrip(s.bad_words(i), nullptr);
    const std::string path = absl::StrCat("sampling.bad_words[", i, "]");
    if (word.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " must contain a character other than whitespace"));
    }
    for (const bool spaced : {false, true}) {
      absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(
          spaced ? " " + std::string(word) : std::string(word), {.add_special_tokens = false});
      if (!ids.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": ", ids.status().message()));
      }
      if (ids->empty()) {  // a normalizer that drops the whole word
        return absl::InvalidArgumentError(absl::StrCat(path, " tokenizes to no tokens"));
      }
      if (spaced && (ids->size() != out.back().size() || ids->front() == out.back().front())) {
        continue;  // as vLLM: the spaced form only where it is another word of the same length
      }
      tokens += static_cast<int64_t>(ids->size());
      out.push_back(*std::move(ids));
    }
    if (out.size() > static_cast<size_t>(kMaxBadWordSequences) || tokens > kMaxBadWordTokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sampling.bad_words gives more than ", kMaxBadWordSequences, " token sequences or ",
          kMaxBadWordTokens, " tokens in all (a word can give two: at the start and in mid-text); ",
          "the first ", i + 1, " words give ", out.size(), " sequences of ", tokens, " tokens"));
    }
  }
  return out;
}

absl::StatusOr<ValidatedRequest> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                         const Tokenizer& tokenizer,
                                                         int32_t largest_max_model_len) {
  ValidatedRequest out;
  if (request.has_token_ids()) {
    out.prompt.assign(request.token_ids().ids().begin(), request.token_ids().ids().end());
    for (size_t i = 0; i < out.prompt.size(); ++i) {
      const int32_t id = out.prompt[i];
      if (id < 0 || id >= tokenizer.vocab_size()) {
        return absl::InvalidArgumentError(absl::StrCat("token_ids.ids[", i, "] = ", id,
                                                       " is outside the vocabulary [0, ",
                                                       tokenizer.vocab_size(), ")"));
      }
    }
  } else {
    absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(request.text());
    if (!ids.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("text: ", std::string(ids.status().message())));
    }
    out.prompt = *std::move(ids);
  }
  if (out.prompt.empty()) {
    return absl::InvalidArgumentError("prompt is empty: set text or token_ids");
  }
  if (request.has_truncate_prompt_tokens()) {
    const int32_t keep = request.truncate_prompt_tokens();
    if (keep < -1 || keep == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("truncate_prompt_tokens must be -1 (max_model_len) or >= 1, got ", keep));
    }
    if (largest_max_model_len > 0 && keep > largest_max_model_len) {
      return absl::InvalidArgumentError(
          absl::StrCat("truncate_prompt_tokens (", keep, ") exceeds max_model_len ",
                       largest_max_model_len, " of the largest worker group"));
    }
    const size_t limit =
        keep == -1 ? (largest_max_model_len > 0 ? static_cast<size_t>(largest_max_model_len)
                                                : out.prompt.size())
                   : static_cast<size_t>(keep);
    if (out.prompt.size() > limit) {  // keep the last `limit` tokens, as vLLM truncates left
      out.prompt.erase(out.prompt.begin(),
                       out.prompt.begin() + static_cast<std::ptrdiff_t>(out.prompt.size() - limit));
    }
  }

  if (request.has_embedding()) return ValidateEmbedding(request, largest_max_model_len, out);
  const v1::SamplingParams& s = request.sampling();
  if (s.has_temperature() && !(s.temperature() >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.temperature must be >= 0, got ", s.temperature()));
  }
  if (s.has_top_p() && !(s.top_p() > 0.0f && s.top_p() <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.top_p must be in (0, 1], got ", s.top_p()));
  }
  if (s.top_k() < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.top_k must be -1, 0 (all) or positive, got ", s.top_k()));
  }
  if (s.has_max_tokens() && s.max_tokens() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.max_tokens must be >= 1, got ", s.max_tokens()));
  }
  if (s.logprobs() < 0 || s.logprobs() > kMaxLogprobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.logprobs must be in [0, ", kMaxLogprobs, "], got ", s.logprobs()));
  }
  if (s.has_prompt_logprobs() && (s.prompt_logprobs() < 0 || s.prompt_logprobs() > kMaxLogprobs)) {
    return absl::InvalidArgumentError(absl::StrCat("sampling.prompt_logprobs must be in [0, ",
                                                   kMaxLogprobs, "], got ", s.prompt_logprobs()));
  }
  if (s.has_repetition_penalty() &&
      !(s.repetition_penalty() > 0.0f && std::isfinite(s.repetition_penalty()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampling.repetition_penalty must be a finite number > 0, got ", s.repetition_penalty()));
  }
  for (const auto& [name, value] : {std::pair{"frequency_penalty", s.frequency_penalty()},
                                    std::pair{"presence_penalty", s.presence_penalty()}}) {
    if (!(value >= -2.0f && value <= 2.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.", name, " must be in [-2, 2], got ", value));
    }
  }
  if (!(s.min_p() >= 0.0f && s.min_p() <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.min_p must be in [0, 1], got ", s.min_p()));
  }
  for (const auto& [token, bias] : s.logit_bias()) {
    if (token < 0 || token >= tokenizer.vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat("sampling.logit_bias: token ", token,
                                                     " is outside the vocabulary [0, ",
                                                     tokenizer.vocab_size(), ")"));
    }
    if (!std::isfinite(bias)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.logit_bias[", token, "] must be a finite number, got ", bias));
    }
  }
  for (int i = 0; i < s.allowed_token_ids_size(); ++i) {
    const int32_t id = s.allowed_token_ids(i);
    if (id < 0 || id >= tokenizer.vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat("sampling.allowed_token_ids[", i, "] = ", id,
                                                     " is outside the vocabulary [0, ",
                                                     tokenizer.vocab_size(), ")"));
    }
  }
  if (int{s.guided_choice_size() > 0} + int{s.allowed_token_ids_size() > 0} + int{s.json_object()} +
          int{!s.json_schema().empty()} + int{!s.guided_regex().empty()} +
          int{!s.guided_grammar().empty()} + int{!s.structural_tag().empty()} >
      1) {
    return absl::InvalidArgumentError(
        "at most one of sampling.guided_choice, sampling.allowed_token_ids, sampling.json_object, "
        "sampling.json_schema, sampling.guided_regex, sampling.guided_grammar and "
        "sampling.structural_tag may be set");
  }
  if (!s.constraint_after().empty()) {
    if (s.constraint_after().size() > kMaxConstraintAfterBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.constraint_after is ", s.constraint_after().size(),
                       " bytes, at most ", kMaxConstraintAfterBytes, " are accepted"));
    }
    if (!s.json_object() && s.json_schema().empty() && s.guided_regex().empty() &&
        s.guided_grammar().empty() && s.structural_tag().empty()) {
      return absl::InvalidArgumentError(
          "sampling.constraint_after needs sampling.json_object, sampling.json_schema, "
          "sampling.guided_regex, sampling.guided_grammar or sampling.structural_tag (the "
          "constraint it delays)");
    }
  }
  // Bounded, then checked through the kept verdicts: an HTTP request's constraint was checked by
  // the front (to name its own field), and clients repeat theirs.
  for (const auto& [kind, field, text, max_bytes] :
       {std::tuple{worker::ConstraintKind::kGuidedRegex, "guided_regex", &s.guided_regex(),
                   kMaxGuidedRegexBytes},
        std::tuple{worker::ConstraintKind::kGrammar, "guided_grammar", &s.guided_grammar(),
                   kMaxGuidedGrammarBytes},
        std::tuple{worker::ConstraintKind::kJsonSchema, "json_schema", &s.json_schema(),
                   kMaxJsonSchemaBytes},
        std::tuple{worker::ConstraintKind::kStructuralTag, "structural_tag", &s.structural_tag(),
                   kMaxStructuralTagBytes}}) {
    if (text->empty()) continue;
    if (text->size() > max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("sampling.", field, " is ", text->size(),
                                                     " bytes, at most ", max_bytes,
                                                     " are accepted"));
    }
    if (const absl::Status st = worker::ConstraintChecks::Default().Check(kind, *text); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("sampling.", field, ": ", st.message()));
    }
  }
  if (absl::Status st = TokenizeGuidedChoices(s, tokenizer, out.sampling); !st.ok()) return st;
  HR_ASSIGN_OR_RETURN(const std::vector<std::vector<int32_t>> bad_words,
                      BadWordsTokenIds(s, tokenizer));
  for (const std::vector<int32_t>& ids : bad_words) {
    out.sampling.add_bad_words()->mutable_ids()->Assign(ids.begin(), ids.end());
  }
  for (int i = 0; i < s.stop_token_ids_size(); ++i) {
    if (s.stop_token_ids(i) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.stop_token_ids[", i, "] must be >= 0, got ", s.stop_token_ids(i)));
    }
  }
  out.max_tokens = s.has_max_tokens() ? s.max_tokens() : kDefaultMaxTokens;
  if (s.min_tokens() < 0 || s.min_tokens() > out.max_tokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.min_tokens must be in [0, max_tokens (", out.max_tokens, ")], got ",
                     s.min_tokens()));
  }
  out.min_tokens = s.min_tokens();
  if (largest_max_model_len > 0 && out.max_total_tokens() > largest_max_model_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt (", out.prompt.size(), " tokens) + sampling.max_tokens (",
                     out.max_tokens, ") = ", out.max_total_tokens(), " exceeds max_model_len ",
                     largest_max_model_len, " of the largest worker group"));
  }

  v1::TokenSamplingParams& w = out.sampling;
  if (s.has_temperature()) w.set_temperature(s.temperature());
  if (s.has_top_k()) w.set_top_k(s.top_k() < 0 ? 0 : s.top_k());
  if (s.has_top_p()) w.set_top_p(s.top_p());
  if (s.has_seed()) w.set_seed(s.seed());
  w.set_max_tokens(out.max_tokens);
  *w.mutable_stop_token_ids() = s.stop_token_ids();
  w.set_ignore_eos(s.ignore_eos());
  w.set_logprobs(s.logprobs());
  if (s.has_prompt_logprobs()) w.set_prompt_logprobs(s.prompt_logprobs());
  if (s.has_repetition_penalty()) w.set_repetition_penalty(s.repetition_penalty());
  w.set_frequency_penalty(s.frequency_penalty());
  w.set_presence_penalty(s.presence_penalty());
  if (s.has_min_p()) w.set_min_p(s.min_p());
  w.set_min_tokens(s.min_tokens());
  for (const auto& [token, bias] : s.logit_bias()) {
    (*w.mutable_logit_bias())[token] = std::clamp(bias, -100.0f, 100.0f);  // as vLLM
  }
  *w.mutable_allowed_token_ids() = s.allowed_token_ids();
  w.set_json_object(s.json_object());
  w.set_json_schema(s.json_schema());
  w.set_regex(s.guided_regex());
  w.set_grammar(s.guided_grammar());
  w.set_structural_tag(s.structural_tag());
  w.set_constraint_after(s.constraint_after());
  out.stop.assign(s.stop().begin(), s.stop().end());
  out.include_stop_str_in_output = s.include_stop_str_in_output();
  out.cache_salt = request.cache_salt();
  out.priority = request.priority();
  out.skip_special_tokens = !s.has_skip_special_tokens() || s.skip_special_tokens();
  out.return_prompt_token_ids = request.return_prompt_token_ids();
  return out;
}

}  // namespace headroom::router
