// Paged attention over a batch of sequences: prefill, chunked prefill over cached blocks and
// decode in one call (kernels/paged_kv.h describes the cache layout and the batch metadata).
//
// For sequence s with q_len = query_start[s+1] - query_start[s] query rows and
// context_len = context_lens[s] cached tokens (this step's included), query row i sits at
// position p_i = context_len - q_len + i and attends the keys at positions [0, p_i] (causal), or
// only the last params.sliding_window of them.
// Head h reads kv head h / (num_heads / num_kv_heads) (GQA; MHA when the ratio is 1). Position j of
// the sequence lives in block block_tables[s][j / block_size] at offset j % block_size.
//   out[row, h, :] = sum_j softmax_j(score(scale * q[row, h, :] . K[j, :])) * V[j, :]
// where score(s) is s, or softcap * tanh(s / softcap) with params.softcap set.
//
// CPU version (the reference for the CUDA kernels): work items are (sequence, kv head, tile of up
// to 16 query tokens); each item keeps the tile's query rows of all heads of the group, streams the
// keys in chunks of 32 positions, and runs an fp32 online softmax (running max, rescale on a new
// max), so each K/V row is read once per item. Items run in parallel over kernels/cpu/threads.h.
// Inner loops are specialised for head_dim 64, 128 and 256 (others take a generic path), compiled
// at -O3 and, with GCC on x86-64, also for AVX2 + FMA (picked at load time).
// On the 2-core dev VM (2026-11-22), decode of 32 sequences x 1024 tokens, 32 / 8 heads,
// head_dim 128: 48 ms on one thread, 26 ms on two (9.6 GB/s of K/V).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/paged_kv.h"

namespace headroom::kernels::cpu {

// InvalidArgument, before anything is written, for: bad sizes, num_heads not a multiple of
// cache.num_kv_heads, query_start not starting at 0 / not non-decreasing / not ending at
// num_tokens, q_len > context_len, a context longer than max_blocks_per_seq * block_size, a block
// id (of the blocks the context uses) outside [0, cache.num_blocks), a non-finite scale, a
// negative or non-finite softcap, or a negative sliding window.
[[nodiscard]] absl::Status PagedAttention(const float* q,  // [num_tokens, num_heads, head_dim]
                                          int64_t num_tokens, int64_t num_heads,
                                          const PagedKvView& cache,
                                          const AttentionMetadata& metadata,
                                          const AttentionParams& params,
                                          float* out);  // [num_tokens, num_heads, head_dim]

}  // namespace headroom::kernels::cpu
