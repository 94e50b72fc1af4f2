// The paged KV cache as the attention kernels see it, and the per-step batch description that
// paged attention reads. Both are plain structs of pointers and sizes, usable from host and device
// code, so the CPU reference (kernels/cpu/) and the CUDA kernels (kernels/cuda/) index memory the
// same way.
//
// Layout. One K pool and one V pool per layer, each [num_blocks, block_size, num_kv_heads,
// head_dim], fp32, contiguous (the "NHD" layout of FlashInfer and vLLM's FlashAttention backend).
// A slot is one token position in the pool: slot = block * block_size + offset_in_block. The row of
// (slot, kv_head) is head_dim contiguous floats; rows of consecutive slots of one kv head are
// num_kv_heads * head_dim floats apart. Block 0 is an ordinary block here (the block pool's null
// block is a kvcache/ convention; the kernels never special-case it).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace headroom::kernels {

struct PagedKvView {
  float* k_cache;  // [num_blocks, block_size, num_kv_heads, head_dim]
  float* v_cache;  // [num_blocks, block_size, num_kv_heads, head_dim]
  int32_t num_blocks;
  int32_t block_size;
  int32_t num_kv_heads;
  int32_t head_dim;

  // Number of token slots in the pool.
  HEADROOM_HOST_DEVICE int64_t NumSlots() const {
    return static_cast<int64_t>(num_blocks) * block_size;
  }
  // Slot of position `offset` (< block_size) of block `block`.
  HEADROOM_HOST_DEVICE int64_t Slot(int64_t block, int64_t offset) const {
    return block * block_size + offset;
  }
  // Floats between the rows of two consecutive slots of one kv head.
  HEADROOM_HOST_DEVICE int64_t SlotStride() const {
    return static_cast<int64_t>(num_kv_heads) * head_dim;
  }
  // Element offset of row (slot, kv_head) in k_cache / v_cache.
  HEADROOM_HOST_DEVICE int64_t RowOffset(int64_t slot, int64_t kv_head) const {
    return slot * SlotStride() + kv_head * head_dim;
  }
  HEADROOM_HOST_DEVICE float* KeyRow(int64_t slot, int64_t kv_head) const {  // [head_dim]
    return k_cache + RowOffset(slot, kv_head);
  }
  HEADROOM_HOST_DEVICE float* ValueRow(int64_t slot, int64_t kv_head) const {  // [head_dim]
    return v_cache + RowOffset(slot, kv_head);
  }
};

// Which query rows and which cached tokens belong to which sequence in one attention call. Covers
// prefill (q_len == context_len), chunked prefill over cached blocks (q_len < context_len) and
// decode (q_len == 1) in one batch.
struct AttentionMetadata {
  // Sequence s owns query rows [query_start[s], query_start[s + 1]); query_start[0] == 0 and
  // query_start[num_seqs] == num_tokens.
  const int32_t* query_start;  // [num_seqs + 1]
  // Tokens of sequence s in the KV cache, this step's included (kv_cache_write ran before).
  const int32_t* context_lens;  // [num_seqs]
  // Block ids of sequence s in order; only the first ceil(context_lens[s] / block_size) are read.
  const int32_t* block_tables;  // [num_seqs, max_blocks_per_seq]
  int32_t num_seqs;
  int32_t max_blocks_per_seq;
};

// How one layer's attention scores its keys (the same for every sequence of the batch).
struct AttentionParams {
  // Multiplies q . k: head_dim^-0.5 for most models, query_pre_attn_scalar^-0.5 for Gemma 2.
  float scale = 1.0f;
  // 0: none. Otherwise each scaled score s becomes softcap * tanh(s / softcap) before the softmax
  // (Gemma 2's attn_logit_softcapping).
  float softcap = 0.0f;
  // 0: none. Otherwise the query at position p attends only the keys at positions
  // (p - sliding_window, p], its own included (Mistral-7B-v0.1; Gemma 2's even layers). The keys
  // before the window stay in the cache; they are only not read.
  int32_t sliding_window = 0;
};

}  // namespace headroom::kernels
