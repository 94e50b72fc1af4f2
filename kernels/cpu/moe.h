// Mixture-of-experts MLP: each token goes to top_k of num_experts experts by its router logits,
// and its output is the sum of those experts' SwiGLU MLPs (down(silu(gate x) * up x)) weighted by
// their scores, plus a shared expert's SwiGLU MLP when there is one. This is transformers'
// MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock, Qwen2MoeSparseMoeBlock and Glm4MoeMoE.
//
// Routing, per token:
//   scores   the softmax over all logits, or each logit's sigmoid (`sigmoid_scores`);
//   choice   the scores, plus `correction_bias` when set (it picks experts, never weights them);
//   groups   with num_groups > 1, each group of num_experts / num_groups consecutive experts is
//            rated by the sum of its two best choices (with a correction bias: DeepSeek-V3's and
//            GLM-4.5's rule) or its best one (without: DeepSeek-V2's), and only the experts of the
//            topk_groups best groups stay eligible (vLLM's grouped_topk);
//   top_k    the eligible experts with the largest choices (ties to the lower expert index,
//            including logits that round to one probability);
//   weights  their scores, renormalized to sum 1 when `renormalize`, times `routed_scale`.
// The shared expert is scaled by sigmoid(shared_gate . x), or added as it is without a gate.
//
// CPU version: fp32; the tokens routed to each expert are gathered and run through Linear as one
// batch, and each token's expert outputs are added in expert order (as transformers adds them),
// the shared expert's last.
// Host scratch (the routes, the gathered rows) is allocated per call.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/moe_view.h"

namespace headroom::kernels::cpu {

// InvalidArgument for null pointers, non-positive sizes, top_k outside [1, num_experts], groups
// that do not split the experts evenly or hold fewer than top_k eligible experts, or a negative
// shared_inter.
// `out` is overwritten and must not alias `x`.
[[nodiscard]] absl::Status MoeMlp(const float* x,  // [num_tokens, hidden]
                                  const MoeExpertsView& experts, int64_t num_tokens, int64_t hidden,
                                  float* out);  // [num_tokens, hidden]

}  // namespace headroom::kernels::cpu
