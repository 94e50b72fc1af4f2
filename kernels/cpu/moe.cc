#include "kernels/cpu/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/silu_and_mul.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {
namespace {

// One token's route: its top_k experts (in the order they were chosen) and their weights.
struct Route {
  std::vector<int64_t> experts;
  std::vector<float> weights;
};

// The scores of `logits` [num_experts] in float (as transformers routes): softmax or sigmoid.
void Scores(const float* logits, const MoeExpertsView& e, std::vector<float>& scores) {
  const auto n = static_cast<size_t>(e.num_experts);
  if (e.sigmoid_scores) {
    for (size_t j = 0; j < n; ++j) scores[j] = 1.0f / (1.0f + std::exp(-logits[j]));
    return;
  }
  const float max = *std::max_element(logits, logits + n);
  float sum = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    scores[j] = std::exp(logits[j] - max);
    sum += scores[j];
  }
  for (size_t j = 0; j < n; ++j) scores[j] /= sum;
}

// Leaves only the experts of the topk_groups best groups eligible: the others' choices become
// -inf. A group's rating is the sum of its two best choices with a correction bias, else its best.
void MaskGroups(const MoeExpertsView& e, std::vector<float>& choice, std::vector<int64_t>& groups,
                std::vector<float>& rating) {
  const auto size = static_cast<size_t>(e.num_experts / e.num_groups);
  for (size_t g = 0; g < rating.size(); ++g) {
    const auto first = choice.begin() + static_cast<std::ptrdiff_t>(g * size);
    float best = -INFINITY;
    float second = -INFINITY;
    for (auto it = first; it != first + static_cast<std::ptrdiff_t>(size); ++it) {
      if (*it > best) {
        second = best;
        best = *it;
      } else if (*it > second) {
        second = *it;
      }
    }
    rating[g] = e.correction_bias != nullptr && size > 1 ? best + second : best;
  }
  std::iota(groups.begin(), groups.end(), 0);
  const auto kept = static_cast<std::ptrdiff_t>(e.topk_groups);
  std::partial_sort(groups.begin(), groups.begin() + kept, groups.end(),
                    [&rating](int64_t a, int64_t b) {
                      const float ra = rating[static_cast<size_t>(a)];
                      const float rb = rating[static_cast<size_t>(b)];
                      return ra != rb ? ra > rb : a < b;
                    });
  for (auto it = groups.begin() + kept; it != groups.end(); ++it) {
    const auto first =
        choice.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(*it) * size);
    std::fill(first, first + static_cast<std::ptrdiff_t>(size), -INFINITY);
  }
}

// One token's route from its router `logits` [num_experts] (kernels/cpu/moe.h's rules). The
// vectors are scratch of num_experts (order, scores, choice) and num_groups (groups, rating).
struct Router {
  std::vector<int64_t> order;
  std::vector<float> scores;
  std::vector<float> choice;
  std::vector<int64_t> groups;
  std::vector<float> rating;

  explicit Router(const MoeExpertsView& e)
      : order(static_cast<size_t>(e.num_experts)),
        scores(static_cast<size_t>(e.num_experts)),
        choice(static_cast<size_t>(e.num_experts)),
        groups(static_cast<size_t>(e.num_groups)),
        rating(static_cast<size_t>(e.num_groups)) {}

  void Choose(const float* logits, const MoeExpertsView& e, Route& route) {
    Scores(logits, e, scores);
    choice = scores;
    if (e.correction_bias != nullptr) {
      for (size_t j = 0; j < choice.size(); ++j) choice[j] += e.correction_bias[j];
    }
    if (e.num_groups > 1) MaskGroups(e, choice, groups, rating);
    std::iota(order.begin(), order.end(), 0);
    const auto k = static_cast<size_t>(e.top_k);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [this](int64_t a, int64_t b) {
                        const float ca = choice[static_cast<size_t>(a)];
                        const float cb = choice[static_cast<size_t>(b)];
                        return ca != cb ? ca > cb : a < b;
                      });
    route.experts.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    route.weights.resize(k);
    float kept = 0.0f;
    for (size_t j = 0; j < k; ++j) {
      route.weights[j] = scores[static_cast<size_t>(route.experts[j])];
      kept += route.weights[j];
    }
    const float scale = e.renormalize ? e.routed_scale / kept : e.routed_scale;
    for (float& w : route.weights) w *= scale;
  }
};

// One SwiGLU MLP, down(silu(gate x) * up x), over m rows; y holds the [m, hidden] result. The
// scratch is kept across calls.
struct SwiGlu {
  std::vector<float> gate_up;
  std::vector<float> act;
  std::vector<float> y;

  absl::Status Run(const float* rows, int64_t m, int64_t hidden, const float* w_gate_up,
                   const float* w_down, int64_t inter) {
    const auto count = static_cast<size_t>(m);
    gate_up.resize(count * 2 * static_cast<size_t>(inter));
    act.resize(count * static_cast<size_t>(inter));
    y.resize(count * static_cast<size_t>(hidden));
    HR_RETURN_IF_ERROR(Linear(rows, w_gate_up, nullptr, m, 2 * inter, hidden, gate_up.data()));
    HR_RETURN_IF_ERROR(SiluAndMul(gate_up.data(), m, inter, act.data()));
    return Linear(act.data(), w_down, nullptr, m, hidden, inter, y.data());
  }
};

}  // namespace

absl::Status MoeMlp(const float* x, const MoeExpertsView& e, int64_t num_tokens, int64_t hidden,
                    float* out) {
  constexpr absl::string_view kOp = "MoeMlp";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "hidden", hidden));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "num_experts", e.num_experts));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "inter", e.inter));
  if (e.top_k < 1 || e.top_k > e.num_experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        kOp, ": top_k must be in [1, num_experts = ", e.num_experts, "], got ", e.top_k));
  }
  if (e.num_groups < 1 || e.num_experts % e.num_groups != 0 || e.topk_groups < 1 ||
      e.topk_groups > e.num_groups || e.top_k > e.topk_groups * (e.num_experts / e.num_groups)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": ", e.num_experts, " experts in ", e.num_groups, " groups, ",
                     e.topk_groups, " of them eligible, cannot route top_k = ", e.top_k,
                     " (the groups must split the experts evenly and hold at least top_k)"));
  }
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "x", x, num_tokens * hidden));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "router", e.router, e.num_experts * hidden));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "gate_up", e.gate_up, e.num_experts * 2 * e.inter * hidden));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "down", e.down, e.num_experts * hidden * e.inter));
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "shared_inter", e.shared_inter));
  if (e.shared_inter > 0) {
    HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "shared_gate_up", e.shared_gate_up,
                                              2 * e.shared_inter * hidden));
    HR_RETURN_IF_ERROR(
        internal::CheckPointer(kOp, "shared_down", e.shared_down, hidden * e.shared_inter));
    if (e.shared_gate != nullptr) {
      HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "shared_gate", e.shared_gate, hidden));
    }
  }
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "out", out, num_tokens * hidden));
  std::fill(out, out + num_tokens * hidden, 0.0f);
  if (num_tokens == 0) return absl::OkStatus();

  const auto n = static_cast<size_t>(num_tokens);
  const auto h = static_cast<size_t>(hidden);
  std::vector<float> logits(n * static_cast<size_t>(e.num_experts));
  HR_RETURN_IF_ERROR(
      Linear(x, e.router, nullptr, num_tokens, e.num_experts, hidden, logits.data()));
  // Which tokens each expert serves, with their weights.
  std::vector<std::vector<std::pair<size_t, float>>> served(static_cast<size_t>(e.num_experts));
  Router router(e);
  Route route;
  for (size_t t = 0; t < n; ++t) {
    router.Choose(logits.data() + t * static_cast<size_t>(e.num_experts), e, route);
    for (size_t j = 0; j < route.experts.size(); ++j) {
      served[static_cast<size_t>(route.experts[j])].emplace_back(t, route.weights[j]);
    }
  }
  // Each expert over its tokens as one batch; outputs added in expert order.
  SwiGlu mlp;
  std::vector<float> rows;
  for (size_t expert = 0; expert < served.size(); ++expert) {
    const auto& tokens = served[expert];
    if (tokens.empty()) continue;
    const size_t m = tokens.size();
    rows.resize(m * h);
    for (size_t r = 0; r < m; ++r) {
      std::copy_n(x + tokens[r].first * h, h, rows.begin() + static_cast<std::ptrdiff_t>(r * h));
    }
    const auto inter = static_cast<size_t>(e.inter);
    HR_RETURN_IF_ERROR(mlp.Run(rows.data(), static_cast<int64_t>(m), hidden,
                               e.gate_up + expert * 2 * inter * h, e.down + expert * h * inter,
                               e.inter));
    for (size_t r = 0; r < m; ++r) {
      float* dst = out + tokens[r].first * h;
      const float weight = tokens[r].second;
      for (size_t j = 0; j < h; ++j) dst[j] += weight * mlp.y[r * h + j];
    }
  }
  if (e.shared_inter == 0) return absl::OkStatus();
  // The shared expert over every token, scaled by its gate's sigmoid (or not, without one).
  HR_RETURN_IF_ERROR(
      mlp.Run(x, num_tokens, hidden, e.shared_gate_up, e.shared_down, e.shared_inter));
  if (e.shared_gate == nullptr) {
    for (size_t j = 0; j < n * h; ++j) out[j] += mlp.y[j];
    return absl::OkStatus();
  }
  std::vector<float> gate(n);
  HR_RETURN_IF_ERROR(Linear(x, e.shared_gate, nullptr, num_tokens, 1, hidden, gate.data()));
  for (size_t t = 0; t < n; ++t) {
    const float weight = 1.0f / (1.0f + std::exp(-gate[t]));
    for (size_t j = 0; j < h; ++j) out[t * h + j] += weight * mlp.y[t * h + j];
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
