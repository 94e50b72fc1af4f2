#include "kernels/cpu/validate.h"

#include "absl/strings/str_cat.h"

namespace headroom::kernels::cpu::internal {

absl::Status CheckNonNegative(absl::string_view op, absl::string_view name, int64_t value) {
  if (value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", name, " must be >= 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckPositive(absl::string_view op, absl::string_view name, int64_t value) {
  if (value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", name, " must be > 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckPointer(absl::string_view op, absl::string_view name, const void* pointer,
                          int64_t count) {
  if (pointer == nullptr && count > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", name, " is null but must hold ", count, " elements"));
  }
  return absl::OkStatus();
}

absl::Status CheckPagedKvView(absl::string_view op, const PagedKvView& cache) {
  if (cache.num_blocks <= 0 || cache.block_size <= 0 || cache.num_kv_heads <= 0 ||
      cache.head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": paged KV view sizes must be > 0, got num_blocks=", cache.num_blocks,
        " block_size=", cache.block_size, " num_kv_heads=", cache.num_kv_heads,
        " head_dim=", cache.head_dim));
  }
  if (cache.k_cache == nullptr || cache.v_cache == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": paged KV view has a null pool"));
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu::internal
