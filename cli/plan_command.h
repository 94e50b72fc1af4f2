// `headroom plan`: prints a model's summary and its per-GPU memory plan (no GPU needed), or
// refuses with the numbers and the settings that would fit.
#pragma once

#include <ostream>
#include <string_view>

#include "absl/types/span.h"

namespace headroom::cli {

// One line for `headroom --help`.
inline constexpr std::string_view kPlanSummary =
    "Compute the per-GPU memory plan for a model, or say why it does not fit and what would.";

// Runs `headroom plan` on the words after "plan". Writes the plan to `out` and refusals to `err`
// ("error: ..."); returns kExitOk or kExitRefused. Never aborts on user input.
int RunPlanCommand(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace headroom::cli
