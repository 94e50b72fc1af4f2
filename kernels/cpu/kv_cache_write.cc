#include "kernels/cpu/kv_cache_write.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {

absl::Status KvCacheWrite(const float* k, const float* v, const int64_t* slot_mapping,
                          int64_t num_tokens, const PagedKvView& cache) {
  constexpr absl::string_view kOp = "KvCacheWrite";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPagedKvView(kOp, cache));
  const int64_t row = cache.SlotStride();  // floats per token: num_kv_heads * head_dim
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "k", k, num_tokens * row));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "v", v, num_tokens * row));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "slot_mapping", slot_mapping, num_tokens));
  const int64_t num_slots = cache.NumSlots();
  for (int64_t i = 0; i < num_tokens; ++i) {
    if (slot_mapping[i] >= num_slots) {
      return absl::InvalidArgumentError(absl::StrCat("KvCacheWrite: slot ", slot_mapping[i],
                                                     " of token ", i, " is outside the pool of ",
                                                     num_slots, " slots"));
    }
  }
  const size_t row_bytes = static_cast<size_t>(row) * sizeof(float);
  for (int64_t i = 0; i < num_tokens; ++i) {
    const int64_t slot = slot_mapping[i];
    if (slot < 0) continue;  // padding
    std::memcpy(cache.KeyRow(slot, 0), k + i * row, row_bytes);
    std::memcpy(cache.ValueRow(slot, 0), v + i * row, row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
