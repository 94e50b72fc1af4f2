// vLLM's bad_words end to end: a real router (its byte tokenizer turns the words into token
// sequences) and two real workers serving the llama-gqa fixture, checked against
// tests/worker/fixtures/llama-gqa/bad_words.json (transformers' greedy generations with vLLM's
// ban; scripts/gen_bad_words_fixtures.py). The words go as strings, as a client sends them.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "http_client.h"
#include "http_cluster.h"
#include "nlohmann/json.hpp"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;

Json Reference() {
  std::ifstream in(worker::testdata::FixtureDir("llama-gqa") / "bad_words.json");
  return Json::parse(in);
}

class BadWordsE2eTest : public SharedClusterTest<BadWordsE2eTest> {};

TEST_F(BadWordsE2eTest, CompletionsGiveTheReferenceTokens) {
  const Json reference = Reference();
  ASSERT_EQ(reference["cases"].size(), 6u);
  for (const Json& c : reference["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const Json request = {{"prompt", reference["prompt"]},
                          {"max_tokens", reference["max_tokens"]},
                          {"temperature", 0},
                          {"ignore_eos", true},
                          {"bad_words", c["bad_words"]},
                          {"stop_token_ids", c["stop_token_ids"]},
                          {"min_tokens", c["min_tokens"]},
                          {"return_token_ids", true}};
    const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
    ASSERT_EQ(response.status, 200) << response.body;
    EXPECT_EQ(Json::parse(response.body)["choices"][0]["token_ids"], c["tokens"]) << response.body;
  }
}

// A chat request's bad words ban as a completions request's do for its rendered prompt.
TEST_F(BadWordsE2eTest, ChatBansAsCompletionsDo) {
  Json chat = {{"messages", {{{"role", "user"}, {"content", "Say hi"}}}},
               {"max_tokens", 8},
               {"temperature", 0},
               {"ignore_eos", true},
               {"return_token_ids", true}};
  const HttpResponse plain = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(plain.status, 200) << plain.body;
  const Json plain_body = Json::parse(plain.body);
  // Ban the plain answer's first token (as the one-byte word it is, when it is ASCII).
  const int first = plain_body["choices"][0]["token_ids"][0].get<int>();
  ASSERT_LT(first, 128) << "the fixture's chat answer starts outside ASCII: " << plain.body;
  chat["bad_words"] = {std::string(1, static_cast<char>(first))};
  const HttpResponse banned = cluster_->Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(banned.status, 200) << banned.body;
  const Json banned_ids = Json::parse(banned.body)["choices"][0]["token_ids"];
  EXPECT_NE(banned_ids[0], first) << banned.body;

  const Json completion = {{"prompt", plain_body["prompt_token_ids"]},
                           {"max_tokens", 8},
                           {"temperature", 0},
                           {"ignore_eos", true},
                           {"bad_words", chat["bad_words"]},
                           {"return_token_ids", true}};
  const HttpResponse response = cluster_->Post("/v1/completions", completion.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(Json::parse(response.body)["choices"][0]["token_ids"], banned_ids);
}

TEST_F(BadWordsE2eTest, BadInputIsRefusedNamingTheField) {
  const std::vector<std::pair<Json, std::string>> cases = {
      {"D", "bad_words"},             // not an array
      {{"D", 7}, "bad_words[1]"},     // not a string
      {{"D", " \t"}, "bad_words"},    // whitespace only
      {Json(129, "x"), "bad_words"},  // more sequences than vLLM allows
  };
  for (const auto& [words, param] : cases) {
    const Json request = {{"prompt", "hi"}, {"max_tokens", 2}, {"bad_words", words}};
    const HttpResponse response = cluster_->Post("/v1/completions", request.dump());
    EXPECT_EQ(response.status, 400) << request.dump() << " -> " << response.body;
    EXPECT_EQ(Json::parse(response.body)["error"]["param"], param) << response.body;
  }
}

}  // namespace
}  // namespace headroom::e2e
