// Greedy continuations of fixture prompts through an Engine, held against transformers'
// (expected.json "greedy" and "top5", scripts/gen_model_fixtures.py): equal tokens; where they
// diverge, each side's token must be in the other's top-5 at that step (vLLM's
// check_logprobs_close rule), and comparison stops. Logprobs of agreeing tokens within 1e-3.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "worker/engine/engine.h"

namespace headroom::worker::testing {

using json = nlohmann::json;

// Runs fixture prompt i to max_tokens[i] greedy tokens (with top-5 logprobs) on `engine`; none
// when max_tokens[i] is 0. Empty max_tokens: 32 for every prompt. `customize` edits each request
// before it is added.
inline std::vector<std::vector<StepToken>> RunGreedy(
    Engine& engine, const json& prompts, std::vector<int32_t> max_tokens = {},
    const std::function<void(Request&)>& customize = nullptr) {
  if (max_tokens.empty()) max_tokens.assign(prompts.size(), 32);
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (max_tokens[i] == 0) continue;
    Request r;
    r.id = RequestId{static_cast<int64_t>(i)};
    r.prompt = prompts[i]["ids"].get<std::vector<int32_t>>();
    r.sampling.temperature = 0;
    r.sampling.max_tokens = max_tokens[i];
    r.sampling.ignore_eos = true;
    r.sampling.logprobs = 5;
    if (customize) customize(r);
    const absl::Status added = engine.AddRequest(r);
    EXPECT_TRUE(added.ok()) << added;
  }
  std::vector<std::vector<StepToken>> out(prompts.size());
  while (engine.HasWork()) {
    auto step = engine.Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (StepToken& t : *step) out[static_cast<size_t>(t.id.value())].push_back(std::move(t));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(out[i].size(), static_cast<size_t>(max_tokens[i])) << "prompt " << i;
  }
  return out;
}

// Our greedy tokens are transformers' first ones (see the rule at the top); returns the prompts
// that diverged within it.
inline int ExpectGreedyMatches(const json& prompts,
                               const std::vector<std::vector<StepToken>>& out) {
  int diverged = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("prompt ", i));
    const auto hf_tokens = prompts[i]["greedy"].get<std::vector<int32_t>>();
    EXPECT_LE(out[i].size(), hf_tokens.size());
    for (size_t step = 0; step < std::min(out[i].size(), hf_tokens.size()); ++step) {
      const json& hf_top = prompts[i]["top5"][step];
      const StepToken& ours = out[i][step];
      if (ours.token == hf_tokens[step]) {
        EXPECT_NEAR(ours.logprob, hf_top[0][1].get<double>(), 1e-3) << "step " << step;
        continue;
      }
      // Divergence: each side's token must be in the other's top-5; then stop comparing.
      bool ours_in_hf = false;
      for (const json& entry : hf_top) ours_in_hf |= entry[0].get<int32_t>() == ours.token;
      bool hf_in_ours = false;
      for (const TokenLogprob& alt : ours.top_logprobs) hf_in_ours |= alt.token == hf_tokens[step];
      EXPECT_TRUE(ours_in_hf && hf_in_ours)
          << "step " << step << ": ours " << ours.token << ", transformers " << hf_tokens[step];
      ++diverged;
      break;
    }
  }
  return diverged;
}

}  // namespace headroom::worker::testing
