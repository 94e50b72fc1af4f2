// vLLM's use_beam_search end to end: a real router and two real workers serving the llama-gqa
// fixture, checked against tests/worker/fixtures/llama-gqa/beam_search.json (vLLM's algorithm
// over transformers' logprobs, and transformers' own generate(num_beams) where nothing ends;
// scripts/gen_beam_search_fixtures.py): the choices are the reference's beams, best first, with
// their tokens, cumulative logprobs and finish reasons, streamed or not.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "http_client.h"
#include "http_cluster.h"
#include "nlohmann/json.hpp"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;

Json Reference() {
  std::ifstream in(worker::testdata::FixtureDir("llama-gqa") / "beam_search.json");
  return Json::parse(in);
}

// The completions request of a reference case.
Json CaseRequest(const Json& c) {
  return {{"prompt", c["prompt"]},
          {"use_beam_search", true},
          {"n", c["width"]},
          {"max_tokens", c["max_tokens"]},
          {"length_penalty", c["length_penalty"]},
          {"ignore_eos", true},  // only the case's stop token ids end a beam, as in the reference
          {"stop_token_ids", c["stop_token_ids"]},
          {"logprobs", 1},
          {"return_token_ids", true}};
}

double Sum(const Json& values) {
  double sum = 0.0;
  for (const Json& v : values) sum += v.get<double>();
  return sum;
}

class BeamSearchE2eTest : public SharedClusterTest<BeamSearchE2eTest> {};

TEST_F(BeamSearchE2eTest, ChoicesAreTheReferenceBeamsBestFirst) {
  const Json reference = Reference();
  ASSERT_EQ(reference["cases"].size(), 2u);
  for (const Json& c : reference["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const HttpResponse response = cluster_->Post("/v1/completions", CaseRequest(c).dump());
    ASSERT_EQ(response.status, 200) << response.body;
    const Json body = Json::parse(response.body);
    ASSERT_EQ(body["choices"].size(), c["beams"].size()) << response.body;
    int64_t completion_tokens = 0;
    for (size_t b = 0; b < c["beams"].size(); ++b) {
      const Json& want = c["beams"][b];
      const Json& got = body["choices"][b];
      EXPECT_EQ(got["index"], b);
      EXPECT_EQ(got["token_ids"], want["tokens"]) << got.dump();
      EXPECT_EQ(got["prompt_token_ids"], c["prompt"]);
      EXPECT_EQ(got["finish_reason"], want["finish_reason"]);
      const double cumulative = Sum(got["logprobs"]["token_logprobs"]);
      EXPECT_NEAR(cumulative, want["cumulative_logprob"].get<double>(), 1e-3) << got.dump();
      // The text is the tokens' (/detokenize's), without the stop token that ended the beam.
      Json shown = want["tokens"];
      if (want["finish_reason"] == "stop") {
        EXPECT_EQ(got["stop_reason"], want["tokens"].back());
        shown.erase(shown.size() - 1);
      }
      const HttpResponse text = cluster_->Post("/detokenize", Json{{"tokens", shown}}.dump());
      ASSERT_EQ(text.status, 200) << text.body;
      EXPECT_EQ(got["text"], Json::parse(text.body)["prompt"]);
      completion_tokens += static_cast<int64_t>(want["tokens"].size());
    }
    EXPECT_EQ(body["usage"]["prompt_tokens"], c["prompt"].size());
    EXPECT_EQ(body["usage"]["completion_tokens"], completion_tokens);
  }
}

// Streamed, every choice comes whole at the end (as vLLM streams beam search), with the same
// tokens; a chat request's choices are beams too.
TEST_F(BeamSearchE2eTest, StreamedChoicesAreTheSameBeams) {
  const Json reference = Reference();
  const Json& c = reference["cases"][0];
  Json request = CaseRequest(c);
  request["stream"] = true;
  const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  std::vector<Json> tokens(c["beams"].size(), Json::array());
  std::vector<std::string> finishes(c["beams"].size());
  for (const std::string& event : response.Events()) {
    if (event == "[DONE]") continue;
    const Json chunk = Json::parse(event);
    for (const Json& choice : chunk["choices"]) {
      const size_t index = choice["index"].get<size_t>();
      ASSERT_LT(index, tokens.size()) << event;
      for (const Json& id : choice["token_ids"]) tokens[index].push_back(id);
      if (!choice["finish_reason"].is_null()) finishes[index] = choice["finish_reason"];
    }
  }
  for (size_t b = 0; b < tokens.size(); ++b) {
    EXPECT_EQ(tokens[b], c["beams"][b]["tokens"]) << "choice " << b;
    EXPECT_EQ(finishes[b], c["beams"][b]["finish_reason"]) << "choice " << b;
  }
}

// A chat request's choices are the beams of its rendered prompt: the same as a completions
// request for that prompt's ids (return_token_ids gives them) finds.
TEST_F(BeamSearchE2eTest, ChatChoicesAreTheBeamsOfTheRenderedPrompt) {
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Say hi"}}}},
                     {"use_beam_search", true},
                     {"n", 3},
                     {"max_tokens", 4},
                     {"ignore_eos", true},
                     {"return_token_ids", true}};
  const HttpResponse chat_response = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(chat_response.status, 200) << chat_response.body;
  const Json chat_body = Json::parse(chat_response.body);
  ASSERT_EQ(chat_body["choices"].size(), 3u) << chat_response.body;
  const Json completion = {{"prompt", chat_body["prompt_token_ids"]},
                           {"use_beam_search", true},
                           {"n", 3},
                           {"max_tokens", 4},
                           {"ignore_eos", true},
                           {"return_token_ids", true}};
  const HttpResponse response = cluster_->Post("/v1/completions", completion.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const Json body = Json::parse(response.body);
  for (size_t b = 0; b < 3; ++b) {
    const Json& got = chat_body["choices"][b];
    EXPECT_EQ(got["message"]["role"], "assistant");
    EXPECT_EQ(got["token_ids"], body["choices"][b]["token_ids"]) << "choice " << b;
    EXPECT_EQ(got["message"]["content"], body["choices"][b]["text"]) << "choice " << b;
    EXPECT_EQ(got["finish_reason"], "length");
  }
}

// What beam search cannot honour is refused with the field and the reason, not ignored.
TEST_F(BeamSearchE2eTest, FieldsBeamSearchCannotHonourAreRefused) {
  const Json reference = Reference();
  const Json base = CaseRequest(reference["cases"][0]);
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"n", 11}}, "n"},
      {{{"stop", "x"}}, "stop"},
      {{{"presence_penalty", 0.5}}, "presence_penalty"},
      {{{"bad_words", {"x"}}}, "bad_words"},
      {{{"guided_choice", {"a", "b"}}}, "response_format"},
      {{{"echo", true}}, "echo"},
      {{{"max_tokens", 300}}, "max_tokens"},  // the prompt + 300 > max_model_len 256
      {{{"max_tokens", 0}}, "max_tokens"},
  };
  for (const auto& [change, field] : cases) {
    Json request = base;
    request.update(change);
    const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
    EXPECT_EQ(response.status, 400) << request.dump() << " -> " << response.body;
    EXPECT_EQ(Json::parse(response.body)["error"]["param"], field) << response.body;
  }
}

}  // namespace
}  // namespace headroom::e2e
