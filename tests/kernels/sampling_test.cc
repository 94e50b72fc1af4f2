#include "kernels/cpu/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/philox.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace headroom::kernels::cpu {
namespace {

using testing::RandomFloats;

struct Result {
  std::vector<int32_t> token_ids;
  std::vector<float> token_logprobs;
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
};

absl::StatusOr<Result> RunSampler(const std::vector<float>& logits, int64_t vocab,
                                  const std::vector<SamplingParams>& params) {
  const size_t rows = params.size();
  Result r{std::vector<int32_t>(rows, -99),
           std::vector<float>(rows, std::numeric_limits<float>::quiet_NaN()),
           std::vector<int32_t>(rows * kMaxLogprobs, -99),
           std::vector<float>(rows * kMaxLogprobs, std::numeric_limits<float>::quiet_NaN())};
  const absl::Status status =
      Sample(logits.data(), static_cast<int64_t>(rows), vocab, params.data(),
             SamplerOutput{r.token_ids.data(), r.token_logprobs.data(), r.top_ids.data(),
                           r.top_logprobs.data()});
  if (!status.ok()) return status;
  return r;
}

int32_t SampleOne(const std::vector<float>& logits, const SamplingParams& p) {
  absl::StatusOr<Result> r = RunSampler(logits, static_cast<int64_t>(logits.size()), {p});
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->token_ids[0] : -1;
}

// Independent naive sampler following the documented algorithm: full sort for top-k/top-p, then
// inverse CDF over the kept ids in ascending order with the same Philox uniform.
int32_t NaiveSample(const std::vector<float>& logits, const SamplingParams& p) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  if (p.temperature < kGreedyTemperature) return order[0];
  const double max_logit = static_cast<double>(logits[static_cast<size_t>(order[0])]);
  auto weight = [&](int32_t t) {
    return std::exp((static_cast<double>(logits[static_cast<size_t>(t)]) - max_logit) /
                    static_cast<double>(p.temperature));
  };
  size_t kept = order.size();
  if (p.top_k > 0 && p.top_k < vocab) kept = static_cast<size_t>(p.top_k);
  if (p.top_p < 1.0f) {
    double total = 0.0;
    for (size_t i = 0; i < kept; ++i) total += weight(order[i]);
    double cumulative = 0.0;
    for (size_t i = 0; i < kept; ++i) {
      cumulative += weight(order[i]);
      if (cumulative >= static_cast<double>(p.top_p) * total) {
        kept = i + 1;
        break;
      }
    }
  }
  std::vector<int32_t> ids(order.begin(), order.begin() + static_cast<int64_t>(kept));
  std::sort(ids.begin(), ids.end());
  double total = 0.0;
  for (int32_t t : ids) total += weight(t);
  const double threshold = PhiloxUniform(p.seed, p.counter) * total;
  double cumulative = 0.0;
  for (int32_t t : ids) {
    cumulative += weight(t);
    if (cumulative > threshold) return t;
  }
  return ids.back();
}

TEST(SampleTest, GreedyIsArgmaxWithTiesToLowestId) {
  std::mt19937_64 rng(41);
  for (int64_t vocab : {1, 2, 17, 32000}) {
    std::vector<float> logits = RandomFloats(rng, vocab, -10.0f, 10.0f);
    const int32_t best =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    SamplingParams p;
    p.temperature = 0.0f;
    p.seed = 99;
    EXPECT_EQ(SampleOne(logits, p), best) << vocab;
  }
  const std::vector<float> tied = {1.0f, 5.0f, 3.0f, 5.0f, 5.0f};
  SamplingParams p;
  p.temperature = 0.0f;
  EXPECT_EQ(SampleOne(tied, p), 1);
  p.temperature = kGreedyTemperature / 2;
  EXPECT_EQ(SampleOne(tied, p), 1);
}

TEST(SampleTest, TopKOneIsGreedy) {
  std::mt19937_64 rng(42);
  for (uint64_t counter = 0; counter < 50; ++counter) {
    const std::vector<float> logits = RandomFloats(rng, 1000, -3.0f, 3.0f);
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    SamplingParams top1;
    top1.temperature = 1.3f;
    top1.top_k = 1;
    top1.seed = 5;
    top1.counter = counter;
    EXPECT_EQ(SampleOne(logits, top1), SampleOne(logits, greedy));
  }
}

TEST(SampleTest, MatchesNaiveSamplerOnRandomRowsAndParams) {
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<float> temperature(0.3f, 2.0f);
  std::uniform_int_distribution<int32_t> top_k(0, 60);
  std::uniform_real_distribution<float> top_p(0.05f, 1.0f);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t vocab = trial % 3 == 0 ? 1 + trial : 301;
    const std::vector<float> logits = RandomFloats(rng, vocab, -4.0f, 4.0f);
    SamplingParams p;
    p.temperature = temperature(rng);
    p.top_k = trial % 2 == 0 ? top_k(rng) : 0;
    p.top_p = trial % 4 < 2 ? top_p(rng) : 1.0f;
    p.seed = rng();
    p.counter = static_cast<uint64_t>(trial);
    EXPECT_EQ(SampleOne(logits, p), NaiveSample(logits, p))
        << "trial " << trial << " T=" << p.temperature << " k=" << p.top_k << " p=" << p.top_p;
  }
}

TEST(SampleTest, SameSeedAndCounterGiveSameTokenInAnyBatch) {
  std::mt19937_64 rng(44);
  const int64_t vocab = 500;
  const std::vector<float> row = RandomFloats(rng, vocab, -2.0f, 2.0f);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.95f;
  p.seed = 0xDEADBEEFCAFEull;
  for (uint64_t counter = 0; counter < 20; ++counter) {
    p.counter = counter;
    const int32_t alone = SampleOne(row, p);
    // The same row at index 3 of a batch of 5 whose other rows have other logits and params.
    std::vector<float> logits;
    std::vector<SamplingParams> params;
    for (int r = 0; r < 5; ++r) {
      const std::vector<float> other = r == 3 ? row : RandomFloats(rng, vocab);
      logits.insert(logits.end(), other.begin(), other.end());
      SamplingParams q;
      q.seed = rng();
      q.counter = rng() % 1000;
      q.temperature = 0.8f;
      params.push_back(r == 3 ? p : q);
    }
    absl::StatusOr<Result> batch = RunSampler(logits, vocab, params);
    ASSERT_TRUE(batch.ok());
    EXPECT_EQ(batch->token_ids[3], alone) << "counter " << counter;
  }
}

// Chi-square goodness of fit of 40000 draws (counters 0..39999, one seed) against
// softmax(logits / T) over 8 tokens: 7 degrees of freedom, the 0.999 quantile is 24.3.
TEST(SampleTest, EmpiricalDistributionMatchesSoftmax) {
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 0.0f, 1.2f, -0.3f, 0.9f, 1.5f};
  for (float temperature : {0.7f, 1.0f, 1.8f}) {
    std::vector<double> probs(logits.size());
    double total = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) {
      probs[i] = std::exp(static_cast<double>(logits[i]) / static_cast<double>(temperature));
      total += probs[i];
    }
    const int draws = 40000;
    std::vector<int> counts(logits.size(), 0);
    SamplingParams p;
    p.temperature = temperature;
    p.seed = 2024;
    for (int i = 0; i < draws; ++i) {
      p.counter = static_cast<uint64_t>(i);
      ++counts[static_cast<size_t>(SampleOne(logits, p))];
    }
    double chi_square = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) {
      const double expected = draws * probs[i] / total;
      chi_square += (counts[i] - expected) * (counts[i] - expected) / expected;
    }
    EXPECT_LT(chi_square, 24.3) << "T=" << temperature;
  }
}

TEST(SampleTest, TopPNeverSamplesOutsideTheNucleus) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (ids 2, 0, 3, 1). top_p = 0.7: the nucleus is {2, 0}
  // (0.5 < 0.7 <= 0.8); top_p = 0.5: {2} alone; top_p = 0.81: {2, 0, 3}.
  const std::vector<float> logits = {std::log(0.3f), std::log(0.05f), std::log(0.5f),
                                     std::log(0.15f)};
  struct Expectation {
    float top_p;
    std::set<int32_t> nucleus;
  };
  for (const Expectation& e :
       {Expectation{0.7f, {0, 2}}, Expectation{0.5f, {2}}, Expectation{0.81f, {0, 2, 3}}}) {
    SamplingParams p;
    p.top_p = e.top_p;
    p.seed = 77;
    std::set<int32_t> seen;
    int count_2 = 0;
    const int draws = 4000;
    for (int i = 0; i < draws; ++i) {
      p.counter = static_cast<uint64_t>(i);
      const int32_t t = SampleOne(logits, p);
      ASSERT_TRUE(e.nucleus.count(t)) << "top_p=" << e.top_p << " sampled " << t;
      seen.insert(t);
      count_2 += t == 2 ? 1 : 0;
    }
    EXPECT_EQ(seen, e.nucleus) << "every nucleus token is reachable";
    if (e.top_p == 0.7f) {
      // Renormalised: P(2) = 0.5 / 0.8 = 0.625; 5 standard errors of 4000 draws is 0.038.
      EXPECT_NEAR(static_cast<double>(count_2) / draws, 0.625, 0.04);
    }
  }
}

TEST(SampleTest, TopKNeverSamplesOutsideTheTopK) {
  std::mt19937_64 rng(45);
  const std::vector<float> logits = RandomFloats(rng, 200, -1.0f, 1.0f);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  const std::set<int32_t> top5(order.begin(), order.begin() + 5);
  SamplingParams p;
  p.top_k = 5;
  p.temperature = 5.0f;  // flat: without the filter, most draws would fall outside
  std::set<int32_t> seen;
  for (uint64_t i = 0; i < 2000; ++i) {
    p.counter = i;
    const int32_t t = SampleOne(logits, p);
    ASSERT_TRUE(top5.count(t)) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen, top5);
}

TEST(SampleTest, LargeVocabTopPMatchesNaive) {
  // Llama-3-sized vocabulary with a peaked head, so the nucleus search stops early, and a flat one,
  // so it has to grow past its first 64 candidates.
  std::mt19937_64 rng(46);
  for (float spread : {12.0f, 1.0f}) {
    const std::vector<float> logits = RandomFloats(rng, 128256, -spread, spread);
    for (uint64_t counter = 0; counter < 5; ++counter) {
      SamplingParams p;
      p.top_p = 0.9f;
      p.temperature = 0.8f;
      p.seed = 3;
      p.counter = counter;
      EXPECT_EQ(SampleOne(logits, p), NaiveSample(logits, p));
    }
  }
}

TEST(SampleTest, LogprobsAreRawLogSoftmaxSortedAndSumToOne) {
  std::mt19937_64 rng(47);
  const int64_t vocab = 16;
  const std::vector<float> logits = RandomFloats(rng, vocab, -5.0f, 5.0f);
  std::vector<float> token_logprob_by_temperature;
  for (float temperature : {0.0f, 0.5f, 2.0f}) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 3;
    p.num_logprobs = kMaxLogprobs;  // more than the vocabulary: 16 real entries, 4 empty
    absl::StatusOr<Result> r = RunSampler(logits, vocab, {p});
    ASSERT_TRUE(r.ok());
    double total = 0.0;
    for (int i = 0; i < kMaxLogprobs; ++i) {
      const int32_t id = r->top_ids[static_cast<size_t>(i)];
      const float logprob = r->top_logprobs[static_cast<size_t>(i)];
      if (i >= vocab) {
        EXPECT_EQ(id, -1);
        EXPECT_EQ(logprob, -std::numeric_limits<float>::infinity());
        continue;
      }
      ASSERT_GE(id, 0);
      total += std::exp(static_cast<double>(logprob));
      if (i > 0) {
        EXPECT_LE(logprob, r->top_logprobs[static_cast<size_t>(i - 1)]);
      }
      if (id == r->token_ids[0]) {
        EXPECT_EQ(logprob, r->token_logprobs[0]);
      }
    }
    EXPECT_NEAR(total, 1.0, 1e-5) << "logprobs of the whole vocabulary sum to one";
    // Raw logprobs: independent of temperature and filters; compare the top id with a double
    // log-softmax.
    double lse = 0.0;
    for (float l : logits) lse += std::exp(static_cast<double>(l));
    lse = std::log(lse);
    const int32_t top = r->top_ids[0];
    EXPECT_NEAR(static_cast<double>(r->top_logprobs[0]),
                static_cast<double>(logits[static_cast<size_t>(top)]) - lse, 1e-6);
    EXPECT_EQ(
        top, static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
  }
}

TEST(SampleTest, FewerLogprobsThanMaxAndNoLogprobs) {
  std::mt19937_64 rng(48);
  const int64_t vocab = 1000;
  const std::vector<float> logits = RandomFloats(rng, 2 * vocab);
  SamplingParams three;
  three.num_logprobs = 3;
  SamplingParams none;
  absl::StatusOr<Result> r = RunSampler(logits, vocab, {three, none});
  ASSERT_TRUE(r.ok());
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(r->top_ids[static_cast<size_t>(i)], order[static_cast<size_t>(i)]);
  for (int i = 3; i < kMaxLogprobs; ++i) EXPECT_EQ(r->top_ids[static_cast<size_t>(i)], -1);
  for (int i = 0; i < kMaxLogprobs; ++i) {
    EXPECT_EQ(r->top_ids[static_cast<size_t>(kMaxLogprobs + i)], -1);
  }
  EXPECT_TRUE(std::isfinite(r->token_logprobs[1]));
  EXPECT_LE(r->token_logprobs[1], 0.0f);
}

TEST(SampleTest, TopOutputsMayBeNullWhenNoRowAsksForLogprobs) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  const SamplingParams p;
  int32_t token = -1;
  float logprob = 0.0f;
  EXPECT_TRUE(
      Sample(logits.data(), 1, 3, &p, SamplerOutput{&token, &logprob, nullptr, nullptr}).ok());
  EXPECT_GE(token, 0);
  SamplingParams with_logprobs;
  with_logprobs.num_logprobs = 1;
  EXPECT_EQ(
      Sample(logits.data(), 1, 3, &with_logprobs, SamplerOutput{&token, &logprob, nullptr, nullptr})
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(SampleTest, MaskedTokensAreNeverSampled) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {-inf, 0.0f, -inf, 0.5f, -inf};
  SamplingParams p;
  p.temperature = 3.0f;
  for (uint64_t i = 0; i < 500; ++i) {
    p.counter = i;
    const int32_t t = SampleOne(logits, p);
    ASSERT_TRUE(t == 1 || t == 3) << t;
  }
}

// Logit bias, penalties and min_p against Hugging Face transformers' logits processors and
// OpenAI's frequency/presence definition (tests/kernels/fixtures/penalties.json, made by
// scripts/gen_sampling_fixtures.py): the penalized logits, the greedy token chosen from them, and
// the tokens min_p keeps after temperature (every sample of 400 seeds is one of them, and a kept
// set of up to 4 tokens is covered).
TEST(SampleTest, PenaltiesAndMinPMatchTransformers) {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  const std::string path =
      std::string(root != nullptr ? root : ".") + "/tests/kernels/fixtures/penalties.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot open " << path;
  const nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_GE(fixture["cases"].size(), 50u);
  int index = 0;
  for (const nlohmann::json& c : fixture["cases"]) {
    SCOPED_TRACE(::testing::Message() << "case " << index++ << " vocab " << c["vocab"]);
    const int64_t vocab = c["vocab"].get<int64_t>();
    const std::vector<float> logits = c["logits"].get<std::vector<float>>();
    const std::vector<int32_t> prompt = c["prompt"].get<std::vector<int32_t>>();
    const std::vector<int32_t> output = c["output"].get<std::vector<int32_t>>();
    SamplingParams p;
    p.repetition_penalty = c["repetition_penalty"].get<float>();
    p.frequency_penalty = c["frequency_penalty"].get<float>();
    p.presence_penalty = c["presence_penalty"].get<float>();
    p.prompt_tokens = prompt.data();
    p.num_prompt_tokens = static_cast<int64_t>(prompt.size());
    p.output_tokens = output.data();
    p.num_output_tokens = static_cast<int64_t>(output.size());
    std::vector<int32_t> bias_tokens;
    std::vector<float> bias_values;
    for (const nlohmann::json& b : c["logit_bias"]) {
      bias_tokens.push_back(b[0].get<int32_t>());
      bias_values.push_back(b[1].get<float>());
    }
    p.bias_tokens = bias_tokens.data();
    p.bias_values = bias_values.data();
    p.num_bias = static_cast<int64_t>(bias_tokens.size());

    std::vector<float> penalized(static_cast<size_t>(vocab),
                                 std::numeric_limits<float>::quiet_NaN());
    ProcessLogits(logits.data(), vocab, p, penalized.data());
    const std::vector<float> expected = c["penalized"].get<std::vector<float>>();
    for (int64_t t = 0; t < vocab; ++t) {
      // transformers multiplies the count by the penalty once; here it is subtracted per
      // occurrence: float32 rounding differs in the last bits.
      ASSERT_NEAR(penalized[static_cast<size_t>(t)], expected[static_cast<size_t>(t)], 2e-5f)
          << "token " << t;
    }
    p.temperature = 0.0f;
    EXPECT_EQ(SampleOne(logits, p), c["greedy"].get<int32_t>());

    p.temperature = c["temperature"].get<float>();
    p.min_p = c["min_p"].get<float>();
    const std::vector<int32_t> kept = c["min_p_kept"].get<std::vector<int32_t>>();
    const std::set<int32_t> allowed(kept.begin(), kept.end());
    std::set<int32_t> seen;
    for (uint64_t seed = 0; seed < 400; ++seed) {
      p.seed = seed;
      const int32_t token = SampleOne(logits, p);
      ASSERT_TRUE(allowed.contains(token)) << "token " << token << " is below min_p";
      seen.insert(token);
    }
    if (allowed.size() <= 4) {
      EXPECT_EQ(seen, allowed);
    }
  }
}

// min_tokens' banned tokens (EOS, stop ids) are never chosen, greedy or sampled; banning the
// whole vocabulary is ignored rather than leaving nothing to choose.
TEST(SampleTest, BannedTokensAreNeverChosen) {
  const std::vector<float> logits = {0.5f, 3.0f, 2.9f, -1.0f, 2.95f};
  const std::vector<int32_t> banned = {1, 4};
  SamplingParams p;
  p.temperature = 0.0f;
  p.banned_tokens = banned.data();
  p.num_banned_tokens = 2;
  EXPECT_EQ(SampleOne(logits, p), 2);
  p.temperature = 1.0f;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    p.seed = seed;
    const int32_t token = SampleOne(logits, p);
    EXPECT_NE(token, 1);
    EXPECT_NE(token, 4);
  }
  const std::vector<int32_t> all = {0, 1, 2, 3, 4};
  p.temperature = 0.0f;
  p.banned_tokens = all.data();
  p.num_banned_tokens = 5;
  EXPECT_EQ(SampleOne(logits, p), 1);
  const std::vector<int32_t> outside = {5};
  p.banned_tokens = outside.data();
  p.num_banned_tokens = 1;
  EXPECT_FALSE(RunSampler(logits, 5, {p}).ok()) << "an id outside the vocabulary";
}

// allowed_tokens (vLLM's allowed_token_ids): only those are chosen, greedy or sampled, and a
// seeded sample equals the naive sampler's on the row with every other logit at -inf; the
// reported logprobs stay the raw row's. A ban that would empty the allowed set is skipped.
TEST(SampleTest, OnlyAllowedTokensAreChosen) {
  std::mt19937_64 rng(41);
  const std::vector<float> logits = RandomFloats(rng, 97, -3.0f, 3.0f);
  const std::vector<int32_t> allowed = {5, 17, 17, 60, 96};  // a repeat is harmless
  std::vector<float> masked(logits.size(), -std::numeric_limits<float>::infinity());
  for (int32_t t : allowed) masked[static_cast<size_t>(t)] = logits[static_cast<size_t>(t)];
  SamplingParams p;
  p.allowed_tokens = allowed.data();
  p.num_allowed_tokens = static_cast<int64_t>(allowed.size());
  p.num_logprobs = 3;
  p.temperature = 0.0f;
  const int32_t best_allowed =
      *std::max_element(allowed.begin(), allowed.end(), [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] < logits[static_cast<size_t>(b)];
      });
  absl::StatusOr<Result> greedy = RunSampler(logits, 97, {p});
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(greedy->token_ids[0], best_allowed);
  const auto global_best =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  EXPECT_EQ(greedy->top_ids[0], global_best) << "top logprobs come from the raw row";

  p.temperature = 0.8f;
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    p.seed = seed;
    const int32_t token = SampleOne(logits, p);
    ASSERT_EQ(token, NaiveSample(masked, p)) << "seed " << seed;
    seen.insert(token);
  }
  EXPECT_EQ(seen, std::set<int32_t>(allowed.begin(), allowed.end()));

  // Only token 60 allowed and min_tokens bans it: the ban yields, 60 it is.
  const std::vector<int32_t> only = {60};
  p.allowed_tokens = only.data();
  p.num_allowed_tokens = 1;
  p.banned_tokens = only.data();
  p.num_banned_tokens = 1;
  for (float temperature : {0.0f, 1.0f}) {
    p.temperature = temperature;
    EXPECT_EQ(SampleOne(logits, p), 60) << "temperature " << temperature;
  }
  const std::vector<int32_t> outside = {97};
  p.allowed_tokens = outside.data();
  EXPECT_FALSE(RunSampler(logits, 97, {p}).ok()) << "an id outside the vocabulary";
}

// allowed_bitmask (a constraint's tokens, bit t % 32 of word t / 32): the same choices as the
// naive sampler on the row with every unset token at -inf, over a vocabulary that is not a
// multiple of 32; a bitmask that stops short allows nothing past its words. A bit past the
// vocabulary, or a list given too, is refused before anything is written.
TEST(SampleTest, OnlyTokensSetInTheBitmaskAreChosen) {
  constexpr int64_t kVocab = 97;
  std::mt19937_64 rng(43);
  const std::vector<float> logits = RandomFloats(rng, kVocab, -3.0f, 3.0f);
  for (const size_t words : {size_t{4}, size_t{2}}) {
    std::vector<uint32_t> bitmask(words, 0);
    std::vector<float> masked(logits.size(), -std::numeric_limits<float>::infinity());
    std::set<int32_t> allowed;
    for (int32_t t = 0; t < kVocab; ++t) {
      if (t % 3 != 1 && t != 96) continue;
      if (static_cast<size_t>(t) >= words * 32) continue;
      bitmask[static_cast<size_t>(t) / 32] |= uint32_t{1} << (t % 32);
      masked[static_cast<size_t>(t)] = logits[static_cast<size_t>(t)];
      allowed.insert(t);
    }
    SamplingParams p;
    p.allowed_bitmask = bitmask.data();
    p.allowed_bitmask_words = static_cast<int64_t>(words);
    std::set<int32_t> seen;
    for (const float temperature : {0.0f, 0.7f, 2.0f}) {
      p.temperature = temperature;
      for (uint64_t seed = 0; seed < 200; ++seed) {
        p.seed = seed;
        const int32_t token = SampleOne(logits, p);
        ASSERT_EQ(token, NaiveSample(masked, p)) << words << " words, seed " << seed;
        seen.insert(token);
      }
    }
    EXPECT_TRUE(std::includes(allowed.begin(), allowed.end(), seen.begin(), seen.end()));
    EXPECT_GT(seen.size(), 10u) << words << " words";
  }

  std::vector<uint32_t> past(4, 0);
  past[0] = 1;
  past[3] = uint32_t{1} << 1;  // token 97 of a 97-token vocabulary
  SamplingParams p;
  p.allowed_bitmask = past.data();
  p.allowed_bitmask_words = 4;
  absl::StatusOr<Result> refused = RunSampler(logits, kVocab, {p});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("token 97"), std::string::npos) << refused.status();
  past[3] = 1;  // token 96: inside
  EXPECT_TRUE(RunSampler(logits, kVocab, {p}).ok());

  const std::vector<int32_t> list = {3};
  p.allowed_tokens = list.data();
  p.num_allowed_tokens = 1;
  refused = RunSampler(logits, kVocab, {p});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << "a list and a bitmask";
}

// Any valid penalty gives a valid choice: a repetition penalty of 1e-38 divides a positive
// logit past the float range, which saturates instead of becoming +inf.
TEST(SampleTest, ExtremePenaltiesStillChoose) {
  const std::vector<float> logits = {5.0f, 4.0f, -3.0f};
  const std::vector<int32_t> prompt = {0};
  SamplingParams p;
  p.repetition_penalty = 1e-38f;
  p.prompt_tokens = prompt.data();
  p.num_prompt_tokens = 1;
  std::vector<float> out(3);
  ProcessLogits(logits.data(), 3, p, out.data());
  EXPECT_EQ(out[0], std::numeric_limits<float>::max());
  for (float temperature : {0.0f, 1.0f}) {
    p.temperature = temperature;
    EXPECT_EQ(SampleOne(logits, p), 0) << "temperature " << temperature;
  }
  p.repetition_penalty = 3e38f;  // a negative logit times this is -inf: never chosen
  const std::vector<int32_t> negative = {2};
  p.prompt_tokens = negative.data();
  ProcessLogits(logits.data(), 3, p, out.data());
  EXPECT_EQ(out[2], -std::numeric_limits<float>::infinity());
  EXPECT_NE(SampleOne(logits, p), 2);
}

TEST(SampleTest, PenaltiesLeaveTheReportedLogprobsRaw) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f};
  const std::vector<int32_t> output = {0, 0, 0};
  SamplingParams p;
  p.temperature = 0.0f;
  p.num_logprobs = 2;
  p.frequency_penalty = 2.0f;
  p.output_tokens = output.data();
  p.num_output_tokens = 3;
  absl::StatusOr<Result> r = RunSampler(logits, 4, {p});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->token_ids[0], 1) << "2 - 3 x 2 = -4 is below 1";
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l));
  EXPECT_NEAR(r->token_logprobs[0], 1.0 - std::log(sum), 1e-6);
  EXPECT_EQ(r->top_ids[0], 0) << "the top logprobs are the raw distribution's";
}

TEST(SampleTest, InvalidParamsAreInvalidArgumentAndWriteNothing) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  std::vector<SamplingParams> bad(6);
  bad[0].temperature = -0.5f;
  bad[1].temperature = std::numeric_limits<float>::quiet_NaN();
  bad[2].top_p = 0.0f;
  bad[3].top_p = 1.5f;
  bad[4].top_k = -1;
  bad[5].num_logprobs = kMaxLogprobs + 1;
  for (const SamplingParams& p : bad) {
    int32_t token = -99;
    float logprob = 1.0f;
    EXPECT_EQ(
        Sample(logits.data(), 1, 3, &p, SamplerOutput{&token, &logprob, nullptr, nullptr}).code(),
        absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(token, -99);
    EXPECT_EQ(logprob, 1.0f);
  }
}

TEST(SampleTest, BadLogitsAreInvalidArgument) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::vector<float>& logits :
       {std::vector<float>{0.0f, std::numeric_limits<float>::quiet_NaN()},
        std::vector<float>{0.0f, inf}, std::vector<float>{-inf, -inf}}) {
    const SamplingParams p;
    int32_t token = -99;
    float logprob = 0.0f;
    EXPECT_EQ(
        Sample(logits.data(), 1, 2, &p, SamplerOutput{&token, &logprob, nullptr, nullptr}).code(),
        absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace headroom::kernels::cpu
