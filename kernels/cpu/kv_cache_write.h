// KV cache write: stores this step's keys and values into the paged pool (kernels/paged_kv.h),
// token i into slot slot_mapping[i] (slot = block * block_size + offset). A negative slot marks a
// padding token and is skipped (vLLM uses -1).
//
// CPU version: validates every slot first (nothing is written on error), then one memcpy per
// (token, K or V) of num_kv_heads * head_dim floats. Memory bound.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/paged_kv.h"

namespace headroom::kernels::cpu {

// InvalidArgument for a slot >= cache.NumSlots(), bad sizes or a bad view; the cache is untouched.
[[nodiscard]] absl::Status KvCacheWrite(const float* k,  // [num_tokens, num_kv_heads, head_dim]
                                        const float* v,  // [num_tokens, num_kv_heads, head_dim]
                                        const int64_t* slot_mapping,  // [num_tokens]
                                        int64_t num_tokens, const PagedKvView& cache);

}  // namespace headroom::kernels::cpu
