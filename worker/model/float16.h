// IEEE binary16 (fp16) and bfloat16 bit patterns <-> float, written out bit by bit so they behave
// the same with any compiler and on any host (no _Float16, no F16C intrinsics).
//
// To float: exact for every input (both formats are subsets of binary32): subnormals become normal
// floats, +-0 and +-inf keep their sign, a NaN stays a NaN with its payload in the top mantissa
// bits (quiet or signalling as it was, like torch's upcast).
// From float: round to nearest, ties to even (torch's and CUDA's __float2half_rn/__float2bfloat16
// behaviour): fp16 overflows to +-inf at |x| >= 65520, underflows through the subnormals to +-0;
// a NaN becomes a quiet NaN that keeps the top payload bits.
#pragma once

#include <bit>
#include <cstdint>

namespace headroom::worker {

static_assert(std::endian::native == std::endian::little,
              "headroom reads little-endian tensors in place and assumes a little-endian host");

[[nodiscard]] constexpr float Bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

[[nodiscard]] constexpr float Fp16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) {  // inf (mantissa 0) or NaN: all-ones float exponent, payload kept.
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);  // +-0
    // Subnormal: mantissa * 2^-24. Shift the leading one up to the implicit-bit position; each
    // shift lowers the exponent by one. Bias: float 127, half 15; a half subnormal has exponent
    // -14, so it starts at float exponent 127 - 14 = 113 with one extra shift to undo.
    exponent = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3FFu;
    return std::bit_cast<float>(sign | (exponent << 23) | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

[[nodiscard]] constexpr uint16_t FloatToBf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: truncate and force the quiet bit.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Round to nearest even on the 16 dropped bits; a carry ripples into the exponent, and past the
  // largest finite value into +-inf, which is the correct rounding.
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

[[nodiscard]] constexpr uint16_t FloatToFp16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN: quiet, top payload bits kept.
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  // 65520 (0x477FF000) is halfway between 65504, the largest half, and 65536: ties-to-even goes up.
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // +-inf
  if (magnitude < 0x38800000u) {  // Below 2^-14: a half subnormal or zero.
    const uint32_t exponent = magnitude >> 23;
    // value = m * 2^(exponent - 150) with the implicit bit; as a multiple of 2^-24 that is
    // m >> (126 - exponent). Shifts of 25 or more leave less than half of 2^-24: zero.
    if (exponent < 102) return sign;
    const uint32_t m = (magnitude & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t q = m >> shift;
    const uint32_t remainder = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (remainder > half || (remainder == half && (q & 1u) != 0)) ++q;  // May reach 0x400: 2^-14.
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias the exponent (127 -> 15) and round away the low 13 mantissa bits; a carry out
  // of the mantissa correctly bumps the exponent.
  uint32_t q = (magnitude >> 13) - ((127u - 15u) << 10);
  const uint32_t remainder = magnitude & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (q & 1u) != 0)) ++q;
  return static_cast<uint16_t>(sign | q);
}

}  // namespace headroom::worker
