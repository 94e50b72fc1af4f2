// Logit soft-capping in place: x = cap * tanh(x / cap), which bounds every value to (-cap, cap)
// and is close to the identity for |x| << cap. Gemma 2 caps its final logits this way
// (final_logit_softcapping, 30); its attention scores are capped inside paged attention.
//
// CPU version: fp32, elementwise, memory bound.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace headroom::kernels::cpu {

// InvalidArgument for a negative count, a null x with count > 0, or a cap that is not positive
// and finite.
[[nodiscard]] absl::Status SoftCap(float* x,  // [count], in place
                                   int64_t count, float cap);

}  // namespace headroom::kernels::cpu
