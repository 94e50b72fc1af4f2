// vLLM's bad_words in the engine against Hugging Face transformers: greedy generations of the
// llama-gqa fixture with the words' token sequences banned as vLLM bans them, computed by
// transformers (tests/worker/fixtures/llama-gqa/bad_words.json, scripts/gen_bad_words_fixtures.py;
// where the prompt plays no part, transformers' own generate(bad_words_ids) agrees), alone and
// with min_tokens banning a stop token id too. The engine must give those tokens in one batch
// with a request without bad words (bans stay per request), and when preemptions make it
// recompute (the output it matches against is kept).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "drive_engine.h"
#include "fixture_model.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"

namespace headroom::worker {
namespace {

using nlohmann::json;

struct Case {
  std::string name;
  std::vector<std::vector<int32_t>> bad_words;  // empty: the plain greedy generation
  std::vector<int32_t> stop_token_ids;
  int32_t min_tokens = 0;
  std::vector<int32_t> tokens;
};

struct Reference {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 0;
  std::vector<Case> cases;
};

Reference LoadReference() {
  std::ifstream in(testdata::FixtureDir("llama-gqa") / "bad_words.json");
  const json j = json::parse(in);
  Reference r{.prompt = j["prompt"].get<std::vector<int32_t>>(),
              .max_tokens = j["max_tokens"].get<int32_t>(),
              .cases = {{.name = "no bad words",
                         .bad_words = {},
                         .stop_token_ids = {},
                         .min_tokens = 0,
                         .tokens = j["plain"]}}};
  for (const json& c : j["cases"]) {
    r.cases.push_back({.name = c["name"],
                       .bad_words = c["token_ids"],
                       .stop_token_ids = c["stop_token_ids"],
                       .min_tokens = c["min_tokens"],
                       .tokens = c["tokens"]});
  }
  return r;
}

Request MakeRequest(const Reference& ref, const Case& c, int64_t id) {
  Request r;
  r.id = RequestId{id};
  r.prompt = ref.prompt;
  r.sampling.temperature = 0;
  r.sampling.max_tokens = ref.max_tokens;
  r.sampling.ignore_eos = true;
  r.sampling.bad_words = c.bad_words;
  r.sampling.stop_token_ids = c.stop_token_ids;
  r.sampling.min_tokens = c.min_tokens;
  return r;
}

// Runs `copies` of every case, all queued before the first step; returns each request's tokens.
std::map<int64_t, std::vector<int32_t>> RunEngine(const Reference& ref, int copies,
                                                  const EngineOptions& options,
                                                  int64_t* preemptions = nullptr) {
  const testdata::FixtureModel& fixture = testdata::LoadFixtureModel("llama-gqa");
  CpuBackend backend(1);
  auto engine = Engine::Create(fixture.config, fixture.weights, options, &backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  std::map<int64_t, std::vector<int32_t>> out;
  if (!engine.ok()) return out;
  std::vector<Request> requests;
  for (int copy = 0; copy < copies; ++copy) {
    for (const Case& c : ref.cases) {
      requests.push_back(MakeRequest(ref, c, static_cast<int64_t>(requests.size())));
    }
  }
  testdata::DriveEngine(**engine, requests, /*one_at_a_time=*/false,
                        [&out](StepToken& t) { out[t.id.value()].push_back(t.token); });
  if (preemptions != nullptr) *preemptions = (*engine)->Stats().scheduler.num_preemptions;
  return out;
}

void ExpectReference(const Reference& ref, int copies,
                     const std::map<int64_t, std::vector<int32_t>>& got) {
  ASSERT_EQ(got.size(), ref.cases.size() * static_cast<size_t>(copies));
  for (const auto& [id, tokens] : got) {
    const Case& c = ref.cases[static_cast<size_t>(id) % ref.cases.size()];
    EXPECT_EQ(tokens, c.tokens) << c.name << " (request " << id << ")";
  }
}

TEST(BadWordsTest, BannedAsVllmBansThemInOneBatch) {
  const Reference ref = LoadReference();
  ASSERT_EQ(ref.cases.size(), 7u);
  ExpectReference(ref, 1, RunEngine(ref, 1, testdata::SmallEngineOptions()));
}

// A pool too small for all of them at once: preempted requests recompute and go on with the same
// bans.
TEST(BadWordsTest, PreemptedRequestsKeepTheirBans) {
  const Reference ref = LoadReference();
  EngineOptions options = testdata::SmallEngineOptions();
  options.num_kv_blocks = 1 + 20;  // 84 tokens for 21 requests of 7 + 12
  int64_t preemptions = 0;
  const auto got = RunEngine(ref, 3, options, &preemptions);
  EXPECT_GT(preemptions, 0) << "the pool never ran out";
  ExpectReference(ref, 3, got);
}

TEST(BadWordsTest, SequencesOutsideTheVocabularyOrEmptyAreRefused) {
  const Reference ref = LoadReference();
  const testdata::FixtureModel& fixture = testdata::LoadFixtureModel("llama-gqa");
  CpuBackend backend(1);
  auto engine =
      Engine::Create(fixture.config, fixture.weights, testdata::SmallEngineOptions(), &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  Case c{.name = "", .bad_words = {{5, 256}}, .stop_token_ids = {}, .min_tokens = 0, .tokens = {}};
  absl::Status st = (*engine)->AddRequest(MakeRequest(ref, c, 1));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "bad_words[0]: token 256 is outside [0, 256)");
  c.bad_words = {{5}, {}};
  st = (*engine)->AddRequest(MakeRequest(ref, c, 2));
  EXPECT_EQ(st.message(), "bad_words[1] has no tokens");
  EXPECT_FALSE((*engine)->HasWork());
}

}  // namespace
}  // namespace headroom::worker
