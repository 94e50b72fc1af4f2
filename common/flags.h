// FlagSet: a small typed command-line parser for one subcommand (`headroom plan --model ...`).
//
// A subcommand registers its flags with vLLM's spelling (`--max-model-len`), a type, an optional
// default and a help line, then parses the words after the subcommand name:
//   --name value      --name=value      --bool-flag      --no-bool-flag      --bool-flag=false
// Underscores in a given name are read as dashes (`--max_model_len`), as vLLM's parser does, so
// settings copied from a vLLM command line carry over. A repeated flag keeps its last value.
// Every mistake (unknown flag, missing value, malformed or out-of-range number, missing required
// flag, stray positional word) is an absl::InvalidArgumentError naming the flag and the bad value.
// `--help` / `-h` stops parsing and sets help_requested(); Usage() renders the registrations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace headroom {

enum class FlagType { kInt64, kDouble, kString, kBool, kStringList };

class FlagSet {
 public:
  // `command` is how usage names the program ("headroom plan"); `summary` says what it does.
  FlagSet(std::string command, std::string summary);

  // Registration. `name` has no leading dashes ("max-model-len"). A flag whose default is
  // std::nullopt has no value until given; say in `help` what the program does then.
  // Registering a name twice is a programming error (HR_CHECK).
  void AddInt64(std::string_view name, std::optional<int64_t> default_value, std::string_view help);
  void AddDouble(std::string_view name, std::optional<double> default_value, std::string_view help);
  void AddString(std::string_view name, std::optional<std::string> default_value,
                 std::string_view help);
  void AddBool(std::string_view name, bool default_value, std::string_view help);
  // A list (vLLM's nargs='+'): `--name a b c` takes the words up to the next flag, `--name=a`
  // one; given again, it appends. Empty until given.
  void AddStringList(std::string_view name, std::string_view help);
  // Parse() fails when a required flag is not given (unless --help was).
  void MarkRequired(std::string_view name);

  // Parses the words after the subcommand. May be called once.
  [[nodiscard]] absl::Status Parse(absl::Span<const std::string_view> args);

  // True when --help or -h was given; the caller prints Usage() and exits 0.
  [[nodiscard]] bool help_requested() const { return help_requested_; }

  // Usage text generated from the registrations, one aligned line per flag.
  [[nodiscard]] std::string Usage() const;

  // Typed values: the given value, else the default, else std::nullopt. Asking for a name that
  // was not registered with that type is a programming error (HR_CHECK).
  [[nodiscard]] std::optional<int64_t> GetInt64(std::string_view name) const;
  [[nodiscard]] std::optional<double> GetDouble(std::string_view name) const;
  [[nodiscard]] std::optional<std::string> GetString(std::string_view name) const;
  [[nodiscard]] bool GetBool(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> GetStringList(std::string_view name) const;

  // True when the flag was given on the command line (even if equal to its default).
  [[nodiscard]] bool IsSet(std::string_view name) const;

 private:
  using Value = std::variant<int64_t, double, std::string, bool>;

  struct Flag {
    std::string name;                    // Without dashes, e.g. "max-model-len".
    FlagType type;                       // Decides how the value text is parsed.
    std::string help;                    // One line for Usage().
    std::optional<Value> default_value;  // Value when not given; nullopt = no value.
    std::optional<Value> value;          // Value given on the command line.
    std::vector<std::string> list;       // kStringList: the values given, in order.
    bool required = false;               // Parse() fails when not given.
  };

  void Add(std::string_view name, FlagType type, std::optional<Value> default_value,
           std::string_view help);
  [[nodiscard]] const Flag* Find(std::string_view name) const;
  [[nodiscard]] Flag* Find(std::string_view name);
  [[nodiscard]] const Flag& Get(std::string_view name, FlagType type) const;
  [[nodiscard]] absl::Status SetFromText(Flag& flag, std::string_view text);
  [[nodiscard]] absl::Status UnknownFlag(std::string_view name) const;

  std::string command_;
  std::string summary_;
  std::vector<Flag> flags_;  // In registration order, which is the order Usage() lists them.
  bool help_requested_ = false;
  bool parsed_ = false;
};

}  // namespace headroom
