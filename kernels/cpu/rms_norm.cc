#include "kernels/cpu/rms_norm.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {
namespace {

absl::Status CheckArgs(absl::string_view op, const float* x, const float* weight,
                       int64_t num_tokens, int64_t hidden_size, float eps, const float* out) {
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(op, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPositive(op, "hidden_size", hidden_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(op, "x", x, num_tokens * hidden_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(op, "weight", weight, hidden_size));
  HR_RETURN_IF_ERROR(internal::CheckPointer(op, "out", out, num_tokens * hidden_size));
  if (!(eps >= 0.0f) || !std::isfinite(eps)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": eps must be finite and >= 0"));
  }
  return absl::OkStatus();
}

double RowSumSquares(const float* row, int64_t width) {
  double sum_squares = 0.0;
  for (int64_t j = 0; j < width; ++j) {
    const double v = static_cast<double>(row[j]);
    sum_squares += v * v;
  }
  return sum_squares;
}

// out = row * rsqrt(mean_square + eps) * weight for one row.
void ScaleRow(const float* row, const float* weight, int64_t width, float mean_square, float eps,
              float* out) {
  const float inv_rms = 1.0f / std::sqrt(mean_square + eps);
  for (int64_t j = 0; j < width; ++j) out[j] = weight[j] * (row[j] * inv_rms);
}

// out = row * rsqrt(mean(row^2) + eps) * weight for one row.
void NormalizeRow(const float* row,     // [hidden_size]
                  const float* weight,  // [hidden_size]
                  int64_t hidden_size, float eps,
                  float* out) {  // [hidden_size]
  const double sum_squares = RowSumSquares(row, hidden_size);
  ScaleRow(row, weight, hidden_size,
           static_cast<float>(sum_squares / static_cast<double>(hidden_size)), eps, out);
}

}  // namespace

absl::Status RmsNorm(const float* x, const float* weight, int64_t num_tokens, int64_t hidden_size,
                     float eps, float* out) {
  HR_RETURN_IF_ERROR(CheckArgs("RmsNorm", x, weight, num_tokens, hidden_size, eps, out));
  for (int64_t i = 0; i < num_tokens; ++i) {
    NormalizeRow(x + i * hidden_size, weight, hidden_size, eps, out + i * hidden_size);
  }
  return absl::OkStatus();
}

absl::Status SumSquares(const float* x, int64_t num_tokens, int64_t width, float* sum_squares) {
  constexpr absl::string_view kOp = "SumSquares";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPositive(kOp, "width", width));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "x", x, num_tokens * width));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "sum_squares", sum_squares, num_tokens));
  for (int64_t i = 0; i < num_tokens; ++i) {
    sum_squares[i] = static_cast<float>(RowSumSquares(x + i * width, width));
  }
  return absl::OkStatus();
}

absl::Status RmsNormFromSumSquares(const float* x, const float* sum_squares, const float* weight,
                                   int64_t num_tokens, int64_t width, int64_t full_width, float eps,
                                   float* out) {
  constexpr absl::string_view kOp = "RmsNormFromSumSquares";
  HR_RETURN_IF_ERROR(CheckArgs(kOp, x, weight, num_tokens, width, eps, out));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "sum_squares", sum_squares, num_tokens));
  if (full_width < width) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": full_width (", full_width, ") must be at least width (", width, ")"));
  }
  for (int64_t i = 0; i < num_tokens; ++i) {
    const float mean_square =
        static_cast<float>(static_cast<double>(sum_squares[i]) / static_cast<double>(full_width));
    ScaleRow(x + i * width, weight, width, mean_square, eps, out + i * width);
  }
  return absl::OkStatus();
}

absl::Status AddRmsNorm(float* residual, const float* x, const float* weight, int64_t num_tokens,
                        int64_t hidden_size, float eps, float* out) {
  HR_RETURN_IF_ERROR(CheckArgs("AddRmsNorm", x, weight, num_tokens, hidden_size, eps, out));
  HR_RETURN_IF_ERROR(
      internal::CheckPointer("AddRmsNorm", "residual", residual, num_tokens * hidden_size));
  for (int64_t i = 0; i < num_tokens; ++i) {
    float* res_row = residual + i * hidden_size;
    const float* x_row = x + i * hidden_size;
    for (int64_t j = 0; j < hidden_size; ++j) res_row[j] += x_row[j];
    NormalizeRow(res_row, weight, hidden_size, eps, out + i * hidden_size);
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
