// ConstraintChecks (worker/engine/constraint_check.h): the router's kept verdicts give what the
// compilers give, each text compiled once, kinds apart, within their byte bound, from many
// threads at once.
#include "worker/engine/constraint_check.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/worker/json_fixture.h"
#include "worker/engine/json_schema.h"
#include "worker/engine/lark_grammar.h"
#include "worker/engine/regex_matcher.h"
#include "worker/engine/structural_tag.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

struct Text {
  ConstraintKind kind;
  std::string text;
};

// The fixtures' grammars (xgrammar's accepted and refused ones), patterns and schemas, and a
// few texts each compiler refuses.
std::vector<Text> FixtureTexts() {
  std::vector<Text> texts;
  const auto load = testdata::LoadJsonFixture;
  const Json grammars = load("grammar.json");
  for (const char* list : {"grammars", "refused"}) {
    for (const Json& g : grammars[list]) texts.push_back({ConstraintKind::kGrammar, g["ebnf"]});
  }
  const Json larks = load("lark_grammar.json");
  for (const Json& g : larks["grammars"]) {
    texts.push_back({ConstraintKind::kGrammar, g["lark"]});
  }
  const Json patterns = load("regex_cases.json");
  for (const Json& p : patterns["patterns"]) {
    texts.push_back({ConstraintKind::kGuidedRegex, p["pattern"]});
  }
  const Json schemas = load("json_schema_cases.json");
  for (const Json& c : schemas["cases"]) {
    texts.push_back({ConstraintKind::kJsonSchema, c["schema"].dump()});
  }
  const Json tags = load("structural_tag.json");
  for (const char* list : {"tags", "refused"}) {
    for (const Json& t : tags[list]) texts.push_back({ConstraintKind::kStructuralTag, t["tag"]});
  }
  texts.push_back({ConstraintKind::kJsonSchema, R"({"type": "object", "minProperties": "x"})"});
  texts.push_back({ConstraintKind::kJsonSchema, "{not json"});
  texts.push_back({ConstraintKind::kGuidedRegex, "(a"});
  texts.push_back({ConstraintKind::kGuidedRegex, "a{5,2}"});
  return texts;
}

absl::Status Compiled(const Text& t) {
  switch (t.kind) {
    case ConstraintKind::kJsonSchema:
      return JsonSchema::Compile(t.text).status();
    case ConstraintKind::kGuidedRegex:
      return CompileGuidedRegex(t.text).status();
    case ConstraintKind::kGrammar:
      return CompileGuidedGrammar(t.text).status();  // EBNF, or Lark without a `::=` line
    case ConstraintKind::kStructuralTag:
      return StructuralTag::Compile(t.text).status();
  }
  return absl::UnknownError("kind");
}

TEST(ConstraintChecksTest, VerdictsAreTheCompilersAndEachTextCompilesOnce) {
  const std::vector<Text> texts = FixtureTexts();
  ASSERT_GE(texts.size(), 100u);
  ConstraintChecks checks;
  int refused = 0;
  for (int round = 0; round < 3; ++round) {
    for (const Text& t : texts) {
      const absl::Status want = Compiled(t);
      EXPECT_EQ(checks.Check(t.kind, t.text), want) << t.text;
      refused += round == 0 && !want.ok() ? 1 : 0;
    }
    EXPECT_EQ(checks.compiles(), static_cast<int64_t>(texts.size())) << "round " << round;
  }
  EXPECT_GT(refused, 40) << "refusals are kept too";
}

TEST(ConstraintChecksTest, KindsAreKeptApart) {
  ConstraintChecks checks;
  // One text, four verdicts: a regex, not a grammar (no rule), not JSON, not a structural tag.
  EXPECT_TRUE(checks.Check(ConstraintKind::kGuidedRegex, "ab").ok());
  EXPECT_EQ(checks.Check(ConstraintKind::kGrammar, "ab").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(checks.Check(ConstraintKind::kJsonSchema, "ab").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(checks.Check(ConstraintKind::kStructuralTag, "ab").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(checks.Check(ConstraintKind::kGuidedRegex, "ab").ok());
  EXPECT_EQ(checks.compiles(), 4);
}

TEST(ConstraintChecksTest, KeptTextsStayWithinTheBound) {
  ConstraintChecks checks(/*max_kept_bytes=*/64);
  for (int i = 0; i < 200; ++i) {
    const std::string pattern = "x" + std::to_string(i);
    EXPECT_TRUE(checks.Check(ConstraintKind::kGuidedRegex, pattern).ok());
    EXPECT_LE(checks.kept_bytes(), 64u);
  }
  // Started over, the verdicts are still right; a text past the bound is compiled every time.
  EXPECT_EQ(checks.Check(ConstraintKind::kGuidedRegex, "(").code(),
            absl::StatusCode::kInvalidArgument);
  const std::string long_schema =
      R"({"type": "object", "description": ")" + std::string(100, 'd') + R"("})";
  const int64_t before = checks.compiles();
  EXPECT_TRUE(checks.Check(ConstraintKind::kJsonSchema, long_schema).ok());
  EXPECT_TRUE(checks.Check(ConstraintKind::kJsonSchema, long_schema).ok());
  EXPECT_EQ(checks.compiles(), before + 2);
  EXPECT_LE(checks.kept_bytes(), 64u);
}

TEST(ConstraintChecksTest, ThreadsShareTheVerdicts) {
  const std::vector<Text> texts = FixtureTexts();
  std::vector<absl::Status> want;
  for (const Text& t : texts) want.push_back(Compiled(t));
  ConstraintChecks checks;
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < wrong.size(); ++k) {
    threads.emplace_back([&, k] {
      for (size_t i = 0; i < texts.size(); ++i) {
        const size_t j = (i + k * texts.size() / 4) % texts.size();
        wrong[k] += checks.Check(texts[j].kind, texts[j].text) == want[j] ? 0 : 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
  // Each text at least once; two threads may meet on a new one.
  EXPECT_GE(checks.compiles(), static_cast<int64_t>(texts.size()));
  EXPECT_LE(checks.compiles(), static_cast<int64_t>(4 * texts.size()));
}

}  // namespace
}  // namespace headroom::worker
