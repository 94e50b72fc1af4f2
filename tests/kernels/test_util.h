// Helpers shared by the CPU kernel tests: random inputs and NaN-poisoned outputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "kernels/cpu/fill.h"

namespace headroom::kernels::testing {

// Uniform floats in [lo, hi).
inline std::vector<float> RandomFloats(std::mt19937_64& rng, int64_t n, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = dist(rng);
  return values;
}

// A buffer of n NaNs: an element a kernel forgets to write stays NaN and fails any comparison.
inline std::vector<float> Poisoned(int64_t n) {
  std::vector<float> values(static_cast<size_t>(n));
  cpu::Fill(absl::MakeSpan(values), std::numeric_limits<float>::quiet_NaN());
  return values;
}

inline bool AllNaN(const std::vector<float>& values) {
  for (float v : values) {
    if (!std::isnan(v)) return false;
  }
  return true;
}

}  // namespace headroom::kernels::testing
