// OpenAI's Responses API (POST /v1/responses, as vLLM serves it) over the router's chat
// completions: a Responses request becomes a chat request (input items as messages, instructions
// as the system message, flat function tools as chat tools, text.format as response_format), the
// chat pipeline runs it unchanged (template, tool and reasoning parsers, structured output,
// admission), and its answer is turned back into a Response: a whole chat.completion into one
// Response object, a chat SSE stream into the Responses stream events. Pure functions and a
// stream translator, no I/O. See docs/router.md, "Responses API".
//
// Not kept, as vLLM by default: responses are not stored (`store` answers false and a
// `previous_response_id` is not found), so there is no background mode; only function tools.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {

struct ResponsesRequest {
  // The chat completions request body it runs as.
  nlohmann::ordered_json chat;
  // The request's settings a Response repeats (instructions, max_output_tokens, tools, ...).
  nlohmann::ordered_json echo;
  bool stream = false;
};

// Errors are InvalidArgument naming the field (ErrorParam reads it, e.g. "input[2].type"), or
// NotFound for a previous_response_id (nothing is stored).
absl::StatusOr<ResponsesRequest> ParseResponsesRequest(std::string_view body);

// The Response for a whole chat.completion body answered to a request's chat, repeating its
// `echo` settings. `id` is "resp_<hex>"; output item ids are derived from it.
std::string ResponsesBody(const nlohmann::ordered_json& echo, const nlohmann::ordered_json& chat,
                          const std::string& id, int64_t created_at);

// Turns the chat completion SSE stream of a request's chat into the Responses stream (repeating
// the request's `echo` settings): created and
// in_progress first, then each output item (reasoning, message, function call) added, its deltas
// and done events, and response.completed with the whole Response (its status "incomplete" when
// cut by max_output_tokens, as vLLM sends it) once the chat stream's [DONE] arrives; a chat error
// event becomes an "error" event. Events are "event: <type>\ndata: <json>\n\n" with a
// sequence_number from 0.
class ResponsesStream {
 public:
  ResponsesStream(nlohmann::ordered_json echo, std::string id, int64_t created_at);

  // `sse`: whole chat events ("data: {...}\n\n", several at once possibly). Returns the
  // Responses events they make (possibly none).
  std::string Translate(std::string_view sse);

 private:
  enum class ItemKind { kNone, kReasoning, kMessage, kFunctionCall };

  std::string OnChunk(const nlohmann::ordered_json& chunk);
  std::string OnDone();
  std::string Event(const std::string& type, nlohmann::ordered_json fields);
  // Opens an output item of `kind` unless it is the current one (closing that first).
  std::string Open(ItemKind kind, const nlohmann::ordered_json& call = nullptr);
  std::string CloseCurrent();
  nlohmann::ordered_json ResponseObject(const std::string& status) const;

  nlohmann::ordered_json echo_;
  std::string id_;
  int64_t created_at_;
  std::string model_;
  int64_t sequence_ = 0;
  bool started_ = false;
  bool ended_ = false;
  // The output so far: finished items, then the current one (when kind_ is not kNone).
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();
  ItemKind kind_ = ItemKind::kNone;
  std::string text_;                 // the current item's text or arguments so far
  nlohmann::ordered_json logprobs_;  // the current message's logprobs so far
  int64_t call_index_ = -1;          // the chat tool call index of the current function call
  std::string finish_reason_;        // the chat stream's
  nlohmann::ordered_json usage_ = nullptr;
};

}  // namespace headroom::router::openai
