// LoRA adapters of one projection as the kernels see them (vLLM's stacked multi-LoRA layout): a
// plain struct of pointers and sizes, usable from host and device code, like moe_view.h.
//
// Every adapter the worker serves has a slot; each projection holds all slots' factors stacked
// and zero-padded to one rank, fp32, row-major, contiguous:
//   a  [num_slots, rank, in]    LoRA's A (lora_A.weight), padded with zero rows
//   b  [num_slots, out, rank]   LoRA's B (lora_B.weight) times the adapter's scale
//                               (lora_alpha / r, or / sqrt(r) with rsLoRA), zero-padded columns
// A slot whose adapter does not touch the projection is all zeros. Zero padding adds nothing, so
// one rank serves adapters of every rank up to it.
//
// A step's rows are cut into segments of one adapter each (`starts` [count + 1] row offsets,
// `slots` [count], -1 for rows without an adapter): the sequences of a step are contiguous rows,
// and neighbours with the same adapter share a segment.
#pragma once

#include <cstdint>

namespace headroom::kernels {

struct LoraWeightsView {
  const float* a = nullptr;
  const float* b = nullptr;
  int64_t num_slots = 0;
  int64_t rank = 0;
  int64_t in = 0;   // input features held here (a row-parallel layer's shard)
  int64_t out = 0;  // output features held here (a column-parallel layer's shard)
};

struct LoraSegmentsView {
  const int32_t* starts = nullptr;  // [count + 1], ascending, starts[0] = 0
  const int32_t* slots = nullptr;   // [count]: the adapter slot, or -1 for none
  int32_t count = 0;
};

}  // namespace headroom::kernels
