// Mixture-of-experts MLP: each token goes to the top_k of num_experts experts by its router
// logits, and its output is the sum of those experts' SwiGLU MLPs (down(silu(gate x) * up x))
// weighted by the router probabilities: softmax over all experts, the top_k kept (the larger
// probability first; a tie, including logits that round to one probability, goes to the lower
// expert index), renormalized to sum 1 when
// `experts.renormalize`; plus, with a shared expert, its SwiGLU MLP scaled by
// sigmoid(shared_gate . x). This is transformers' MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock and
// Qwen2MoeSparseMoeBlock.
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

// InvalidArgument for null pointers, non-positive sizes, top_k outside [1, num_experts], or a
// negative shared_inter.
// `out` is overwritten and must not alias `x`.
[[nodiscard]] absl::Status MoeMlp(const float* x,  // [num_tokens, hidden]
                                  const MoeExpertsView& experts, int64_t num_tokens, int64_t hidden,
                                  float* out);  // [num_tokens, hidden]

}  // namespace headroom::kernels::cpu
