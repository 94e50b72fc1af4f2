#include "router/frontend/beam_search.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "router/service/call_metadata.h"

namespace headroom::router {

BeamSearchState::BeamSearchState(int32_t prompt_tokens, BeamSearchOptions options)
    : prompt_tokens_(prompt_tokens), options_(std::move(options)) {
  HR_CHECK(options_.width >= 1 && options_.max_tokens >= 1);
  live_.emplace_back();  // the prompt alone
}

int32_t BeamSearchState::logprobs_per_step() const {
  return std::max(2 * options_.width, options_.top_logprobs);
}

double BeamSearchState::Score(const Beam& beam) const {
  const auto length = static_cast<double>(prompt_tokens_) +
                      static_cast<double>(beam.tokens.size()) - (beam.ended ? 1.0 : 0.0);
  return beam.cumulative_logprob / std::pow(length, options_.length_penalty);
}

Beam BeamSearchState::Extend(const Beam& parent, const v1::Logprob& next, int candidate) const {
  const auto& top = next.top_logprobs();
  Beam beam = parent;
  const int32_t token = top[candidate].token_id();
  v1::Logprob& lp = beam.logprobs.emplace_back();
  lp.set_token_id(token);
  lp.set_logprob(top[candidate].logprob());
  for (int a = 0; a < std::min(options_.top_logprobs, top.size()); ++a) {
    *lp.add_top_logprobs() = top[a];
  }
  beam.tokens.push_back(token);
  beam.cumulative_logprob += static_cast<double>(top[candidate].logprob());
  beam.ended = Ends(token);
  return beam;
}

bool BeamSearchState::Ends(int32_t token) const {
  return std::find(options_.ending_tokens.begin(), options_.ending_tokens.end(), token) !=
         options_.ending_tokens.end();
}

void BeamSearchState::Complete(std::vector<Beam> beams) {
  // Only the k best complete beams can be in the answer (their scores never change), so no more
  // are kept: the search holds O(k) beams however many candidates end.
  for (Beam& beam : beams) complete_.push_back(std::move(beam));
  std::stable_sort(complete_.begin(), complete_.end(),
                   [this](const Beam& a, const Beam& b) { return Score(a) > Score(b); });
  if (complete_.size() > static_cast<size_t>(options_.width)) {
    complete_.resize(static_cast<size_t>(options_.width));
  }
}

void BeamSearchState::Expand(const std::vector<v1::Logprob>& next) {
  HR_CHECK(next.size() == live_.size());
  // 2k candidates (vLLM's and transformers' number), whatever more the answer's logprobs want;
  // a candidate is copied out of its parent only once it is kept.
  const int wanted = 2 * options_.width;
  struct Candidate {
    size_t parent;
    int index;
    double cumulative_logprob;
  };
  std::vector<Candidate> grown;
  std::vector<Beam> ended;
  for (size_t i = 0; i < live_.size(); ++i) {
    const auto& top = next[i].top_logprobs();
    for (int c = 0; c < std::min(wanted, top.size()); ++c) {
      if (Ends(top[c].token_id())) {
        ended.push_back(Extend(live_[i], next[i], c));
      } else {
        grown.push_back(
            {i, c, live_[i].cumulative_logprob + static_cast<double>(top[c].logprob())});
      }
    }
  }
  // Stable, as vLLM's sorted(): among equal scores the earlier beam and candidate first.
  std::stable_sort(grown.begin(), grown.end(), [](const Candidate& a, const Candidate& b) {
    return a.cumulative_logprob > b.cumulative_logprob;
  });
  std::vector<Beam> kept;
  for (size_t g = 0; g < std::min(grown.size(), static_cast<size_t>(options_.width)); ++g) {
    kept.push_back(Extend(live_[grown[g].parent], next[grown[g].parent], grown[g].index));
  }
  Complete(std::move(ended));
  if (++steps_ < options_.max_tokens) {
    live_ = std::move(kept);
    return;
  }
  live_.clear();
  Complete(std::move(kept));
}

std::vector<Beam> BeamSearchState::Best() const {
  std::vector<Beam> all = complete_;
  all.insert(all.end(), live_.begin(), live_.end());
  std::stable_sort(all.begin(), all.end(),
                   [this](const Beam& a, const Beam& b) { return Score(a) > Score(b); });
  if (all.size() > static_cast<size_t>(options_.width)) {
    all.resize(static_cast<size_t>(options_.width));
  }
  return all;
}

// One step of one beam: a greedy generation of one token with the top logprobs, on the
// in-process channel. Holds itself (and the search) from Start until its OnDone.
class BeamSearch::StepCall final : public grpc::ClientReadReactor<v1::GenerateResponse> {
 public:
  StepCall(size_t prompt, size_t beam, v1::GenerateRequest request)
      : prompt_(prompt), beam_(beam), request_(std::move(request)) {}

  void Start(std::shared_ptr<StepCall> self, std::shared_ptr<BeamSearch> search) {
    self_ = std::move(self);
    search_ = std::move(search);
    context_.AddMetadata(kOpenAiChoiceMetadataKey, "1");  // not a request of its own
    search_->hooks_.stub->async()->Generate(&context_, &request_, this);
    StartRead(&response_);
    StartCall();
  }

  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    if (response_.logprobs_size() > 0 && !next_.has_value()) next_ = response_.logprobs(0);
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& status) override {
    const std::string retry_after = status.ok() ? std::string() : RetryAfterOf(context_);
    grpc::Status result = status;
    if (result.ok() && !next_.has_value()) {
      result = grpc::Status(grpc::StatusCode::INTERNAL, "a beam search step returned no token");
    }
    // Touch nothing after `self` goes (gRPC allows deleting a reactor in OnDone); `ended` runs
    // once the search too is gone.
    std::shared_ptr<StepCall> self = std::move(self_);
    std::shared_ptr<BeamSearch> search = std::move(search_);
    std::function<void()> ended =
        search->OnStepDone(prompt_, beam_, result, retry_after, next_.value_or(v1::Logprob()));
    search.reset();
    self.reset();
    if (ended) ended();
  }

 private:
  const size_t prompt_;
  const size_t beam_;
  grpc::ClientContext context_;
  v1::GenerateRequest request_;
  v1::GenerateResponse response_;
  std::optional<v1::Logprob> next_;
  std::shared_ptr<StepCall> self_;
  std::shared_ptr<BeamSearch> search_;
};

BeamSearch::BeamSearch(GenerationHooks hooks, std::shared_ptr<http::ResponseWriter> writer,
                       const openai::ParsedRequest& parsed, v1::GenerateRequest step,
                       std::vector<std::vector<int32_t>> prompts, BeamSearchOptions options,
                       bool include_stop_str_in_output, std::string id, int64_t created,
                       std::string model)
    : hooks_(std::move(hooks)),
      writer_(std::move(writer)),
      stream_(parsed.stream),
      return_token_ids_(parsed.return_token_ids),
      include_stop_str_in_output_(include_stop_str_in_output),
      skip_special_tokens_(!step.sampling().has_skip_special_tokens() ||
                           step.sampling().skip_special_tokens()),
      step_(std::move(step)),
      width_(options.width),
      builder_(parsed, std::move(id), created, std::move(model), hooks_.tokenizer) {
  HR_CHECK(static_cast<int32_t>(prompts.size()) * width_ == openai::ChoiceCount(parsed));
  for (std::vector<int32_t>& ids : prompts) {
    const auto length = static_cast<int32_t>(ids.size());
    prompts_.push_back(
        PromptSearch{.ids = std::move(ids), .state = {length, options}, .next = {}, .pending = 0});
  }
  searching_ = static_cast<int32_t>(prompts_.size());
}

BeamSearch::~BeamSearch() = default;

void BeamSearch::Start() {
  std::weak_ptr<BeamSearch> weak = weak_from_this();
  writer_->OnDisconnect([weak] {
    if (std::shared_ptr<BeamSearch> search = weak.lock()) {
      {
        std::lock_guard<std::mutex> lock(search->mu_);
        search->client_gone_ = true;
      }
      search->CancelAll();
    }
  });
  std::vector<std::shared_ptr<StepCall>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t p = 0; p < prompts_.size(); ++p) {
      std::vector<std::shared_ptr<StepCall>> first = StepCallsLocked(p);
      calls.insert(calls.end(), first.begin(), first.end());
    }
  }
  for (std::shared_ptr<StepCall>& call : calls) call->Start(call, shared_from_this());
}

std::vector<std::shared_ptr<BeamSearch::StepCall>> BeamSearch::StepCallsLocked(size_t prompt) {
  PromptSearch& search = prompts_[prompt];
  const std::vector<Beam>& live = search.state.live();
  search.next.assign(live.size(), v1::Logprob());
  search.pending = static_cast<int32_t>(live.size());
  open_calls_ += search.pending;
  std::vector<std::shared_ptr<StepCall>> calls;
  for (size_t b = 0; b < live.size(); ++b) {
    v1::GenerateRequest request = step_;
    auto* ids = request.mutable_token_ids()->mutable_ids();
    ids->Reserve(static_cast<int>(search.ids.size() + live[b].tokens.size()));
    ids->Add(search.ids.begin(), search.ids.end());
    ids->Add(live[b].tokens.begin(), live[b].tokens.end());
    v1::SamplingParams& sampling = *request.mutable_sampling();
    sampling.set_max_tokens(1);
    sampling.set_temperature(0.0f);
    sampling.set_ignore_eos(true);  // an ending token is a candidate like any other
    sampling.set_logprobs(search.state.logprobs_per_step());
    calls.push_back(std::make_shared<StepCall>(prompt, b, std::move(request)));
    in_flight_.push_back(calls.back());
  }
  return calls;
}

std::function<void()> BeamSearch::OnStepDone(size_t prompt, size_t beam, const grpc::Status& status,
                                             const std::string& retry_after, v1::Logprob next) {
  std::vector<std::shared_ptr<StepCall>> calls;
  bool cancel = false;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --open_calls_;
    PromptSearch& search = prompts_[prompt];
    --search.pending;
    if (!answered_ && !status.ok()) {
      AnswerErrorLocked(status, retry_after);
      cancel = true;
    } else if (!answered_) {
      search.next[beam] = std::move(next);
      if (search.pending == 0) {
        search.state.Expand(search.next);
        in_flight_.erase(
            std::remove_if(in_flight_.begin(), in_flight_.end(),
                           [](const std::weak_ptr<StepCall>& call) { return call.expired(); }),
            in_flight_.end());
        if (!search.state.done()) {
          calls = StepCallsLocked(prompt);
        } else if (--searching_ == 0) {
          AnswerLocked();
        }
      }
    }
    last = answered_ && open_calls_ == 0;
  }
  // Started (and cancelled) outside mu_: a refused call may end inline, back in here.
  for (std::shared_ptr<StepCall>& call : calls) call->Start(call, shared_from_this());
  if (cancel) CancelAll();
  return last ? hooks_.ended : std::function<void()>();
}

v1::GenerateResponse BeamSearch::ChoiceMessage(const PromptSearch& search, const Beam& beam) const {
  v1::GenerateResponse message;
  message.mutable_token_ids()->Add(beam.tokens.begin(), beam.tokens.end());
  for (const v1::Logprob& lp : beam.logprobs) *message.add_logprobs() = lp;
  // As a sampled choice: the ending token is in token_ids, and in the text only when asked.
  const size_t shown =
      beam.ended && !include_stop_str_in_output_ ? beam.tokens.size() - 1 : beam.tokens.size();
  message.set_text(
      hooks_.tokenizer->Decode(std::span<const int32_t>(beam.tokens.data(), shown),
                               DecodeOptions{.skip_special_tokens = skip_special_tokens_}));
  if (beam.ended) {
    message.set_finish_reason(v1::FINISH_REASON_STOP);
    message.set_stop_token_id(beam.tokens.back());
  } else {
    message.set_finish_reason(v1::FINISH_REASON_LENGTH);
  }
  message.mutable_usage()->set_prompt_tokens(static_cast<int32_t>(search.ids.size()));
  message.mutable_usage()->set_completion_tokens(static_cast<int32_t>(beam.tokens.size()));
  if (return_token_ids_) {
    message.mutable_prompt_token_ids()->Add(search.ids.begin(), search.ids.end());
  }
  return message;
}

void BeamSearch::AnswerLocked() {
  answered_ = true;
  std::string events;
  for (size_t p = 0; p < prompts_.size(); ++p) {
    const std::vector<Beam> best = prompts_[p].state.Best();
    int64_t longest = 0;
    for (size_t b = 0; b < best.size(); ++b) {
      const auto choice = static_cast<int32_t>(p * static_cast<size_t>(width_) + b);
      const v1::GenerateResponse message = ChoiceMessage(prompts_[p], best[b]);
      if (stream_) {
        events += builder_.StreamEvents(choice, message);
      } else {
        builder_.Accumulate(choice, message);
      }
      longest = std::max<int64_t>(longest, static_cast<int64_t>(best[b].tokens.size()));
    }
    // Fewer complete beams than k (every candidate ended early): the rest are empty choices.
    for (size_t b = best.size(); b < static_cast<size_t>(width_); ++b) {
      v1::GenerateResponse empty;
      empty.set_finish_reason(v1::FINISH_REASON_STOP);
      empty.mutable_usage()->set_prompt_tokens(static_cast<int32_t>(prompts_[p].ids.size()));
      const auto choice = static_cast<int32_t>(p * static_cast<size_t>(width_) + b);
      if (stream_) {
        events += builder_.StreamEvents(choice, empty);
      } else {
        builder_.Accumulate(choice, empty);
      }
    }
    if (hooks_.finished_prompt) hooks_.finished_prompt(width_, longest);
  }
  if (!stream_) {
    writer_->Respond(200, "application/json", builder_.Body());
    return;
  }
  writer_->StartStream(200, "text/event-stream");
  writer_->Write(std::move(events) + builder_.StreamDone());
  writer_->End();
}

void BeamSearch::AnswerErrorLocked(const grpc::Status& status, const std::string& retry_after) {
  answered_ = true;
  const grpc::StatusCode code = status.error_code();
  if ((code == grpc::StatusCode::CANCELLED || code == grpc::StatusCode::UNAVAILABLE) &&
      !client_gone_ && hooks_.shutting_down()) {
    RespondOpenAiError(*writer_, 503,
                       absl::StrCat("the router shut down before the request finished (",
                                    status.error_message(), "); retry on another replica"),
                       "", {{"Retry-After", "1"}});
    return;
  }
  auto [message, param] = OpenAiMessage(status.error_message(), "prompt");
  std::vector<std::pair<std::string, std::string>> headers;
  if (!retry_after.empty()) headers.emplace_back("Retry-After", retry_after);
  RespondOpenAiError(*writer_, HttpStatusOf(code), absl::StrCat("beam search: ", message), param,
                     std::move(headers));
}

void BeamSearch::CancelAll() {
  std::vector<std::shared_ptr<StepCall>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::weak_ptr<StepCall>& weak : in_flight_) {
      if (std::shared_ptr<StepCall> call = weak.lock()) calls.push_back(std::move(call));
    }
  }
  for (const std::shared_ptr<StepCall>& call : calls) call->Cancel();
}

}  // namespace headroom::router
