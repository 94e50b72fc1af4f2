// The loop both gated activations share (not an op): out[i, j] = act(gate[i, j]) * up[i, j] for
// gate_up rows laid out [gate | up], after the argument checks every op makes.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "kernels/cpu/validate.h"

namespace headroom::kernels::cpu::internal {

template <typename Activation>
[[nodiscard]] absl::Status GatedMul(absl::string_view op,
                                    const float* gate_up,  // [num_tokens, 2 * inter_size]
                                    int64_t num_tokens, int64_t inter_size,
                                    float* out,  // [num_tokens, inter_size]
                                    Activation act) {
  HR_RETURN_IF_ERROR(CheckNonNegative(op, "num_tokens", num_tokens));
  HR_RETURN_IF_ERROR(CheckPositive(op, "inter_size", inter_size));
  HR_RETURN_IF_ERROR(CheckPointer(op, "gate_up", gate_up, 2 * num_tokens * inter_size));
  HR_RETURN_IF_ERROR(CheckPointer(op, "out", out, num_tokens * inter_size));
  for (int64_t i = 0; i < num_tokens; ++i) {
    const float* gate = gate_up + i * 2 * inter_size;  // [inter_size]
    const float* up = gate + inter_size;               // [inter_size]
    float* out_row = out + i * inter_size;             // [inter_size]
    for (int64_t j = 0; j < inter_size; ++j) out_row[j] = act(gate[j]) * up[j];
  }
  return absl::OkStatus();
}

}  // namespace headroom::kernels::cpu::internal
