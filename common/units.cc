#include "common/units.h"

#include <cstdlib>

#include "absl/strings/str_format.h"

namespace headroom {

std::string FormatBytes(int64_t bytes) {
  const int64_t magnitude = std::llabs(bytes);
  const double value = static_cast<double>(bytes);
  if (magnitude >= kGiB) return absl::StrFormat("%.2f GiB", value / static_cast<double>(kGiB));
  if (magnitude >= kMiB) return absl::StrFormat("%.2f MiB", value / static_cast<double>(kMiB));
  if (magnitude >= kKiB) return absl::StrFormat("%.2f KiB", value / static_cast<double>(kKiB));
  return absl::StrFormat("%d B", bytes);
}

std::string FormatGiB(int64_t bytes) {
  return absl::StrFormat("%.2f", static_cast<double>(bytes) / static_cast<double>(kGiB));
}

}  // namespace headroom
