// GLM rotates the interleaved pairs (2i, 2i + 1) of each head's leading rotary_dim values
// (GPT-J's layout); the kernels rotate the pairs (i, i + rotary_dim / 2) (rotate-half, GPT-NeoX's
// and Llama's). Reordering the rows of q_proj and k_proj inside every head, row 2i to position i
// and row 2i + 1 to position rotary_dim / 2 + i (the rows past rotary_dim stay), makes
// rotate-half on the reordered projection produce the interleaved result in that same reordered
// order: pair i is turned by inv_freq[i] either way. Attention only ever forms q . k over a head,
// which the same reordering of q and k leaves unchanged, and v is not touched, so the model's
// outputs are the checkpoint's. The KV cache holds the reordered k.
//
// The reordering applies to everything whose rows are q's or k's outputs: the projections'
// weights [rows, hidden], their biases [rows], and a LoRA adapter's B [rows, r]. A tensor-parallel
// rank holds whole heads, so its slice is reordered head by head alike.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace headroom::worker {

// Reorders `rows` ([heads * head_dim rows of row_width values], row-major) head by head from the
// interleaved rotary layout to the rotate-half one. Empty `rows` (an absent bias) is left alone.
// InvalidArgument when the size is not whole heads or rotary_dim is odd, not positive or above
// head_dim.
[[nodiscard]] absl::Status InterleavedToRotateHalfRows(std::vector<float>& rows, int64_t row_width,
                                                       int64_t head_dim, int64_t rotary_dim);

}  // namespace headroom::worker
