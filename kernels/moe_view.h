// A mixture-of-experts MLP's weights as the kernels see them (Mixtral, Qwen3-MoE): a plain struct
// of pointers and sizes, usable from host and device code, like paged_kv.h.
//
// Layout, fp32, row-major, contiguous:
//   router   [num_experts, hidden]             the gate: one logit per expert
//   gate_up  [num_experts, 2 * inter, hidden]  expert e's gate rows, then its up rows (as the
//                                              dense MLP's fused gate_up)
//   down     [num_experts, hidden, inter]
// Under tensor parallelism each rank holds every expert's slice of the intermediate width (`inter`
// is the rank's share) and the replicated router, so every rank routes alike and the down
// projections' partial sums are all-reduced like the dense MLP's.
#pragma once

#include <cstdint>

namespace headroom::kernels {

struct MoeExpertsView {
  const float* router = nullptr;
  const float* gate_up = nullptr;
  const float* down = nullptr;
  int64_t num_experts = 0;
  int64_t top_k = 0;  // experts per token
  int64_t inter = 0;  // intermediate width of each expert held here
  // The top_k probabilities renormalized to sum 1 (Mixtral always; Qwen3-MoE's norm_topk_prob).
  bool renormalize = true;
};

}  // namespace headroom::kernels
