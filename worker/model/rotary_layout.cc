#include "worker/model/rotary_layout.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace headroom::worker {

absl::Status InterleavedToRotateHalfRows(std::vector<float>& rows, int64_t row_width,
                                         int64_t head_dim, int64_t rotary_dim) {
  if (rows.empty()) return absl::OkStatus();
  if (row_width <= 0 || head_dim <= 0 || rotary_dim <= 0 || rotary_dim % 2 != 0 ||
      rotary_dim > head_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("InterleavedToRotateHalfRows: row_width ", row_width, ", head_dim ", head_dim,
                     ", rotary_dim ", rotary_dim,
                     " (need positive sizes and an even rotary_dim of at most head_dim)"));
  }
  const auto head_size = static_cast<size_t>(head_dim * row_width);
  if (rows.size() % head_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("InterleavedToRotateHalfRows: ", rows.size(),
                                                   " values are not whole heads of ", head_dim,
                                                   " rows of ", row_width));
  }
  const int64_t half = rotary_dim / 2;
  const auto width = static_cast<size_t>(row_width);
  std::vector<float> rotated(static_cast<size_t>(rotary_dim) * width);
  for (size_t head = 0; head < rows.size(); head += head_size) {
    float* const first = rows.data() + head;
    for (int64_t i = 0; i < half; ++i) {
      const float* even = first + static_cast<size_t>(2 * i) * width;
      const float* odd = even + width;
      std::copy(even, even + width, rotated.begin() + static_cast<std::ptrdiff_t>(i) * row_width);
      std::copy(odd, odd + width,
                rotated.begin() + static_cast<std::ptrdiff_t>(half + i) * row_width);
    }
    std::copy(rotated.begin(), rotated.end(), first);
  }
  return absl::OkStatus();
}

}  // namespace headroom::worker
