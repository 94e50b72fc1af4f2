// Prompt logprobs against Hugging Face transformers: the fixture's prompt logits (expected.json,
// scripts/gen_model_fixtures.py) give log_softmax(logits[p - 1])[ids[p]] for every prompt token
// p >= 1 and its top alternatives. The engine must report exactly those whatever the step shape:
// one step, prompt chunks with logits slices smaller than the chunk, a prompt already in the
// prefix cache (recomputed, since cached blocks have no logits), and preemptions (recomputed but
// reported once).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <vector>

#include "drive_engine.h"
#include "fixture_model.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"

namespace headroom::worker {
namespace {

using nlohmann::json;

constexpr int32_t kTop = 3;

struct Reference {
  std::vector<int32_t> ids;
  // Entry p - 1 for prompt token p: its logprob and the top kTop (id, logprob).
  std::vector<double> logprob;
  // The rank transformers' logits give (1 + more likely tokens), as a range: logits within 1e-4
  // of the token's may fall either side of it in float32.
  std::vector<std::pair<int32_t, int32_t>> rank;
  std::vector<std::vector<std::pair<int32_t, double>>> top;
};

std::vector<Reference> References() {
  std::ifstream in(testdata::FixtureDir("llama-gqa") / "expected.json");
  const json expected = json::parse(in);
  std::vector<Reference> out;
  for (const json& prompt : expected["prompts"]) {
    if (!prompt.contains("logits")) continue;
    Reference& r = out.emplace_back();
    r.ids = prompt["ids"].get<std::vector<int32_t>>();
    for (size_t p = 1; p < r.ids.size(); ++p) {
      const std::vector<double> row = prompt["logits"][p - 1].get<std::vector<double>>();
      double lse = 0.0;
      for (const double l : row) lse += std::exp(l);
      lse = std::log(lse);
      const double target = row[static_cast<size_t>(r.ids[p])];
      r.logprob.push_back(target - lse);
      const auto above = [&row](double bound) {
        return 1 + static_cast<int32_t>(std::count_if(row.begin(), row.end(),
                                                      [bound](double l) { return l > bound; }));
      };
      r.rank.emplace_back(above(target + 1e-4), above(target - 1e-4));
      std::vector<size_t> order(row.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&row](size_t a, size_t b) { return row[a] > row[b]; });
      auto& top = r.top.emplace_back();
      for (size_t k = 0; k < static_cast<size_t>(kTop); ++k) {
        top.emplace_back(static_cast<int32_t>(order[k]), row[order[k]] - lse);
      }
    }
  }
  return out;
}

// Runs `copies` requests of each reference prompt through an engine with `options` (all queued
// before the first step, or one after another) and returns each request's prompt logprobs.
std::map<int64_t, std::vector<PromptTokenLogprob>> RunEngine(const std::vector<Reference>& refs,
                                                             int copies,
                                                             const EngineOptions& options,
                                                             bool one_at_a_time,
                                                             int64_t* preemptions = nullptr) {
  const testdata::FixtureModel& fixture = testdata::LoadFixtureModel("llama-gqa");
  CpuBackend backend(1);
  auto engine = Engine::Create(fixture.config, fixture.weights, options, &backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  std::map<int64_t, std::vector<PromptTokenLogprob>> out;
  if (!engine.ok()) return out;
  std::vector<Request> requests;
  for (int c = 0; c < copies; ++c) {
    for (const Reference& ref : refs) {
      Request& r = requests.emplace_back();
      r.id = RequestId{static_cast<int64_t>(requests.size())};
      r.prompt = ref.ids;
      r.sampling.temperature = 0;
      r.sampling.max_tokens = 24;
      r.sampling.ignore_eos = true;
      r.sampling.prompt_logprobs = kTop;
    }
  }
  testdata::DriveEngine(**engine, requests, one_at_a_time, [&out](StepToken& t) {
    if (!t.prompt_logprobs.empty()) {
      EXPECT_FALSE(out.contains(t.id.value())) << "reported twice";
      out[t.id.value()] = std::move(t.prompt_logprobs);
    }
  });
  if (preemptions != nullptr) *preemptions = (*engine)->Stats().scheduler.num_preemptions;
  return out;
}

void ExpectMatches(const std::vector<Reference>& refs, int copies,
                   const std::map<int64_t, std::vector<PromptTokenLogprob>>& got) {
  ASSERT_EQ(got.size(), refs.size() * static_cast<size_t>(copies));
  for (const auto& [id, logprobs] : got) {
    const Reference& ref = refs[static_cast<size_t>(id - 1) % refs.size()];
    ASSERT_EQ(logprobs.size(), ref.ids.size() - 1) << "request " << id;
    for (size_t p = 0; p < logprobs.size(); ++p) {
      EXPECT_EQ(logprobs[p].token, ref.ids[p + 1]);
      EXPECT_GE(logprobs[p].rank, ref.rank[p].first) << "request " << id << " token " << p + 1;
      EXPECT_LE(logprobs[p].rank, ref.rank[p].second) << "request " << id << " token " << p + 1;
      EXPECT_NEAR(logprobs[p].logprob, ref.logprob[p], 2e-4 + 2e-4 * std::fabs(ref.logprob[p]))
          << "request " << id << " token " << p + 1;
      ASSERT_EQ(logprobs[p].top_logprobs.size(), static_cast<size_t>(kTop));
      for (size_t k = 0; k < static_cast<size_t>(kTop); ++k) {
        EXPECT_EQ(logprobs[p].top_logprobs[k].token, ref.top[p][k].first)
            << "request " << id << " token " << p + 1 << " top " << k;
        EXPECT_NEAR(logprobs[p].top_logprobs[k].logprob, ref.top[p][k].second,
                    2e-4 + 2e-4 * std::fabs(ref.top[p][k].second));
      }
    }
  }
}

TEST(PromptLogprobsTest, MatchTransformersInOneStep) {
  const std::vector<Reference> refs = References();
  ASSERT_GE(refs.size(), 2u) << "the fixture has no prompt logits";
  ExpectMatches(refs, 1,
                RunEngine(refs, 1, testdata::SmallEngineOptions(), /*one_at_a_time=*/false));
}

// Chunks of 5 tokens, logits slices of 2 rows (max_num_seqs 2).
TEST(PromptLogprobsTest, MatchTransformersInChunksAndSlices) {
  const std::vector<Reference> refs = References();
  EngineOptions options = testdata::SmallEngineOptions();
  options.max_num_seqs = 2;
  options.max_num_batched_tokens = 5;
  ExpectMatches(refs, 1, RunEngine(refs, 1, options, /*one_at_a_time=*/false));
}

// The second copy of each prompt finds it in the prefix cache and still gets every logprob.
TEST(PromptLogprobsTest, CachedPromptsAreRecomputedForTheirLogprobs) {
  const std::vector<Reference> refs = References();
  ExpectMatches(refs, 2,
                RunEngine(refs, 2, testdata::SmallEngineOptions(), /*one_at_a_time=*/true));
}

// A pool too small for all of them at once: preempted requests recompute their prompts and still
// report each prompt token once.
TEST(PromptLogprobsTest, PreemptedRequestsReportEachPromptTokenOnce) {
  const std::vector<Reference> refs = References();
  EngineOptions options = testdata::SmallEngineOptions();
  options.num_kv_blocks = 1 + 24;  // 96 tokens for 3 x 2 requests of up to 23 + 24
  int64_t preemptions = 0;
  const auto got = RunEngine(refs, 3, options, /*one_at_a_time=*/false, &preemptions);
  EXPECT_GT(preemptions, 0) << "the pool never ran out";
  ExpectMatches(refs, 3, got);
}

}  // namespace
}  // namespace headroom::worker
