// Streaming: token-by-token text concatenates to the full decode, and no chunk is invalid UTF-8.
#include "router/tokenizer/incremental_detokenizer.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "router/tokenizer/stop_matcher.h"
#include "router/tokenizer/utf8.h"
#include "tests/router/tokenizer/fixtures.h"

namespace headroom::router {
namespace {

using testing::FixtureDir;
using testing::Ids;
using testing::ReadJsonLines;

// Streams `ids` one at a time; checks every chunk is valid UTF-8; returns the concatenation.
std::string Stream(const Tokenizer& t, const std::vector<int32_t>& ids, DecodeOptions options,
                   std::vector<std::string>* chunks = nullptr) {
  IncrementalDetokenizer d(t, options);
  std::string all;
  for (const int32_t id : ids) {
    const std::string chunk = d.Push(id);
    EXPECT_TRUE(utf8::IsValid(chunk)) << "invalid chunk after id " << id;
    if (chunks != nullptr && !chunk.empty()) chunks->push_back(chunk);
    all += chunk;
  }
  const std::string rest = d.Finish();
  EXPECT_TRUE(utf8::IsValid(rest));
  if (chunks != nullptr && !rest.empty()) chunks->push_back(rest);
  return all + rest;
}

class StreamingTest : public testing::FixtureTokenizerTest {};

TEST_P(StreamingTest, CorpusStreamsToFullDecode) {
  for (const auto& row : ReadJsonLines(FixtureDir(GetParam()) + "/expected.jsonl")) {
    const auto ids = Ids(row["ids"]);
    for (const bool skip : {true, false}) {
      const DecodeOptions o{.skip_special_tokens = skip};
      EXPECT_EQ(Stream(*tokenizer_, ids, o), tokenizer_->Decode(ids, o))
          << "text: " << row["text"].dump() << " skip_special_tokens=" << skip;
    }
  }
}

TEST_P(StreamingTest, RandomIdsStreamToFullDecode) {
  for (const auto& row : ReadJsonLines(FixtureDir(GetParam()) + "/decode.jsonl")) {
    const auto ids = Ids(row["ids"]);
    for (const bool skip : {true, false}) {
      const DecodeOptions o{.skip_special_tokens = skip};
      EXPECT_EQ(Stream(*tokenizer_, ids, o), tokenizer_->Decode(ids, o)) << row["ids"].dump();
    }
  }
  // Longer random sequences drawn from the whole vocabulary.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> any(0, tokenizer_->vocab_size() + 3);
  for (int n = 0; n < 200; ++n) {
    std::vector<int32_t> ids(static_cast<size_t>(1 + n % 40));
    for (auto& id : ids) id = any(rng);
    EXPECT_EQ(Stream(*tokenizer_, ids, {}), tokenizer_->Decode(ids));
  }
}

TEST_P(StreamingTest, ContextDecidesLeadingSpace) {
  auto prompt = tokenizer_->Encode("Hello there", {.add_special_tokens = false});
  auto output = tokenizer_->Encode(" world again", {.add_special_tokens = false});
  ASSERT_TRUE(prompt.ok() && output.ok());
  IncrementalDetokenizer d(*tokenizer_, {}, *prompt);
  std::string streamed;
  for (const int32_t id : *output) streamed += d.Push(id);
  streamed += d.Finish();
  std::vector<int32_t> all = *prompt;
  all.insert(all.end(), output->begin(), output->end());
  const std::string full = tokenizer_->Decode(all);
  EXPECT_EQ(tokenizer_->Decode(*prompt) + streamed, full);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamingTest, ::testing::ValuesIn(testing::FixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(StreamingByteFallbackTest, HoldsBytePiecesUntilTheRunEnds) {
  auto t = Tokenizer::FromDirectory(FixtureDir("llama2"));
  ASSERT_TRUE(t.ok()) << t.status();
  const auto e2 = (*t)->TokenToId("<0xE2>");
  const auto x82 = (*t)->TokenToId("<0x82>");
  const auto xac = (*t)->TokenToId("<0xAC>");
  const auto space = (*t)->TokenToId("\u2581");
  const auto a = (*t)->TokenToId("a");
  ASSERT_TRUE(e2 && x82 && xac && space && a);
  IncrementalDetokenizer d(**t);
  EXPECT_EQ(d.Push(*a), "a");
  EXPECT_EQ(d.Push(*space), " ");
  EXPECT_EQ(d.Push(*e2), "");
  EXPECT_EQ(d.Push(*x82), "");
  EXPECT_EQ(d.Push(*xac), "");
  EXPECT_EQ(d.pending_tokens(), 3u);
  EXPECT_EQ(d.Push(*a), "\xE2\x82\xAC" "a");
  EXPECT_EQ(d.Finish(), "");
}

// Metaspace / Strip drop the space of the very first token only (Gemma's layout adds none).
TEST(StreamingByteFallbackTest, FirstTokenLosesItsLeadingSpace) {
  for (const char* name : {"llama2", "mistral", "gemma"}) {
    auto t = Tokenizer::FromDirectory(FixtureDir(name));
    ASSERT_TRUE(t.ok()) << t.status();
    auto ids = (*t)->Encode("Hello world", {.add_special_tokens = false});
    ASSERT_TRUE(ids.ok());
    std::vector<std::string> chunks;
    EXPECT_EQ(Stream(**t, *ids, {}, &chunks), "Hello world") << name;
    ASSERT_FALSE(chunks.empty());
    EXPECT_NE(chunks.front()[0], ' ') << name;
  }
}

// The router's composition: detokenize, then stop strings across token boundaries.
TEST(StreamingStopTest, StopStringSpanningTokens) {
  auto t = Tokenizer::FromDirectory(FixtureDir("llama3"));
  ASSERT_TRUE(t.ok()) << t.status();
  auto ids = (*t)->Encode("The answer is 42. END OF ANSWER and more text", {.add_special_tokens = false});
  ASSERT_TRUE(ids.ok());
  for (const bool include : {false, true}) {
    IncrementalDetokenizer d(**t);
    StopMatcher stop({.stop = {"END OF"}, .include_stop_str_in_output = include});
    std::string out;
    bool stopped = false;
    for (const int32_t id : *ids) {
      const StopResult r = stop.Push(d.Push(id));
      out += r.text;
      // Nothing emitted so far ever contains a part of the stop string.
      EXPECT_EQ(out.find("END"), include ? out.find("END") : std::string::npos);
      if (r.stopped) {
        stopped = true;
        break;
      }
    }
    EXPECT_TRUE(stopped);
    EXPECT_EQ(out, include ? "The answer is 42. END OF" : "The answer is 42. ");
  }
}

}  // namespace
}  // namespace headroom::router
