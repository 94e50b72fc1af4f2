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

// The MoE MLP of one token, in double, computed token by token over every chosen expert: the
// router's softmax, the top_k by probability (ties to the lower index), renormalized or not; plus
// the shared expert scaled by its gate's sigmoid when there is one.
struct Weights {
  std::vector<float> router, gate_up, down;
  std::vector<float> shared_gate_up = {}, shared_down = {}, shared_gate = {};
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

std::vector<double> Reference(const float* x, const Weights& w, const MoeExpertsView& e,
                              int64_t hidden) {
  const auto n = static_cast<size_t>(e.num_experts);
  const auto h = static_cast<size_t>(hidden);
  const auto inter = static_cast<size_t>(e.inter);
  std::vector<double> logits(n);
  for (size_t j = 0; j < n; ++j) {
    for (size_t c = 0; c < h; ++c) logits[j] += double{w.router[j * h + c]} * double{x[c]};
  }
  double max = -INFINITY;
  for (const double l : logits) max = std::max(max, l);
  std::vector<double> probs(n);
  double sum = 0;
  for (size_t j = 0; j < n; ++j) sum += probs[j] = std::exp(logits[j] - max);
  for (double& p : probs) p /= sum;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&probs](size_t a, size_t b) { return probs[a] > probs[b]; });
  order.resize(static_cast<size_t>(e.top_k));
  double kept = 0;
  for (const size_t j : order) kept += probs[j];
  std::vector<double> out(h);
  for (const size_t expert : order) {
    const double weight = e.renormalize ? probs[expert] / kept : probs[expert];
    const std::vector<double> y = SwiGluReference(x, w.gate_up.data() + expert * 2 * inter * h,
                                                  w.down.data() + expert * h * inter, inter, h);
    for (size_t c = 0; c < h; ++c) out[c] += weight * y[c];
  }
  if (w.shared_gate.empty()) return out;
  double gate = 0;
  for (size_t c = 0; c < h; ++c) gate += double{w.shared_gate[c]} * double{x[c]};
  const std::vector<double> y = SwiGluReference(x, w.shared_gate_up.data(), w.shared_down.data(),
                                                static_cast<size_t>(e.shared_inter), h);
  for (size_t c = 0; c < h; ++c) out[c] += y[c] / (1 + std::exp(-gate));
  return out;
}

TEST(MoeTest, MatchesTokenByTokenDoubleReferenceOnOddSizes) {
  std::mt19937_64 rng(23);
  struct Shape {
    int64_t tokens, hidden, experts, top_k, inter;
    bool renormalize;
    int64_t shared_inter;  // 0: no shared expert
  };
  for (const Shape& s : {Shape{1, 8, 4, 2, 6, true, 0}, Shape{7, 13, 5, 1, 3, true, 0},
                         Shape{19, 16, 8, 3, 11, false, 0}, Shape{33, 24, 6, 6, 5, true, 0},
                         Shape{1, 8, 4, 2, 6, false, 9}, Shape{23, 17, 7, 3, 5, false, 13},
                         Shape{12, 10, 3, 2, 4, true, 1}}) {
    const std::vector<float> x = RandomFloats(rng, s.tokens * s.hidden, -1.0f, 1.0f);
    Weights w{RandomFloats(rng, s.experts * s.hidden, -1.0f, 1.0f),
              RandomFloats(rng, s.experts * 2 * s.inter * s.hidden, -0.5f, 0.5f),
              RandomFloats(rng, s.experts * s.hidden * s.inter, -0.5f, 0.5f)};
    if (s.shared_inter > 0) {
      w.shared_gate_up = RandomFloats(rng, 2 * s.shared_inter * s.hidden, -0.5f, 0.5f);
      w.shared_down = RandomFloats(rng, s.hidden * s.shared_inter, -0.5f, 0.5f);
      w.shared_gate = RandomFloats(rng, s.hidden, -1.0f, 1.0f);
    }
    const MoeExpertsView e{.router = w.router.data(),
                           .gate_up = w.gate_up.data(),
                           .down = w.down.data(),
                           .num_experts = s.experts,
                           .top_k = s.top_k,
                           .inter = s.inter,
                           .renormalize = s.renormalize,
                           .shared_gate_up = w.shared_gate_up.data(),
                           .shared_down = w.shared_down.data(),
                           .shared_gate = w.shared_gate.data(),
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
            << " shared_inter " << s.shared_inter << " token " << t << " column " << c;
      }
    }
  }
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
  e.shared_gate_up = e.shared_down = w.data();
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
  e.shared_gate = w.data();
  EXPECT_TRUE(MoeMlp(w.data(), e, 1, 4, out.data()).ok());
  e.router = nullptr;
  EXPECT_EQ(MoeMlp(w.data(), e, 1, 4, out.data()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headroom::kernels::cpu
