// The start every subcommand shares: parse its flags, answer --help, refuse bad flags.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

#include "absl/types/span.h"
#include "cli/exit_codes.h"
#include "common/flags.h"

namespace headroom::cli {

// Parses `args` into `flags`. Returns the exit code when the command should stop here: after
// printing the usage for --help (kExitOk), or "error: ..." for a bad flag (kExitRefused).
inline std::optional<int> ParseFlagsOrExit(FlagSet& flags, absl::Span<const std::string_view> args,
                                           std::ostream& out, std::ostream& err) {
  if (const absl::Status parsed = flags.Parse(args); !parsed.ok()) {
    err << "error: " << parsed.message() << "\n";
    return kExitRefused;
  }
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  return std::nullopt;
}

}  // namespace headroom::cli
