#include "kernels/cpu/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::Poisoned;
using testing::RandomFloats;

// The MoE MLP of one token, in double, computed token by token over every chosen expert, as
// transformers' Glm4MoeTopkRouter and vLLM's grouped_topk describe the routing: the router's
// softmax or sigmoid scores; the choice = score + correction bias; with groups, only the experts of
// the topk_groups groups with the best top-2 choice sums (max without a bias) are eligible; the
// top_k eligible by choice (ties to the lower index); their scores renormalized or not, times the
// routed scale; plus the shared expert, scaled by its gate's sigmoid when it has a gate.
struct Weights {
  std::vector<float> router, gate_up, down;
  std::vector<float> shared_gate_up = {}, shared_down = {}, shared_gate = {};
  std::vector<float> correction_bias = {};
};

// down(silu(gate x) * up x) of one token, in double.
std::vector<double> SwiGluReference(const float* x, const float* gate_up, const float* down,
                                    size_t inter, size_t h) {
  std::vector<double> act(inter);
  for (size_t i = 0; i < inter; ++i) {
    double g = 0;
    double u = 0;
    for (size_t c = 0; c < h; ++c) {
      g += double{gate_up[i * h + c]} * double{x[c]};
      u += double{gate_up[(inter + i) * h + c]} * double{x[c]};
    }
    act[i] = g / (1 + std::exp(-g)) * u;
  }
  std::vector<double> y(h);
  for (size_t c = 0; c < h; ++c) {
    for (size_t i = 0; i < inter; ++i) y[c] += double{down[c * inter + i]} * act[i];
  }
  return y;
}

// The experts a token with router `logits` is sent to, best first.
std::vector<size_t> ChosenExperts(const std::vector<double>& scores, const Weights& w,
                                  const MoeExpertsView& e) {
  const size_t n = scores.size();
  std::vector<double> choice = scores;
  for (size_t j = 0; j < w.correction_bias.size(); ++j) choice[j] += double{w.correction_bias[j]};
  std::vector<bool> eligible(n, true);
  if (e.num_groups > 1) {
    const auto size = n / static_cast<size_t>(e.num_groups);
    std::vector<std::pair<double, size_t>> ratings;  // (-rating, group): ascending is best first
    for (size_t g = 0; g < static_cast<size_t>(e.num_groups); ++g) {
      std::vector<double> members(choice.begin() + static_cast<std::ptrdiff_t>(g * size),
                                  choice.begin() + static_cast<std::ptrdiff_t>((g + 1) * size));
      std::sort(members.rbegin(), members.rend());
      const double rating = w.correction_bias.empty() ? members[0] : members[0] + members[1];
      ratings.emplace_back(-rating, g);
    }
    std::sort(ratings.begin(), ratings.end());
    std::vector<bool> kept(static_cast<size_t>(e.num_groups), false);
    for (size_t r = 0; r < static_cast<size_t>(e.topk_groups); ++r) kept[ratings[r].second] = true;
    for (size_t j = 0; j < n; ++j) eligible[j] = kept[j / size];
  }
  std::vector<size_t> order;
  for (size_t j = 0; j < n; ++j) {
    if (eligible[j]) order.push_back(j);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&choice](size_t a, size_t b) { return choice[a] > choice[b]; });
  order.resize(static_cast<size_t>(e.top_k));
  return order;
}

std::vector<double> Scores(const float* x, const Weights& w, const MoeExpertsView& e,
                           int64_t hidden) {
  const auto n = static_cast<size_t>(e.num_experts);
  const auto h = static_cast<size_t>(hidden);
  std::vector<double> logits(n);
  for (size_t j = 0; j < n; ++j) {
    for (size_t c = 0; c < h; ++c) logits[j] += double{w.router[j * h + c]} * double{x[c]};
  }
  std::vector<double> scores(n);
  if (e.sigmoid_scores) {
    for (size_t j = 0; j < n; ++j) scores[j] = 1 / (1 + std::exp(-logits[j]));
    return scores;
  }
  double max = -INFINITY;
  for (const double l : logits) max = std::max(max, l);
  double sum = 0;
  for (size_t j = 0; j < n; ++j) sum += scores[j] = std::exp(logits[j] - max);
  for (double& p : scores) p /= sum;
  return scores;
}

std::vector<double> Reference(const float* x, const Weights& w, const MoeExpertsView& e,
                              int64_t hidden) {
  const auto h = static_cast<size_t>(hidden);
  const auto inter = static_cast<size_t>(e.inter);
  const std::vector<double> scores = Scores(x, w, e, hidden);
  const std::vector<size_t> chosen = ChosenExperts(scores, w, e);
  double kept = 0;
  for (const size_t j : chosen) kept += scores[j];
  std::vector<double> out(h);
  for (const size_t expert : chosen) {
    const double weight =
        (e.renormalize ? scores[expert] / kept : scores[expert]) * double{e.routed_scale};
    const std::vector<double> y = SwiGluReference(x, w.gate_up.data() + expert * 2 * inter * h,
                                                  w.down.data() + expert * h * inter, inter, h);
    for (size_t c = 0; c < h; ++c) out[c] += weight * y[c];
  }
  if (w.shared_gate_up.empty()) return out;
  double gate = INFINITY;  // no gate: sigmoid(inf) = 1
  if (!w.shared_gate.empty()) {
    gate = 0;
    for (size_t c = 0; c < h; ++c) gate += double{w.shared_gate[c]} * double{x[c]};
  }
  const std::vector<double> y = SwiGluReference(x, w.shared_gate_up.data(), w.shared_down.data(),
                                                static_cast<size_t>(e.shared_inter), h);
  for (size_t c = 0; c < h; ++c) out[c] += y[c] / (1 + std::exp(-gate));
  return out;
}

// The GLM-4.5 routing knobs of one shape (the defaults: Mixtral's and Qwen's softmax routing).
struct Routing {
  bool sigmoid = false;
  bool bias = false;
  int64_t groups = 1, topk_groups = 1;
  float scale = 1.0f;
  bool shared_gate = true;
};

TEST(MoeTest, MatchesTokenByTokenDoubleReferenceOnOddSizes) {
  std::mt19937_64 rng(23);
  struct Shape {
    int64_t tokens, hidden, experts, top_k, inter;
    bool renormalize;
    int64_t shared_inter;  // 0: no shared expert
    Routing routing = {};
  };
  const Routing glm{.sigmoid = true, .bias = true, .scale = 2.5f, .shared_gate = false};
  for (const Shape& s :
       {Shape{1, 8, 4, 2, 6, true, 0}, Shape{7, 13, 5, 1, 3, true, 0},
        Shape{19, 16, 8, 3, 11, false, 0}, Shape{33, 24, 6, 6, 5, true, 0},
        Shape{1, 8, 4, 2, 6, false, 9}, Shape{23, 17, 7, 3, 5, false, 13},
        Shape{12, 10, 3, 2, 4, true, 1},
        // GLM-4.5: sigmoid scores, a correction bias, a routed scale, an ungated shared expert.
        Shape{21, 12, 8, 3, 5, true, 7, glm}, Shape{9, 10, 6, 2, 4, false, 0, glm},
        // Grouped: DeepSeek-V3's top-2 sums with a bias, DeepSeek-V2's maxima without.
        Shape{27,
              12,
              8,
              3,
              5,
              true,
              6,
              {.sigmoid = true,
              .bias = true,
              .groups = 4,
              .topk_groups = 2,
              .scale = 2.5f,
              .shared_gate = false}},
        Shape{16,
              9,
              12,
              4,
              3,
              true,
              0,
              {.sigmoid = true, .bias = true, .groups = 3, .topk_groups = 2, .scale = 1.0f}},
        Shape{25, 11, 9, 2, 4, false, 0, {.groups = 3, .topk_groups = 1, .scale = 16.0f}}}) {
    const std::vector<float> x = RandomFloats(rng, s.tokens * s.hidden, -1.0f, 1.0f);
    Weights w{RandomFloats(rng, s.experts * s.hidden, -1.0f, 1.0f),
              RandomFloats(rng, s.experts * 2 * s.inter * s.hidden, -0.5f, 0.5f),
              RandomFloats(rng, s.experts * s.hidden * s.inter, -0.5f, 0.5f)};
    if (s.shared_inter > 0) {
      w.shared_gate_up = RandomFloats(rng, 2 * s.shared_inter * s.hidden, -0.5f, 0.5f);
      w.shared_down = RandomFloats(rng, s.hidden * s.shared_inter, -0.5f, 0.5f);
      if (s.routing.shared_gate) w.shared_gate = RandomFloats(rng, s.hidden, -1.0f, 1.0f);
    }
    // Large enough to reorder the sigmoid scores, which lie within 0.5 of each other.
    if (s.routing.bias) w.correction_bias = RandomFloats(rng, s.experts, -0.3f, 0.3f);
    const auto data = [](const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); };
    const MoeExpertsView e{.router = w.router.data(),
                           .gate_up = w.gate_up.data(),
                           .down = w.down.data(),
                           .num_experts = s.experts,
                           .top_k = s.top_k,
                           .inter = s.inter,
                           .renormalize = s.renormalize,
                           .sigmoid_scores = s.routing.sigmoid,
                           .correction_bias = data(w.correction_bias),
                           .num_groups = s.routing.groups,
                           .topk_groups = s.routing.topk_groups,
                           .routed_scale = s.routing.scale,
                           .shared_gate_up = data(w.shared_gate_up),
                           .shared_down = data(w.shared_down),
                           .shared_gate = data(w.shared_gate),
                           .shared_inter = s.shared_inter};
    std::vector<float> out = Poisoned(s.tokens * s.hidden);
    ASSERT_TRUE(MoeMlp(x.data(), e, s.tokens, s.hidden, out.data()).ok());
    for (int64_t t = 0; t < s.tokens; ++t) {
      const std::vector<double> want = Reference(x.data() + t * s.hidden, w, e, s.hidden);
      for (int64_t c = 0; c < s.hidden; ++c) {
        ASSERT_NEAR(double{out[static_cast<size_t>(t * s.hidden + c)]},
                    want[static_cast<size_t>(c)],
                    1e-5 * (1 + std::abs(want[static_cast<size_t>(c)])))
            << "tokens " << s.tokens << " experts " << s.experts << " top_k " << s.top_k
            << " shared_inter " << s.shared_inter << " groups " << s.routing.groups << " token "
            << t << " column " << c;
      }
    }
  }
}

// A group is rated by its two best choices with a correction bias, by its best without: with
// choices {0.9, 0.1 | 0.6, 0.6} and one group kept, the top-2 sums (1.0 < 1.2) keep experts 2 and
// 3, the maxima (0.9 > 0.6) experts 0 and 1. The router is the identity (x is the logits); each
// expert's output is its own, so the sum shows which ran.
TEST(MoeTest, GroupsAreRatedByTheirTopTwoWithABiasAndTheirBestWithout) {
  const int64_t experts = 4, inter = 1;
  const int64_t hidden = experts;
  std::vector<float> router(experts * hidden, 0.0f);
  for (int64_t j = 0; j < experts; ++j) router[static_cast<size_t>(j * hidden + j)] = 1.0f;
  // The sigmoid's inverse, so that the scores are exactly the choices above (bias 0).
  const auto logit = [](double p) { return static_cast<float>(std::log(p / (1 - p))); };
  const std::vector<float> x = {logit(0.9), logit(0.1), logit(0.6), logit(0.6)};
  // Expert j: gate and up read column j... silu(x_j) * x_j, written to output column j.
  std::vector<float> gate_up(experts * 2 * inter * hidden, 0.0f);
  std::vector<float> down(experts * hidden * inter, 0.0f);
  for (int64_t j = 0; j < experts; ++j) {
    gate_up[static_cast<size_t>(j * 2 * hidden + j)] = 1.0f;           // gate row
    gate_up[static_cast<size_t>(j * 2 * hidden + hidden + j)] = 1.0f;  // up row
    down[static_cast<size_t>(j * hidden + j)] = 1.0f;
  }
  const std::vector<float> zero_bias(experts, 0.0f);
  MoeExpertsView e{router.data(), gate_up.data(), down.data(), experts, 2, inter, false};
  e.sigmoid_scores = true;
  e.num_groups = 2;
  e.topk_groups = 1;
  const auto ran = [&] {
    std::vector<float> out(static_cast<size_t>(hidden));
    EXPECT_TRUE(MoeMlp(x.data(), e, 1, hidden, out.data()).ok());
    std::vector<int64_t> experts_run;
    for (int64_t j = 0; j < experts; ++j) {
      if (out[static_cast<size_t>(j)] != 0.0f) experts_run.push_back(j);
    }
    return experts_run;
  };
  e.correction_bias = zero_bias.data();
  EXPECT_EQ(ran(), (std::vector<int64_t>{2, 3}));
  e.correction_bias = nullptr;
  EXPECT_EQ(ran(), (std::vector<int64_t>{0, 1}));
}

// Renormalizing matters: with top_k < num_experts the kept probabilities sum below 1.
TEST(MoeTest, RenormalizeScalesByTheKeptProbability) {
  std::mt19937_64 rng(5);
  const int64_t hidden = 6, experts = 4, inter = 3;
  const std::vector<float> x = RandomFloats(rng, hidden, -1.0f, 1.0f);
  const std::vector<float> router = RandomFloats(rng, experts * hidden, -1.0f, 1.0f);
  const std::vector<float> gate_up = RandomFloats(rng, experts * 2 * inter * hidden, -1.0f, 1.0f);
  const std::vector<float> down = RandomFloats(rng, experts * hidden * inter, -1.0f, 1.0f);
  MoeExpertsView e{router.data(), gate_up.data(), down.data(), experts, 1, inter, true};
  std::vector<float> renormalized(static_cast<size_t>(hidden));
  ASSERT_TRUE(MoeMlp(x.data(), e, 1, hidden, renormalized.data()).ok());
  e.renormalize = false;
  std::vector<float> raw(static_cast<size_t>(hidden));
  ASSERT_TRUE(MoeMlp(x.data(), e, 1, hidden, raw.data()).ok());
  // top_k 1 renormalized is the chosen expert's output at weight 1; raw is it times p < 1.
  const double ratio = double{raw[0]} / double{renormalized[0]};
  EXPECT_GT(ratio, 0.25);  // the top of 4 probabilities is at least 1/4
  EXPECT_LT(ratio, 1.0);
  for (int64_t c = 1; c < hidden; ++c) {
    EXPECT_NEAR(double{raw[static_cast<size_t>(c)]},
                ratio * double{renormalized[static_cast<size_t>(c)]}, 1e-6);
  }
}

TEST(MoeTest, BadShapesAreInvalidArgument) {
  std::vector<float> w(64, 0.1f);
  std::vector<float> out(8);
  MoeExpertsView e{w.data(), w.data(), w.data(), 2, 3, 2, true};
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.top_k = 0;
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.top_k = 1;
  EXPECT_TRUE(MoeMlp(w.data(), e, 0, 4, out.data()).ok());
  e.shared_inter = -1;
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.shared_inter = 2;  // a shared expert without its weights
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.shared_gate_up = w.data();
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.shared_down = w.data();  // no gate: added as it is (GLM-4.5)
  EXPECT_TRUE(MoeMlp(w.data(), e, 1, 4, out.data()).ok());
  e.shared_gate = w.data();
  EXPECT_TRUE(MoeMlp(w.data(), e, 1, 4, out.data()).ok());
  // Groups must split the 2 experts evenly and leave top_k eligible.
  e.num_groups = 3;
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.num_groups = 2;
  e.topk_groups = 3;
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.topk_groups = 1;
  e.top_k = 2;
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.top_k = 1;
  EXPECT_TRUE(MoeMlp(w.data(), e, 1, 4, out.data()).ok());
  e.router = nullptr;
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels::cpu
