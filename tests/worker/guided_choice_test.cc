#include "worker/engine/guided_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace headroom::worker {
namespace {

using Ids = std::vector<int32_t>;

bool Complete(const GuidedChoices& choices, const Ids& output) {
  return GuidedChoiceComplete(choices, output);
}

Ids Allowed(const GuidedChoices& choices, const Ids& output, int32_t end) {
  Ids allowed = {999};  // cleared first
  GuidedChoiceAllowed(choices, output, end, &allowed);
  return allowed;
}

// Choices "yes" (1 2 3), "yes!" (1 2 3 4), "yak" (1 5 6), "no" (7 8): the next token of every
// choice the output starts, EOS (9) where a choice ends that a longer one extends, and done
// where nothing extends it.
TEST(GuidedChoiceTest, AllowsTheNextTokenOfEveryMatchingChoiceAndEndsOnAWholeOne) {
  const GuidedChoices choices = {{1, 2, 3}, {1, 2, 3, 4}, {1, 5, 6}, {7, 8}};
  EXPECT_EQ(Allowed(choices, {}, 9), (Ids{1, 7}));
  EXPECT_EQ(Allowed(choices, {1}, 9), (Ids{2, 5}));
  EXPECT_EQ(Allowed(choices, {1, 2}, 9), (Ids{3}));
  EXPECT_EQ(Allowed(choices, {1, 2, 3}, 9), (Ids{4, 9}));
  EXPECT_EQ(Allowed(choices, {1, 2, 3}, -1), (Ids{4})) << "no end token: the longer one only";
  EXPECT_EQ(Allowed(choices, {7, 9}, 9), Ids{}) << "left every choice";

  EXPECT_FALSE(Complete(choices, {}));
  EXPECT_FALSE(Complete(choices, {1, 2}));
  EXPECT_FALSE(Complete(choices, {1, 2, 3})) << "\"yes!\" may still follow";
  EXPECT_TRUE(Complete(choices, {1, 2, 3, 4}));
  EXPECT_TRUE(Complete(choices, {1, 5, 6}));
  EXPECT_TRUE(Complete(choices, {7, 8}));
  EXPECT_FALSE(Complete(choices, {7, 8, 8}));
}

TEST(GuidedChoiceTest, RepeatedChoicesAndSharedTokensAreListedOnce) {
  const GuidedChoices choices = {{4, 4}, {4, 4}, {4, 2}};
  EXPECT_EQ(Allowed(choices, {}, 0), (Ids{4}));
  EXPECT_EQ(Allowed(choices, {4}, 0), (Ids{2, 4}));
  EXPECT_TRUE(Complete(choices, {4, 4}));
}

}  // namespace
}  // namespace headroom::worker
