// A mixture-of-experts MLP's weights as the kernels see them (Mixtral, Qwen3-MoE, Qwen2-MoE,
// GLM-4.5): a plain struct of pointers and sizes, usable from host and device code, like
// paged_kv.h.
//
// Layout, fp32, row-major, contiguous:
//   router   [num_experts, hidden]             the gate: one logit per expert
//   gate_up  [num_experts, 2 * inter, hidden]  expert e's gate rows, then its up rows (as the
//                                              dense MLP's fused gate_up)
//   down     [num_experts, hidden, inter]
// and, with a shared expert (Qwen2-MoE; shared_inter > 0), that every token runs beside its top_k:
//   shared_gate_up [2 * shared_inter, hidden]  its gate rows, then its up rows
//   shared_down    [hidden, shared_inter]
//   shared_gate    [hidden] or null            its output is scaled by sigmoid(shared_gate . x)
//                                              (Qwen2-MoE), or added as it is (null: GLM-4.5)
// and, for GLM-4.5's routing:
//   correction_bias [num_experts] or null      added to the scores to choose experts only
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
  // Routing (kernels/cpu/moe.h): the scores are the router logits' softmax, or each one's sigmoid
  // (GLM-4.5's scoring); a token chooses among the experts of its topk_groups best of num_groups
  // equal groups (1: no groups); the kept weights are multiplied by routed_scale (GLM-4.5's
  // routed_scaling_factor) after renormalizing.
  bool sigmoid_scores = false;
  const float* correction_bias = nullptr;
  int64_t num_groups = 1;
  int64_t topk_groups = 1;
  float routed_scale = 1.0f;
  const float* shared_gate_up = nullptr;
  const float* shared_down = nullptr;
  const float* shared_gate = nullptr;
  int64_t shared_inter = 0;  // intermediate width of the shared expert held here; 0: none
};

}  // namespace headroom::kernels
