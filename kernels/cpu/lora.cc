#include "kernels/cpu/lora.h"

#include <cblas.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {
namespace {

constexpr absl::string_view kOp = "LoraAdd";

absl::Status CheckArguments(const float* x, const LoraWeightsView& lora,
                            const LoraSegmentsView& segments, int64_t m, int64_t ld_out,
                            const float* scratch, const float* out) {
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "m", m));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "num_slots", lora.num_slots));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "rank", lora.rank));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "in", lora.in));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "out", lora.out));
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "segments", segments.count));
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (m > kIntMax || lora.in > kIntMax || lora.out > kIntMax || ld_out > kIntMax ||
      lora.rank > kIntMax) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": sizes exceed the BLAS int range"));
  }
  if (ld_out < lora.out) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": ld_out ", ld_out, " is less than the ", lora.out, " output columns"));
  }
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "x", x, m * lora.in));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "a", lora.a, lora.num_slots * lora.rank * lora.in));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer(kOp, "b", lora.b, lora.num_slots * lora.out * lora.rank));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "scratch", scratch, m * lora.rank));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "out", out, m * ld_out));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "starts", segments.starts, segments.count + 1));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "slots", segments.slots, segments.count));
  if (segments.count > 0 && segments.starts[0] != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": the first segment starts at row ", segments.starts[0], ", not 0"));
  }
  for (int32_t s = 0; s < segments.count; ++s) {
    const int32_t begin = segments.starts[s];
    const int32_t end = segments.starts[s + 1];
    if (end < begin || end > m) {
      return absl::InvalidArgumentError(absl::StrCat(kOp, ": segment ", s, " spans rows [", begin,
                                                     ", ", end, ") outside [0, ", m, ")"));
    }
    const int32_t slot = segments.slots[s];
    if (slot < -1 || slot >= lora.num_slots) {
      return absl::InvalidArgumentError(absl::StrCat(kOp, ": segment ", s, " has slot ", slot,
                                                     " outside [-1, ", lora.num_slots, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LoraAdd(const float* x, const LoraWeightsView& lora, const LoraSegmentsView& segments,
                     int64_t m, int64_t ld_out, float* scratch, float* out) {
  HR_RETURN_IF_ERROR(CheckArguments(x, lora, segments, m, ld_out, scratch, out));
  const int rank = static_cast<int>(lora.rank);
  const int in = static_cast<int>(lora.in);
  const int width = static_cast<int>(lora.out);
  for (int32_t s = 0; s < segments.count; ++s) {
    const int32_t slot = segments.slots[s];
    const int rows = segments.starts[s + 1] - segments.starts[s];
    if (slot < 0 || rows == 0) continue;
    const int64_t first = segments.starts[s];
    const float* a = lora.a + int64_t{slot} * lora.rank * lora.in;
    const float* b = lora.b + int64_t{slot} * lora.out * lora.rank;
    float* shrunk = scratch + first * lora.rank;
    // shrunk = x[rows] @ a^T, accumulated onto zeros (a stale NaN cannot leak, as in Linear).
    std::fill(shrunk, shrunk + int64_t{rows} * lora.rank, 0.0f);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, rank, in, 1.0f, x + first * lora.in,
                in, a, in, 1.0f, shrunk, rank);
    // out[rows, :width] += shrunk @ b^T
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, width, rank, 1.0f, shrunk, rank, b,
                rank, 1.0f, out + first * ld_out, static_cast<int>(ld_out));
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
