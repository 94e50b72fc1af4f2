#include "router/tokenizer/stop_matcher.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace headroom::router {
namespace {

struct Outcome {
  std::string text;
  bool stopped = false;
  std::optional<size_t> index;
};

Outcome RunStops(const StopMatcherOptions& options, const std::vector<std::string>& chunks) {
  StopMatcher m(options);
  Outcome o;
  for (const std::string& c : chunks) {
    StopResult r = m.Push(c);
    o.text += r.text;
    if (r.stopped) {
      o.stopped = true;
      o.index = r.stop_index;
      return o;
    }
  }
  o.text += m.Finish();
  return o;
}

// Table of scenarios: chunks in, text out.
TEST(StopMatcherTest, Scenarios) {
  struct Case {
    std::vector<std::string> stop;
    bool include;
    std::vector<std::string> chunks;
    std::string want;
    bool stopped;
  };
  const std::vector<Case> cases = {
      {{"###"}, false, {"Hello ", "wor", "ld"}, "Hello world", false},
      {{"###"}, false, {"Hello #", "#", "# tail"}, "Hello ", true},
      {{"###"}, true, {"Hello #", "#", "# tail"}, "Hello ###", true},
      {{"###"}, false, {"a ## b", " ##"}, "a ## b ##", false},  // held "##" flushed at the end
      {{"</s>", "\n\n"}, false, {"line\n", "\nnext</s>"}, "line", true},
      {{"abc", "b"}, false, {"a", "bc"}, "a", true},    // "b" completes first
      {{"bc", "abc"}, false, {"xab", "c"}, "x", true},  // same end: the longer one
      {{"\xE4\xB8\x96\xE7\x95\x8C"},
       false,
       {"\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96", "\xE7\x95\x8C!"},
       "\xE4\xBD\xA0\xE5\xA5\xBD",
       true},                                              // 你好世界 with stop 世界
      {{""}, false, {"no", " stops"}, "no stops", false},  // empty stop strings are ignored
      {{"ab"}, false, {"aab"}, "a", true},
  };
  for (const Case& c : cases) {
    const Outcome o = RunStops({.stop = c.stop, .include_stop_str_in_output = c.include}, c.chunks);
    EXPECT_EQ(o.text, c.want) << c.chunks[0];
    EXPECT_EQ(o.stopped, c.stopped) << c.chunks[0];
  }
}

TEST(StopMatcherTest, HoldsOnlyPossibleStopPrefixes) {
  StopMatcher m({.stop = {"STOP"}});
  EXPECT_EQ(m.Push("abc ST").text, "abc ");
  EXPECT_EQ(m.held_bytes(), 2u);
  EXPECT_EQ(m.Push("X").text, "STX");
  EXPECT_EQ(m.held_bytes(), 0u);
  const StopResult r = m.Push("STOP!");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 0u);
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(m.Push("more").stopped);
  EXPECT_EQ(m.Finish(), "");
}

// Any chunking of the same text gives the same output (equal to feeding byte by byte).
TEST(StopMatcherTest, ChunkingDoesNotMatter) {
  std::mt19937 rng(11);
  const std::string alphabet = "ab\n#";
  for (int n = 0; n < 500; ++n) {
    std::string text;
    for (int i = 0; i < 30; ++i) text += alphabet[rng() % alphabet.size()];
    const StopMatcherOptions options{.stop = {"ab#", "\n\n", "bb", "#a#"},
                                     .include_stop_str_in_output = (n % 2) == 0};
    std::vector<std::string> bytes;
    for (const char c : text) bytes.emplace_back(1, c);
    const Outcome reference = RunStops(options, bytes);
    std::vector<std::string> chunks;
    for (size_t pos = 0; pos < text.size();) {
      const size_t len = 1 + rng() % 7;
      chunks.push_back(text.substr(pos, len));
      pos += len;
    }
    const Outcome o = RunStops(options, chunks);
    EXPECT_EQ(o.text, reference.text) << text;
    EXPECT_EQ(o.stopped, reference.stopped) << text;
    EXPECT_EQ(o.index, reference.index) << text;
  }
}

// min_tokens: text pushed with may_stop false cannot stop the stream, but a stop string that
// starts in it and completes later does.
TEST(StopMatcherTest, TextBeforeMinTokensNeverStopsButCanStartAStop) {
  StopMatcher m({.stop = {"END", "xy"}, .include_stop_str_in_output = false});
  StopResult r = m.Push("a END b x", /*may_stop=*/false);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "a END b ") << "the complete stop string passes, the 'x' is held";
  r = m.Push("y c", /*may_stop=*/true);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 1u);
  EXPECT_EQ(r.text, "");
  StopMatcher later({.stop = {"END"}, .include_stop_str_in_output = false});
  EXPECT_EQ(later.Push("EN", false).text, "");
  r = later.Push("D!", true);
  EXPECT_TRUE(r.stopped);
}

}  // namespace
}  // namespace headroom::router
