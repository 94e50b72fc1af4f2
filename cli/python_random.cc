#include "cli/python_random.h"

#include <algorithm>
#include <bit>
#include <cstddef>

namespace headroom::cli {
namespace {

constexpr size_t kN = 624;
constexpr size_t kM = 397;

}  // namespace

PythonRandom::PythonRandom(int64_t seed) {
  // The absolute value's 32-bit words, least significant first (|INT64_MIN| = 2^63 fits).
  uint64_t magnitude = seed < 0 ? ~static_cast<uint64_t>(seed) + 1 : static_cast<uint64_t>(seed);
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(magnitude));
    magnitude >>= 32;
  } while (magnitude != 0);

  // MT19937's init_genrand(19650218), then init_by_array(key).
  state_[0] = 19650218U;
  for (uint32_t i = 1; i < kN; ++i) {
    state_[i] = 1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + i;
  }
  uint32_t i = 1;
  uint32_t j = 0;
  const auto key_length = static_cast<uint32_t>(key.size());
  for (uint32_t k = std::max<uint32_t>(kN, key_length); k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525U)) + key[j] + j;
    ++i;
    ++j;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (uint32_t k = kN - 1; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941U)) - i;
    ++i;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000U;
  index_ = kStateWords;
}

uint32_t PythonRandom::Next() {
  constexpr uint32_t kMatrixA = 0x9908b0dfU;
  constexpr uint32_t kUpper = 0x80000000U;
  constexpr uint32_t kLower = 0x7fffffffU;
  if (index_ >= kN) {
    for (size_t k = 0; k < kN; ++k) {
      const uint32_t y = (state_[k] & kUpper) | (state_[(k + 1) % kN] & kLower);
      state_[k] = state_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1U) != 0 ? kMatrixA : 0U);
    }
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

uint64_t PythonRandom::GetRandBits(int k) {
  // 32 bits at a time, least significant word first; the last word keeps its top k bits.
  uint64_t bits = 0;
  for (int shift = 0; k > 0; shift += 32, k -= 32) {
    const uint32_t word = Next();
    bits |= static_cast<uint64_t>(k < 32 ? word >> (32 - k) : word) << shift;
  }
  return bits;
}

uint64_t PythonRandom::RandBelow(uint64_t n) {
  if (n == 0) return 0;  // as CPython's "returns 0 if n == 0", without a draw
  // n == 1 still draws (getrandbits(1) until it is 0), as CPython does.
  const int k = static_cast<int>(std::bit_width(n));
  uint64_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

}  // namespace headroom::cli
