#include "kernels/cpu/rotary.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu {
namespace {

absl::Status CheckHeadDim(absl::string_view op, int64_t head_dim) {
  if (head_dim <= 0 || head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": head_dim must be positive and even, got ", head_dim));
  }
  return absl::OkStatus();
}

// Rotates the leading rotary_dim values of every head of one token: x [num_heads, head_dim].
void RotateHeads(float* x, int64_t num_heads, int64_t head_dim, int64_t rotary_dim,
                 const float* cos_values,    // [rotary_dim / 2]
                 const float* sin_values) {  // [rotary_dim / 2]
  const int64_t half = rotary_dim / 2;
  for (int64_t h = 0; h < num_heads; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = head[i];
      const float x2 = head[i + half];
      head[i] = x1 * cos_values[i] - x2 * sin_values[i];
      head[i + half] = x2 * cos_values[i] + x1 * sin_values[i];
    }
  }
}

// theta^(2i / head_dim) for i < head_dim / 2 as HF forms base ** (arange(0, dim, 2).float() / dim):
// all fp32, the base an fp32 scalar, the power correctly rounded to fp32.
absl::StatusOr<std::vector<float>> RopePowers(absl::string_view op, int64_t head_dim,
                                              double theta) {
  HR_RETURN_IF_ERROR(CheckHeadDim(op, head_dim));
  if (!(theta > 1.0) || !std::isfinite(theta)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": theta must be > 1, got ", theta));
  }
  const int64_t half = head_dim / 2;
  std::vector<float> powers(static_cast<size_t>(half));
  const double base = static_cast<double>(static_cast<float>(theta));
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    powers[static_cast<size_t>(i)] =
        static_cast<float>(std::pow(base, static_cast<double>(exponent)));
  }
  return powers;
}

}  // namespace

absl::StatusOr<std::vector<float>> RopeInvFreq(int64_t head_dim, double theta,
                                               const std::optional<Llama3RopeScaling>& scaling) {
  HR_ASSIGN_OR_RETURN(std::vector<float> inv_freq, RopePowers("RopeInvFreq", head_dim, theta));
  for (float& f : inv_freq) f = 1.0f / f;
  if (!scaling.has_value()) return inv_freq;

  const Llama3RopeScaling& s = *scaling;
  if (!(s.factor > 0.0) || !(s.low_freq_factor > 0.0) ||
      !(s.high_freq_factor > s.low_freq_factor) || s.original_max_position_embeddings <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RopeInvFreq: invalid llama3 rope scaling: factor=", s.factor,
        " low_freq_factor=", s.low_freq_factor, " high_freq_factor=", s.high_freq_factor,
        " original_max_position_embeddings=", s.original_max_position_embeddings,
        " (need all > 0 and high_freq_factor > low_freq_factor)"));
  }
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  for (float& f : inv_freq) {
    const double freq = static_cast<double>(f);
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double scaled = freq;
    if (wavelen > low_freq_wavelen) {
      scaled = freq / s.factor;
    } else if (wavelen >= high_freq_wavelen) {
      const double smooth =
          (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      scaled = (1.0 - smooth) * freq / s.factor + smooth * freq;
    }
    f = static_cast<float>(scaled);
  }
  return inv_freq;
}

absl::StatusOr<std::vector<float>> LongRopeInvFreq(int64_t head_dim, double theta,
                                                   const std::vector<double>& ext_factors) {
  HR_ASSIGN_OR_RETURN(std::vector<float> inv_freq, RopePowers("LongRopeInvFreq", head_dim, theta));
  if (ext_factors.size() != inv_freq.size()) {
    return absl::InvalidArgumentError(absl::StrCat("LongRopeInvFreq: ", ext_factors.size(),
                                                   " factors for head_dim ", head_dim, " (need ",
                                                   inv_freq.size(), ")"));
  }
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    if (!(ext_factors[i] > 0) || !std::isfinite(ext_factors[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("LongRopeInvFreq: factor ", i, " must be positive, got ", ext_factors[i]));
    }
    inv_freq[i] = 1.0f / (static_cast<float>(ext_factors[i]) * inv_freq[i]);
  }
  return inv_freq;
}

absl::StatusOr<std::vector<float>> YarnInvFreq(int64_t head_dim, double theta,
                                               const YarnRopeScaling& scaling) {
  HR_ASSIGN_OR_RETURN(std::vector<float> powers, RopePowers("YarnInvFreq", head_dim, theta));
  const YarnRopeScaling& s = scaling;
  if (!(s.factor >= 1.0) || !std::isfinite(s.factor) || s.original_max_position_embeddings < 1 ||
      !(s.beta_slow > 0.0) || !(s.beta_fast >= s.beta_slow) || !std::isfinite(s.beta_fast)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "YarnInvFreq: invalid yarn rope scaling: factor=", s.factor,
        " original_max_position_embeddings=", s.original_max_position_embeddings,
        " beta_fast=", s.beta_fast, " beta_slow=", s.beta_slow,
        " (need factor >= 1, original_max_position_embeddings >= 1, beta_fast >= beta_slow > 0)"));
  }
  // The dimension whose frequency turns `rotations` times over the pretrained length.
  const double dim = static_cast<double>(head_dim);
  const auto correction_dim = [&](double rotations) {
    return dim *
           std::log(static_cast<double>(s.original_max_position_embeddings) /
                    (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(theta));
  };
  const double low = std::max(std::floor(correction_dim(s.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(s.beta_slow)), dim - 1.0);
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  const auto span = static_cast<float>(high - low);
  const auto factor = static_cast<float>(s.factor);
  for (size_t i = 0; i < powers.size(); ++i) {
    const float ramp =
        std::clamp((static_cast<float>(i) - static_cast<float>(low)) / span, 0.0f, 1.0f);
    const float extrapolation_weight = 1.0f - ramp;
    const float extrapolated = 1.0f / powers[i];
    const float interpolated = 1.0f / (factor * powers[i]);
    powers[i] = interpolated * (1.0f - extrapolation_weight) + extrapolated * extrapolation_weight;
  }
  return powers;
}

absl::Status Rotary(const int64_t* positions, int64_t num_tokens, float* q, int64_t num_heads,
                    float* k, int64_t num_kv_heads, int64_t head_dim, int64_t rotary_dim,
                    const float* inv_freq, float scale) {
  constexpr absl::string_view kOp = "Rotary";
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_heads", num_heads));
  HR_RETURN_IF_ERROR(internal::CheckNonNegative(kOp, "num_kv_heads", num_kv_heads));
  if (rotary_dim <= 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": rotary_dim must be positive, even and at most head_dim (", head_dim,
                     "), got ", rotary_dim));
  }
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": scale must be positive and finite, got ", scale));
  }
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "positions", positions, num_tokens));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "q", q, num_tokens * num_heads * head_dim));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "k", k, num_tokens * num_kv_heads * head_dim));
  HR_RETURN_IF_ERROR(internal::CheckPointer(kOp, "inv_freq", inv_freq, rotary_dim / 2));
  for (int64_t t = 0; t < num_tokens; ++t) {
    if (positions[t] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Rotary: position ", positions[t], " at token ", t, " is negative"));
    }
  }
  const int64_t half = rotary_dim / 2;
  std::vector<float> cos_values(static_cast<size_t>(half));
  std::vector<float> sin_values(static_cast<size_t>(half));
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float position = static_cast<float>(positions[t]);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = inv_freq[i] * position;  // fp32 product, as HF forms it
      cos_values[static_cast<size_t>(i)] =
          static_cast<float>(std::cos(static_cast<double>(angle))) * scale;
      sin_values[static_cast<size_t>(i)] =
          static_cast<float>(std::sin(static_cast<double>(angle))) * scale;
    }
    RotateHeads(q + t * num_heads * head_dim, num_heads, head_dim, rotary_dim, cos_values.data(),
                sin_values.data());
    RotateHeads(k + t * num_kv_heads * head_dim, num_kv_heads, head_dim, rotary_dim,
                cos_values.data(), sin_values.data());
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu
