#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {
namespace {

absl::Status CheckFitsInt(absl::string_view name, int64_t value) {
  if (value > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear: ", name, "=", value, " exceeds the BLAS int range"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Linear(const float* x, const float* w, const float* bias, int64_t m, int64_t n,
                    int64_t k, float* out) {
  constexpr absl::string_view kOp = "Linear";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "m", m));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "n", n));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "k", k));
  HR_RETURN_IF_ERROR(CheckFitsInt("m", m));
  HR_RETURN_IF_ERROR(CheckFitsInt("n", n));
  HR_RETURN_IF_ERROR(CheckFitsInt("k", k));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "x", x, m * k));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "w", w, n * k));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "out", out, m * n));
  if (m == 0) return absl::OkStatus();

  // The product accumulates onto out (beta = 1), which starts as the bias or as zeros: a stale
  // NaN in out can then never leak through a BLAS whose beta = 0 path multiplies instead of
  // overwriting.
  if (bias != nullptr) {
    const size_t row_bytes = static_cast<size_t>(n) * sizeof(float);
    for (int64_t i = 0; i < m; ++i) std::memcpy(out + i * n, bias, row_bytes);
  } else {
    std::fill(out, out + m * n, 0.0f);
  }
  constexpr float beta = 1.0f;
  const int mi = static_cast<int>(m);
  const int ni = static_cast<int>(n);
  const int ki = static_cast<int>(k);
  if (m == 1) {
    // out[0, :] = w [n, k] @ x[0, :]
    cblas_sgemv(CblasRowMajor, CblasNoTrans, ni, ki, 1.0f, w, ki, x, 1, beta, out, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mi, ni, ki, 1.0f, x, ki, w, ki, beta, out,
                ni);
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
