#include "common/flags.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace headroom {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// The flags `headroom plan` registers, in miniature.
FlagSet MakeFlags() {
  FlagSet flags("headroom plan", "Plans memory.");
  flags.AddString("model", std::nullopt, "Model directory or dummy:<preset>.");
  flags.AddInt64("max-model-len", std::nullopt, "Longest sequence.");
  flags.AddInt64("block-size", 16, "Tokens per block.");
  flags.AddDouble("gpu-memory-utilization", 0.9, "Share of the GPU.");
  flags.AddString("dtype", "auto", "Weight dtype.");
  flags.AddBool("enable-prefix-caching", true, "Cache prefixes.");
  flags.AddBool("enforce-eager", false, "No CUDA graphs.");
  return flags;
}

absl::Status Parse(FlagSet& flags, std::vector<std::string_view> args) { return flags.Parse(args); }

TEST(FlagSetTest, DefaultsWhenNothingIsGiven) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {}).ok());
  EXPECT_EQ(flags.GetString("model"), std::nullopt);
  EXPECT_EQ(flags.GetInt64("max-model-len"), std::nullopt);
  EXPECT_EQ(flags.GetInt64("block-size"), 16);
  EXPECT_EQ(flags.GetDouble("gpu-memory-utilization"), 0.9);
  EXPECT_EQ(flags.GetString("dtype"), "auto");
  EXPECT_TRUE(flags.GetBool("enable-prefix-caching"));
  EXPECT_FALSE(flags.GetBool("enforce-eager"));
  EXPECT_FALSE(flags.IsSet("block-size"));
  EXPECT_FALSE(flags.help_requested());
}

TEST(FlagSetTest, SpaceAndEqualsFormsOfEveryType) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--model", "dummy:tiny", "--max-model-len=4096", "--block-size", "32",
                            "--gpu-memory-utilization=0.85", "--dtype=bfloat16"})
                  .ok());
  EXPECT_EQ(flags.GetString("model"), "dummy:tiny");
  EXPECT_EQ(flags.GetInt64("max-model-len"), 4096);
  EXPECT_EQ(flags.GetInt64("block-size"), 32);
  EXPECT_EQ(flags.GetDouble("gpu-memory-utilization"), 0.85);
  EXPECT_EQ(flags.GetString("dtype"), "bfloat16");
  EXPECT_TRUE(flags.IsSet("block-size"));
  EXPECT_FALSE(flags.IsSet("enforce-eager"));
}

TEST(FlagSetTest, GivenValueEqualToDefaultStillCountsAsSet) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--block-size", "16"}).ok());
  EXPECT_TRUE(flags.IsSet("block-size"));
}

TEST(FlagSetTest, UnderscoresReadAsDashesLikeVllm) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--max_model_len", "2048", "--gpu_memory_utilization=0.5"}).ok());
  EXPECT_EQ(flags.GetInt64("max-model-len"), 2048);
  EXPECT_EQ(flags.GetDouble("gpu-memory-utilization"), 0.5);
}

TEST(FlagSetTest, LastRepeatWins) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--block-size", "8", "--block-size=64"}).ok());
  EXPECT_EQ(flags.GetInt64("block-size"), 64);
}

TEST(FlagSetTest, NegativeNumbersAreValuesNotFlags) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--max-model-len", "-5", "--gpu-memory-utilization", "-0.5"}).ok());
  EXPECT_EQ(flags.GetInt64("max-model-len"), -5);
  EXPECT_EQ(flags.GetDouble("gpu-memory-utilization"), -0.5);
}

TEST(FlagSetTest, DoubleAcceptsIntegersAndExponents) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--gpu-memory-utilization", "1"}).ok());
  EXPECT_EQ(flags.GetDouble("gpu-memory-utilization"), 1.0);
  FlagSet again = MakeFlags();
  ASSERT_TRUE(Parse(again, {"--gpu-memory-utilization=9e-1"}).ok());
  EXPECT_EQ(again.GetDouble("gpu-memory-utilization"), 0.9);
}

TEST(FlagSetTest, EmptyStringValueIsAllowed) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--dtype="}).ok());
  EXPECT_EQ(flags.GetString("dtype"), "");
}

TEST(FlagSetTest, BoolForms) {
  FlagSet flags = MakeFlags();
  ASSERT_TRUE(Parse(flags, {"--enforce-eager", "--no-enable-prefix-caching"}).ok());
  EXPECT_TRUE(flags.GetBool("enforce-eager"));
  EXPECT_FALSE(flags.GetBool("enable-prefix-caching"));

  FlagSet explicit_values = MakeFlags();
  ASSERT_TRUE(
      Parse(explicit_values, {"--enforce-eager=true", "--enable-prefix-caching=false"}).ok());
  EXPECT_TRUE(explicit_values.GetBool("enforce-eager"));
  EXPECT_FALSE(explicit_values.GetBool("enable-prefix-caching"));
  EXPECT_TRUE(explicit_values.IsSet("enable-prefix-caching"));

  FlagSet numeric = MakeFlags();
  ASSERT_TRUE(Parse(numeric, {"--enforce-eager=1", "--enable-prefix-caching=0"}).ok());
  EXPECT_TRUE(numeric.GetBool("enforce-eager"));
  EXPECT_FALSE(numeric.GetBool("enable-prefix-caching"));
}

TEST(FlagSetTest, BoolDoesNotSwallowTheNextWord) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--enforce-eager", "false"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("\"false\""));
}

TEST(FlagSetTest, MalformedBool) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--enforce-eager=maybe"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(status.message()),
      AllOf(HasSubstr("--enforce-eager"), HasSubstr("\"maybe\""), HasSubstr("true or false")));
}

TEST(FlagSetTest, MalformedIntegerNamesFlagAndValue) {
  for (const char* bad : {"abc", "12abc", "1.5", "1e3", "", " 12", "0x10"}) {
    FlagSet flags = MakeFlags();
    const std::string arg = absl::StrCat("--max-model-len=", bad);
    const absl::Status status = Parse(flags, {arg});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()),
                AllOf(HasSubstr("--max-model-len"), HasSubstr(absl::StrCat("\"", bad, "\"")),
                      HasSubstr("expected an integer")))
        << bad;
  }
}

TEST(FlagSetTest, MalformedIntegerInSpaceForm) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--max-model-len", "abc"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "invalid value \"abc\" for --max-model-len: expected an integer");
}

TEST(FlagSetTest, IntegerOutOfRange) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--max-model-len", "99999999999999999999"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("--max-model-len"), HasSubstr("out of range")));
}

TEST(FlagSetTest, MalformedDouble) {
  for (const char* bad : {"1.5x", "abc", "", "0.9.1", "nan", "inf", "-inf", "1e999"}) {
    FlagSet flags = MakeFlags();
    const absl::Status status = Parse(flags, {"--gpu-memory-utilization", bad});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), AllOf(HasSubstr("--gpu-memory-utilization"),
                                                     HasSubstr(absl::StrCat("\"", bad, "\""))))
        << bad;
  }
}

TEST(FlagSetTest, UnknownFlagSuggestsTheClosest) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--max-model-length", "10"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("unknown flag --max-model-length"), HasSubstr("headroom plan"),
                    HasSubstr("did you mean --max-model-len?")));
}

TEST(FlagSetTest, UnknownFlagWithoutPlausibleSuggestion) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--xyz"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("unknown flag --xyz"), Not(HasSubstr("did you mean"))));
}

TEST(FlagSetTest, NegationOnlyForBools) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--no-block-size"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("unknown flag --no-block-size"));
}

TEST(FlagSetTest, MissingValueAtEnd) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--max-model-len"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()), "flag --max-model-len needs a value (an integer)");
}

TEST(FlagSetTest, MissingValueBeforeAnotherFlag) {
  FlagSet flags = MakeFlags();
  const absl::Status status = Parse(flags, {"--model", "--block-size", "16"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("flag --model needs a value"));
}

TEST(FlagSetTest, PositionalArgumentsAreRejected) {
  FlagSet flags = MakeFlags();
  for (const char* stray : {"meta-llama/Meta-Llama-3-8B", "-x", "--"}) {
    const absl::Status status = Parse(flags, {stray});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << stray;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(absl::StrCat("unexpected argument \"", stray)));
    flags = MakeFlags();
  }
}

TEST(FlagSetTest, StringListsTakeWordsUpToTheNextFlagAndAppendWhenRepeated) {
  FlagSet flags = MakeFlags();
  flags.AddStringList("lora-modules", "Adapters.");
  ASSERT_TRUE(Parse(flags, {"--lora-modules", "a=/x", "b=/y", "--block-size", "8",
                            "--lora_modules=c=/z", "--lora-modules", "-d"})
                  .ok());
  EXPECT_EQ(flags.GetStringList("lora-modules"),
            (std::vector<std::string>{"a=/x", "b=/y", "c=/z", "-d"}));
  EXPECT_EQ(flags.GetInt64("block-size"), 8);
  FlagSet unset = MakeFlags();
  unset.AddStringList("lora-modules", "Adapters.");
  ASSERT_TRUE(Parse(unset, {}).ok());
  EXPECT_TRUE(unset.GetStringList("lora-modules").empty());
  for (const std::vector<std::string_view>& args :
       {std::vector<std::string_view>{"--lora-modules"},
        std::vector<std::string_view>{"--lora-modules", "--block-size", "8"}}) {
    FlagSet empty = MakeFlags();
    empty.AddStringList("lora-modules", "Adapters.");
    const absl::Status status = Parse(empty, args);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("--lora-modules needs a value"));
  }
}

TEST(FlagSetTest, RequiredFlagMissing) {
  FlagSet flags = MakeFlags();
  flags.MarkRequired("model");
  const absl::Status status = Parse(flags, {"--block-size", "16"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("missing required flag --model"));
}

TEST(FlagSetTest, HelpStopsParsingAndSkipsRequiredCheck) {
  for (std::string_view help : {"--help", "-h"}) {
    FlagSet flags = MakeFlags();
    flags.MarkRequired("model");
    ASSERT_TRUE(Parse(flags, {help, "--not-a-flag"}).ok()) << help;
    EXPECT_TRUE(flags.help_requested());
  }
}

TEST(FlagSetTest, UsageListsEveryFlagAligned) {
  FlagSet flags = MakeFlags();
  flags.MarkRequired("model");
  const std::string usage = flags.Usage();
  EXPECT_THAT(usage, HasSubstr("usage: headroom plan --model STRING [flags]"));
  EXPECT_THAT(usage, HasSubstr("Plans memory."));
  EXPECT_THAT(usage, HasSubstr("--model STRING"));
  EXPECT_THAT(usage, HasSubstr("Model directory or dummy:<preset>. (required)"));
  EXPECT_THAT(usage, HasSubstr("--block-size INT"));
  EXPECT_THAT(usage, HasSubstr("Tokens per block. (default: 16)"));
  EXPECT_THAT(usage, HasSubstr("--gpu-memory-utilization FLOAT"));
  EXPECT_THAT(usage, HasSubstr("(default: 0.9)"));
  EXPECT_THAT(usage, HasSubstr("(default: \"auto\")"));
  EXPECT_THAT(usage, HasSubstr("--enforce-eager "));
  EXPECT_THAT(usage, HasSubstr("No CUDA graphs. (default: false)"));
  EXPECT_THAT(usage, HasSubstr("--help"));
  EXPECT_THAT(usage, Not(HasSubstr("Longest sequence. (default")));

  // Every help text starts in the same column.
  size_t column = std::string::npos;
  for (std::string_view help : {"Model directory", "Longest sequence.", "Tokens per block.",
                                "Share of the GPU.", "No CUDA graphs.", "Show this help"}) {
    const size_t at = usage.find(help);
    ASSERT_NE(at, std::string::npos) << help;
    const size_t line_start = usage.rfind('\n', at) + 1;
    if (column == std::string::npos) column = at - line_start;
    EXPECT_EQ(at - line_start, column) << help;
  }
}

TEST(FlagSetTest, UsageWrapsLongHelpWithoutSplittingTheDefault) {
  FlagSet flags("headroom plan", "Plans memory.");
  const std::string help =
      "A long help text that goes on and on about what this flag does, far past the width of one "
      "terminal line, so that it has to wrap onto a second line.";
  flags.AddInt64("max-num-batched-tokens", 8192, help);
  const std::string usage = flags.Usage();
  const std::string left = "  --max-num-batched-tokens INT  ";
  EXPECT_THAT(usage, HasSubstr(left + "A long help text"));
  EXPECT_THAT(usage, HasSubstr("(default: 8192)"));
  size_t longest = 0;
  for (size_t start = 0, end; start < usage.size(); start = end + 1) {
    end = usage.find('\n', start);
    if (end == std::string::npos) end = usage.size();
    longest = std::max(longest, end - start);
    // Continuation lines start in the help column.
    const std::string line = usage.substr(start, end - start);
    if (line.starts_with(" ") && !line.starts_with("  --")) {
      EXPECT_TRUE(line.starts_with(std::string(left.size(), ' '))) << line;
    }
  }
  EXPECT_LE(longest, 100u);
}

}  // namespace
}  // namespace headroom
