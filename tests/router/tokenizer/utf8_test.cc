#include "router/tokenizer/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace headroom::router::utf8 {
namespace {

TEST(Utf8Test, Validates) {
  size_t at = 0;
  EXPECT_TRUE(IsValid("plain ascii"));
  EXPECT_TRUE(IsValid("\xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValid("ab\xE2\x82", &at));
  EXPECT_EQ(at, 2u);
  EXPECT_FALSE(IsValid("\xC0\xAF", &at));          // overlong
  EXPECT_FALSE(IsValid("\xED\xA0\x80", &at));      // encoded surrogate U+D800
  EXPECT_FALSE(IsValid("\xF4\x90\x80\x80", &at));  // above U+10FFFF
  EXPECT_FALSE(IsValid("\xFF", &at));
}

// Same results as Rust's String::from_utf8_lossy (one U+FFFD per maximal subpart).
TEST(Utf8Test, LossyReplacesMaximalSubparts) {
  const std::string r(kReplacementChar);
  EXPECT_EQ(Lossy("\xE2\x82" "A"), r + "A");
  EXPECT_EQ(Lossy("\xF0\x80"), r + r);
  EXPECT_EQ(Lossy("\xED\xA0\x80"), r + r + r);
  EXPECT_EQ(Lossy("\xC0\xAF"), r + r);
  EXPECT_EQ(Lossy("a\xFF\xFE" "b"), "a" + r + r + "b");
  EXPECT_EQ(Lossy("\xF0\x9F\x98"), r);
  EXPECT_EQ(Lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(Utf8Test, AppendAndDecodeRoundTrip) {
  for (const char32_t cp : {U'A', U'\u00e9', U'\u20ac', U'\U0001F600', U'\U0010FFFD'}) {
    std::string s;
    Append(cp, s);
    char32_t back = 0;
    EXPECT_EQ(Decode(s, 0, &back), s.size());
    EXPECT_EQ(back, cp);
  }
}

}  // namespace
}  // namespace headroom::router::utf8
