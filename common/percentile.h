// numpy.percentile's default (linear interpolation between the closest ranks), for the benchmark
// reports (`headroom bench serve`, bench/router_bench).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace headroom {

// The `q`-th percentile (q in [0, 100]) of `values`; 0 for no values.
inline double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (rank - static_cast<double>(below));
}

}  // namespace headroom
