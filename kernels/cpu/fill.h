// Fill: sets every element of a buffer to one value. Tests poison outputs with it (NaN) before a
// kernel runs, so an element the kernel forgot to write cannot pass as correct.
#pragma once

#include <cstdint>

#include "absl/types/span.h"

namespace headroom::kernels::cpu {

void Fill(absl::Span<float> out,  // [n]
          float value);

}  // namespace headroom::kernels::cpu
