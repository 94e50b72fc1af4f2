// Test helpers for streamed OpenAI responses: the router's messages a reply is fed as, the
// deltas of an SSE stream, and tool calls joined from them as a client joins them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "headroom/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "router/openai/openai_response.h"

namespace headroom::router::openai {

inline v1::GenerateResponse Piece(const std::string& text) {
  v1::GenerateResponse m;
  m.set_text(text);
  return m;
}

inline v1::GenerateResponse LastPiece(const std::string& text, v1::FinishReason reason) {
  v1::GenerateResponse m = Piece(text);
  m.set_finish_reason(reason);
  m.mutable_usage()->set_prompt_tokens(9);
  m.mutable_usage()->set_completion_tokens(5);
  return m;
}

// The delta of each "data: {...}" event (the [DONE] line skipped).
inline std::vector<nlohmann::ordered_json> Deltas(const std::string& sse) {
  std::vector<nlohmann::ordered_json> out;
  for (size_t pos = 0; (pos = sse.find("data: {", pos)) != std::string::npos; ++pos) {
    const nlohmann::ordered_json chunk =
        nlohmann::ordered_json::parse(sse.substr(pos + 6, sse.find("\n\n", pos) - pos - 6));
    if (!chunk["choices"].empty()) out.push_back(chunk["choices"][0]["delta"]);
  }
  return out;
}

// A streamed tool call as a client puts it together from the deltas.
struct JoinedCall {
  std::string id;
  std::string name;
  std::string arguments;
  size_t first_event = 0;  // the delta that started it
  int pieces = 0;          // deltas that carried some of its arguments
};

// Joins the calls of `deltas` by index, checking the shape as OpenAI's streaming gives it: a
// call's first delta has its id, type and name; the later ones only arguments.
inline std::vector<JoinedCall> JoinCalls(const std::vector<nlohmann::ordered_json>& deltas) {
  std::vector<JoinedCall> calls;
  for (size_t e = 0; e < deltas.size(); ++e) {
    if (!deltas[e].contains("tool_calls")) continue;
    for (const nlohmann::ordered_json& call : deltas[e]["tool_calls"]) {
      const size_t k = call["index"].get<size_t>();
      const std::string piece = call["function"].value("arguments", "");
      if (k == calls.size()) {
        EXPECT_EQ(call["type"], "function");
        calls.push_back({call["id"].get<std::string>(), call["function"]["name"].get<std::string>(),
                         piece, e, 0});
      } else {
        EXPECT_LT(k, calls.size()) << "call " << k << " before call " << calls.size();
        if (k >= calls.size()) continue;
        EXPECT_FALSE(call.contains("id")) << call.dump();
        EXPECT_FALSE(call["function"].contains("name")) << call.dump();
        calls[k].arguments += piece;
      }
      if (!piece.empty()) ++calls[k].pieces;
    }
  }
  return calls;
}

// Streams `reply` `step` bytes at a time, the last piece finishing with `reason`.
inline std::string StreamInPieces(ResponseBuilder& stream, const std::string& reply, size_t step,
                                  v1::FinishReason reason) {
  std::string sse;
  for (size_t at = 0; at < reply.size(); at += step) {
    const std::string piece = reply.substr(at, step);
    sse +=
        stream.StreamEvents(0, at + step >= reply.size() ? LastPiece(piece, reason) : Piece(piece));
  }
  return sse;
}

}  // namespace headroom::router::openai
