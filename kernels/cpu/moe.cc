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

// Softmax over `logits` [num_experts] in float (as transformers routes), then the top_k.
void RouteToken(const float* logits, const MoeExpertsView& e, std::vector<int64_t>& order,
                std::vector<float>& probs, Route& route) {
  const auto n = static_cast<size_t>(e.num_experts);
  const float max = *std::max_element(logits, logits + n);
  float sum = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    probs[j] = std::exp(logits[j] - max);
    sum += probs[j];
  }
  for (size_t j = 0; j < n; ++j) probs[j] /= sum;
  std::iota(order.begin(), order.end(), 0);
  const auto k = static_cast<size_t>(e.top_k);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&probs](int64_t a, int64_t b) {
                      const auto pa = probs[static_cast<size_t>(a)];
                      const auto pb = probs[static_cast<size_t>(b)];
                      return pa != pb ? pa > pb : a < b;
                    });
  route.experts.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
  route.weights.resize(k);
  float kept = 0.0f;
  for (size_t j = 0; j < k; ++j) {
    route.weights[j] = probs[static_cast<size_t>(route.experts[j])];
    kept += route.weights[j];
  }
  if (e.renormalize) {
    for (float& w : route.weights) w /= kept;
  }
}

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
    HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "shared_gate", e.shared_gate, hidden));
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
  std::vector<int64_t> order(static_cast<size_t>(e.num_experts));
  std::vector<float> probs(static_cast<size_t>(e.num_experts));
  Route route;
  for (size_t t = 0; t < n; ++t) {
    RouteToken(logits.data() + t * static_cast<size_t>(e.num_experts), e, order, probs, route);
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
  // The shared expert over every token, scaled by its gate's sigmoid.
  HR_RETURN_IF_ERROR(
      mlp.Run(x, num_tokens, hidden, e.shared_gate_up, e.shared_down, e.shared_inter));
  std::vector<float> gate(n);
  HR_RETURN_IF_ERROR(Linear(x, e.shared_gate, nullptr, num_tokens, 1, hidden, gate.data()));
  for (size_t t = 0; t < n; ++t) {
    const float weight = 1.0f / (1.0f + std::exp(-gate[t]));
    for (size_t j = 0; j < h; ++j) out[t * h + j] += weight * mlp.y[t * h + j];
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
