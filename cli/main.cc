// `headroom <command> [flags]`: one binary, one subcommand per job.
#include <iostream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "cli/bench_command.h"
#include "cli/exit_codes.h"
#include "cli/plan_command.h"
#include "cli/router_command.h"
#include "cli/up_command.h"
#include "cli/worker_command.h"

namespace headroom::cli {
namespace {

struct Subcommand {
  std::string_view name;     // Word after `headroom`.
  std::string_view summary;  // One line for `headroom --help`.
  int (*run)(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err);
};

constexpr Subcommand kSubcommands[] = {
    {"plan", kPlanSummary, RunPlanCommand},
    {"bench", kBenchSummary, RunBenchCommand},
    {"worker", kWorkerSummary, RunWorkerCommand},
    {"router", kRouterSummary, RunRouterCommand},
    {"up", kUpSummary, RunUpCommand},
};

std::string Usage() {
  std::string usage = "usage: headroom <command> [flags]\n\ncommands:\n";
  for (const Subcommand& command : kSubcommands) {
    absl::StrAppend(&usage, "  ", std::string(command.name), "    ", std::string(command.summary),
                    "\n");
  }
  absl::StrAppend(&usage, "\nRun 'headroom <command> --help' for the flags of a command.\n");
  return usage;
}

int Main(absl::Span<const std::string_view> args) {
  if (args.empty()) {
    std::cerr << "error: no command given\n" << Usage();
    return kExitRefused;
  }
  const std::string_view name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    std::cout << Usage();
    return kExitOk;
  }
  for (const Subcommand& command : kSubcommands) {
    if (command.name == name) return command.run(args.subspan(1), std::cout, std::cerr);
  }
  std::cerr << "error: unknown command \"" << name << "\"\n" << Usage();
  return kExitRefused;
}

}  // namespace
}  // namespace headroom::cli

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  return headroom::cli::Main(args);
}
