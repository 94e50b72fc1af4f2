// `headroom bench serve`'s workload: ShareGPT reading and vLLM's sampling rules, random prompts,
// and the arrival process (checked against the gamma distribution's own moments). The server's
// /tokenize is stood in for by counting words (the rules are about lengths); the real router's
// tokenizer is used by tests/e2e/bench_serve_e2e_test.cc.
#include "cli/bench_workload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/python_random.h"
#include "nlohmann/json.hpp"

namespace headroom::cli {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One id per whitespace-separated word.
ServerTokenizer WordTokenizer() {
  ServerTokenizer t;
  t.tokenize = [](const std::string& text, bool) -> absl::StatusOr<std::vector<int32_t>> {
    const std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
    return std::vector<int32_t>(words.size(), 7);
  };
  return t;
}

// One id per byte, and back.
ServerTokenizer ByteTokenizer() {
  ServerTokenizer t;
  t.tokenize = [](const std::string& text, bool) -> absl::StatusOr<std::vector<int32_t>> {
    return std::vector<int32_t>(text.begin(), text.end());
  };
  t.detokenize = [](const std::vector<int32_t>& ids) -> absl::StatusOr<std::string> {
    return std::string(ids.begin(), ids.end());
  };
  return t;
}

std::string Words(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += "w ";
  return out;
}

std::filesystem::path WriteFile(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("headroom_" + name + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << text;
  return path;
}

TEST(ShareGptTest, KeepsTheFirstTwoTurnsOfConversationsWithTwoOrMore) {
  const std::filesystem::path path = WriteFile("sharegpt", R"j([
    {"id": "a", "conversations": [{"from": "human", "value": "first question"},
                                  {"from": "gpt", "value": "first answer"}]},
    {"id": {"nested": [1, {"conversations": []}]},
     "conversations": [{"from": "human", "value": "second question"},
                       {"from": "gpt", "value": "second answer"},
                       {"from": "human", "value": "a third turn"}]},
    {"id": "one turn", "conversations": [{"from": "human", "value": "alone"}]},
    {"id": "no conversations"},
    {"id": "not text", "conversations": [{"from": "human", "value": 3},
                                         {"from": "gpt", "value": "x"}]},
    {"conversations": [{"value": "third question", "from": "human"},
                       {"value": "third answer", "from": "gpt"}], "id": "c"}
  ])j");
  const absl::StatusOr<std::vector<ShareGptPair>> pairs = LoadShareGpt(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ASSERT_EQ(pairs->size(), 3u);
  EXPECT_EQ((*pairs)[0].prompt, "first question");
  EXPECT_EQ((*pairs)[0].completion, "first answer");
  EXPECT_EQ((*pairs)[1].prompt, "second question");
  EXPECT_EQ((*pairs)[1].completion, "second answer");
  EXPECT_EQ((*pairs)[2].prompt, "third question");
  EXPECT_EQ((*pairs)[2].completion, "third answer");
}

TEST(ShareGptTest, RefusesWhatIsNotAShareGptFile) {
  const auto error_of = [](const std::string& text) {
    const std::filesystem::path path = WriteFile("bad_sharegpt", text);
    const absl::StatusOr<std::vector<ShareGptPair>> pairs = LoadShareGpt(path.string());
    std::filesystem::remove(path);
    EXPECT_EQ(pairs.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(pairs.status().message());
  };
  EXPECT_NE(error_of(R"({"conversations": []})").find("a JSON list of conversations"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"conversations": [}])").find("not JSON at byte "), std::string::npos);
  const absl::StatusOr<std::vector<ShareGptPair>> missing =
      LoadShareGpt("/nonexistent/ShareGPT.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("/nonexistent/ShareGPT.json"), std::string::npos);
}

// --num-prompts `n` and --seed `seed`, shuffled and oversampled unless changed.
ShareGptSampling Sampling(int64_t n, int64_t seed = 0) {
  ShareGptSampling s;
  s.num_prompts = n;
  s.seed = seed;
  return s;
}

// vLLM's is_valid_sequence: prompt and reply of at least 4 tokens, a prompt of at most 1024,
// at most 2048 in all.
TEST(ShareGptTest, SamplesOnlyWhatVllmsFilterPasses) {
  std::vector<ShareGptPair> pairs = {
      {Words(3), Words(10)},       // prompt too short
      {Words(4), Words(4)},        // the shortest that passes
      {Words(1025), Words(10)},    // prompt too long
      {Words(1024), Words(1024)},  // 2048 in all: passes
      {Words(1024), Words(1025)},  // 2049 in all
      {Words(10), Words(3)},       // reply too short
  };
  ShareGptSampling no_oversample = Sampling(10, 1);
  no_oversample.oversample = false;
  const absl::StatusOr<std::vector<BenchRequest>> sampled =
      SampleShareGpt(pairs, no_oversample, WordTokenizer());
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  ASSERT_EQ(sampled->size(), 2u);
  std::vector<std::pair<int64_t, int64_t>> lens;
  for (const BenchRequest& r : *sampled) {
    lens.emplace_back(r.prompt_len, r.output_len);
    EXPECT_TRUE(r.ids.empty());
    EXPECT_EQ(r.text, Words(static_cast<int>(r.prompt_len)));
  }
  std::sort(lens.begin(), lens.end());
  EXPECT_EQ(lens, (std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {1024, 1024}}));

  // With --sharegpt-output-len the reply's length is not checked, the total still is.
  no_oversample.output_len = 2;
  const absl::StatusOr<std::vector<BenchRequest>> fixed =
      SampleShareGpt(pairs, no_oversample, WordTokenizer());
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->size(), 4u);  // the prompts of 4, 1024, 1024 and 10 words
  for (const BenchRequest& r : *fixed) EXPECT_EQ(r.output_len, 2);

  const absl::StatusOr<std::vector<BenchRequest>> none =
      SampleShareGpt({pairs[0], pairs[2]}, Sampling(3), WordTokenizer());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("none of the 2 conversations"), std::string::npos);
}

TEST(ShareGptTest, OversamplesThePassingSamplesAndStopsAtNumPrompts) {
  std::vector<ShareGptPair> pairs;
  for (int i = 0; i < 6; ++i) pairs.push_back({Words(i % 2 == 0 ? 5 + i : 2), Words(6)});
  const absl::StatusOr<std::vector<BenchRequest>> many =
      SampleShareGpt(pairs, Sampling(40, 3), WordTokenizer());
  ASSERT_TRUE(many.ok()) << many.status();
  ASSERT_EQ(many->size(), 40u);
  std::set<int64_t> seen;
  for (const BenchRequest& r : *many) seen.insert(r.prompt_len);
  EXPECT_EQ(seen, (std::set<int64_t>{5, 7, 9}));  // each passing one, no other

  ShareGptSampling in_file_order = Sampling(2);
  in_file_order.shuffle = false;
  const absl::StatusOr<std::vector<BenchRequest>> two =
      SampleShareGpt(pairs, in_file_order, WordTokenizer());
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ(two->size(), 2u);  // in file order without the shuffle
  EXPECT_EQ((*two)[0].prompt_len, 5);
  EXPECT_EQ((*two)[1].prompt_len, 7);
}

TEST(ShareGptTest, TheShuffleDependsOnTheSeedOnly) {
  std::vector<ShareGptPair> pairs;
  for (int i = 0; i < 50; ++i) pairs.push_back({Words(4 + i), Words(4)});
  const auto order = [&](int64_t seed) {
    const absl::StatusOr<std::vector<BenchRequest>> sampled =
        SampleShareGpt(pairs, Sampling(50, seed), WordTokenizer());
    std::vector<int64_t> lens;
    if (!sampled.ok()) return lens;
    for (const BenchRequest& r : *sampled) lens.push_back(r.prompt_len);
    return lens;
  };
  EXPECT_EQ(order(5), order(5));
  EXPECT_NE(order(5), order(6));
  std::vector<int64_t> sorted = order(5);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(50);
  std::iota(all.begin(), all.end(), 4);
  EXPECT_EQ(sorted, all);  // a permutation
  EXPECT_NE(order(5), all);
}

nlohmann::json PythonRandomFixture() {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  std::ifstream in(std::string(root != nullptr ? root : ".") +
                   "/tests/cli/fixtures/python_random.json");
  EXPECT_TRUE(in.good()) << "cannot open tests/cli/fixtures/python_random.json";
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

// PythonRandom draws what CPython's random module draws after random.seed(seed), for seeds of
// one and two 32-bit words, 2^63 - 1 and a negative one (tests/cli/fixtures/python_random.json,
// from CPython by scripts/gen_python_random_fixtures.py).
TEST(PythonRandomTest, DrawsWhatCPythonDraws) {
  const nlohmann::json fixture = PythonRandomFixture();
  ASSERT_EQ(fixture["cases"].size(), 6u);
  for (const nlohmann::json& c : fixture["cases"]) {
    const auto seed = c["seed"].get<int64_t>();
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    PythonRandom words(seed);
    for (const nlohmann::json& want : c["getrandbits32"]) {
      EXPECT_EQ(words.GetRandBits(32), want.get<uint64_t>());
    }
    PythonRandom bits(seed);
    for (const nlohmann::json& draw : c["getrandbits"]) {
      EXPECT_EQ(bits.GetRandBits(draw[0].get<int>()), draw[1].get<uint64_t>())
          << "getrandbits(" << draw[0] << ")";
    }
    for (const nlohmann::json& want : c["shuffles"]) {
      std::vector<int64_t> x(want.size());
      std::iota(x.begin(), x.end(), 0);
      PythonRandom(seed).Shuffle(x);
      EXPECT_EQ(x, want.get<std::vector<int64_t>>()) << "shuffle of " << want.size();
    }
    for (const nlohmann::json& choices : c["choices"]) {
      const auto m = choices[0].get<uint64_t>();
      PythonRandom choose(seed);
      std::vector<uint64_t> drawn;
      for (size_t i = 0; i < choices[1].size(); ++i) drawn.push_back(choose.RandBelow(m));
      EXPECT_EQ(drawn, choices[1].get<std::vector<uint64_t>>()) << "choice of " << m;
    }
  }
}

// The same --seed sends the same conversations in the same order as `vllm bench serve`: 60
// conversations of given lengths (one token per word), sampled as vLLM's ShareGPTDataset does
// with CPython's random (the fixture): shuffled, filtered up to --num-prompts, oversampled when
// fewer pass (100 of them), and with --sharegpt-output-len.
TEST(ShareGptTest, SendsWhatVllmSendsForTheSameSeed) {
  const nlohmann::json fixture = PythonRandomFixture();
  std::vector<ShareGptPair> pairs;
  for (const nlohmann::json& lengths : fixture["conversations"]) {
    pairs.push_back({Words(lengths[0].get<int>()), Words(lengths[1].get<int>())});
  }
  ASSERT_EQ(pairs.size(), 60u);
  int cases = 0;
  for (const nlohmann::json& c : fixture["cases"]) {
    for (const nlohmann::json& run : c["sharegpt"]) {
      ShareGptSampling sampling = Sampling(run["num_prompts"].get<int64_t>());
      sampling.seed = c["seed"].get<int64_t>();
      if (!run["output_len"].is_null()) sampling.output_len = run["output_len"].get<int64_t>();
      SCOPED_TRACE(::testing::Message()
                   << "seed " << sampling.seed << ", " << sampling.num_prompts << " prompts");
      const absl::StatusOr<std::vector<BenchRequest>> sent =
          SampleShareGpt(pairs, sampling, WordTokenizer());
      ASSERT_TRUE(sent.ok()) << sent.status();
      std::vector<std::vector<int64_t>> lens;
      for (const BenchRequest& r : *sent) lens.push_back({r.prompt_len, r.output_len});
      EXPECT_EQ(lens, run["sent"].get<std::vector<std::vector<int64_t>>>());
      ++cases;
    }
  }
  EXPECT_EQ(cases, 18);
}

// Random prompts: exactly input_len ids, and their text (for a chat endpoint) is what the server
// decodes them to.
TEST(RandomDatasetTest, PromptsHaveExactlyTheInputLengthAndTheirDecodedText) {
  const ServerTokenizer bytes = ByteTokenizer();
  const absl::StatusOr<std::vector<BenchRequest>> requests = MakeRandomRequests(
      {.num_prompts = 5, .input_len = 33, .output_len = 9, .as_text = true, .seed = 4}, bytes);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 5u);
  for (const BenchRequest& r : *requests) {
    EXPECT_EQ(r.ids.size(), 33u);
    EXPECT_EQ(r.prompt_len, 33);
    EXPECT_EQ(r.output_len, 9);
    EXPECT_EQ(r.text, std::string(r.ids.begin(), r.ids.end()));
  }
  EXPECT_NE((*requests)[0].ids, (*requests)[1].ids);
}

// vLLM's --random-prefix-len and --random-range-ratio: every prompt starts with the same prefix
// ids, its own part and its output length are drawn from [floor(len x 0.5), ceil(len x 1.5)]
// (both ends reached over 300 prompts), and the own parts differ.
TEST(RandomDatasetTest, APrefixSharedByEveryPromptAndLengthsInVllmsRanges) {
  const ServerTokenizer bytes = ByteTokenizer();
  const absl::StatusOr<std::vector<BenchRequest>> requests = MakeRandomRequests({.num_prompts = 300,
                                                                                 .input_len = 20,
                                                                                 .output_len = 9,
                                                                                 .prefix_len = 7,
                                                                                 .range_ratio = 0.5,
                                                                                 .seed = 11},
                                                                                bytes);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 300u);
  const std::vector<int32_t> prefix((*requests)[0].ids.begin(), (*requests)[0].ids.begin() + 7);
  std::set<int64_t> own_lens;
  std::set<int64_t> output_lens;
  std::set<std::vector<int32_t>> own_parts;
  for (const BenchRequest& r : *requests) {
    ASSERT_EQ(static_cast<int64_t>(r.ids.size()), r.prompt_len);
    EXPECT_EQ(std::vector<int32_t>(r.ids.begin(), r.ids.begin() + 7), prefix);
    own_lens.insert(r.prompt_len - 7);
    output_lens.insert(r.output_len);
    own_parts.insert(std::vector<int32_t>(r.ids.begin() + 7, r.ids.end()));
  }
  EXPECT_EQ(*own_lens.begin(), 10);
  EXPECT_EQ(*own_lens.rbegin(), 30);
  EXPECT_EQ(*output_lens.begin(), 4);    // floor(9 x 0.5)
  EXPECT_EQ(*output_lens.rbegin(), 14);  // ceil(9 x 1.5)
  EXPECT_EQ(own_parts.size(), 300u);

  // A ratio that could ask for 0 tokens asks for at least 1; an own part may be empty when a
  // prefix is there.
  const absl::StatusOr<std::vector<BenchRequest>> tiny = MakeRandomRequests({.num_prompts = 50,
                                                                             .input_len = 1,
                                                                             .output_len = 1,
                                                                             .prefix_len = 3,
                                                                             .range_ratio = 0.9,
                                                                             .seed = 2},
                                                                            bytes);
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  std::set<int64_t> tiny_lens;
  for (const BenchRequest& r : *tiny) {
    EXPECT_GE(r.output_len, 1);
    EXPECT_LE(r.output_len, 2);
    tiny_lens.insert(r.prompt_len);
  }
  EXPECT_EQ(tiny_lens, (std::set<int64_t>{3, 4, 5}));
}

TEST(ArrivalTest, InfiniteRateSendsEverythingAtOnce) {
  EXPECT_EQ(ArrivalOffsets(4, kInf, 1, 0), std::vector<double>(4, 0.0));
  EXPECT_TRUE(ArrivalOffsets(0, 2, 1, 0).empty());
}

TEST(ArrivalTest, InfiniteBurstinessSendsAtConstantGaps) {
  const std::vector<double> at = ArrivalOffsets(5, 4, kInf, 0);
  ASSERT_EQ(at.size(), 5u);
  for (size_t i = 0; i < at.size(); ++i) EXPECT_DOUBLE_EQ(at[i], static_cast<double>(i + 1) / 4);
}

// The gaps of a gamma distribution of shape k have a coefficient of variation of 1/sqrt(k): 1 for
// a Poisson process (k = 1), 2 at k = 0.25 (burstier), 0.5 at k = 4 (smoother). Whatever the
// shape, the last request goes out at n / rate.
TEST(ArrivalTest, GapsFollowTheGammaShapeAndTheLastArrivalIsNOverRate) {
  constexpr int64_t kN = 40000;
  constexpr double kRate = 25;
  for (const double shape : {0.25, 1.0, 4.0}) {
    const std::vector<double> at = ArrivalOffsets(kN, kRate, shape, 11);
    ASSERT_EQ(at.size(), static_cast<size_t>(kN));
    EXPECT_NEAR(at.back(), kN / kRate, 1e-9) << shape;
    double sum = 0, sum2 = 0, previous = 0;
    for (const double t : at) {
      const double gap = t - previous;
      EXPECT_GE(gap, 0.0);
      sum += gap;
      sum2 += gap * gap;
      previous = t;
    }
    const double mean = sum / kN;
    const double cv = std::sqrt(sum2 / kN - mean * mean) / mean;
    EXPECT_NEAR(mean, 1 / kRate, 1e-12) << shape;
    EXPECT_NEAR(cv, 1 / std::sqrt(shape), 0.05 / std::sqrt(shape)) << shape;
  }
  EXPECT_EQ(ArrivalOffsets(100, 3, 1, 9), ArrivalOffsets(100, 3, 1, 9));
  EXPECT_NE(ArrivalOffsets(100, 3, 1, 9), ArrivalOffsets(100, 3, 1, 10));
}

// vLLM's ramp-up: request i's rate is start + (end - start) * i / (n - 1) (linear) or
// start * (end / start)^(i / (n - 1)) (exponential); at constant gaps each request waits 1 / its
// rate after the one before, and nothing is rescaled to n / rate.
TEST(ArrivalTest, RampUpClimbsFromTheStartToTheEndRate) {
  const RampUp linear{.strategy = RampUp::Strategy::kLinear, .start_rps = 1, .end_rps = 5};
  const RampUp exponential{
      .strategy = RampUp::Strategy::kExponential, .start_rps = 1, .end_rps = 16};
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_DOUBLE_EQ(RampUpRate(linear, i, 5), 1.0 + static_cast<double>(i));
    EXPECT_NEAR(RampUpRate(exponential, i, 5), std::pow(2.0, static_cast<double>(i)), 1e-12);
  }
  const std::vector<double> at = ArrivalOffsets(5, kInf, kInf, 0, linear);
  double want = 0;
  for (size_t i = 0; i < at.size(); ++i) {
    want += 1.0 / static_cast<double>(i + 1);
    EXPECT_NEAR(at[i], want, 1e-12) << i;
  }
  // Rate 0 at the start of a linear ramp sends that request at once.
  const RampUp from_zero{.strategy = RampUp::Strategy::kLinear, .start_rps = 0, .end_rps = 2};
  const std::vector<double> zero = ArrivalOffsets(3, kInf, kInf, 0, from_zero);
  EXPECT_DOUBLE_EQ(zero[0], 0.0);
  EXPECT_DOUBLE_EQ(zero[1], 1.0);  // rate 1
  EXPECT_DOUBLE_EQ(zero[2], 1.5);  // rate 2
  // Gamma gaps at the ramp's rates: the mean gap of many requests at a steady "ramp" is 1 / rate.
  const RampUp steady{.strategy = RampUp::Strategy::kLinear, .start_rps = 20, .end_rps = 20};
  const std::vector<double> poisson = ArrivalOffsets(40000, kInf, 1, 3, steady);
  EXPECT_NEAR(poisson.back() / 40000, 1.0 / 20, 0.02 / 20);
}

}  // namespace
}  // namespace headroom::cli
