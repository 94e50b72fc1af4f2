#include "router/tokenizer/regex_splitter.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "router/tokenizer/pre_tokenizer.h"

namespace headroom::router {
namespace {

std::vector<std::string> Split(std::string_view pattern, const std::string& text) {
  auto m = RegexMatcher::Create(pattern);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return {};
  std::vector<ByteRange> matches;
  (*m)->FindAll(text, matches);
  std::vector<Piece> pieces;
  SplitPiece(Piece{text, true}, matches, SplitBehavior::kIsolated, false, pieces);
  std::vector<std::string> out;
  for (const Piece& p : pieces) out.push_back(p.text);
  return out;
}

// `\s+(?!\S)` leaves the last space of a run to the next word; at the end of text it takes all.
TEST(RegexSplitterTest, Gpt2LookaheadOnWhitespaceRuns) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Split(kGpt2Pattern, "a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(Split(kGpt2Pattern, "a b"), (V{"a", " b"}));
  EXPECT_EQ(Split(kGpt2Pattern, "a   "), (V{"a", "   "}));
  EXPECT_EQ(Split(kGpt2Pattern, "a \t b"), (V{"a", " \t", " b"}));
  EXPECT_EQ(Split(kGpt2Pattern, "a\n\nb"), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(Split(kGpt2Pattern, "   x"), (V{"  ", " x"}));
  // Unicode whitespace counts as \s, as in Oniguruma.
  EXPECT_EQ(Split(kGpt2Pattern, "x\u3000\u3000y"), (V{"x", "\u3000", "\u3000", "y"}));
  EXPECT_EQ(Split(kGpt2Pattern, "it's 42"), (V{"it", "'s", " 42"}));
}

TEST(RegexSplitterTest, TranslatesOnigurumaClasses) {
  bool lookahead = false;
  auto t = TranslateOnigurumaPattern(R"([^\s\p{L}]+|\d|\w)", &lookahead);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(lookahead);
  EXPECT_EQ(*t, R"([^\t\n\x0B\f\r\x{85}\p{Z}\p{L}]+|\p{Nd}|[\p{L}\p{M}\p{Nd}\p{Pc}])");
}

TEST(RegexSplitterTest, RejectsOtherLookaroundsByName) {
  for (const char* p : {"a(?=b)", "(?<=a)b", "a(?!b)c", "(?>ab)"}) {
    auto m = RegexMatcher::Create(p);
    ASSERT_FALSE(m.ok()) << p;
    EXPECT_NE(m.status().message().find("unsupported regex construct"), std::string::npos)
        << m.status();
  }
}

TEST(RegexSplitterTest, ReportsRe2CompileErrors) {
  auto m = RegexMatcher::Create("a++");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("a++"), std::string::npos) << m.status();
}

TEST(RegexSplitterTest, SplitBehaviors) {
  auto m = RegexMatcher::CreateLiteral("-");
  ASSERT_TRUE(m.ok());
  const std::string text = "a-b--c";
  std::vector<ByteRange> matches;
  (*m)->FindAll(text, matches);
  auto run = [&](SplitBehavior b, bool invert) {
    std::vector<Piece> out;
    SplitPiece(Piece{text, true}, matches, b, invert, out);
    std::vector<std::string> s;
    for (const Piece& p : out) s.push_back(p.text);
    return s;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(run(SplitBehavior::kRemoved, false), (V{"a", "b", "c"}));
  EXPECT_EQ(run(SplitBehavior::kIsolated, false), (V{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(run(SplitBehavior::kMergedWithPrevious, false), (V{"a-", "b-", "-", "c"}));
  EXPECT_EQ(run(SplitBehavior::kMergedWithNext, false), (V{"a", "-b", "-", "-c"}));
  EXPECT_EQ(run(SplitBehavior::kContiguous, false), (V{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(run(SplitBehavior::kRemoved, true), (V{"-", "-", "-"}));
}

}  // namespace
}  // namespace headroom::router
