#include "common/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace headroom {
namespace {

TEST(JsonDepthTest, CountsOpenArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(JsonNestingDepth("1"), 0);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": []}], "c": {}})"), 4);
  EXPECT_EQ(JsonNestingDepth(R"(["[[[{{", "\"[[", {}])"), 2) << "brackets inside strings";
  EXPECT_EQ(JsonNestingDepth(R"(["\\", [[]]])"), 3) << "an escaped backslash ends no string";
  EXPECT_EQ(JsonNestingDepth("[[[]][[]]]"), 3) << "the deepest point, not the count";
}

TEST(JsonDepthTest, StopsCountingPastTheBound) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(JsonNestingDepth(deep), kMaxJsonNesting + 1);
  EXPECT_EQ(JsonNestingDepth(deep, 1000000), 100000);
  EXPECT_EQ(JsonNestingDepth(std::string(128, '{')), 128) << "unbalanced text is counted too";
}

}  // namespace
}  // namespace headroom
