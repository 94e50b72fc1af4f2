// Byte units and human-readable formatting used by plans, logs and error messages.
#pragma once

#include <cstdint>
#include <string>

namespace headroom {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// "1.50 GiB", "128.00 KiB", "512 B": binary units, two decimals above bytes.
std::string FormatBytes(int64_t bytes);

// Bytes as GiB with two decimals, no unit ("14.96"), for tables with a GiB column.
std::string FormatGiB(int64_t bytes);

}  // namespace headroom
