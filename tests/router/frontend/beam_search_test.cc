// BeamSearchState on a distribution small enough to follow by hand with vLLM's rules
// (vllm/beam_search.py): 2k candidates per live beam, an ending candidate complete, the k best
// others live on, and the answer ranked by cumulative logprob / (prompt + tokens - ended) ^
// length_penalty. The end-to-end test checks the same code against transformers
// (tests/e2e/beam_search_e2e_test.cc).
#include "router/frontend/beam_search.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace headroom::router {
namespace {

// A next-token distribution: (token, logprob) pairs, best first.
v1::Logprob Next(const std::vector<std::pair<int32_t, float>>& top) {
  v1::Logprob next;
  for (const auto& [token, logprob] : top) {
    v1::TokenLogprob* alt = next.add_top_logprobs();
    alt->set_token_id(token);
    alt->set_logprob(logprob);
  }
  return next;
}

std::vector<std::vector<int32_t>> Tokens(const std::vector<Beam>& beams) {
  std::vector<std::vector<int32_t>> out;
  for (const Beam& beam : beams) out.push_back(beam.tokens);
  return out;
}

// Width 2, two steps, a prompt of 4 tokens, token 9 ends a beam, length_penalty 2.
//   Step 1 from the prompt: 5 (-0.1), 9 (-0.5), 6 (-1), 7 (-2): [9] is complete; [5] and [6]
//   live (7 is third). Step 2: after [5]: 9 (-0.2), 8 (-0.3), ...; after [6]: 1 (-0.05), ...:
//   [5 9] is complete (-0.3); [5 8] (-0.4) and [6 1] (-1.05) are the best others.
//   Scores: [5 8] -0.4 / 6^2 = -0.0111, [5 9] -0.3 / (6 - 1)^2 = -0.012, [6 1] -1.05 / 36,
//   [9] -0.5 / (5 - 1)^2. By cumulative logprob alone, or with length_penalty 1
//   (-0.4 / 6 < -0.3 / 5), [5 9] would come first.
TEST(BeamSearchStateTest, FollowsVllmsRulesByHand) {
  BeamSearchState state(4, {.width = 2,
                            .max_tokens = 2,
                            .length_penalty = 2.0,
                            .ending_tokens = {9},
                            .top_logprobs = 1});
  EXPECT_EQ(state.logprobs_per_step(), 4);
  ASSERT_EQ(state.live().size(), 1u);
  EXPECT_TRUE(state.live()[0].tokens.empty());

  state.Expand({Next({{5, -0.1f}, {9, -0.5f}, {6, -1.0f}, {7, -2.0f}, {3, -2.5f}})});
  EXPECT_EQ(Tokens(state.live()), (std::vector<std::vector<int32_t>>{{5}, {6}}));
  EXPECT_FALSE(state.done());

  state.Expand({Next({{9, -0.2f}, {8, -0.3f}, {3, -3.0f}, {4, -4.0f}}),
                Next({{1, -0.05f}, {2, -0.06f}, {3, -5.0f}, {4, -6.0f}})});
  EXPECT_TRUE(state.done());
  const std::vector<Beam> best = state.Best();
  ASSERT_EQ(Tokens(best), (std::vector<std::vector<int32_t>>{{5, 8}, {5, 9}}));
  EXPECT_FALSE(best[0].ended);
  EXPECT_TRUE(best[1].ended);
  EXPECT_NEAR(best[0].cumulative_logprob, -0.4, 1e-6);
  EXPECT_NEAR(best[1].cumulative_logprob, -0.3, 1e-6);
  EXPECT_NEAR(state.Score(best[0]), -0.4 / 36.0, 1e-7);
  EXPECT_NEAR(state.Score(best[1]), -0.3 / 25.0, 1e-7);
  // Each token keeps its logprob and top_logprobs (1) alternatives of its step.
  ASSERT_EQ(best[1].logprobs.size(), 2u);
  EXPECT_EQ(best[1].logprobs[1].token_id(), 9);
  EXPECT_FLOAT_EQ(best[1].logprobs[1].logprob(), -0.2f);
  ASSERT_EQ(best[1].logprobs[1].top_logprobs_size(), 1);
  EXPECT_EQ(best[1].logprobs[1].top_logprobs(0).token_id(), 9);
  EXPECT_EQ(best[0].logprobs[0].top_logprobs(0).token_id(), 5);
}

// A search ends early when every candidate ends; more alternatives than 2k are asked for when
// the answer's logprobs want them, but only 2k are candidates.
TEST(BeamSearchStateTest, EndsWhenEveryCandidateEnds) {
  BeamSearchState state(2, {.width = 1,
                            .max_tokens = 5,
                            .length_penalty = 1.0,
                            .ending_tokens = {7, 8},
                            .top_logprobs = 3});
  EXPECT_EQ(state.logprobs_per_step(), 3);
  // Only the first 2k = 2 are candidates: 7 and 8 both end; 4 (third) is not one.
  state.Expand({Next({{7, -0.5f}, {8, -1.0f}, {4, -1.5f}})});
  EXPECT_TRUE(state.done());
  const std::vector<Beam> best = state.Best();
  ASSERT_EQ(Tokens(best), (std::vector<std::vector<int32_t>>{{7}}));
  EXPECT_TRUE(best[0].ended);
  EXPECT_EQ(best[0].logprobs[0].top_logprobs_size(), 3);
}

// However many candidates end, the search holds the k best complete beams and the live ones, no
// more. Width 1, prompt 3: every step's two candidates are 5 (-0.1) and the ending 7 (-0.2), so
// ten steps complete ten beams [5 x i, 7], scored -(0.1 i + 0.2) / (3 + i): [7] is the best
// (-0.0667), ahead of the ten 5s (-1 / 13 = -0.0769).
TEST(BeamSearchStateTest, KeepsOnlyTheBestCompleteBeams) {
  BeamSearchState state(
      3, {.width = 1, .max_tokens = 10, .length_penalty = 1.0, .ending_tokens = {7}});
  while (!state.done()) {
    state.Expand({Next({{5, -0.1f}, {7, -0.2f}})});
    EXPECT_LE(state.beams_held(), 2u);
  }
  const std::vector<Beam> best = state.Best();
  ASSERT_EQ(Tokens(best), (std::vector<std::vector<int32_t>>{{7}}));
  EXPECT_TRUE(best[0].ended);
}

}  // namespace
}  // namespace headroom::router
