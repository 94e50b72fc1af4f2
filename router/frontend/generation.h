// Generation: one OpenAI completion or chat request run on the router's Inference service. Each
// choice (prompts x n, openai::ChoiceRequest) is its own Generate call, as vLLM runs the n samples
// of a request as child requests: admission, placement (prefix affinity puts the samples of one
// prompt on the group that caches it), failover and stop strings apply to each. Their messages
// are folded into one response by an openai::ResponseBuilder.
//
// The answer is all or nothing:
// - Non-streaming: the body is sent once every call ended OK. The first call that fails decides
//   the answer (its status as HTTP status, Retry-After kept) and the other calls are cancelled.
// - Streaming: events are held until every choice has sent its first message, so a request whose
//   second sample is refused (429 queue full, 400 for prompt[1]) still gets a real 4xx rather
//   than a 200 stream that ends in an error. After that events go out as they come, each holding
//   one choice; a failure then is one error event and [DONE], and the other calls are cancelled.
//   With one choice this is exactly a plain stream (its first message starts it).
// - A client that disconnects (or stops reading) cancels every call.
// - Non-streaming answers run at most kMaxCallsInFlight calls at once, starting the next as one
//   ends OK: an embeddings request of 2048 inputs does not flood the router's admission queue
//   (which would refuse it 429) but goes through as a bounded stream of calls.
//
// Threads: ChoiceCall reactions run on gRPC client threads, several at once for several choices;
// one mutex orders the builder and the writes. The writer is never called back inline (its
// Write/Respond/End only queue), so writing under the mutex cannot deadlock; gRPC cancellation
// happens outside it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "router/http/http_server.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router {

// What a Generation needs from the HTTP front; everything must outlive its `ended` call.
struct GenerationHooks {
  v1::Inference::Stub* stub = nullptr;
  const Tokenizer* tokenizer = nullptr;
  // The router is stopping: a call it cut is answered 503 + Retry-After, not 499.
  std::function<bool()> shutting_down;
  // Runs once, after the last call ended and the answer was written.
  std::function<void()> ended;
  // Runs for each prompt once all its n samples finished (not when the request failed), before
  // the answer is written: `max_generation_tokens` is the most tokens one sample generated. May
  // be empty.
  std::function<void(int32_t n, int64_t max_generation_tokens)> finished_prompt;
};

class Generation : public std::enable_shared_from_this<Generation> {
 public:
  // Calls of one non-streaming request running at once (a stream starts all its choices: its
  // events wait for every choice's first message). kMaxChoices, so completions never wait.
  static constexpr size_t kMaxCallsInFlight = 128;

  // `choices`: the Generate request of each choice (openai::ChoiceRequest, possibly with its text
  // prompt already tokenized); `parsed` shapes the response. `id`: the response id; `model`: the
  // model id reported back.
  Generation(GenerationHooks hooks, std::shared_ptr<http::ResponseWriter> writer,
             const openai::ParsedRequest& parsed, std::vector<v1::GenerateRequest> choices,
             std::string id, int64_t created, std::string model);
  ~Generation();

  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Starts every choice's call; the Generation keeps itself alive until the last one ended.
  void Start();

 private:
  class ChoiceCall;

  void OnMessage(int32_t choice, const v1::GenerateResponse& message);
  // Returns true for the last call (the caller then runs hooks_.ended).
  bool OnCallDone(int32_t choice, const grpc::Status& status, const std::string& retry_after);
  // Every call ended OK: reports each prompt to hooks_.finished_prompt (mu_ held).
  void ReportFinishedPromptsLocked();
  // Writes the error answer for `status` (mu_ held, nothing answered yet).
  void AnswerErrorLocked(int32_t choice, const grpc::Status& status,
                         const std::string& retry_after);
  // Sends the held events behind a 200 SSE header (mu_ held).
  void StartStreamLocked();
  // After an error: the calls not started yet never will be (mu_ held).
  void DropUnstartedLocked();
  // The client went away: cancel every call.
  void CancelForClient();
  void CancelAll();

  const GenerationHooks hooks_;
  const std::shared_ptr<http::ResponseWriter> writer_;
  const bool stream_;
  const int32_t n_;
  const bool several_prompts_;
  // What the request calls its prompts in errors: "prompt" (completions, chat) or "input"; and
  // each choice's name where the parser gave them (score, rerank).
  const std::string prompt_field_;
  const std::vector<std::string> choice_names_;
  std::vector<std::unique_ptr<ChoiceCall>> calls_;  // fixed after the constructor
  std::atomic<bool> client_gone_{false};

  std::mutex mu_;
  openai::ResponseBuilder builder_;  // guarded by mu_
  std::vector<bool> sent_first_;     // guarded by mu_: the choice has sent a message
  std::vector<int64_t> generated_;   // guarded by mu_: tokens each choice generated
  int32_t unstarted_ = 0;            // guarded by mu_: choices that have not
  int32_t open_ = 0;                 // guarded by mu_: calls whose OnDone has not run
  size_t next_call_ = 0;             // guarded by mu_: calls [0, next_call_) were started
  std::string held_;                 // guarded by mu_: stream events before the header
  bool started_ = false;             // guarded by mu_: the SSE header was sent
  bool answered_ = false;            // guarded by mu_: the answer (or an error) was written
};

// The gRPC side names fields as in the proto ("sampling.max_tokens", "token_ids.ids[3]");
// HTTP clients sent OpenAI's flat names. Returns the message with those names and the field
// (`prompt_field` for the prompt: "prompt", or embeddings' "input").
std::pair<std::string, std::string> OpenAiMessage(const std::string& grpc_message,
                                                  const std::string& prompt_field);

// The Retry-After a refused call's trailers carry (the Inference service's 429), or "".
std::string RetryAfterOf(const grpc::ClientContext& context);

// Answers `status` with OpenAI's error body ({"error": {message, type, param, code}}).
void RespondOpenAiError(http::ResponseWriter& writer, int status, const std::string& message,
                        const std::string& param = "",
                        std::vector<std::pair<std::string, std::string>> headers = {});

// The HTTP status for a gRPC status code (INVALID_ARGUMENT 400, NOT_FOUND 404,
// RESOURCE_EXHAUSTED 429, UNAVAILABLE 503, DEADLINE_EXCEEDED 504, CANCELLED 499, ...). A call
// that the router's shutdown ended (CANCELLED or UNAVAILABLE while shutting down, the client
// still there) is answered 503 + Retry-After instead.
int HttpStatusOf(grpc::StatusCode code);

}  // namespace headroom::router
