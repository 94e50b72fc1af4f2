// Rotary position embedding (RoPE), Hugging Face Llama convention ("rotate_half", GPT-NeoX style,
// not interleaved): for each head vector x[head_dim] at position p and each i < head_dim / 2,
// with half = head_dim / 2 and angle = float(inv_freq[i] * float(p)):
//   x'[i]        = x[i] * cos(angle) - x[i + half] * sin(angle)
//   x'[i + half] = x[i + half] * cos(angle) + x[i] * sin(angle)
// Applied in place to the query and key heads of every token.
//
// Precision. The angle is the fp32 product of the fp32 inv_freq and the position, exactly as HF
// (and vLLM's cos/sin cache) form it; cos and sin of that fp32 angle are then evaluated in double
// and rounded, so they match torch's fp32 cos/sin to ~1 ulp at any position (no large-argument
// range-reduction error). The CUDA twin must form the angle the same way (__fmul_rn) and use
// accurate sincosf (no --use_fast_math), or its cos/sin drift by up to 1e-3 at positions ~8k.
//
// RopeInvFreq computes inv_freq[i] = 1 / theta^(2i / head_dim) like HF's
// _compute_default_rope_parameters (exponent 2i/head_dim in fp32, power correctly rounded to fp32,
// reciprocal in fp32), then, when given, Llama 3.1's "llama3" scaling like
// transformers' _compute_llama3_parameters, with wavelen = 2*pi / inv_freq:
//   wavelen < original_max / high_freq_factor   (high frequencies): unchanged
//   wavelen > original_max / low_freq_factor    (low frequencies):  inv_freq / factor
//   otherwise (medium), with s = (original_max / wavelen - low_freq_factor)
//                                / (high_freq_factor - low_freq_factor):
//     (1 - s) * inv_freq / factor + s * inv_freq
// The scaling arithmetic runs in double and rounds once to fp32 (HF runs it in fp32; the results
// agree to ~1 ulp).
//
// CPU version: cos/sin computed on the fly per (token, i) in double; memory bound for real sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace headroom::kernels::cpu {

// rope_scaling of a Llama 3.1-style config.json with "rope_type": "llama3".
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

// inv_freq[head_dim / 2]. InvalidArgument for an odd or non-positive head_dim, theta <= 1, or
// scaling parameters that are not positive or have high_freq_factor <= low_freq_factor.
[[nodiscard]] absl::StatusOr<std::vector<float>> RopeInvFreq(
    int64_t head_dim, double theta, const std::optional<Llama3RopeScaling>& scaling);

// LongRoPE (Phi-3.5): inv_freq[i] = 1 / (ext_factors[i] * theta^(2i / head_dim)), like
// transformers' Phi3LongRoPEScaledRotaryEmbedding: the power as in RopeInvFreq, the factor rounded
// to fp32, product and reciprocal in fp32. InvalidArgument for an odd or non-positive head_dim,
// theta <= 1, or ext_factors not head_dim / 2 positive numbers.
[[nodiscard]] absl::StatusOr<std::vector<float>> LongRopeInvFreq(
    int64_t head_dim, double theta, const std::vector<double>& ext_factors);

// rope_scaling of a config.json with "rope_type": "yarn" (YaRN, arXiv 2309.00071; Qwen2.5's and
// Qwen3's long-context block). The factor and the pretrained length are the config's as given:
// vLLM's reading, and transformers' since huggingface/transformers#40320 (docs/engine.md, YaRN).
struct YarnRopeScaling {
  double factor = 4.0;
  int64_t original_max_position_embeddings = 32768;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
};

// YaRN: each frequency blends the unscaled one (extrapolation) with the one divided by `factor`
// (interpolation), as transformers' _compute_yarn_parameters does. With d = head_dim and
// corr(r) = d * ln(original / (2 pi r)) / (2 ln theta), the dimensions that turn more than
// beta_fast times within the pretrained length keep their frequency, those turning fewer than
// beta_slow times are interpolated: low = max(floor(corr(beta_fast)), 0) and
// high = min(ceil(corr(beta_slow)), d - 1) (high + 0.001 when they are equal), ramp[i] =
// clamp((i - low) / (high - low), 0, 1), inv_freq[i] = interpolated * ramp + extrapolated *
// (1 - ramp). Every step in fp32 as transformers runs it (the powers as in RopeInvFreq: torch's
// fp32 power is within 1 ulp, so the two agree to 1 ulp). The attention factor (0.1 ln factor + 1
// by default) is applied to cos and sin by Rotary's `scale`. InvalidArgument for an odd or
// non-positive head_dim, theta <= 1, a factor below 1, a pretrained length below 1, or betas that
// are not positive with beta_fast >= beta_slow.
[[nodiscard]] absl::StatusOr<std::vector<float>> YarnInvFreq(int64_t head_dim, double theta,
                                                             const YarnRopeScaling& scaling);

// Rotates q and k in place. Only the leading `rotary_dim` values of each head rotate (half =
// rotary_dim / 2 pairs (i, i + half)); the rest pass through unchanged: transformers' partial
// rotary (Phi-4-mini's partial_rotary_factor 0.75), whose inv_freq is computed for rotary_dim.
// rotary_dim == head_dim is the whole head. cos and sin are multiplied by `scale` (fp32, after
// rounding them), as transformers' Phi3LongRoPEScaledRotaryEmbedding applies LongRoPE's attention
// factor; 1 otherwise. InvalidArgument for bad sizes, a rotary_dim that is odd, not positive or
// above head_dim, a scale that is not positive and finite, or a negative position.
[[nodiscard]] absl::Status Rotary(const int64_t* positions,  // [num_tokens]
                                  int64_t num_tokens,
                                  float* q,  // [num_tokens, num_heads, head_dim], in/out
                                  int64_t num_heads,
                                  float* k,  // [num_tokens, num_kv_heads, head_dim], in/out
                                  int64_t num_kv_heads, int64_t head_dim, int64_t rotary_dim,
                                  const float* inv_freq,  // [rotary_dim / 2]
                                  float scale);

}  // namespace headroom::kernels::cpu
