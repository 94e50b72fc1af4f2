// Embedding lookup: out[i] = table[ids[i]] * scale (Gemma multiplies its embeddings by
// sqrt(hidden_size); every other model passes 1).
//
// CPU version: validates every id first (so nothing is written on error), then copies rows.
// Memory bound; one memcpy per token.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace headroom::kernels::cpu {

// InvalidArgument for an id outside [0, vocab_size), bad sizes or a non-finite scale; `out` is
// untouched then.
[[nodiscard]] absl::Status Embedding(const int32_t* ids,  // [num_tokens]
                                     int64_t num_tokens,
                                     const float* table,  // [vocab_size, hidden_size]
                                     int64_t vocab_size, int64_t hidden_size, float scale,
                                     float* out);  // [num_tokens, hidden_size]

}  // namespace headroom::kernels::cpu
