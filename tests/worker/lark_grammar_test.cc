// Lark grammars (vLLM's guided_grammar without a `::=` line) against the real Lark parser:
// tests/worker/fixtures/lark_grammar.json (scripts/gen_lark_fixtures.py, lark 1.2.2, Earley with
// lexer="dynamic_complete") labels 9 grammars' inputs with whether Lark parses them whole. Then
// the spellings Lark itself lacks (vLLM's converter and llguidance take them), the detection rule,
// and the refusals with where they are.
#include "worker/engine/lark_grammar.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/worker/fixtures.h"
#include "worker/engine/grammar_matcher.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

std::shared_ptr<const EbnfGrammar> MustCompileLark(const std::string& lark) {
  absl::StatusOr<std::shared_ptr<const EbnfGrammar>> grammar = CompileGuidedGrammar(lark);
  EXPECT_TRUE(grammar.ok()) << lark << ": " << grammar.status() << "\nas EBNF:\n"
                            << LarkToEbnf(lark).value_or("(none)");
  return grammar.ok() ? *std::move(grammar) : nullptr;
}

bool Complete(const std::shared_ptr<const EbnfGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.Feed(text) && matcher.CanEnd();
}

// Every input the fixture labels gets Lark's verdict.
TEST(LarkGrammarTest, SentencesAreThoseLarkParses) {
  std::ifstream in(testdata::FixtureDir("lark_grammar.json"));
  ASSERT_TRUE(in.good()) << "missing fixture lark_grammar.json";
  const Json fixture = Json::parse(in);
  ASSERT_EQ(fixture["grammars"].size(), 9u);
  int sentences = 0;
  int refused = 0;
  for (const Json& g : fixture["grammars"]) {
    const std::string lark = g["lark"].get<std::string>();
    ASSERT_TRUE(LooksLikeLark(lark)) << g["name"];
    const std::shared_ptr<const EbnfGrammar> grammar = MustCompileLark(lark);
    ASSERT_NE(grammar, nullptr) << g["name"];
    for (const Json& c : g["cases"]) {
      const std::string text = c["text"].get<std::string>();
      EXPECT_EQ(Complete(grammar, text), c["complete"].get<bool>())
          << g["name"] << ": \"" << text << "\"";
      (c["complete"].get<bool>() ? sentences : refused) += 1;
    }
  }
  EXPECT_GT(sentences, 100);
  EXPECT_GT(refused, 200);
}

// Spellings Lark lacks but vLLM's converter ('single quotes') or llguidance ({m,n}) takes mean
// what Lark's own spelling means.
TEST(LarkGrammarTest, OtherSpellingsMeanTheSame) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {R"(start: 'ab' | 'c\'d')", R"(start: "ab" | "c'd")"},
      {R"(start: D{1,3} "x"
D: "0".."9")",
       R"(start: D~1..3 "x"
D: "0".."9")"},
      {R"(start: D{2} D{,1}
D: "0".."9")",
       R"(start: D~2 [D]
D: "0".."9")"},
      {"start: a? b\na: \"x\"\nb: \"y\"", "start: [a] b\na: \"x\"\nb: \"y\""},
  };
  const std::vector<std::string> inputs = {"ab", "c'd", "c\\'d", "1x", "123x", "1234x", "x",
                                           "12", "123", "1",     "xy", "y",    "",      "yy"};
  for (const auto& [other, lark] : pairs) {
    const auto a = MustCompileLark(other);
    const auto b = MustCompileLark(lark);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    int accepted = 0;
    for (const std::string& text : inputs) {
      EXPECT_EQ(Complete(a, text), Complete(b, text)) << other << " vs " << lark << ": " << text;
      accepted += Complete(b, text) ? 1 : 0;
    }
    EXPECT_GT(accepted, 0) << lark;
  }
}

// vLLM's rule: Lark unless a line, its comments cut off, holds "::=".
TEST(LarkGrammarTest, ALineWithAnEbnfRuleMeansEbnf) {
  EXPECT_FALSE(LooksLikeLark("root ::= \"a\""));
  EXPECT_FALSE(LooksLikeLark("// x\nroot ::= a\na ::= \"b\""));
  EXPECT_TRUE(LooksLikeLark("start: \"a\""));
  EXPECT_TRUE(LooksLikeLark("start: \"a\"  # was: root ::= \"a\""));
  EXPECT_TRUE(LooksLikeLark("start: \"a\"  // root ::= \"a\""));
  // An EBNF grammar compiles as EBNF.
  const auto ebnf = CompileGuidedGrammar("root ::= [a-c]+");
  ASSERT_TRUE(ebnf.ok()) << ebnf.status();
  EXPECT_TRUE(Complete(*ebnf, "abc"));
}

// What cannot be translated is refused with the line and column and the reason.
TEST(LarkGrammarTest, RefusalsSayWhereAndWhy) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"start: x\n", "line 1, column 8: 'x' is not defined"},
      {"start: A\nA: a\na: \"x\"", "line 2, column 4: a terminal cannot use the rule 'a'"},
      {"start: \"a\"\nstart: \"b\"", "line 2, column 1: 'start' is defined twice"},
      {"start: \"a\"\n%import common.NOPE", "common.lark has no terminal 'NOPE'"},
      {"start: \"a\"\n%import mylib.X", "line 2, column 9: only Lark's built-in terminals"},
      {"start: \"a\"\n%declare X", "line 2, column 1: %declare is not supported"},
      {"start: pair{\"a\"}\n", "templates"},
      {"start: \"abc\n", "line 1, column 8: the string is not closed"},
      {"start: /ab(?=c)/", "line 1, column 11: in /ab(?=c)/: lookaround"},
      {"start: /(a)\\1/", "backreferences are not supported"},
      {"start: /^a$/", "anchors"},
      {"start: /a++/", "possessive"},
      {"start: /[z-a]/", "bad character range"},
      {"start: \"a\" ~ 3..1", "is empty"},
      {"start \"a\"", "line 1, column 7: expected ':' after 'start'"},
      {"", "the grammar defines no rule"},
  };
  // Nesting that would spend a thread's stack, in the expansions and in a regex.
  cases.emplace_back("start: " + std::string(30000, '(') + "\"a\"" + std::string(30000, ')'),
                     "line 1, column 72: groups nest more than 64 deep");
  cases.emplace_back("start: /" + std::string(30000, '(') + "a" + std::string(30000, ')') + "/",
                     "line 1, column 73: in /" + std::string(37, '(') + ".../: groups nest more");
  for (const auto& [lark, expected] : cases) {
    const auto grammar = CompileGuidedGrammar(lark);
    ASSERT_FALSE(grammar.ok()) << lark;
    EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(grammar.status().message().find(expected), std::string::npos)
        << lark << ": " << grammar.status().message();
    EXPECT_NE(grammar.status().message().find("Lark grammar error"), std::string::npos);
  }
}

}  // namespace
}  // namespace headroom::worker
