#include "kernels/cpu/fill.h"

#include <algorithm>

namespace headroom::kernels::cpu {

void Fill(absl::Span<float> out, float value) { std::fill(out.begin(), out.end(), value); }

}  // namespace headroom::kernels::cpu
