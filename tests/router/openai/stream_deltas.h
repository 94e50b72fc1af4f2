// Test helpers for streamed OpenAI responses: the router's messages a reply is fed as, the
// deltas of an SSE stream, tool calls joined from them as a client joins them, and what the
// tool-call parsers' fixture tests share (loading a fixture, a chat request read by a parser, a
// case's whole parse against Python's labels, a reply streamed against the same reply answered
// whole).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "headroom/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/openai/tool_parser.h"

namespace headroom::router::openai {

// tests/router/openai/fixtures/`name` (under HEADROOM_SOURCE_DIR); an empty object when missing.
inline nlohmann::ordered_json CallsFixture(const std::string& name) {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  std::ifstream in(std::string(root != nullptr ? root : ".") + "/tests/router/openai/fixtures/" +
                   name);
  EXPECT_TRUE(in.good()) << "missing fixture " << name << " (is HEADROOM_SOURCE_DIR set?)";
  return in.good() ? nlohmann::ordered_json::parse(in) : nlohmann::ordered_json::object();
}

// A chat request with `tools` and tool_choice "auto", its reply read by `parser`.
inline ParsedRequest AutoToolRequest(ToolCallParser parser, const nlohmann::ordered_json& tools,
                                     bool stream) {
  absl::StatusOr<ParsedRequest> r = ParseChatRequest(nlohmann::ordered_json{
      {"messages", {{{"role", "user"}, {"content", "Go."}}}},
      {"tools", tools},
      {"stream", stream}}.dump());
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  r->tools.choice.parser = parser;
  return *std::move(r);
}

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

// object[key] when it is a string, else "". (Written out rather than json::value(key, ""), in
// which GCC 12's -Wnull-dereference sees a null string once it is inlined into some tests.)
inline std::string StringOr(const nlohmann::ordered_json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get_ref<const std::string&>();
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
      const std::string piece = StringOr(call["function"], "arguments");
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
  for (size_t at = 0; at < reply.size();) {
    // Pieces end on character boundaries, as the worker's incremental detokenizer hands them out.
    size_t end = std::min(reply.size(), at + step);
    while (end < reply.size() && (static_cast<uint8_t>(reply[end]) & 0xC0) == 0x80) ++end;
    const std::string piece = reply.substr(at, end - at);
    sse += stream.StreamEvents(0, end >= reply.size() ? LastPiece(piece, reason) : Piece(piece));
    at = end;
  }
  return sse;
}

// A fixture case {text, content, calls: [{name, arguments}]} parsed whole by `parser`: the content
// and the calls Python computed, arguments byte for byte. True when the case has calls.
inline bool ExpectParsesAsLabelled(ToolCallParser parser, const nlohmann::ordered_json& c,
                                   const nlohmann::ordered_json* tools = nullptr) {
  const std::string text = c["text"].get<std::string>();
  const ParsedToolOutput parsed = ParseToolCalls(parser, text, tools);
  if (c["content"].is_null()) {
    EXPECT_FALSE(parsed.content.has_value()) << text;
  } else {
    EXPECT_EQ(parsed.content, c["content"].get<std::string>()) << text;
  }
  EXPECT_EQ(parsed.calls.size(), c["calls"].size()) << text;
  for (size_t k = 0; k < std::min(parsed.calls.size(), c["calls"].size()); ++k) {
    EXPECT_EQ(parsed.calls[k].name, c["calls"][k]["name"]) << text;
    EXPECT_EQ(parsed.calls[k].arguments, c["calls"][k]["arguments"]) << text;
  }
  return !parsed.calls.empty();
}

// `reply` streamed `step` bytes at a time (under `stream_request`) against the same reply
// answered whole (under `whole_request`), as a client joins the stream.
struct StreamedAndWhole {
  bool same = false;                // the same content, and the same calls: ids, names, arguments
  std::string content;              // joined from the stream
  std::vector<JoinedCall> calls;    // joined from the stream
  nlohmann::ordered_json expected;  // the whole answer's tool_calls
  size_t events = 0;                // the stream's deltas
  std::string sse;
};
inline StreamedAndWhole StreamAndAnswerWhole(const ParsedRequest& whole_request,
                                             const ParsedRequest& stream_request,
                                             const std::string& reply, size_t step) {
  ResponseBuilder whole(whole_request, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  whole.Accumulate(0, LastPiece(reply, v1::FINISH_REASON_STOP));
  const nlohmann::ordered_json message =
      nlohmann::ordered_json::parse(whole.Body())["choices"][0]["message"];
  StreamedAndWhole out;
  out.expected = message.value("tool_calls", nlohmann::ordered_json::array());
  const std::string expected_content =
      message["content"].is_null() ? "" : message["content"].get<std::string>();
  ResponseBuilder stream(stream_request, "chatcmpl-00000000000000aa", 1, "m", nullptr);
  out.sse = StreamInPieces(stream, reply, step, v1::FINISH_REASON_STOP);
  const std::vector<nlohmann::ordered_json> deltas = Deltas(out.sse);
  out.events = deltas.size();
  for (const nlohmann::ordered_json& delta : deltas) out.content += StringOr(delta, "content");
  out.calls = JoinCalls(deltas);
  out.same = out.content == expected_content && out.calls.size() == out.expected.size();
  for (size_t k = 0; out.same && k < out.calls.size(); ++k) {
    out.same = out.calls[k].id == out.expected[k]["id"] &&
               out.calls[k].name == out.expected[k]["function"]["name"] &&
               out.calls[k].arguments == out.expected[k]["function"]["arguments"];
  }
  return out;
}

// What streaming every reply of a calls fixture showed.
struct FixtureStreamCounts {
  int early = 0;                  // replies whose first call went out before their last event
  int streamed_then_refused = 0;  // replies labelled content whose stream had sent a call
};

// Streams every case's reply of `fixture` at piece sizes 1, 5 and 9 (under `request(true)`,
// against the same reply answered whole under `request(false)`) and expects the stream to join to
// the whole answer, but for two cases a stream cannot follow: a key given twice (the stream sent
// its first value: the same calls by name), and a reply labelled content whose stream had sent a
// call before the reply broke (the stream keeps its calls, as vLLM's streaming does; with
// `refused_sends_no_content`, it sent none of the reply's text as content either).
template <typename RequestFn>
FixtureStreamCounts StreamFixtureCases(const nlohmann::ordered_json& fixture, RequestFn request,
                                       bool refused_sends_no_content) {
  FixtureStreamCounts counts;
  for (const nlohmann::ordered_json& c : fixture["cases"]) {
    const std::string reply = c["text"].get<std::string>();
    for (size_t step = 1; step <= 9; step += 4) {
      const StreamedAndWhole r = StreamAndAnswerWhole(request(false), request(true), reply, step);
      if (!r.same) {
        if (c["repeated_key"].get<bool>()) {
          EXPECT_EQ(r.calls.size(), r.expected.size()) << reply;
          for (size_t k = 0; k < std::min(r.calls.size(), r.expected.size()); ++k) {
            EXPECT_EQ(r.calls[k].name, r.expected[k]["function"]["name"]) << reply;
          }
          continue;
        }
        EXPECT_TRUE(c["calls"].empty()) << "step " << step << ": " << reply << "\n" << r.sse;
        if (refused_sends_no_content) {
          EXPECT_EQ(r.content, "") << reply;
        }
        EXPECT_FALSE(r.calls.empty()) << reply;
        ++counts.streamed_then_refused;
        continue;
      }
      if (step == 1 && !r.calls.empty() && r.calls[0].first_event + 1 < r.events) ++counts.early;
    }
  }
  return counts;
}

}  // namespace headroom::router::openai
