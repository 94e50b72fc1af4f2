// Argument checks shared by the CPU ops (not an op). Each returns InvalidArgument naming the op and
// the argument, so a bad call from the model code reads as a clear error, never a crash.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kernels/paged_kv.h"

namespace headroom::kernels::cpu::internal {

// `value` >= 0.
[[nodiscard]] absl::Status CheckNonNegative(absl::string_view op, absl::string_view name,
                                            int64_t value);
// `value` > 0.
[[nodiscard]] absl::Status CheckPositive(absl::string_view op, absl::string_view name,
                                         int64_t value);
// A pointer that must address `count` elements: null only when count == 0.
[[nodiscard]] absl::Status CheckPointer(absl::string_view op, absl::string_view name,
                                        const void* pointer, int64_t count);
// Sizes positive, pointers set.
[[nodiscard]] absl::Status CheckPagedKvView(absl::string_view op, const PagedKvView& cache);

}  // namespace headroom::kernels::cpu::internal
