#include "router/frontend/generation.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/check.h"
#include "router/service/call_metadata.h"

namespace headroom::router {
namespace {

constexpr char kJson[] = "application/json";

}  // namespace

std::pair<std::string, std::string> OpenAiMessage(const std::string& grpc_message,
                                                  const std::string& prompt_field) {
  std::string message = absl::StrReplaceAll(
      grpc_message, {{"sampling.", ""}, {"embedding.dimensions", "dimensions"}});
  size_t end = 0;
  while (end < message.size() &&
         (std::islower(static_cast<unsigned char>(message[end])) != 0 || message[end] == '_')) {
    ++end;
  }
  std::string param = message.substr(0, end);
  static const absl::flat_hash_set<std::string> kFields = {"temperature",
                                                           "top_p",
                                                           "top_k",
                                                           "min_p",
                                                           "max_tokens",
                                                           "min_tokens",
                                                           "logprobs",
                                                           "stop_token_ids",
                                                           "prompt",
                                                           "text",
                                                           "token_ids",
                                                           "seed",
                                                           "stop",
                                                           "logit_bias",
                                                           "repetition_penalty",
                                                           "frequency_penalty",
                                                           "presence_penalty",
                                                           "priority",
                                                           "allowed_token_ids",
                                                           "truncate_prompt_tokens",
                                                           "guided_choice",
                                                           "bad_words",
                                                           "dimensions"};
  if (!kFields.contains(param)) param.clear();
  if (param == "text" || param == "token_ids" || param == "prompt") param = prompt_field;
  return {std::move(message), std::move(param)};
}

void RespondOpenAiError(http::ResponseWriter& writer, int status, const std::string& message,
                        const std::string& param,
                        std::vector<std::pair<std::string, std::string>> headers) {
  writer.Respond(status, kJson, openai::ErrorBody(status, message, param), std::move(headers));
}

std::string RetryAfterOf(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto it = trailers.find("retry-after");
  return it == trailers.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

int HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
      return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::CANCELLED:
      return 499;
    case grpc::StatusCode::UNIMPLEMENTED:
      return 501;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}

// One choice's Generate call on the in-process channel (callback client reactor). Owned by its
// Generation, which it keeps alive from Start until its OnDone.
class Generation::ChoiceCall final : public grpc::ClientReadReactor<v1::GenerateResponse> {
 public:
  ChoiceCall(int32_t choice, v1::GenerateRequest request)
      : choice_(choice), request_(std::move(request)) {}

  void Start(std::shared_ptr<Generation> generation) {
    generation_ = std::move(generation);
    context_.AddMetadata(kOpenAiChoiceMetadataKey, "1");  // counted here, not by the service
    generation_->hooks_.stub->async()->Generate(&context_, &request_, this);
    StartRead(&response_);
    StartCall();
  }

  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    generation_->OnMessage(choice_, response_);
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& status) override {
    const std::string retry_after = status.ok() ? std::string() : RetryAfterOf(context_);
    // The last call's reset destroys the Generation and with it this reactor: touch nothing
    // after it (gRPC allows deleting a reactor in OnDone). `ended` runs after it, so the
    // Generation (and the writer it holds) is gone when the front learns it may shut down.
    std::shared_ptr<Generation> generation = std::move(generation_);
    std::function<void()> ended;
    if (generation->OnCallDone(choice_, status, retry_after)) ended = generation->hooks_.ended;
    generation.reset();
    if (ended) ended();
  }

 private:
  const int32_t choice_;
  grpc::ClientContext context_;
  v1::GenerateRequest request_;
  v1::GenerateResponse response_;
  std::shared_ptr<Generation> generation_;
};

Generation::Generation(GenerationHooks hooks, std::shared_ptr<http::ResponseWriter> writer,
                       const openai::ParsedRequest& parsed,
                       std::vector<v1::GenerateRequest> choices, std::string id, int64_t created,
                       std::string model)
    : hooks_(std::move(hooks)),
      writer_(std::move(writer)),
      stream_(parsed.stream),
      n_(parsed.n),
      several_prompts_(!parsed.more_prompts.empty()),
      prompt_field_(openai::Embeds(parsed.endpoint) ? "input" : "prompt"),
      choice_names_(parsed.choice_names),
      builder_(parsed, std::move(id), created, std::move(model), hooks_.tokenizer) {
  HR_CHECK(static_cast<int32_t>(choices.size()) == openai::ChoiceCount(parsed));
  for (size_t i = 0; i < choices.size(); ++i) {
    calls_.push_back(std::make_unique<ChoiceCall>(static_cast<int32_t>(i), std::move(choices[i])));
  }
  sent_first_.assign(calls_.size(), false);
  generated_.assign(calls_.size(), 0);
  unstarted_ = static_cast<int32_t>(calls_.size());
  open_ = unstarted_;
}

Generation::~Generation() = default;

void Generation::Start() {
  std::weak_ptr<Generation> weak = weak_from_this();
  writer_->OnDisconnect([weak] {
    if (std::shared_ptr<Generation> generation = weak.lock()) generation->CancelForClient();
  });
  size_t first_calls = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first_calls = stream_ ? calls_.size() : std::min(calls_.size(), kMaxCallsInFlight);
    next_call_ = first_calls;
  }
  for (size_t i = 0; i < first_calls; ++i) calls_[i]->Start(shared_from_this());
}

void Generation::OnMessage(int32_t choice, const v1::GenerateResponse& message) {
  bool client_gone = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (answered_) return;
    generated_[static_cast<size_t>(choice)] += message.token_ids_size();
    if (!stream_) {
      builder_.Accumulate(choice, message);
      return;
    }
    std::string events = builder_.StreamEvents(choice, message);
    if (!started_) {
      held_ += events;
      if (!sent_first_[static_cast<size_t>(choice)]) {
        sent_first_[static_cast<size_t>(choice)] = true;
        if (--unstarted_ == 0) StartStreamLocked();
      }
    } else if (!events.empty()) {
      client_gone = !writer_->Write(std::move(events));
    }
  }
  if (client_gone) CancelForClient();
}

bool Generation::OnCallDone(int32_t choice, const grpc::Status& status,
                            const std::string& retry_after) {
  bool cancel_others = false;
  bool last = false;
  ChoiceCall* start_next = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = --open_ == 0;
    if (!answered_) {
      if (!status.ok()) {
        AnswerErrorLocked(choice, status, retry_after);
        answered_ = true;
        DropUnstartedLocked();
        last = open_ == 0;
        cancel_others = !last;
      } else if (next_call_ < calls_.size()) {
        // A window slot is free (non-streaming only: a stream started every call).
        start_next = calls_[next_call_++].get();
      } else if (last) {
        // Counted before the answer goes out, so a client that reads the metrics after it
        // sees this request (generated_ is final: every call has ended).
        ReportFinishedPromptsLocked();
        if (!stream_) {
          writer_->Respond(200, kJson, builder_.Body());
        } else {
          if (!started_) StartStreamLocked();
          writer_->Write(builder_.StreamDone());
          writer_->End();
        }
        answered_ = true;
      } else if (stream_ && !started_ && !sent_first_[static_cast<size_t>(choice)]) {
        // Ended OK without a message (not something the service does): it holds nothing back.
        sent_first_[static_cast<size_t>(choice)] = true;
        if (--unstarted_ == 0) StartStreamLocked();
      }
    }
  }
  // Started outside mu_: a refused call may end inline, back in here.
  if (start_next != nullptr) start_next->Start(shared_from_this());
  if (cancel_others) CancelAll();
  return last;
}

void Generation::DropUnstartedLocked() {
  open_ -= static_cast<int32_t>(calls_.size() - next_call_);
  next_call_ = calls_.size();
}

void Generation::ReportFinishedPromptsLocked() {
  if (!hooks_.finished_prompt) return;
  for (size_t first = 0; first < generated_.size(); first += static_cast<size_t>(n_)) {
    const auto begin = generated_.begin() + static_cast<std::ptrdiff_t>(first);
    hooks_.finished_prompt(n_, *std::max_element(begin, begin + n_));
  }
}

void Generation::AnswerErrorLocked(int32_t choice, const grpc::Status& status,
                                   const std::string& retry_after) {
  const grpc::StatusCode code = status.error_code();
  if ((code == grpc::StatusCode::CANCELLED || code == grpc::StatusCode::UNAVAILABLE) &&
      !client_gone_.load() && hooks_.shutting_down()) {
    // The router's gRPC server ended the call at its shutdown deadline (CANCELLED, or
    // UNAVAILABLE "Transport closed" for a deadline of 0). The client did nothing wrong and
    // another replica can serve it: 503 + Retry-After, not 499 or a transport message.
    const std::string message = absl::StrCat("the router shut down before the request finished (",
                                             status.error_message(), "); retry on another replica");
    if (!started_) {
      RespondOpenAiError(*writer_, 503, message, "", {{"Retry-After", "1"}});
    } else {
      writer_->Write(openai::ErrorEvent(503, message));
      writer_->Write("data: [DONE]\n\n");
      writer_->End();
    }
    return;
  }
  const int http_status = HttpStatusOf(code);
  auto [message, param] = OpenAiMessage(status.error_message(), prompt_field_);
  if (!choice_names_.empty() && http_status == 400) {
    message = absl::StrCat(choice_names_.at(static_cast<size_t>(choice)), ": ", message);
    if (param == prompt_field_) param = choice_names_[static_cast<size_t>(choice)];
  } else if (several_prompts_ && http_status == 400) {
    // Say which prompt of the list it was; the field stays "prompt" or the sampling field.
    message = absl::StrCat(prompt_field_, "[", choice / n_, "]: ", message);
  }
  if (!started_) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!retry_after.empty()) headers.emplace_back("Retry-After", retry_after);
    RespondOpenAiError(*writer_, http_status, message, param, std::move(headers));
  } else {
    writer_->Write(openai::ErrorEvent(http_status, message));
    writer_->Write("data: [DONE]\n\n");
    writer_->End();
  }
}

void Generation::StartStreamLocked() {
  started_ = true;
  writer_->StartStream(200, "text/event-stream");
  if (!held_.empty()) writer_->Write(std::exchange(held_, std::string()));
}

void Generation::CancelForClient() {
  client_gone_.store(true);
  CancelAll();
}

void Generation::CancelAll() {
  for (const std::unique_ptr<ChoiceCall>& call : calls_) call->Cancel();
}

}  // namespace headroom::router
