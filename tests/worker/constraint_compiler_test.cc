// ConstraintCompiler: a guided regex submitted from many threads at once is built once and shared;
// past its bound the cache starts over without taking a pattern from a request that holds it;
// schemas, patterns and missing vocabularies are refused with their reasons.
#include "worker/engine/constraint_compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/engine/regex_matcher.h"

namespace headroom::worker {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const JsonVocabulary> ByteVocabulary() {
  std::vector<std::string> table(256);
  for (int i = 0; i < 256; ++i)
    table[static_cast<size_t>(i)] = std::string(1, static_cast<char>(i));
  return std::make_shared<const JsonVocabulary>(std::move(table));
}

SamplingParams WithRegex(std::string pattern) {
  SamplingParams p;
  p.regex = std::move(pattern);
  return p;
}

// The token list of `regex`'s start state, through its own classes.
std::vector<int32_t> StartTokens(const SharedGuidedRegex& regex, const JsonVocabulary& vocabulary) {
  std::vector<int32_t> allowed;
  RegexAllowedTokens(RegexMatcher(&regex.regex), regex.classes, vocabulary, &allowed);
  std::sort(allowed.begin(), allowed.end());
  return allowed;
}

TEST(ConstraintCompilerTest, APatternSubmittedByManyThreadsIsBuiltOnceAndShared) {
  ConstraintCompiler compiler(ByteVocabulary());
  constexpr size_t kThreads = 8;
  std::vector<CompiledConstraints> out(kThreads);
  std::vector<absl::Status> status(kThreads);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&, t] { status[t] = compiler.Compile(WithRegex("[0-9]{3}-[A-Z]+"), &out[t]); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(status[t].ok()) << status[t];
    ASSERT_NE(out[t].regex, nullptr);
    EXPECT_EQ(out[t].regex, out[0].regex) << "thread " << t;
  }
  EXPECT_EQ(compiler.regex_builds(), 1);
  EXPECT_EQ(out[0].schema, nullptr);

  // A request that already holds its regex keeps it: nothing is looked up again.
  CompiledConstraints held = out[0];
  ASSERT_TRUE(compiler.Compile(WithRegex("[a-z]"), &held).ok());
  EXPECT_EQ(held.regex, out[0].regex);
  EXPECT_EQ(compiler.regex_builds(), 1);
}

TEST(ConstraintCompilerTest, PastItsBoundTheCacheStartsOverAndHeldPatternsStayUsable) {
  const auto vocabulary = ByteVocabulary();
  ConstraintCompiler compiler(vocabulary);
  CompiledConstraints first;
  ASSERT_TRUE(compiler.Compile(WithRegex("x{1}"), &first).ok());
  for (size_t k = 2; k <= ConstraintCompiler::kMaxKept; ++k) {
    CompiledConstraints c;
    ASSERT_TRUE(compiler.Compile(WithRegex(absl::StrCat("x{", k, "}")), &c).ok());
  }
  CompiledConstraints again;
  ASSERT_TRUE(compiler.Compile(WithRegex("x{1}"), &again).ok());
  EXPECT_EQ(again.regex, first.regex) << "within the bound, a pattern is built once";
  EXPECT_EQ(compiler.regex_builds(), static_cast<int64_t>(ConstraintCompiler::kMaxKept));

  // One more pattern: the cache starts over, so "x{1}" is built anew...
  CompiledConstraints over;
  ASSERT_TRUE(compiler.Compile(WithRegex("y"), &over).ok());
  CompiledConstraints rebuilt;
  ASSERT_TRUE(compiler.Compile(WithRegex("x{1}"), &rebuilt).ok());
  EXPECT_NE(rebuilt.regex, first.regex);
  EXPECT_EQ(compiler.regex_builds(), static_cast<int64_t>(ConstraintCompiler::kMaxKept) + 2);
  // ...while the request that held the old one still steps with it: only 'x' may start.
  EXPECT_EQ(StartTokens(*first.regex, *vocabulary), std::vector<int32_t>{'x'});
}

TEST(ConstraintCompilerTest, RefusesWithTheReason) {
  ConstraintCompiler compiler(ByteVocabulary());
  CompiledConstraints out;
  EXPECT_EQ(compiler.Compile(WithRegex("(?=a)b"), &out),
            absl::InvalidArgumentError("regex: lookahead is not supported"));
  // A refused pattern is refused again, from its cached entry, with the same words.
  EXPECT_EQ(compiler.Compile(WithRegex("(?=a)b"), &out),
            absl::InvalidArgumentError("regex: lookahead is not supported"));
  EXPECT_EQ(out.regex, nullptr);

  SamplingParams schema;
  schema.json_schema = R"({"type":"strin"})";
  absl::Status status = compiler.Compile(schema, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("json_schema: "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("strin"));
  EXPECT_EQ(out.schema, nullptr);

  schema.json_schema = R"({"type":"string"})";
  ASSERT_TRUE(compiler.Compile(schema, &out).ok());
  ASSERT_NE(out.schema, nullptr);
  // The same schema text again: the same compiled schema, with the same token-list cache.
  CompiledConstraints again;
  ASSERT_TRUE(compiler.Compile(schema, &again).ok());
  EXPECT_EQ(again.schema, out.schema);
  EXPECT_EQ(compiler.schema_builds(), 2) << "the refused schema, then this one";

  ConstraintCompiler without(nullptr);
  SamplingParams json;
  json.json_object = true;
  EXPECT_THAT(std::string(without.Compile(json, &out).message()),
              HasSubstr("response_format json_object needs the tokenizer's vocabulary"));
  EXPECT_THAT(std::string(without.Compile(WithRegex("a"), &out).message()),
              HasSubstr("guided_regex needs the tokenizer's vocabulary"));
  // Nothing to compile: nothing needs the vocabulary.
  EXPECT_TRUE(without.Compile(SamplingParams{}, &out).ok());
}

}  // namespace
}  // namespace headroom::worker
