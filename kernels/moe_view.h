// A mixture-of-experts MLP's weights as the kernels see them (Mixtral, Qwen3-MoE, Qwen2-MoE): a
// plain struct of pointers and sizes, usable from host and device code, like paged_kv.h.
//
// Layout, fp32, row-major, contiguous:
//   router   [num_experts, hidden]             the gate: one logit per expert
//   gate_up  [num_experts, 2 * inter, hidden]  expert e's gate rows, then its up rows (as the
//                                              dense MLP's fused gate_up)
//   down     [num_experts, hidden, inter]
// and, with a shared expert (Qwen2-MoE; shared_inter > 0), that every token runs beside its top_k:
//   shared_gate_up [2 * shared_inter, hidden]  its gate rows, then its up rows
//   shared_down    [hidden, shared_inter]
//   shared_gate    [hidden]                    its output is scaled by sigmoid(shared_gate . x)
// Under tensor parallelism each rank holds every expert's slice of the intermediate width (`inter`
// is the rank's share, as `shared_inter` is of the shared expert's) and the replicated router and
// shared gate, so every rank routes and gates alike and the down projections' partial sums are
// all-reduced like the dense MLP's.
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
  const float* shared_gate_up = nullptr;
  const float* shared_down = nullptr;
  const float* shared_gate = nullptr;
  int64_t shared_inter = 0;  // intermediate width of the shared expert held here; 0: none
};

}  // namespace headroom::kernels
