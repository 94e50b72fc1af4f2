// Embeddings against Hugging Face transformers: embeddings.json (scripts/gen_embedding_fixtures.py)
// holds each fixture prompt's last hidden state (model.model(ids).last_hidden_state[0, -1]), its
// L2-normalized form and the normalized first 16 values. The engine must return those whatever
// else shares the step (generating requests, other embeddings), however the prompt is chunked,
// when the prompt is in the prefix cache, and after preemptions; and must refuse what it cannot
// honour with the numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "drive_engine.h"
#include "fixture_model.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"

namespace headroom::worker {
namespace {

using nlohmann::json;

struct Reference {
  std::vector<int32_t> ids;
  std::vector<double> last_hidden;
  std::vector<double> normalized;
  std::vector<double> truncated_normalized;
  std::vector<double> mean;     // the last hidden state's mean over all positions (mean pooling)
  std::vector<double> first;    // its first position's (CLS pooling)
  std::vector<int32_t> greedy;  // expected.json's greedy continuation (for generating neighbours)
};

std::vector<Reference> References(const std::string& model) {
  std::ifstream embeddings_file(testdata::FixtureDir(model) / "embeddings.json");
  const json embeddings = json::parse(embeddings_file);
  std::ifstream expected_file(testdata::FixtureDir(model) / "expected.json");
  const json expected = json::parse(expected_file);
  std::vector<Reference> out;
  for (size_t i = 0; i < embeddings["prompts"].size(); ++i) {
    const json& p = embeddings["prompts"][i];
    out.push_back({.ids = p["ids"].get<std::vector<int32_t>>(),
                   .last_hidden = p["last_hidden"].get<std::vector<double>>(),
                   .normalized = p["normalized"].get<std::vector<double>>(),
                   .truncated_normalized = p["truncated_normalized"].get<std::vector<double>>(),
                   .mean = p["mean"].get<std::vector<double>>(),
                   .first = p["first"].get<std::vector<double>>(),
                   .greedy = expected["prompts"][i]["greedy"].get<std::vector<int32_t>>()});
    EXPECT_EQ(out.back().ids, expected["prompts"][i]["ids"].get<std::vector<int32_t>>());
  }
  return out;
}

void ExpectVectorNear(const std::vector<float>& got, const std::vector<double>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    // Both sides compute in float32 from the same stored weights (as the logits parity test).
    ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << what << " value " << i;
  }
}

struct EngineRun {
  std::map<int64_t, std::vector<float>> embeddings;  // by request id
  std::map<int64_t, std::vector<int32_t>> tokens;    // of generating requests
  int64_t preemptions = 0;
};

// Queues `requests` (all before the first step, or each once the engine is idle) and steps the
// engine until it is done.
EngineRun RunEngine(const std::string& model, const ModelConfig& config,
                    const std::vector<Request>& requests, const EngineOptions& options,
                    bool one_at_a_time) {
  const testdata::FixtureModel& fixture = testdata::LoadFixtureModel(model);
  CpuBackend backend(1);
  auto engine = Engine::Create(config, fixture.weights, options, &backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  EngineRun run;
  if (!engine.ok()) return run;
  testdata::DriveEngine(**engine, requests, one_at_a_time, [&run](StepToken& t) {
    if (!t.embedding.empty()) {
      EXPECT_FALSE(run.embeddings.contains(t.id.value())) << "embedded twice";
      EXPECT_NE(t.finish, FinishReason::kNone) << "an embedding ends with its vector";
      run.embeddings[t.id.value()] = std::move(t.embedding);
    } else {
      run.tokens[t.id.value()].push_back(t.token);
    }
  });
  run.preemptions = (*engine)->Stats().scheduler.num_preemptions;
  return run;
}

Request Embedding(int64_t id, const std::vector<int32_t>& prompt, EmbeddingParams params) {
  Request r;
  r.id = RequestId{id};
  r.prompt = prompt;
  // Sampling an embedding asks for is ignored: it still returns the hidden state, not a token.
  r.sampling.temperature = 1.5f;
  r.sampling.max_tokens = 40;
  r.sampling.logprobs = 5;
  r.embedding = params;
  return r;
}

Request Greedy(int64_t id, const std::vector<int32_t>& prompt, int32_t max_tokens) {
  Request r;
  r.id = RequestId{id};
  r.prompt = prompt;
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

class EmbeddingRequestParityTest : public testing::TestWithParam<std::string> {};

// Every prompt embedded raw and normalized, next to greedy generations of the same prompts, in one
// batch: the embeddings are transformers' and the generations still its greedy tokens.
TEST_P(EmbeddingRequestParityTest, MatchTransformersNextToGeneratingRequests) {
  const std::vector<Reference> refs = References(GetParam());
  const ModelConfig& config = testdata::LoadFixtureModel(GetParam()).config;
  std::vector<Request> requests;
  for (size_t i = 0; i < refs.size(); ++i) {
    const auto id = static_cast<int64_t>(i);
    requests.push_back(Embedding(100 + id, refs[i].ids, {.dimensions = 0, .normalize = false}));
    requests.push_back(Greedy(200 + id, refs[i].ids, 8));
    requests.push_back(Embedding(300 + id, refs[i].ids, {.dimensions = 0, .normalize = true}));
  }
  const EngineRun run = RunEngine(GetParam(), config, requests, testdata::SmallEngineOptions(),
                                  /*one_at_a_time=*/false);
  ASSERT_EQ(run.embeddings.size(), 2 * refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    const auto id = static_cast<int64_t>(i);
    ExpectVectorNear(run.embeddings.at(100 + id), refs[i].last_hidden,
                     "raw, prompt " + std::to_string(i));
    ExpectVectorNear(run.embeddings.at(300 + id), refs[i].normalized,
                     "normalized, prompt " + std::to_string(i));
    EXPECT_FALSE(run.tokens.contains(100 + id)) << "an embedding reported a token";
    const std::vector<int32_t> want(refs[i].greedy.begin(), refs[i].greedy.begin() + 8);
    EXPECT_EQ(run.tokens.at(200 + id), want) << "prompt " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EmbeddingRequestParityTest,
                         testing::Values("llama-gqa", "qwen2-bias", "gemma2-softcap"),
                         [](const testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// Chunks of 5 tokens and at most 2 sequences per step; then each prompt again once the first copy
// is in the prefix cache (its last token is still computed, so it still embeds).
TEST(EmbeddingRequestTest, ChunkedAndCachedPromptsEmbedTheSame) {
  const std::vector<Reference> refs = References("llama-gqa");
  const ModelConfig& config = testdata::LoadFixtureModel("llama-gqa").config;
  std::vector<Request> requests;
  for (int copy = 0; copy < 2; ++copy) {
    for (size_t i = 0; i < refs.size(); ++i) {
      requests.push_back(Embedding(copy * 10 + static_cast<int64_t>(i), refs[i].ids, {}));
    }
  }
  EngineOptions options = testdata::SmallEngineOptions();
  options.max_num_seqs = 2;
  options.max_num_batched_tokens = 5;
  const EngineRun run = RunEngine("llama-gqa", config, requests, options, /*one_at_a_time=*/true);
  ASSERT_EQ(run.embeddings.size(), requests.size());
  for (const auto& [id, embedding] : run.embeddings) {
    ExpectVectorNear(embedding, refs[static_cast<size_t>(id % 10)].normalized,
                     "request " + std::to_string(id));
  }
}

// A pool too small for every request at once: preempted embeddings recompute and are reported once.
TEST(EmbeddingRequestTest, PreemptedEmbeddingsAreReportedOnce) {
  const std::vector<Reference> refs = References("llama-gqa");
  const ModelConfig& config = testdata::LoadFixtureModel("llama-gqa").config;
  std::vector<Request> requests;
  for (int copy = 0; copy < 3; ++copy) {
    for (size_t i = 0; i < refs.size(); ++i) {
      const int64_t id = copy * 10 + static_cast<int64_t>(i);
      requests.push_back(Greedy(100 + id, refs[i].ids, 24));
      requests.push_back(Embedding(id, refs[i].ids, {}));
    }
  }
  EngineOptions options = testdata::SmallEngineOptions();
  options.enable_prefix_caching = false;
  options.num_kv_blocks = 1 + 24;  // 96 tokens
  const EngineRun run = RunEngine("llama-gqa", config, requests, options, /*one_at_a_time=*/false);
  EXPECT_GT(run.preemptions, 0) << "the pool never ran out";
  ASSERT_EQ(run.embeddings.size(), requests.size() / 2);
  for (const auto& [id, embedding] : run.embeddings) {
    ExpectVectorNear(embedding, refs[static_cast<size_t>(id % 10)].normalized,
                     "request " + std::to_string(id));
  }
}

// Mean and CLS pooling (sentence-transformers' pooling_mode_mean_tokens / cls_token, as a
// model's 1_Pooling/config.json says): every prompt embedded raw is transformers' mean over all
// positions, or first position, of the last hidden state. The prompts are computed in chunks of
// 8 tokens after greedy requests of the same prompts filled the prefix cache, so a chunk that is
// not pooled, or a cached block that is skipped, fails it; so does a pool tight enough to
// preempt, where a recomputed prompt must not be pooled twice.
TEST_P(EmbeddingRequestParityTest, MeanAndClsPoolingMatchTransformers) {
  const std::vector<Reference> refs = References(GetParam());
  const ModelConfig& config = testdata::LoadFixtureModel(GetParam()).config;
  for (const char* mode : {"mean_tokens", "cls_token"}) {
    EngineOptions options = testdata::SmallEngineOptions();
    options.max_num_batched_tokens = 8;
    options.enable_prefix_caching = true;
    options.pooling = {.mode = mode, .normalize = false, .source = "1_Pooling/config.json"};
    std::vector<Request> requests;
    for (size_t i = 0; i < refs.size(); ++i) {
      requests.push_back(Greedy(100 + static_cast<int64_t>(i), refs[i].ids, 2));
    }
    for (size_t i = 0; i < refs.size(); ++i) {
      requests.push_back(Embedding(static_cast<int64_t>(i), refs[i].ids, {}));
    }
    const EngineRun run = RunEngine(GetParam(), config, requests, options, /*one_at_a_time=*/true);
    ASSERT_EQ(run.embeddings.size(), refs.size()) << mode;
    for (size_t i = 0; i < refs.size(); ++i) {
      ExpectVectorNear(run.embeddings.at(static_cast<int64_t>(i)),
                       std::string(mode) == "mean_tokens" ? refs[i].mean : refs[i].first,
                       absl::StrCat(mode, " prompt ", i));
    }
    // All at once in a pool of 24 blocks (96 tokens) per KV layer group: prompts are preempted
    // and computed again.
    options.enable_prefix_caching = false;
    options.num_kv_blocks = 1 + 24 * static_cast<int32_t>(std::max<size_t>(
                                         1, KvCacheLayerGroups(config).windows.size()));
    std::vector<Request> crowded;
    for (int copy = 0; copy < 3; ++copy) {
      for (size_t i = 0; i < refs.size(); ++i) {
        const int64_t id = copy * 10 + static_cast<int64_t>(i);
        crowded.push_back(Greedy(100 + id, refs[i].ids, 24));
        crowded.push_back(Embedding(id, refs[i].ids, {}));
      }
    }
    const EngineRun tight = RunEngine(GetParam(), config, crowded, options, false);
    EXPECT_GT(tight.preemptions, 0) << mode << ": the pool never ran out";
    ASSERT_EQ(tight.embeddings.size(), crowded.size() / 2) << mode;
    for (const auto& [id, embedding] : tight.embeddings) {
      const Reference& ref = refs[static_cast<size_t>(id % 10)];
      ExpectVectorNear(embedding, std::string(mode) == "mean_tokens" ? ref.mean : ref.first,
                       absl::StrCat(mode, " crowded request ", id));
    }
  }
}

// A mean-pooled prompt preempted halfway (a growing generation needs its blocks) computes again
// from its first token and is pooled once: 2 tokens a step, so the 61-token generation's prefill
// comes first, then the embedding's 23 tokens one a step while the generation decodes, and
// passes 72 tokens (19 of the 24 blocks, the embedding holding 6) before the embedding is done.
TEST(EmbeddingRequestTest, APreemptedPooledPromptIsPooledOnce) {
  const std::vector<Reference> refs = References("llama-gqa");
  ASSERT_EQ(refs[2].ids.size(), 23u);
  ASSERT_EQ(refs[3].ids.size(), 61u);
  EngineOptions options = testdata::SmallEngineOptions();
  options.max_num_seqs = 2;
  options.max_num_batched_tokens = 2;
  options.num_kv_blocks = 1 + 24;
  options.pooling = {.mode = "mean_tokens", .normalize = false, .source = "modules.json"};
  const EngineRun run = RunEngine("llama-gqa", testdata::LoadFixtureModel("llama-gqa").config,
                                  {Greedy(100, refs[3].ids, 30), Embedding(1, refs[2].ids, {})},
                                  options, /*one_at_a_time=*/false);
  EXPECT_GT(run.preemptions, 0) << "the embedding was never preempted";
  ASSERT_EQ(run.embeddings.size(), 1u);
  ExpectVectorNear(run.embeddings.at(1), refs[2].mean, "the preempted mean");
}

// Matryoshka truncation keeps the first values and normalizes after, and only for models whose
// config.json says they were trained for it (vLLM's rule).
TEST(EmbeddingRequestTest, DimensionsOnlyForMatryoshkaModels) {
  const std::vector<Reference> refs = References("llama-gqa");
  ModelConfig config = testdata::LoadFixtureModel("llama-gqa").config;
  const testdata::FixtureModel& fixture = testdata::LoadFixtureModel("llama-gqa");
  {
    CpuBackend backend(1);
    auto engine = Engine::Create(config, fixture.weights, testdata::SmallEngineOptions(), &backend);
    ASSERT_TRUE(engine.ok()) << engine.status();
    const absl::Status refused =
        (*engine)->AddRequest(Embedding(1, refs[1].ids, {.dimensions = 16, .normalize = true}));
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find("does not support matryoshka"), std::string::npos) << refused;
  }
  config.is_matryoshka = true;
  std::vector<Request> requests;
  for (size_t i = 0; i < refs.size(); ++i) {
    requests.push_back(
        Embedding(static_cast<int64_t>(i), refs[i].ids, {.dimensions = 16, .normalize = true}));
  }
  const EngineRun run = RunEngine("llama-gqa", config, requests, testdata::SmallEngineOptions(),
                                  /*one_at_a_time=*/false);
  ASSERT_EQ(run.embeddings.size(), refs.size());
  for (const auto& [id, embedding] : run.embeddings) {
    ExpectVectorNear(embedding, refs[static_cast<size_t>(id)].truncated_normalized,
                     "request " + std::to_string(id));
  }

  config.matryoshka_dimensions = {16, 32};
  CpuBackend backend(1);
  auto engine = Engine::Create(config, fixture.weights, testdata::SmallEngineOptions(), &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const absl::Status unlisted =
      (*engine)->AddRequest(Embedding(1, refs[1].ids, {.dimensions = 20, .normalize = true}));
  EXPECT_EQ(unlisted.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unlisted.message().find("only supports [16, 32]"), std::string::npos) << unlisted;
  const absl::Status too_wide =
      (*engine)->AddRequest(Embedding(2, refs[1].ids, {.dimensions = 65, .normalize = true}));
  EXPECT_NE(too_wide.message().find("dimensions must be in [1, 64]"), std::string::npos)
      << too_wide;
  EXPECT_TRUE(
      (*engine)->AddRequest(Embedding(3, refs[1].ids, {.dimensions = 32, .normalize = true})).ok());
}

// The model's own pooling files decide: unset normalize follows them (a sentence-transformers
// model without a Normalize module returns raw vectors), and a model that pools by a mode
// headroom does not (max, weighted mean, ...) is refused rather than answered with vectors that
// are not its embeddings.
TEST(EmbeddingRequestTest, TheModelsPoolingConfigDecides) {
  const std::vector<Reference> refs = References("llama-gqa");
  const ModelConfig& config = testdata::LoadFixtureModel("llama-gqa").config;
  EngineOptions options = testdata::SmallEngineOptions();
  options.pooling.normalize = false;
  options.pooling.source = "modules.json";
  const EngineRun run = RunEngine("llama-gqa", config,
                                  {Embedding(1, refs[2].ids, {}),
                                   Embedding(2, refs[2].ids, {.dimensions = 0, .normalize = true})},
                                  options, /*one_at_a_time=*/false);
  ASSERT_EQ(run.embeddings.size(), 2u);
  ExpectVectorNear(run.embeddings.at(1), refs[2].last_hidden, "the model's default: raw");
  ExpectVectorNear(run.embeddings.at(2), refs[2].normalized, "asked: normalized");

  options.pooling.mode = "max_tokens";
  options.pooling.source = "/m/1_Pooling/config.json";
  CpuBackend backend(1);
  auto engine =
      Engine::Create(config, testdata::LoadFixtureModel("llama-gqa").weights, options, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const absl::Status refused = (*engine)->AddRequest(Embedding(3, refs[2].ids, {}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("pools its embeddings by max_tokens (/m/1_Pooling/config.json); "
                                   "headroom pools by the last token, the mean or the first (CLS) "
                                   "token only"),
            std::string::npos)
      << refused;
  EXPECT_TRUE((*engine)->AddRequest(Greedy(4, refs[2].ids, 4)).ok()) << "it still generates";
}

// An embedding generates nothing, so its prompt may fill max_model_len (a generating request of
// that length cannot: it needs room for a token); one token more is refused with the numbers.
TEST(EmbeddingRequestTest, PromptMayFillMaxModelLen) {
  const testdata::FixtureModel& fixture = testdata::LoadFixtureModel("llama-gqa");
  EngineOptions options = testdata::SmallEngineOptions();
  options.max_model_len = 32;
  std::vector<int32_t> prompt(32);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(3 + i);
  const EngineRun run = RunEngine("llama-gqa", fixture.config, {Embedding(1, prompt, {})}, options,
                                  /*one_at_a_time=*/false);
  ASSERT_EQ(run.embeddings.size(), 1u);
  EXPECT_EQ(run.embeddings.at(1).size(), 64u);

  CpuBackend backend(1);
  auto engine = Engine::Create(fixture.config, fixture.weights, options, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->AddRequest(Greedy(2, prompt, 1)).code(), absl::StatusCode::kInvalidArgument);
  prompt.push_back(7);
  const absl::Status too_long = (*engine)->AddRequest(Embedding(3, prompt, {}));
  EXPECT_EQ(too_long.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.message().find("maximum context length is 32 tokens; the input to embed "
                                    "has 33 tokens"),
            std::string::npos)
      << too_long;
}

}  // namespace
}  // namespace headroom::worker
