#include "common/flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/check.h"
#include "common/status_macros.h"

namespace headroom {
namespace {

// Usage text is wrapped to this many columns.
inline constexpr size_t kUsageWidth = 100;
// Placeholder for a space Wrap() must not break at.
inline constexpr char kNoBreakSpace = '\x01';

const char* TypeWord(FlagType type) {
  switch (type) {
    case FlagType::kInt64:
      return "INT";
    case FlagType::kDouble:
      return "FLOAT";
    case FlagType::kString:
      return "STRING";
    case FlagType::kBool:
      return "";
    case FlagType::kStringList:
      return "STRING...";
  }
  return "";
}

const char* TypeDescription(FlagType type) {
  switch (type) {
    case FlagType::kInt64:
      return "an integer";
    case FlagType::kDouble:
      return "a number";
    case FlagType::kString:
      return "a string";
    case FlagType::kBool:
      return "true or false";
    case FlagType::kStringList:
      return "one or more strings";
  }
  return "";
}

// Levenshtein distance, for "did you mean" hints on misspelled flags.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Splits `text` into lines of at most `width` characters at spaces (longer words stay whole).
std::vector<std::string> Wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    if (!line.empty()) line.push_back(' ');
    line.append(word);
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string FormatDefault(const std::variant<int64_t, double, std::string, bool>& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return absl::StrCat(*i);
  if (const auto* d = std::get_if<double>(&value)) return absl::StrCat(*d);
  if (const auto* s = std::get_if<std::string>(&value)) return absl::StrCat("\"", *s, "\"");
  return std::get<bool>(value) ? "true" : "false";
}

}  // namespace

FlagSet::FlagSet(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void FlagSet::Add(std::string_view name, FlagType type, std::optional<Value> default_value,
                  std::string_view help) {
  HR_CHECK_MSG(!name.empty() && name[0] != '-', "flag names are registered without dashes");
  HR_CHECK_MSG(Find(name) == nullptr, "flag registered twice");
  HR_CHECK_MSG(name != "help" && name != "h", "--help is built in");
  flags_.push_back(Flag{.name = std::string(name),
                        .type = type,
                        .help = std::string(help),
                        .default_value = std::move(default_value),
                        .value = std::nullopt,
                        .list = {},
                        .required = false});
}

void FlagSet::AddInt64(std::string_view name, std::optional<int64_t> default_value,
                       std::string_view help) {
  Add(name, FlagType::kInt64, default_value ? std::optional<Value>(*default_value) : std::nullopt,
      help);
}

void FlagSet::AddDouble(std::string_view name, std::optional<double> default_value,
                        std::string_view help) {
  Add(name, FlagType::kDouble, default_value ? std::optional<Value>(*default_value) : std::nullopt,
      help);
}

void FlagSet::AddString(std::string_view name, std::optional<std::string> default_value,
                        std::string_view help) {
  Add(name, FlagType::kString,
      default_value ? std::optional<Value>(std::move(*default_value)) : std::nullopt, help);
}

void FlagSet::AddBool(std::string_view name, bool default_value, std::string_view help) {
  Add(name, FlagType::kBool, Value(default_value), help);
}

void FlagSet::AddStringList(std::string_view name, std::string_view help) {
  Add(name, FlagType::kStringList, std::nullopt, help);
}

void FlagSet::MarkRequired(std::string_view name) {
  Flag* flag = Find(name);
  HR_CHECK_MSG(flag != nullptr, "MarkRequired on an unregistered flag");
  flag->required = true;
}

const FlagSet::Flag* FlagSet::Find(std::string_view name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

FlagSet::Flag* FlagSet::Find(std::string_view name) {
  for (Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

const FlagSet::Flag& FlagSet::Get(std::string_view name, FlagType type) const {
  const Flag* flag = Find(name);
  HR_CHECK_MSG(flag != nullptr, "flag read but never registered");
  HR_CHECK_MSG(flag->type == type, "flag read as a different type than registered");
  return *flag;
}

absl::Status FlagSet::UnknownFlag(std::string_view name) const {
  std::string message = absl::StrCat("unknown flag --", std::string(name), " for ", command_);
  const Flag* closest = nullptr;
  size_t best = 0;
  for (const Flag& flag : flags_) {
    const size_t distance = EditDistance(name, flag.name);
    if (closest == nullptr || distance < best) {
      closest = &flag;
      best = distance;
    }
  }
  // A hint only when it is plausibly a typo: at most 3 edits and under half the name.
  if (closest != nullptr && best <= 3 && best * 2 < closest->name.size()) {
    absl::StrAppend(&message, " (did you mean --", closest->name, "?)");
  }
  absl::StrAppend(&message, "; see '", command_, " --help'");
  return absl::InvalidArgumentError(message);
}

absl::Status FlagSet::SetFromText(Flag& flag, std::string_view text) {
  const auto malformed = [&](const char* why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid value \"", std::string(text), "\" for --", flag.name, ": ", why));
  };
  switch (flag.type) {
    case FlagType::kInt64: {
      int64_t parsed = 0;
      const char* end = text.data() + text.size();
      const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
      if (ec == std::errc::result_out_of_range) {
        return malformed("integer out of range");
      }
      if (ec != std::errc() || ptr != end || text.empty()) {
        return malformed("expected an integer");
      }
      flag.value = parsed;
      return absl::OkStatus();
    }
    case FlagType::kDouble: {
      double parsed = 0;
      const char* end = text.data() + text.size();
      const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
      if (ec == std::errc::result_out_of_range) return malformed("number out of range");
      if (ec != std::errc() || ptr != end || text.empty()) return malformed("expected a number");
      if (!std::isfinite(parsed)) return malformed("expected a finite number");
      flag.value = parsed;
      return absl::OkStatus();
    }
    case FlagType::kString:
      flag.value = std::string(text);
      return absl::OkStatus();
    case FlagType::kStringList:
      flag.list.emplace_back(text);
      return absl::OkStatus();
    case FlagType::kBool: {
      const std::string lower = absl::AsciiStrToLower(std::string(text));
      if (lower == "true" || lower == "1" || lower == "yes") {
        flag.value = true;
      } else if (lower == "false" || lower == "0" || lower == "no") {
        flag.value = false;
      } else {
        return malformed("expected true or false");
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unreachable flag type");
}

absl::Status FlagSet::Parse(absl::Span<const std::string_view> args) {
  HR_CHECK_MSG(!parsed_, "FlagSet::Parse called twice");
  parsed_ = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return absl::OkStatus();
    }
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument \"", std::string(arg), "\" for ", command_,
          ": flags are written --name value or --name=value; see '", command_, " --help'"));
    }
    std::string_view body = arg.substr(2);
    std::optional<std::string_view> inline_value;
    if (const size_t eq = body.find('='); eq != std::string_view::npos) {
      inline_value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    std::string name(body);
    std::replace(name.begin(), name.end(), '_', '-');

    Flag* flag = Find(name);
    if (flag == nullptr && !inline_value && name.starts_with("no-")) {
      Flag* negated = Find(std::string_view(name).substr(3));
      if (negated != nullptr && negated->type == FlagType::kBool) {
        negated->value = false;
        continue;
      }
    }
    if (flag == nullptr) return UnknownFlag(name);

    if (inline_value) {
      HR_RETURN_IF_ERROR(SetFromText(*flag, *inline_value));
      continue;
    }
    if (flag->type == FlagType::kBool) {
      flag->value = true;
      continue;
    }
    if (flag->type == FlagType::kStringList) {
      // Every word up to the next flag.
      const size_t first = i + 1;
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
        HR_RETURN_IF_ERROR(SetFromText(*flag, args[++i]));
      }
      if (i + 1 == first) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", flag->name, " needs a value (",
                                                       TypeDescription(flag->type), ")"));
      }
      continue;
    }
    // The value is the next word, unless there is none or it is itself a flag. A word starting
    // with a single dash ("-1") is a value, so negative numbers reach the type check.
    if (i + 1 >= args.size() || args[i + 1].starts_with("--")) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", flag->name, " needs a value (",
                                                     TypeDescription(flag->type), ")"));
    }
    ++i;
    HR_RETURN_IF_ERROR(SetFromText(*flag, args[i]));
  }
  for (const Flag& flag : flags_) {
    if (flag.required && !flag.value && flag.list.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing required flag --", flag.name, " for ", command_, ": ", flag.help));
    }
  }
  return absl::OkStatus();
}

std::string FlagSet::Usage() const {
  std::string usage = absl::StrCat("usage: ", command_);
  for (const Flag& flag : flags_) {
    if (flag.required) absl::StrAppend(&usage, " --", flag.name, " ", TypeWord(flag.type));
  }
  absl::StrAppend(&usage, " [flags]\n\n");
  for (const std::string& line : Wrap(summary_, kUsageWidth)) absl::StrAppend(&usage, line, "\n");
  absl::StrAppend(&usage, "\nflags:\n");

  struct Line {
    std::string left;
    std::string right;
  };
  std::vector<Line> lines;
  for (const Flag& flag : flags_) {
    std::string left = absl::StrCat("--", flag.name);
    if (flag.type != FlagType::kBool) absl::StrAppend(&left, " ", TypeWord(flag.type));
    std::string right = flag.help;
    // The suffix wraps as one word: kNoBreakSpace stands for its spaces until after Wrap().
    std::string suffix;
    if (flag.required) {
      suffix = "(required)";
    } else if (flag.default_value) {
      suffix = absl::StrCat("(default: ", FormatDefault(*flag.default_value), ")");
    }
    std::replace(suffix.begin(), suffix.end(), ' ', kNoBreakSpace);
    if (!suffix.empty()) absl::StrAppend(&right, " ", suffix);
    lines.push_back({std::move(left), std::move(right)});
  }
  lines.push_back({"--help", "Show this help and exit."});

  size_t width = 0;
  for (const Line& line : lines) width = std::max(width, line.left.size());
  const size_t indent = 2 + width + 2;
  const size_t help_width = kUsageWidth > indent + 40 ? kUsageWidth - indent : 40;
  for (const Line& line : lines) {
    std::vector<std::string> help = Wrap(line.right, help_width);
    for (std::string& text : help) std::replace(text.begin(), text.end(), kNoBreakSpace, ' ');
    absl::StrAppend(&usage, "  ", line.left, std::string(width - line.left.size() + 2, ' '),
                    help.empty() ? "" : help[0], "\n");
    for (size_t i = 1; i < help.size(); ++i) {
      absl::StrAppend(&usage, std::string(indent, ' '), help[i], "\n");
    }
  }
  return usage;
}

std::optional<int64_t> FlagSet::GetInt64(std::string_view name) const {
  const Flag& flag = Get(name, FlagType::kInt64);
  if (flag.value) return std::get<int64_t>(*flag.value);
  if (flag.default_value) return std::get<int64_t>(*flag.default_value);
  return std::nullopt;
}

std::optional<double> FlagSet::GetDouble(std::string_view name) const {
  const Flag& flag = Get(name, FlagType::kDouble);
  if (flag.value) return std::get<double>(*flag.value);
  if (flag.default_value) return std::get<double>(*flag.default_value);
  return std::nullopt;
}

std::optional<std::string> FlagSet::GetString(std::string_view name) const {
  const Flag& flag = Get(name, FlagType::kString);
  if (flag.value) return std::get<std::string>(*flag.value);
  if (flag.default_value) return std::get<std::string>(*flag.default_value);
  return std::nullopt;
}

bool FlagSet::GetBool(std::string_view name) const {
  const Flag& flag = Get(name, FlagType::kBool);
  if (flag.value) return std::get<bool>(*flag.value);
  return std::get<bool>(*flag.default_value);
}

std::vector<std::string> FlagSet::GetStringList(std::string_view name) const {
  const Flag& flag = Get(name, FlagType::kStringList);
  return flag.list;
}

bool FlagSet::IsSet(std::string_view name) const {
  const Flag* flag = Find(name);
  HR_CHECK_MSG(flag != nullptr, "flag read but never registered");
  return flag->value.has_value() || !flag->list.empty();
}

}  // namespace headroom
