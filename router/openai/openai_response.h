// OpenAI response bodies and server-sent events built from the router's v1::GenerateResponse
// stream. Shapes are OpenAI's (text_completion, chat.completion, chat.completion.chunk) plus vLLM's
// choices[].stop_reason. Pure: the HTTP front writes what these return. See docs/router.md
// "OpenAI API".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "headroom/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "router/openai/openai_protocol.h"
#include "router/openai/reasoning_parser.h"
#include "router/openai/tool_call_stream.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router::openai {

// What a response id of `endpoint` starts with, as vLLM names them: "cmpl", "chatcmpl", "embd",
// "score" or "rerank" (the id is the prefix, "-" and a unique part).
const char* ResponseIdPrefix(Endpoint endpoint);

// One per request; not thread-safe. Feed either StreamEvents (stream = true) or Accumulate, each
// message with the choice it belongs to (ChoiceCount(request) choices; their messages may
// interleave in any order).
class ResponseBuilder {
 public:
  // `id` is the whole response id (ResponseIdPrefix, "-", a unique part); `model` the served model
  // id reported back; `tokenizer` turns logprob token ids into strings (null: "token_id:<id>").
  ResponseBuilder(const ParsedRequest& request, std::string id, int64_t created, std::string model,
                  const Tokenizer* tokenizer);

  // Streaming: the SSE events ("data: {json}\n\n", possibly several or none) for one message of
  // `choice`. Each event holds that one choice. A choice's first chat event carries delta.role
  // "assistant", its first completions event the prompt when echo; the one for its last message
  // carries finish_reason and stop_reason.
  [[nodiscard]] std::string StreamEvents(int32_t choice, const v1::GenerateResponse& message);
  // With include_usage every event has "usage": null, or with continuous_usage_stats the usage
  // of its choice so far. After every choice's last message: the usage event (choices []) when
  // include_usage, then "data: [DONE]\n\n".
  [[nodiscard]] std::string StreamDone() const;

  // Non-streaming: folds one message of `choice` in; Body() is the complete JSON response once
  // every choice's last message (with finish_reason and usage) has been folded in.
  void Accumulate(int32_t choice, const v1::GenerateResponse& message);
  [[nodiscard]] std::string Body() const;

 private:
  using Json = nlohmann::ordered_json;

  // What one choice has produced so far.
  struct Choice {
    bool role_sent = false;
    bool tool_call_started = false;  // a named call's id and name went out (streaming)
    // tool_choice "auto" (streaming): bytes of `text` sent as content, and whether the reply
    // turned out to call tools (finish_reason "tool_calls").
    size_t content_sent = 0;
    bool called_tools = false;
    // "auto": the held-back text holds the start of a call, so nothing more is content until the
    // end (not scanned again per token).
    bool holding_call = false;
    // "auto" and "required" (streaming): the calls read as the model writes them, from byte
    // `calls_from` of `text`, and how many bytes of each one's arguments went out (its first
    // delta, with its id and name, counts).
    std::optional<ToolCallStreamer> call_stream;
    size_t calls_from = 0;
    std::vector<size_t> call_arguments_sent;
    // With a reasoning parser (chat): the reply's reasoning so far (`text` is then its content),
    // and the splitter reading the reply.
    std::optional<ReasoningSplitter> splitter;
    std::string reasoning;
    bool echoed = false;  // its prompt went out (echo)
    // Code points of completion text covered by logprobs so far (completions text_offset).
    int64_t text_offset = 0;
    std::string text;
    Json logprobs;
    v1::FinishReason finish_reason = v1::FINISH_REASON_UNSPECIFIED;
    v1::GenerateResponse::StopReasonCase stop_case = v1::GenerateResponse::STOP_REASON_NOT_SET;
    std::string stop_string;
    int32_t stop_token_id = 0;
    int32_t prompt_tokens = 0;
    int32_t completion_tokens = 0;
    // return_token_ids: the prompt's ids (from the message that carries them) and the choice's
    // ids (non-streaming: all; streaming: those not yet sent, as a message a parser held back
    // goes out with a later chunk).
    std::vector<int32_t> prompt_token_ids;
    std::vector<int32_t> token_ids;
    // vLLM's prompt_logprobs list (when asked): null, then one {token id: {logprob, rank,
    // decoded_token}} per later prompt token.
    Json prompt_logprobs;
    // Embeddings: the input's vector; classifications: its label scores, and the top label.
    std::vector<float> embedding;
    std::string label;
  };

  [[nodiscard]] Json ChunkEnvelope() const;
  // Usage of the whole request: each prompt's tokens once (its n samples share it), every
  // choice's completion tokens.
  [[nodiscard]] Json UsageJson() const;
  // Usage of one choice so far (continuous_usage_stats): its prompt's tokens and its own
  // completion tokens, as vLLM counts them per choice.
  [[nodiscard]] static Json UsageJson(const Choice& choice);
  // How logprobs name token `id`: its text, or "token_id:<id>" (return_tokens_as_token_ids, or no
  // tokenizer).
  [[nodiscard]] std::string TokenString(int32_t id) const;
  // Token `id`'s text (special tokens kept), whatever the logprobs call it.
  [[nodiscard]] std::string DecodedToken(int32_t id) const;
  // Appends the message's logprobs to `logprobs` (the completions or chat shape), advancing
  // `text_offset` for the completions shape; with echo, the prompt's first (the message that
  // carries prompt_token_ids).
  void AppendLogprobs(const v1::GenerateResponse& message, int64_t& text_offset,
                      Json& logprobs) const;
  void AppendLogprob(const v1::Logprob& lp, int64_t& text_offset, Json& logprobs) const;
  [[nodiscard]] Json EmptyLogprobs() const;
  // The prompt text `choice` starts with (echo), or null.
  [[nodiscard]] const std::string* EchoPrompt(int32_t choice) const;
  static void NoteFinal(const v1::GenerateResponse& message, Choice& choice);
  // return_token_ids: keeps the message's token ids (and the prompt's) in `choice`.
  void NoteTokenIds(const v1::GenerateResponse& message, Choice& choice) const;
  // vLLM's prompt_logprobs list of the message that carries prompt_token_ids.
  [[nodiscard]] Json PromptLogprobsJson(const v1::GenerateResponse& message) const;
  // Tool calls (tool_choice "required" or a named function): the reply's calls in the chat
  // message / delta shape ({index,} id, type, function {name, arguments}).
  [[nodiscard]] Json ToolCallsJson(int32_t choice, const std::vector<ToolCall>& calls,
                                   bool with_index) const;
  // Call `k` of `choice` in that shape.
  [[nodiscard]] Json ToolCallJson(int32_t choice, size_t k, const ToolCall& call,
                                  bool with_index) const;
  // Streaming: reads `state.text` for calls as far as it goes (`framing`) and returns the deltas
  // of what is new: a call's first (index, id, type, name and its arguments so far), then pieces
  // of its arguments. Empty when nothing is new.
  [[nodiscard]] Json StreamedCallDeltas(int32_t choice, ToolCallStreamer::Framing framing,
                                        Choice& state) const;
  // The last event's calls: `calls` (the whole reply's parse) beyond what was streamed.
  [[nodiscard]] Json LastCallDeltas(int32_t choice, const std::vector<ToolCall>& calls,
                                    Choice& state) const;
  [[nodiscard]] bool CallsTools() const;
  // tool_choice "auto" with a parser: the free reply is read for calls.
  [[nodiscard]] bool ReadsToolCalls() const;
  // The streamed delta of an "auto" reply: content as far as it is surely not a call; at the end
  // the rest of the content and the calls.
  [[nodiscard]] Json AutoToolDelta(int32_t index, const v1::GenerateResponse& message, bool first,
                                   bool final, Choice& state) const;
  // With a reasoning parser: splits `reply`'s text, keeping the reasoning in `state` and writing
  // `reply` with only its content's text to `content_only`; returns this piece's reasoning.
  std::string SplitReasoning(const v1::GenerateResponse& reply, bool final, Choice& state,
                             v1::GenerateResponse* content_only) const;
  // A "required" reply whose calls ended by STOP: finish_reason "tool_calls", as vLLM says.
  [[nodiscard]] bool RequiredCallsStopped(const Choice& choice) const;
  static Json FinishReasonJson(const Choice& choice);
  static Json StopReasonJson(const Choice& choice);

  // Body() of /v1/embeddings, /score, /rerank and /classify: their choices pool their prompts.
  [[nodiscard]] std::string EmbeddingBasedBody() const;

  Endpoint endpoint_;
  bool embedding_base64_;
  std::vector<std::pair<int32_t, int32_t>> score_pairs_;  // score and rerank
  bool cross_encoder_;                                    // score and rerank by a reranker
  std::vector<std::string> documents_;                    // rerank
  int32_t top_n_;                                         // rerank
  bool include_usage_;
  bool continuous_usage_;
  bool logprobs_;
  int32_t top_logprobs_;
  int32_t prompt_logprobs_;
  bool return_token_ids_;
  bool tokens_as_ids_;
  int32_t n_;
  ToolChoice tool_choice_;
  // The request's tools, for a parser that converts values by their types (qwen3_coder); null
  // otherwise.
  std::shared_ptr<const Json> tools_;
  std::optional<ReasoningParser> reasoning_parser_;
  PromptReasoning prompt_reasoning_;
  std::string id_;
  int64_t created_;
  std::string model_;
  const Tokenizer* tokenizer_;
  // Chat: the reply's role, vLLM's: the response role ("assistant", or --response-role) after a
  // generation prompt, else the last message's (it continues that message, or answers as it).
  std::string role_;
  // Echo: each prompt's text (a token id prompt decoded); for chat, the last message's content
  // when it has the reply's role. Empty without echo.
  std::vector<std::string> echo_prompts_;
  std::vector<Choice> choices_;
};

// {"error": {"message", "type", "param", "code"}} as OpenAI sends it; type and code follow the
// HTTP status (400 invalid_request_error, 401 authentication_error, 404 not_found, 413,
// 429 rate_limit_exceeded, 500/503/504 server_error). An empty param is null.
std::string ErrorBody(int http_status, std::string_view message, std::string_view param = "");
// "data: {ErrorBody}\n\n": a failure after the stream has started.
std::string ErrorEvent(int http_status, std::string_view message);
// GET /v1/models, as vLLM's model cards: {"object": "list", "data": [{id, object: "model",
// created, owned_by, root, parent, max_model_len}]}; root is the base model's checkpoint or a
// LoRA adapter's directory, parent an adapter's base model (null for the base model).
std::string ModelsBody(const v1::ListModelsResponse& models, int64_t created,
                       std::string_view owned_by = "headroom");

}  // namespace headroom::router::openai
