// The numbers behind the memory plan: defaults, validation limits, and every fixed reservation,
// each with the reason for its value. docs/memory.md walks through them with an example.
#pragma once

#include <cstdint>

#include "common/units.h"

namespace headroom::kvcache {

// ---- Defaults a caller fills when the user does not say (vLLM's flag names and meanings). ----

// --gpu-memory-utilization: vLLM's default share of each GPU's memory this process may use.
inline constexpr double kDefaultGpuMemoryUtilization = 0.9;
// --block-size: vLLM's CUDA default; 16 tokens keeps last-block waste small and kernels efficient.
inline constexpr int64_t kDefaultBlockSize = 16;
// --max-num-seqs: vLLM's OpenAI-server default (it raises it to 1024 on >= 70 GiB GPUs; headroom
// keeps 256 everywhere so the logits and sampler share of the arena stays under ~1 GiB).
inline constexpr int64_t kDefaultMaxNumSeqs = 256;
// --max-num-batched-tokens: vLLM V1's OpenAI-server value on large GPUs (2048 is its class
// default). 8192 favours TTFT and throughput; longer prompts are prefilled in chunks.
inline constexpr int64_t kDefaultMaxNumBatchedTokens = 8192;
// --max-model-len has no constant default: it is the model's max_position_embeddings.

// ---- KV pool shape. ----

// Block sizes the planner accepts: powers of two from 1 to 256. vLLM's CUDA path allows 8..128;
// headroom also takes 1..4 (CPU backend, tests) and 256. A kernel that supports fewer sizes
// rejects the rest at dispatch with an explicit "unsupported block_size" error.
inline constexpr int64_t kMinBlockSize = 1;
inline constexpr int64_t kMaxBlockSize = 256;
// Blocks the pool reserves and never hands out: the null block (id 0), as in vLLM.
inline constexpr int64_t kNumReservedBlocks = 1;
// Context length of the "typical request" concurrency figure (vLLM users compare at 1k too).
inline constexpr int64_t kTypicalRequestTokens = 1024;
// Fixes suggest at most this tensor-parallel size: a group is one pod on one node (8 GPUs on HGX).
inline constexpr int64_t kMaxSuggestedTensorParallelSize = 8;

// ---- Activation arena element sizes and shapes. ----

// cudaMalloc aligns to 256 bytes; every arena sub-buffer keeps that alignment so kernels and
// cuBLASLt's heuristics see the same alignment as with separate allocations.
inline constexpr int64_t kArenaAlignmentBytes = 256;
// Logits, softmax/logprobs, attention partials and rope tables are fp32 for accuracy (vLLM also
// upcasts logits to fp32 before sampling).
inline constexpr int64_t kFp32Bytes = 4;
// Split-KV (flash-decoding) partitions per (sequence, head): enough CTAs to fill an H100's 132 SMs
// at batch 1 with 8+ heads; each partition writes an fp32 partial output of head_dim values.
inline constexpr int64_t kMaxKvSplits = 16;
// Softmax statistics per split-KV partial: running max and running sum.
inline constexpr int64_t kAttentionStatsPerRow = 2;
// Radix sort for top-k/top-p ping-pongs between two key and two index buffers (double buffer).
inline constexpr int64_t kSortBuffers = 2;
// Sort indices are int32 token ids (vocabularies stay below 2^31).
inline constexpr int64_t kSortIndexBytes = 4;
// Segmented-sort temporary storage and per-row RNG state: a few MiB at 256 x 152k; 16 covers it.
inline constexpr int64_t kSamplerScratchBytes = 16 * kMiB;
// Per-token step inputs: int32 token id, int64 position, int64 KV slot (vLLM's types).
inline constexpr int64_t kTokenIdBytes = 4;
inline constexpr int64_t kPositionBytes = 8;
inline constexpr int64_t kSlotMappingBytes = 8;
// Block tables hold int32 block ids (BlockId wraps int32_t).
inline constexpr int64_t kBlockIdBytes = 4;
// Per-sequence step inputs/outputs: seq/query/context lengths, temperature, top-p, min-p, top-k,
// seed, sampled token and its logprob: 44 bytes, rounded up to 64 for what sampling adds next.
inline constexpr int64_t kPerSequenceMetadataBytes = 64;

// ---- Fixed reservations outside the arena. The worker measures what it can at startup and
// refuses to start when a measured value exceeds its reservation. ----

// cuBLASLt workspace: NVIDIA's recommended size for Hopper (PyTorch uses the same on sm90); one
// compute stream, and graphs capture with this user-provided workspace.
inline constexpr int64_t kCublasWorkspaceBytes = 32 * kMiB;
// NCCL buffers of one communicator (only when tensor_parallel_size > 1): 4 MiB NCCL_BUFFSIZE per
// protocol and channel, up to 32 channels on NVLink, plus NVLS buffers on NVSwitch systems; seen
// at 0.3-1 GiB on 8xH100, so the top of that range is reserved.
inline constexpr int64_t kNcclBufferBytes = 1 * kGiB;
// CUDA context, kernel images (lazy loading) and cuBLAS handles: 300-500 MiB on H100, CUDA 12.
inline constexpr int64_t kCudaContextBytes = 512 * kMiB;
// CUDA graphs for the decode batch sizes replay into arena buffers (no private pool
// allocations), leaving the instantiated graph executables: a few MiB per captured size.
inline constexpr int64_t kCudaGraphBytes = 256 * kMiB;
// Held back inside the budget: 2 MiB cudaMalloc granularity on the few large allocations, the
// weight slab's 256-byte per-tensor padding (< 100 KiB), kernels loaded lazily after measuring,
// and driver allocations the process cannot see (device malloc heap, printf FIFO).
inline constexpr int64_t kSafetyMarginBytes = 256 * kMiB;

// ---- Validation limits: several times any published model, small enough that every product
// the planner forms fits in int64 (docs/memory.md gives the bound). ----

inline constexpr int64_t kMaxNumLayers = 1024;
inline constexpr int64_t kMaxHiddenSize = int64_t{1} << 17;
inline constexpr int64_t kMaxIntermediateSize = int64_t{1} << 19;
inline constexpr int64_t kMaxNumHeads = 1024;
inline constexpr int64_t kMaxHeadDim = 2048;
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 22;
inline constexpr int64_t kMaxNumExperts = 4096;  // per layer; DeepSeek-V3 has 256
inline constexpr int64_t kMaxModelLen = int64_t{1} << 27;
inline constexpr int64_t kMaxNumSeqs = int64_t{1} << 16;
inline constexpr int64_t kMaxNumBatchedTokens = int64_t{1} << 24;
inline constexpr int64_t kMaxDeviceMemoryBytes = int64_t{1} << 50;

}  // namespace headroom::kvcache
