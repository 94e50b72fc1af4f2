// LoRA's low-rank update added onto a projection's output, per segment of rows (punica's SGMV:
// shrink x through A, expand through B):
//
//   out[i, j] += sum_r (sum_k x[i, k] * a[slot, r, k]) * b[slot, j, r]   for i in a segment of
//                                                                         `slot`; slot -1: none
//
// `out` rows are `ld_out` apart, so an update can land in part of a fused output (the gate half
// of gate_up). Layout and padding: kernels/lora_view.h.
//
// CPU version: two OpenBLAS GEMMs per segment through `scratch` (the shrunk rows).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/lora_view.h"

namespace headroom::kernels::cpu {

// InvalidArgument for sizes that disagree (x's width is lora.in), ld_out < lora.out, segments
// that are not ascending within [0, m], a slot outside [-1, num_slots), or null pointers.
[[nodiscard]] absl::Status LoraAdd(const float* x,  // [m, lora.in]
                                   const LoraWeightsView& lora, const LoraSegmentsView& segments,
                                   int64_t m, int64_t ld_out,
                                   float* scratch,  // [m, lora.rank]
                                   float* out);     // [m, ld_out], the first lora.out columns
}  // namespace headroom::kernels::cpu
