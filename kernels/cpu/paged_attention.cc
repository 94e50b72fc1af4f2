#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/threads.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {
namespace {

constexpr int64_t kTileTokens = 16;  // query tokens per work item
constexpr int64_t kKeyChunk = 32;    // key positions scored together

absl::Status Validate(const float* q, int64_t num_tokens, int64_t num_heads,
                      const PagedKvView& cache, const AttentionMetadata& meta,
                      const AttentionParams& params, const float* out) {
  constexpr absl::string_view kOp = "PagedAttention";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "num_heads", num_heads));
  HR_RETURN_IF_ERROR(internal::CheckPagedKvView(kOp, cache));
  if (num_heads % cache.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("PagedAttention: num_heads ", num_heads,
                                                   " is not a multiple of num_kv_heads ",
                                                   cache.num_kv_heads));
  }
  if (!std::isfinite(params.scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PagedAttention: scale must be finite, got ", params.scale));
  }
  if (!std::isfinite(params.softcap) || params.softcap < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PagedAttention: softcap must be 0 (none) or positive, got ", params.softcap));
  }
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "sliding_window", params.sliding_window));
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_seqs", meta.num_seqs));
  HR_RETURN_IF_ERROR(
      internal::CheckNonNegative(kOp, "max_blocks_per_seq", meta.max_blocks_per_seq));
  const int64_t q_elems = num_tokens * num_heads * cache.head_dim;
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "q", q, q_elems));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "out", out, q_elems));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "query_start", meta.query_start, 1));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "context_lens", meta.context_lens, meta.num_seqs));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "block_tables", meta.block_tables,
                             static_cast<int64_t>(meta.num_seqs) * meta.max_blocks_per_seq));
  if (meta.query_start[0] != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PagedAttention: query_start[0] must be 0, got ", meta.query_start[0]));
  }
  const int64_t capacity = static_cast<int64_t>(meta.max_blocks_per_seq) * cache.block_size;
  for (int32_t s = 0; s < meta.num_seqs; ++s) {
    const int64_t q_len = int64_t{meta.query_start[s + 1]} - meta.query_start[s];
    const int64_t context_len = meta.context_lens[s];
    if (q_len < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("PagedAttention: query_start decreases at sequence ", s));
    }
    if (q_len > context_len) {
      return absl::InvalidArgumentError(absl::StrCat("PagedAttention: sequence ", s, " has ", q_len,
                                                     " query tokens but context_len ",
                                                     context_len));
    }
    if (context_len > capacity) {
      return absl::InvalidArgumentError(
          absl::StrCat("PagedAttention: context_len ", context_len, " of sequence ", s, " exceeds ",
                       meta.max_blocks_per_seq, " blocks of ", cache.block_size, " tokens"));
    }
    const int64_t used_blocks = (context_len + cache.block_size - 1) / cache.block_size;
    const int32_t* table = meta.block_tables + int64_t{s} * meta.max_blocks_per_seq;
    for (int64_t b = 0; b < used_blocks; ++b) {
      if (table[b] < 0 || table[b] >= cache.num_blocks) {
        return absl::InvalidArgumentError(absl::StrCat("PagedAttention: block id ", table[b],
                                                       " (sequence ", s, ", block ", b,
                                                       ") is outside [0, ", cache.num_blocks, ")"));
      }
    }
  }
  if (meta.query_start[meta.num_seqs] != num_tokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("PagedAttention: query_start[num_seqs] = ", meta.query_start[meta.num_seqs],
                     " but num_tokens = ", num_tokens));
  }
  return absl::OkStatus();
}

// One work item: query tokens [token_begin, token_end) of sequence `seq`, heads of kv head group
// `kv_head`.
struct WorkItem {
  int32_t seq;
  int32_t kv_head;
  int64_t token_begin;
  int64_t token_end;
};

// Dot product of two head vectors. kHeadDim > 0 fixes the length at compile time (so the loops
// vectorize); 0 means `head_dim` at run time. Eight partial sums let the compiler use SIMD lanes
// without reassociating a single fp32 sum.
template <int kHeadDim>
inline float Dot(const float* a, const float* b, int64_t head_dim) {
  const int64_t n = kHeadDim > 0 ? kHeadDim : head_dim;
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t n8 = n - n % 8;
  for (int64_t d = 0; d < n8; d += 8) {
    for (int64_t l = 0; l < 8; ++l) partial[l] += a[d + l] * b[d + l];
  }
  float sum = ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
              ((partial[2] + partial[6]) + (partial[3] + partial[7]));
  for (int64_t d = n8; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

template <int kHeadDim>
inline void Scale(float* x, float factor, int64_t head_dim) {
  const int64_t n = kHeadDim > 0 ? kHeadDim : head_dim;
  for (int64_t d = 0; d < n; ++d) x[d] *= factor;
}

// acc += p * v
template <int kHeadDim>
inline void Axpy(float* acc, float p, const float* v, int64_t head_dim) {
  const int64_t n = kHeadDim > 0 ? kHeadDim : head_dim;
  for (int64_t d = 0; d < n; ++d) acc[d] += p * v[d];
}

template <int kHeadDim>
[[gnu::always_inline]] inline void RunItem(const WorkItem& item,
                                           const float* q,  // [num_tokens, num_heads, head_dim]
                                           int64_t num_heads, const PagedKvView& cache,
                                           const AttentionMetadata& meta,
                                           const AttentionParams& params,
                                           float* out) {  // [num_tokens, num_heads, head_dim]
  const int64_t head_dim = kHeadDim > 0 ? kHeadDim : cache.head_dim;
  const int64_t group = num_heads / cache.num_kv_heads;
  const int64_t first_head = int64_t{item.kv_head} * group;
  const int64_t seq_begin = meta.query_start[item.seq];
  const int64_t q_len = int64_t{meta.query_start[item.seq + 1]} - seq_begin;
  const int64_t context_len = meta.context_lens[item.seq];
  const int32_t* table = meta.block_tables + int64_t{item.seq} * meta.max_blocks_per_seq;
  const int64_t tile_tokens = item.token_end - item.token_begin;
  const int64_t rows = tile_tokens * group;  // row r = (token r / group, head r % group)

  std::vector<float> acc(static_cast<size_t>(rows * head_dim), 0.0f);  // [rows, head_dim]
  std::vector<float> running_max(static_cast<size_t>(rows),
                                 -std::numeric_limits<float>::infinity());  // [rows]
  std::vector<float> running_sum(static_cast<size_t>(rows), 0.0f);          // [rows]
  std::vector<float> scores(static_cast<size_t>(kKeyChunk));                // [kKeyChunk]
  const float* key_rows[kKeyChunk];
  const float* value_rows[kKeyChunk];

  // Position of token t of the sequence: context_len - q_len + t. Keys needed: [first, last], the
  // first key of the tile's first query's window to the tile's last query.
  const int64_t first_position = context_len - q_len + (item.token_begin - seq_begin);
  const int64_t last_position = context_len - q_len + (item.token_end - 1 - seq_begin);
  const int64_t window = params.sliding_window;
  const int64_t first_key = window > 0 ? std::max<int64_t>(0, first_position - window + 1) : 0;
  const float scale = params.scale;
  const float softcap = params.softcap;
  for (int64_t chunk_begin = first_key; chunk_begin <= last_position; chunk_begin += kKeyChunk) {
    const int64_t chunk_keys = std::min(kKeyChunk, last_position + 1 - chunk_begin);
    for (int64_t c = 0; c < chunk_keys; ++c) {
      const int64_t position = chunk_begin + c;
      const int64_t slot =
          cache.Slot(table[position / cache.block_size], position % cache.block_size);
      key_rows[c] = cache.KeyRow(slot, item.kv_head);
      value_rows[c] = cache.ValueRow(slot, item.kv_head);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t token = item.token_begin + r / group;
      const int64_t head = first_head + r % group;
      const int64_t position = context_len - q_len + (token - seq_begin);
      // This row's keys in the chunk: [begin, valid).
      const int64_t valid = std::min(chunk_keys, position + 1 - chunk_begin);
      const int64_t begin =
          window > 0 ? std::max<int64_t>(0, position - window + 1 - chunk_begin) : 0;
      if (valid <= begin) continue;
      const float* q_row = q + (token * num_heads + head) * head_dim;
      float chunk_max = -std::numeric_limits<float>::infinity();
      for (int64_t c = begin; c < valid; ++c) {
        float s = Dot<kHeadDim>(q_row, key_rows[c], head_dim) * scale;
        if (softcap > 0) s = softcap * std::tanh(s / softcap);
        scores[static_cast<size_t>(c)] = s;
        chunk_max = std::max(chunk_max, s);
      }
      float* acc_row = acc.data() + r * head_dim;
      float& m = running_max[static_cast<size_t>(r)];
      float& l = running_sum[static_cast<size_t>(r)];
      if (chunk_max > m) {
        // A new maximum: rescale what was accumulated under the old one (nothing on the first
        // chunk, where m is -inf and l, acc are 0).
        if (l > 0.0f) {
          const float correction = std::exp(m - chunk_max);
          l *= correction;
          Scale<kHeadDim>(acc_row, correction, head_dim);
        }
        m = chunk_max;
      }
      for (int64_t c = begin; c < valid; ++c) {
        const float p = std::exp(scores[static_cast<size_t>(c)] - m);
        l += p;
        Axpy<kHeadDim>(acc_row, p, value_rows[c], head_dim);
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t token = item.token_begin + r / group;
    const int64_t head = first_head + r % group;
    const float inv_sum = 1.0f / running_sum[static_cast<size_t>(r)];
    const float* acc_row = acc.data() + r * head_dim;
    float* out_row = out + (token * num_heads + head) * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) out_row[d] = acc_row[d] * inv_sum;
  }
}

// One entry point per specialised head_dim. On x86-64 with GCC each is compiled twice, for the
// baseline ISA and for x86-64-v3 (AVX2 + FMA), and the loader picks the clone the CPU supports
// (ifunc); the inlined inner loops then use 256-bit vectors. Same results up to fp32 rounding.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HEADROOM_CPU_CLONES [[gnu::target_clones("arch=x86-64-v3", "default")]]
#else
#define HEADROOM_CPU_CLONES
#endif

#define HEADROOM_DEFINE_RUN_ITEM(name, head_dim)                                         \
  HEADROOM_CPU_CLONES void name(const WorkItem& item, const float* q, int64_t num_heads, \
                                const PagedKvView& cache, const AttentionMetadata& meta, \
                                const AttentionParams& params, float* out) {             \
    RunItem<head_dim>(item, q, num_heads, cache, meta, params, out);                     \
  }
HEADROOM_DEFINE_RUN_ITEM(RunItem64, 64)
HEADROOM_DEFINE_RUN_ITEM(RunItem128, 128)
HEADROOM_DEFINE_RUN_ITEM(RunItem256, 256)
HEADROOM_DEFINE_RUN_ITEM(RunItemAnyHeadDim, 0)
#undef HEADROOM_DEFINE_RUN_ITEM

using RunItemFn = void (*)(const WorkItem&, const float*, int64_t, const PagedKvView&,
                           const AttentionMetadata&, const AttentionParams&, float*);

void RunAll(RunItemFn run_item, const std::vector<WorkItem>& items, const float* q,
            int64_t num_heads, const PagedKvView& cache, const AttentionMetadata& meta,
            const AttentionParams& params, float* out) {
  ParallelFor(static_cast<int64_t>(items.size()), [&](int64_t i) {
    run_item(items[static_cast<size_t>(i)], q, num_heads, cache, meta, params, out);
  });
}

}  // namespace

absl::Status PagedAttention(const float* q, int64_t num_tokens, int64_t num_heads,
                            const PagedKvView& cache, const AttentionMetadata& metadata,
                            const AttentionParams& params, float* out) {
  HR_RETURN_IF_ERROR(Validate(q, num_tokens, num_heads, cache, metadata, params, out));
  std::vector<WorkItem> items;
  for (int32_t s = 0; s < metadata.num_seqs; ++s) {
    const int64_t begin = metadata.query_start[s];
    const int64_t end = metadata.query_start[s + 1];
    for (int32_t g = 0; g < cache.num_kv_heads; ++g) {
      for (int64_t t = begin; t < end; t += kTileTokens) {
        items.push_back(WorkItem{s, g, t, std::min(end, t + kTileTokens)});
      }
    }
  }
  // Longer contexts first, so the tail of the parallel loop holds the short items.
  std::stable_sort(items.begin(), items.end(), [&](const WorkItem& a, const WorkItem& b) {
    return a.token_end - metadata.query_start[a.seq + 1] + metadata.context_lens[a.seq] >
           b.token_end - metadata.query_start[b.seq + 1] + metadata.context_lens[b.seq];
  });
  RunItemFn run_item = RunItemAnyHeadDim;  // any head_dim, runtime loop bounds
  switch (cache.head_dim) {
    case 64:
      run_item = RunItem64;
      break;
    case 128:
      run_item = RunItem128;
      break;
    case 256:
      run_item = RunItem256;
      break;
    default:
      break;
  }
  RunAll(run_item, items, q, num_heads, cache, metadata, params, out);
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
