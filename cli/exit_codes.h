// Exit statuses of the `headroom` executable, shared by its subcommands.
#pragma once

namespace headroom::cli {

// The command did what was asked (a plan that fits, --help).
inline constexpr int kExitOk = 0;
// Refused: invalid flags or input, or a configuration that does not fit. The reason and the fix
// are on stderr, on lines starting with "error: ". Same status as a command-line usage error.
inline constexpr int kExitRefused = 2;

}  // namespace headroom::cli
