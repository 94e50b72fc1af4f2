// The engine gives every request the same tokens however it is scheduled: alone, in a batch of
// 32 mixed lengths, with chunked prefill forced by a small token budget, with preemptions forced
// by a small KV pool, and with prefix-cache hits. Greedy and seeded sampling alike. Also: no
// device allocation after start, refusals of requests that can never fit, and the first token's
// time of first scheduling.
#include "worker/engine/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fixture_model.h"
#include "nlohmann/json.hpp"
#include "tests/worker/posix_regex.h"
#include "worker/backend/cpu_backend.h"

namespace headroom::worker {
namespace {

using ::testing::HasSubstr;

const testdata::FixtureModel& Fixture() { return testdata::LoadFixtureModel("llama-gqa"); }

std::vector<Request> MixedRequests(int count, uint32_t seed, int shared_prefix = 0) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<int32_t> prefix;
  for (int i = 0; i < shared_prefix; ++i) prefix.push_back(uniform(0, 255));
  std::vector<Request> requests;
  for (int i = 0; i < count; ++i) {
    Request r;
    r.id = RequestId{i};
    r.prompt = prefix;
    const int len = uniform(1, 90);
    for (int t = 0; t < len; ++t) r.prompt.push_back(uniform(0, 255));
    r.sampling.max_tokens = uniform(1, 24);
    r.sampling.ignore_eos = true;
    if (i % 2 == 0) {
      r.sampling.temperature = 0;  // greedy
    } else {
      r.sampling.temperature = 0.8f;
      r.sampling.top_p = 0.9f;
      r.sampling.top_k = 50;
      r.sampling.seed = 1000 + static_cast<uint64_t>(i);
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

struct RunResult {
  std::map<int64_t, std::vector<int32_t>> tokens;
  // Each request's preemption count as its last token reported it.
  std::map<int64_t, int32_t> preemptions;
  // Each finished request's reason.
  std::map<int64_t, FinishReason> finish;
  EngineStats stats;
  int64_t allocations_at_start = 0;
};

EngineOptions DefaultOptions() {
  return {.max_num_seqs = 32,
          .max_num_batched_tokens = 2048,
          .max_model_len = 256,
          .block_size = 16,
          .num_kv_blocks = 600};
}

RunResult RunEngine(const std::vector<Request>& requests, const EngineOptions& options,
                    bool one_at_a_time = false) {
  RunResult result;
  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return result;
  result.allocations_at_start = backend.num_allocations();
  size_t next = 0;
  while (next < requests.size() || (*engine)->HasWork()) {
    if (next < requests.size() && (!one_at_a_time || !(*engine)->HasWork())) {
      const absl::Status status = (*engine)->AddRequest(requests[next++]);
      EXPECT_TRUE(status.ok()) << status;
      if (!one_at_a_time) continue;  // queue everything before the first step
    }
    auto step = (*engine)->Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (const StepToken& t : *step) {
      result.tokens[t.id.value()].push_back(t.token);
      result.preemptions[t.id.value()] = t.num_preemptions;
      if (t.finish != FinishReason::kNone) result.finish[t.id.value()] = t.finish;
    }
  }
  result.stats = (*engine)->Stats();
  return result;
}

TEST(EngineTest, BatchOf32GivesTheSameTokensAsAlone) {
  const std::vector<Request> requests = MixedRequests(32, 7);
  const RunResult alone = RunEngine(requests, DefaultOptions(), /*one_at_a_time=*/true);
  const RunResult batched = RunEngine(requests, DefaultOptions());
  ASSERT_EQ(alone.tokens.size(), requests.size());
  for (const Request& r : requests) {
    EXPECT_EQ(alone.tokens.at(r.id.value()).size(), static_cast<size_t>(r.sampling.max_tokens));
  }
  EXPECT_EQ(batched.tokens, alone.tokens);
  EXPECT_LT(batched.stats.steps * 4, alone.stats.steps) << "the batch run did not batch";
}

TEST(EngineTest, ChunkedPrefillGivesTheSameTokens) {
  const std::vector<Request> requests = MixedRequests(16, 11);
  const RunResult reference = RunEngine(requests, DefaultOptions());
  EngineOptions chunked = DefaultOptions();
  chunked.max_num_seqs = 8;
  chunked.max_num_batched_tokens = 16;  // prompts up to 90 tokens: several chunks each
  const RunResult result = RunEngine(requests, chunked);
  EXPECT_EQ(result.tokens, reference.tokens);
}

TEST(EngineTest, PreemptionsGiveTheSameTokensAndAreCountedPerRequest) {
  const std::vector<Request> requests = MixedRequests(24, 13);
  const RunResult reference = RunEngine(requests, DefaultOptions());
  EngineOptions tight = DefaultOptions();
  tight.num_kv_blocks = 1 + 16;  // 16 usable blocks (256 tokens) for 24 requests of up to ~114
  const RunResult result = RunEngine(requests, tight);
  EXPECT_GT(result.stats.scheduler.num_preemptions, 0) << "the pool never ran out";
  EXPECT_EQ(result.tokens, reference.tokens);
  // Every preemption is some request's, and each request's tokens say how often it was.
  int64_t per_request = 0;
  for (const auto& [id, count] : result.preemptions) per_request += count;
  EXPECT_EQ(per_request, result.stats.scheduler.num_preemptions);
  for (const auto& [id, count] : reference.preemptions) EXPECT_EQ(count, 0) << id;
}

// Priority scheduling changes the order, never the tokens.
TEST(EngineTest, PriorityOrderUnderPreemptionsGivesTheSameTokens) {
  std::vector<Request> requests = MixedRequests(24, 13);
  for (size_t i = 0; i < requests.size(); ++i)
    requests[i].priority = static_cast<int32_t>(i % 3) - 1;
  std::vector<Request> fcfs = requests;
  for (Request& r : fcfs) r.priority = 0;
  const RunResult reference = RunEngine(fcfs, DefaultOptions());
  EngineOptions tight = DefaultOptions();
  tight.num_kv_blocks = 1 + 16;
  tight.scheduling_policy = SchedulingPolicy::kPriority;
  const RunResult result = RunEngine(requests, tight);
  EXPECT_GT(result.stats.scheduler.num_preemptions, 0) << "the pool never ran out";
  EXPECT_EQ(result.tokens, reference.tokens);
}

TEST(EngineTest, PrefixCacheHitsGiveTheSameTokens) {
  const std::vector<Request> requests = MixedRequests(12, 17, /*shared_prefix=*/48);
  EngineOptions no_cache = DefaultOptions();
  no_cache.enable_prefix_caching = false;
  const RunResult reference = RunEngine(requests, no_cache, /*one_at_a_time=*/true);
  const RunResult cached = RunEngine(requests, DefaultOptions(), /*one_at_a_time=*/true);
  EXPECT_GE(cached.stats.kv.prefix_hits, 11 * 48);  // every request after the first hits 3 blocks
  EXPECT_EQ(reference.stats.kv.prefix_hits, 0);
  EXPECT_EQ(cached.tokens, reference.tokens);
}

TEST(EngineTest, NoDeviceAllocationAfterStart) {
  EngineOptions tight = DefaultOptions();
  tight.num_kv_blocks = 1 + 24;
  const RunResult result = RunEngine(MixedRequests(32, 19, 16), tight);
  EXPECT_GT(result.allocations_at_start, 0);
  EXPECT_EQ(result.stats.device_allocations, result.allocations_at_start);
  EXPECT_GT(result.stats.steps, 10);
}

TEST(EngineTest, RefusesRequestsThatCanNeverFit) {
  CpuBackend backend(1);
  EngineOptions options = DefaultOptions();
  options.num_kv_blocks = 1 + 8;  // 8 usable blocks of 16 tokens
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  ASSERT_TRUE(engine.ok());
  Request big;
  big.id = RequestId{1};
  big.prompt.assign(120, 5);
  big.sampling.max_tokens = 20;
  const absl::Status status = (*engine)->AddRequest(big);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("140 tokens (120 prompt + 20 max_tokens) need 9 blocks of 16 tokens, the "
                        "pool has 8 blocks"));
  Request bad = big;
  bad.prompt.assign(10, 5);
  bad.sampling.top_p = 0;
  EXPECT_THAT(std::string((*engine)->AddRequest(bad).message()),
              HasSubstr("top_p must be in (0, 1]"));
  EXPECT_FALSE((*engine)->HasWork());
}

// The first token of a request says when a step first scheduled it: a request that waited for a
// free sequence slot (max_num_seqs 1) was scheduled after the one ahead of it finished, one that
// was prefilled in several chunks at its first chunk; later tokens carry nothing.
TEST(EngineTest, FirstTokenCarriesWhenTheRequestWasFirstScheduled) {
  CpuBackend backend(1);
  EngineOptions options = DefaultOptions();
  options.max_num_seqs = 1;
  options.max_num_batched_tokens = 16;  // the 40-token prompts take 3 prefill steps each
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (int64_t id : {1, 2}) {
    Request r;
    r.id = RequestId{id};
    r.prompt.assign(40, static_cast<int32_t>(id));
    r.sampling.max_tokens = 3;
    r.sampling.ignore_eos = true;
    ASSERT_TRUE((*engine)->AddRequest(r).ok());
  }
  std::map<int64_t, std::vector<absl::Time>> scheduled;  // per token
  std::vector<absl::Time> step_starts;
  absl::Time first_done = absl::InfiniteFuture();  // after the step that finished request 1
  while ((*engine)->HasWork()) {
    step_starts.push_back(absl::Now());
    auto step = (*engine)->Step();
    ASSERT_TRUE(step.ok()) << step.status();
    for (const StepToken& t : *step) {
      scheduled[t.id.value()].push_back(t.first_scheduled);
      if (t.id.value() == 1 && t.finish != FinishReason::kNone) first_done = absl::Now();
    }
  }
  ASSERT_EQ(scheduled[1].size(), 3u);
  ASSERT_EQ(scheduled[2].size(), 3u);
  // Request 1 was scheduled in the first step, two prefill steps before its first token.
  EXPECT_GE(scheduled[1][0], step_starts[0]);
  EXPECT_LT(scheduled[1][0], step_starts[1]);
  // Request 1: 3 prefill steps (16 + 16 + 8 tokens) and 2 decode steps; then request 2 the same.
  ASSERT_EQ(step_starts.size(), 10u);
  // Request 2 only after request 1 finished: in the sixth step, its first prefill chunk.
  EXPECT_GT(scheduled[2][0], first_done);
  EXPECT_GE(scheduled[2][0], step_starts[5]);
  EXPECT_LT(scheduled[2][0], step_starts[6]);
  for (int64_t id : {1, 2}) {
    EXPECT_EQ(scheduled[id][1], absl::InfinitePast());
    EXPECT_EQ(scheduled[id][2], absl::InfinitePast());
  }
}

// The engine gives the sampler each request's own output so far: with frequency and presence
// penalties, every greedy token is the best of the raw top-20 candidates (and itself) once the
// penalties its output so far earns are subtracted (raw logprobs differ from the logits by one
// constant per step, so the comparison holds in logprob units). A request without penalties in
// the same batch gets the tokens it gets alone.
TEST(EngineTest, PenaltiesSeeTheRequestsOwnOutput) {
  constexpr float kFrequency = 1.5f;
  constexpr float kPresence = 0.5f;
  Request penalized;
  penalized.id = RequestId{1};
  penalized.prompt = {5, 17, 99, 3, 250, 64, 64, 12, 7, 31};
  penalized.sampling.temperature = 0;
  penalized.sampling.max_tokens = 40;
  penalized.sampling.ignore_eos = true;
  penalized.sampling.logprobs = 20;
  penalized.sampling.frequency_penalty = kFrequency;
  penalized.sampling.presence_penalty = kPresence;
  Request plain = penalized;
  plain.id = RequestId{2};
  plain.sampling.frequency_penalty = 0;
  plain.sampling.presence_penalty = 0;

  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE((*engine)->AddRequest(penalized).ok());
  ASSERT_TRUE((*engine)->AddRequest(plain).ok());
  std::map<int64_t, std::vector<StepToken>> out;
  while ((*engine)->HasWork()) {
    auto step = (*engine)->Step();
    ASSERT_TRUE(step.ok()) << step.status();
    for (StepToken& t : *step) out[t.id.value()].push_back(std::move(t));
  }
  ASSERT_EQ(out[1].size(), 40u);
  std::map<int32_t, int> counts;
  for (const StepToken& t : out[1]) {
    const auto penalty = [&](int32_t token) {
      const auto it = counts.find(token);
      const int count = it == counts.end() ? 0 : it->second;
      return kFrequency * static_cast<float>(count) + (count > 0 ? kPresence : 0.0f);
    };
    const float chosen = t.logprob - penalty(t.token);
    ASSERT_EQ(t.top_logprobs.size(), 20u);
    for (const TokenLogprob& candidate : t.top_logprobs) {
      EXPECT_GE(chosen, candidate.logprob - penalty(candidate.token) - 1e-5f)
          << "token " << t.token << " was chosen over " << candidate.token;
    }
    ++counts[t.token];
  }
  const RunResult alone = RunEngine({plain}, DefaultOptions());
  std::vector<int32_t> plain_tokens;
  for (const StepToken& t : out[2]) plain_tokens.push_back(t.token);
  EXPECT_EQ(plain_tokens, alone.tokens.at(2));
  std::vector<int32_t> penalized_tokens;
  for (const StepToken& t : out[1]) penalized_tokens.push_back(t.token);
  EXPECT_NE(penalized_tokens, plain_tokens) << "the penalties changed nothing: a vacuous test";
}

// Request 1: greedy, EOS ignored, a fixed five-token prompt.
Request GreedyRequest(int32_t max_tokens) {
  Request r;
  r.id = RequestId{1};
  r.prompt = {40, 41, 42, 43, 44};
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

// min_tokens keeps a stop token from ending the output early: a stop id that greedy decoding
// produces second ends the plain request at 2 tokens; with min_tokens 6 it is not produced
// before the 7th, and the request ends there or at max_tokens.
TEST(EngineTest, MinTokensHoldsOffStopTokens) {
  Request r = GreedyRequest(24);
  const std::vector<int32_t> free_run = RunEngine({r}, DefaultOptions()).tokens.at(1);
  ASSERT_EQ(free_run.size(), 24u);
  const int32_t stop = free_run[1];
  ASSERT_NE(free_run[0], stop) << "pick a prompt whose first two tokens differ";
  r.sampling.stop_token_ids = {stop};
  EXPECT_EQ(RunEngine({r}, DefaultOptions()).tokens.at(1).size(), 2u);
  r.sampling.min_tokens = 6;
  const std::vector<int32_t> held = RunEngine({r}, DefaultOptions()).tokens.at(1);
  ASSERT_GE(held.size(), 7u);
  for (size_t i = 0; i < 6; ++i) EXPECT_NE(held[i], stop) << "token " << i;
  const bool stopped = held.size() < 24u;
  if (stopped) {
    EXPECT_EQ(held.back(), stop);
  }
  EXPECT_EQ(std::count(held.begin(), held.end(), stop), stopped ? 1 : 0);

  r.sampling.min_tokens = 25;
  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(engine.ok());
  EXPECT_THAT(std::string((*engine)->AddRequest(r).message()),
              HasSubstr("min_tokens must be in [0, max_tokens (24)], got 25"));
}

// The model's other end-of-sequence ids (generation_config.json's list) stop a request as its
// stop_token_ids do, unless it ignores EOS: a token greedy decoding produces third, named as an
// extra EOS id, ends the output there; with ignore_eos the run is the free one.
TEST(EngineTest, ExtraEosIdsStopRequestsThatDoNotIgnoreEos) {
  Request r = GreedyRequest(12);
  const std::vector<int32_t> free_run = RunEngine({r}, DefaultOptions()).tokens.at(1);
  ASSERT_EQ(free_run.size(), 12u);
  const int32_t eom = free_run[2];
  ASSERT_TRUE(eom != free_run[0] && eom != free_run[1]) << "pick a token first seen third";
  EngineOptions options = DefaultOptions();
  options.extra_eos_token_ids = {eom};
  EXPECT_EQ(RunEngine({r}, options).tokens.at(1), free_run) << "ignore_eos ignores them too";
  r.sampling.ignore_eos = false;
  const RunResult run = RunEngine({r}, options);
  EXPECT_EQ(run.tokens.at(1), std::vector<int32_t>(free_run.begin(), free_run.begin() + 3));
  EXPECT_EQ(run.finish.at(1), FinishReason::kStop);
}

// logit_bias reaches the sampler: +100 on one token makes greedy decoding choose it every time,
// -100 on the token it would choose first makes it choose another; ids outside the vocabulary
// are refused with the numbers.
TEST(EngineTest, LogitBiasSteersTheChoice) {
  Request r = GreedyRequest(8);
  const std::vector<int32_t> free_run = RunEngine({r}, DefaultOptions()).tokens.at(1);
  r.sampling.logit_bias = {{77, 100.0f}};
  EXPECT_EQ(RunEngine({r}, DefaultOptions()).tokens.at(1), std::vector<int32_t>(8, 77));
  r.sampling.logit_bias = {{free_run[0], -100.0f}};
  EXPECT_NE(RunEngine({r}, DefaultOptions()).tokens.at(1)[0], free_run[0]);

  r.sampling.logit_bias = {{256, 1.0f}};
  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(engine.ok());
  EXPECT_THAT(std::string((*engine)->AddRequest(r).message()),
              HasSubstr("logit_bias: token 256 (bias 1) must be in [0, 256)"));
}

// allowed_token_ids reaches the sampler: every token is one of the allowed, and allowing only one
// token gives only that one; an id outside the vocabulary is refused with the numbers.
TEST(EngineTest, AllowedTokenIdsLimitTheChoice) {
  Request r = GreedyRequest(8);
  const std::vector<int32_t> free_run = RunEngine({r}, DefaultOptions()).tokens.at(1);
  r.sampling.allowed_token_ids = {77, 78};
  const std::vector<int32_t> limited = RunEngine({r}, DefaultOptions()).tokens.at(1);
  ASSERT_EQ(limited.size(), 8u);
  for (int32_t t : limited) EXPECT_TRUE(t == 77 || t == 78) << t;
  r.sampling.allowed_token_ids = {free_run[0]};
  EXPECT_EQ(RunEngine({r}, DefaultOptions()).tokens.at(1), std::vector<int32_t>(8, free_run[0]));

  r.sampling.allowed_token_ids = {3, 256};
  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(engine.ok());
  EXPECT_THAT(std::string((*engine)->AddRequest(r).message()),
              HasSubstr("allowed_token_ids[1] = 256 is outside [0, 256)"));
}

// guided_choice: the output is one whole choice and the request stops there (kStop, well before
// max_tokens, with ignore_eos set). Greedy follows the model's preference where choices differ:
// the free run's first token leads into its choice, whose later tokens are then forced; between
// two first tokens the model does not rank first, it takes the one allowed_token_ids would.
TEST(EngineTest, GuidedChoiceGivesExactlyOneWholeChoice) {
  Request r = GreedyRequest(12);
  const std::vector<int32_t> free_run = RunEngine({r}, DefaultOptions()).tokens.at(1);
  const int32_t first = free_run[0];
  const int32_t other = first == 100 ? 101 : 100;
  r.sampling.guided_choice = {{other, 7, 7}, {first, 50}};
  RunResult run = RunEngine({r}, DefaultOptions());
  EXPECT_EQ(run.tokens.at(1), (std::vector<int32_t>{first, 50}));
  EXPECT_EQ(run.finish.at(1), FinishReason::kStop);

  Request pick = GreedyRequest(1);
  pick.sampling.allowed_token_ids = {120, 130};
  const int32_t preferred = RunEngine({pick}, DefaultOptions()).tokens.at(1).at(0);
  r.sampling.guided_choice = {{120, 3}, {130, 4, 5}};
  run = RunEngine({r}, DefaultOptions());
  EXPECT_EQ(run.tokens.at(1),
            preferred == 120 ? (std::vector<int32_t>{120, 3}) : (std::vector<int32_t>{130, 4, 5}));
  EXPECT_EQ(run.finish.at(1), FinishReason::kStop);

  // Sampled, with a choice that another extends: only whole choices, always stopped.
  r.sampling.temperature = 1.0f;
  r.sampling.guided_choice = {{60}, {60, 61}, {62, 63, 64}};
  std::vector<Request> sampled;
  for (int i = 0; i < 16; ++i) {
    Request s = r;
    s.id = RequestId{static_cast<int64_t>(i + 1)};
    s.sampling.seed = static_cast<uint64_t>(i);
    s.sampling.ignore_eos = i % 2 == 0;  // odd ones may end "60" with EOS
    sampled.push_back(s);
  }
  run = RunEngine(sampled, DefaultOptions());
  for (int i = 1; i <= 16; ++i) {
    std::vector<int32_t> out = run.tokens.at(i);
    if (!out.empty() && out.back() == 2) out.pop_back();  // the fixture's EOS ended it
    const bool whole = out == std::vector<int32_t>{60} || out == std::vector<int32_t>{60, 61} ||
                       out == std::vector<int32_t>{62, 63, 64};
    EXPECT_TRUE(whole) << "request " << i << ": " << ::testing::PrintToString(run.tokens.at(i));
    EXPECT_EQ(run.finish.at(i), FinishReason::kStop) << "request " << i;
  }

  r.sampling.guided_choice = {{3}, {}};
  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(engine.ok());
  EXPECT_THAT(std::string((*engine)->AddRequest(r).message()),
              HasSubstr("guided_choice[1] has no tokens"));
}

// JSON mode, on the fixture's byte vocabulary (each token one byte). Greedy decoding nudged by
// logit_bias towards closing gives a whole object nlohmann parses, and stops right as it closes;
// sampled outputs are objects nlohmann parses whenever they stop, and each is cut only by
// max_tokens otherwise. Without a vocabulary table the worker refuses JSON mode.
// `n` copies of `r` (ids 1..n) sampled at temperature 1 with seeds 0..n-1.
std::vector<Request> SampledCopies(const Request& r, int n) {
  std::vector<Request> copies;
  for (int i = 0; i < n; ++i) {
    Request s = r;
    s.id = RequestId{static_cast<int64_t>(i + 1)};
    s.sampling.temperature = 1.0f;
    s.sampling.seed = static_cast<uint64_t>(i);
    copies.push_back(s);
  }
  return copies;
}

// The fixture's vocabulary read as bytes (token i is byte i), with `eos` (if any) adding none.
EngineOptions ByteVocabularyOptions(int32_t eos = -1) {
  EngineOptions options = DefaultOptions();
  std::vector<std::string> table(256);
  for (int i = 0; i < 256; ++i) {
    if (i != eos) table[static_cast<size_t>(i)] = std::string(1, static_cast<char>(i));
  }
  options.json_vocabulary = std::make_shared<const JsonVocabulary>(std::move(table));
  options.eos_token_id = eos;
  return options;
}

std::string ByteText(const std::vector<int32_t>& tokens) {
  std::string text;
  for (int32_t t : tokens) text.push_back(static_cast<char>(t));
  return text;
}

TEST(EngineTest, JsonObjectModeGivesObjectsNlohmannParses) {
  const EngineOptions options = ByteVocabularyOptions();
  const auto text_of = ByteText;

  Request r = GreedyRequest(64);
  r.sampling.json_object = true;
  r.sampling.logit_bias = {{'"', 6.0f}, {':', 6.0f}, {'}', 8.0f}};
  RunResult run = RunEngine({r}, options);
  const std::string greedy = text_of(run.tokens.at(1));
  const nlohmann::json parsed = nlohmann::json::parse(greedy, nullptr, false);
  EXPECT_TRUE(parsed.is_object()) << greedy;
  EXPECT_EQ(run.finish.at(1), FinishReason::kStop) << greedy;

  r.sampling.max_tokens = 48;
  r.sampling.logit_bias = {{'"', 3.0f}, {':', 3.0f}, {'}', 4.0f}};
  run = RunEngine(SampledCopies(r, 12), options);
  int stopped = 0;
  for (int i = 1; i <= 12; ++i) {
    const std::string text = text_of(run.tokens.at(i));
    if (run.finish.at(i) == FinishReason::kStop) {
      ++stopped;
      EXPECT_TRUE(nlohmann::json::parse(text, nullptr, false).is_object()) << text;
    } else {
      EXPECT_EQ(run.finish.at(i), FinishReason::kLength);
      EXPECT_EQ(run.tokens.at(i).size(), 48u);
    }
  }
  EXPECT_GT(stopped, 0) << "no sampled object closed within 48 tokens";

  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(engine.ok());
  EXPECT_THAT(std::string((*engine)->AddRequest(r).message()),
              HasSubstr("json_object needs the tokenizer's vocabulary"));
}

// json_schema on the byte vocabulary: every sampled output that stops is an object with the
// schema's required keys, only its keys, an integer, a boolean, an enum value and a string of at
// most 3 characters (checked here by hand through nlohmann), and the others are cut by
// max_tokens. A top-level integer may end with EOS (the engine offers it once the digits are a
// number). A schema the engine cannot enforce is refused with the compiler's reason.
TEST(EngineTest, JsonSchemaOutputsAreValidAgainstTheSchema) {
  const EngineOptions options = ByteVocabularyOptions(/*eos=*/255);
  Request r = GreedyRequest(96);
  r.sampling.json_schema = R"({"type":"object","properties":{"n":{"type":"integer"},
      "ok":{"type":"boolean"},"tag":{"enum":["red","green"]},"s":{"type":"string","maxLength":3}},
      "required":["n","tag"],"additionalProperties":false})";
  r.sampling.logit_bias = {{'"', 3.0f}, {',', 3.0f}, {'}', 4.0f}};
  RunResult run = RunEngine(SampledCopies(r, 12), options);
  int stopped = 0;
  for (int i = 1; i <= 12; ++i) {
    const std::string text = ByteText(run.tokens.at(i));
    if (run.finish.at(i) != FinishReason::kStop) {
      EXPECT_EQ(run.tokens.at(i).size(), 96u) << text;
      continue;
    }
    ++stopped;
    const nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
    ASSERT_TRUE(v.is_object()) << text;
    EXPECT_TRUE(v.contains("n") && v["n"].is_number_integer()) << text;
    EXPECT_TRUE(v.contains("tag") && (v["tag"] == "red" || v["tag"] == "green")) << text;
    for (const auto& [key, value] : v.items()) {
      if (key == "ok") {
        EXPECT_TRUE(value.is_boolean()) << text;
      } else if (key == "s") {
        ASSERT_TRUE(value.is_string()) << text;
        // Characters, not bytes: count the UTF-8 lead bytes.
        const auto& str = value.get_ref<const std::string&>();
        EXPECT_LE(std::count_if(str.begin(), str.end(), [](char c) { return (c & 0xC0) != 0x80; }),
                  3)
            << text;
      } else {
        EXPECT_TRUE(key == "n" || key == "tag") << "undeclared key " << key << " in " << text;
      }
    }
  }
  EXPECT_GT(stopped, 0) << "no sampled object closed within 96 tokens";

  // A top-level integer: digits, then EOS (pushed up here) ends it with finish reason stop.
  Request number = GreedyRequest(24);
  number.sampling.json_schema = R"({"type":"integer"})";
  number.sampling.logit_bias = {{255, 4.0f}};
  run = RunEngine({number}, options);
  const std::string digits = ByteText(run.tokens.at(1));
  EXPECT_EQ(run.finish.at(1), FinishReason::kStop) << digits;
  ASSERT_FALSE(digits.empty());
  EXPECT_EQ(digits.back(), '\xFF') << "ended by EOS";
  const nlohmann::json integer =
      nlohmann::json::parse(digits.substr(0, digits.size() - 1), nullptr, false);
  EXPECT_TRUE(integer.is_number_integer()) << digits;

  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  ASSERT_TRUE(engine.ok());
  Request bad = GreedyRequest(8);
  bad.sampling.json_schema = R"j({"type":"string","pattern":"(?=a)"})j";
  EXPECT_THAT(std::string((*engine)->AddRequest(bad).message()),
              HasSubstr("json_schema: at the root: pattern: lookahead is not supported"));
  bad.sampling.json_object = true;
  bad.sampling.json_schema = R"({"type":"string"})";
  EXPECT_THAT(std::string((*engine)->AddRequest(bad).message()),
              HasSubstr("at most one of guided_choice, allowed_token_ids, json_object, "
                        "json_schema, regex, grammar and structural_tag"));
}

// guided_regex on the byte vocabulary: a pattern with one length ends every sampled output by
// itself (finish reason stop, no EOS); one that may go on offers EOS once the text matches. Every
// output that stops fully matches the pattern as the C library's POSIX regexec reads it.
TEST(EngineTest, GuidedRegexOutputsMatchThePattern) {
  const EngineOptions options = ByteVocabularyOptions(/*eos=*/255);
  Request r = GreedyRequest(32);
  r.sampling.regex = R"(\d{3}-(\d{4}|[A-Z]{2}))";
  RunResult run = RunEngine(SampledCopies(r, 12), options);

  for (int i = 1; i <= 12; ++i) {
    const std::string text = ByteText(run.tokens.at(i));
    EXPECT_EQ(run.finish.at(i), FinishReason::kStop) << text;
    EXPECT_TRUE(testdata::PosixFullMatch("[0-9]{3}-([0-9]{4}|[A-Z]{2})", text)) << text;
  }

  r.sampling.regex = "[a-c]+(x|yz)?";
  r.sampling.logit_bias = {{255, 2.0f}};
  run = RunEngine(SampledCopies(r, 12), options);
  int by_eos = 0;
  for (int i = 1; i <= 12; ++i) {
    std::string text = ByteText(run.tokens.at(i));
    if (run.finish.at(i) == FinishReason::kLength) {
      EXPECT_EQ(text.size(), 32u) << text;
      continue;
    }
    EXPECT_EQ(run.finish.at(i), FinishReason::kStop) << text;
    if (!text.empty() && text.back() == '\xFF') {
      text.pop_back();
      ++by_eos;
    }
    EXPECT_TRUE(testdata::PosixFullMatch(r.sampling.regex, text)) << text;
  }
  EXPECT_GT(by_eos, 0) << "EOS is offered once the text matches";

  // More distinct patterns than the engine keeps compiled (32): each request still follows its
  // own ("x" exactly k times, then it stops).
  std::vector<Request> counted;
  for (int k = 1; k <= 40; ++k) {
    Request c = GreedyRequest(48);
    c.id = RequestId{k};
    c.sampling.regex = absl::StrCat("x{", k, "}");
    counted.push_back(c);
  }
  run = RunEngine(counted, options);
  for (int k = 1; k <= 40; ++k) {
    EXPECT_EQ(ByteText(run.tokens.at(k)), std::string(static_cast<size_t>(k), 'x'));
    EXPECT_EQ(run.finish.at(k), FinishReason::kStop);
  }

  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  ASSERT_TRUE(engine.ok());
  Request bad = GreedyRequest(8);
  bad.sampling.regex = "(?=a)b";
  EXPECT_EQ((*engine)->AddRequest(bad).message(), "regex: lookahead is not supported");
  bad.sampling.regex = "a";
  bad.sampling.json_object = true;
  EXPECT_THAT(
      std::string((*engine)->AddRequest(bad).message()),
      HasSubstr("at most one of guided_choice, allowed_token_ids, json_object, json_schema, "
                "regex, grammar and structural_tag"));
  auto no_vocabulary =
      Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(no_vocabulary.ok());
  bad.sampling.json_object = false;
  EXPECT_THAT(std::string((*no_vocabulary)->AddRequest(bad).message()),
              HasSubstr("guided_regex needs the tokenizer's vocabulary"));
}

// guided_grammar on the byte vocabulary: sampled outputs are sentences of the grammar (checked
// with an equivalent POSIX pattern: the language is regular), ending by themselves where nothing
// can follow and by EOS where a sentence may go on.
TEST(EngineTest, GuidedGrammarOutputsAreSentencesOfTheGrammar) {
  const EngineOptions options = ByteVocabularyOptions(/*eos=*/255);
  Request r = GreedyRequest(40);
  r.sampling.grammar =
      "root ::= pair (\",\" pair){0,2}\npair ::= key \"=\" value\nkey ::= [a-c]{1,2}\n"
      "value ::= [0-9]+ | \"(\" [x-z]* \")\"";
  r.sampling.logit_bias = {{255, 3.0f}};
  const RunResult run = RunEngine(SampledCopies(r, 12), options);
  int by_eos = 0;
  for (int i = 1; i <= 12; ++i) {
    std::string text = ByteText(run.tokens.at(i));
    if (run.finish.at(i) == FinishReason::kLength) continue;
    EXPECT_EQ(run.finish.at(i), FinishReason::kStop) << text;
    if (!text.empty() && text.back() == '\xFF') {
      text.pop_back();
      ++by_eos;
    }
    EXPECT_TRUE(testdata::PosixFullMatch(
        "[a-c]{1,2}=([0-9]+|[(][x-z]*[)])(,[a-c]{1,2}=([0-9]+|[(][x-z]*[)])){0,2}", text))
        << text;
  }
  EXPECT_GT(by_eos, 0) << "EOS is offered where a sentence may go on";

  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  ASSERT_TRUE(engine.ok());
  Request bad = GreedyRequest(8);
  bad.sampling.grammar = "root ::= \"a\" b";
  EXPECT_EQ((*engine)->AddRequest(bad).message(),
            "grammar: EBNF parser error at line 1, column 14: rule \"b\" is not defined");
  auto no_vocabulary =
      Engine::Create(Fixture().config, Fixture().weights, DefaultOptions(), &backend);
  ASSERT_TRUE(no_vocabulary.ok());
  bad.sampling.grammar = "root ::= \"a\"";
  EXPECT_THAT(std::string((*no_vocabulary)->AddRequest(bad).message()),
              HasSubstr("guided_grammar needs the tokenizer's vocabulary"));
}

// A structural tag on the byte vocabulary: '<' is the trigger (pushed up by a logit bias, so
// that outputs hold several tags), after which the output must name a structure ("s=" or "b="),
// give a JSON value of its schema and close with '>'. Each sampled output is checked by reading
// it by hand: free bytes, and at each '<' one whole tag whose value nlohmann parses and the
// schema's rules hold for. EOS only comes in free text; the tag never ends a request itself.
TEST(EngineTest, StructuralTagOutputsHoldAWholeTagAtEachTrigger) {
  const EngineOptions options = ByteVocabularyOptions(/*eos=*/255);
  Request r = GreedyRequest(48);
  r.sampling.structural_tag = R"({"structures": [
      {"begin": "<s=", "schema": {"type": "string", "pattern": "^[a-c]{1,3}$"}, "end": ">"},
      {"begin": "<b=", "schema": {"type": "boolean"}, "end": ">"}],
    "triggers": ["<"]})";
  r.sampling.logit_bias = {{'<', 4.0f}, {255, 1.0f}};
  const RunResult run = RunEngine(SampledCopies(r, 12), options);
  int tags = 0;
  int by_eos = 0;
  for (int i = 1; i <= 12; ++i) {
    std::string text = ByteText(run.tokens.at(i));
    const bool ended = run.finish.at(i) == FinishReason::kStop;
    if (ended) {
      ASSERT_FALSE(text.empty());
      EXPECT_EQ(text.back(), '\xFF') << "only EOS stops a structural tag's request: " << text;
      text.pop_back();
      ++by_eos;
    } else {
      EXPECT_EQ(run.finish.at(i), FinishReason::kLength) << text;
    }
    size_t at = 0;
    while ((at = text.find('<', at)) != std::string::npos) {
      const size_t close = text.find('>', at);
      if (close == std::string::npos) {
        // Cut by max_tokens inside the tag (never where EOS came).
        EXPECT_FALSE(ended) << text;
        break;
      }
      const std::string name = text.substr(at + 1, 2);
      const auto value = nlohmann::json::parse(text.substr(at + 3, close - at - 3), nullptr, false);
      if (name == "s=") {
        ASSERT_TRUE(value.is_string()) << text;
        EXPECT_TRUE(testdata::PosixFullMatch("[a-c]{1,3}", value.get<std::string>())) << text;
      } else {
        EXPECT_EQ(name, "b=") << text;
        EXPECT_TRUE(value.is_boolean()) << text;
      }
      ++tags;
      at = close + 1;
    }
  }
  EXPECT_GT(tags, 12);
  EXPECT_GT(by_eos, 0) << "EOS is offered in free text";

  // xgrammar's newer form with stop_after_first: the request stops as the first tag closes.
  r.sampling.structural_tag = R"({"format": {"type": "triggered_tags", "triggers": ["<"],
      "tags": [{"begin": "<b=", "content": {"type": "json_schema", "json_schema":
      {"type": "boolean"}}, "end": ">"}], "stop_after_first": true}})";
  const RunResult first = RunEngine(SampledCopies(r, 12), options);
  int stopped_by_tag = 0;
  for (int i = 1; i <= 12; ++i) {
    const std::string text = ByteText(first.tokens.at(i));
    const size_t at = text.find('<');
    if (at == std::string::npos || first.finish.at(i) != FinishReason::kStop) continue;
    EXPECT_TRUE(text.substr(at) == "<b=true>" || text.substr(at) == "<b=false>") << text;
    ++stopped_by_tag;
  }
  EXPECT_GT(stopped_by_tag, 3);

  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  ASSERT_TRUE(engine.ok());
  Request bad = GreedyRequest(8);
  bad.sampling.structural_tag = R"({"structures": [{"begin": "<x", "schema": {}, "end": ">"}],
                                    "triggers": ["["]})";
  EXPECT_EQ((*engine)->AddRequest(bad).message(),
            "structural_tag: structures[0].begin \"<x\" does not start with any of the triggers");
}

// constraint_after (vLLM's reasoning-aware structured output): the output is free until it shows
// the text, then it must follow the constraint. For each seed, the text is two bytes the free
// output (same seed, no constraint) shows early, so it spans two single-byte tokens: the
// constrained output is the free one up to the text's first appearance (nothing is constrained
// before), then one JSON object, and the request stops as it closes.
TEST(EngineTest, AConstraintCanStartAfterATextInTheOutput) {
  const EngineOptions options = ByteVocabularyOptions(/*eos=*/255);
  const auto text_of = [&](const std::vector<int32_t>& tokens) {
    std::string text;
    for (const int32_t t : tokens)
      text += options.json_vocabulary->token_bytes()[static_cast<size_t>(t)];
    return text;
  };
  Request free = GreedyRequest(64);
  free.sampling.logit_bias = {{'}', 2.0f}};
  const std::vector<Request> free_copies = SampledCopies(free, 12);
  RunResult run = RunEngine(free_copies, options);
  std::vector<Request> constrained_copies;
  std::map<int64_t, std::string> free_text;
  for (Request c : free_copies) {
    free_text[c.id.value()] = text_of(run.tokens.at(c.id.value()));
    c.sampling.json_object = true;
    // At an even or odd place, so that it begins in either of two consecutive tokens.
    c.sampling.constraint_after =
        free_text[c.id.value()].substr(2 + static_cast<size_t>(c.id.value() % 2), 2);
    c.sampling.max_tokens = 96;
    constrained_copies.push_back(c);
  }
  run = RunEngine(constrained_copies, options);
  int closed = 0;
  for (const Request& c : constrained_copies) {
    const int64_t i = c.id.value();
    const std::string text = text_of(run.tokens.at(i));
    const size_t end = free_text[i].find(c.sampling.constraint_after) + 2;
    ASSERT_GE(text.size(), end) << testing::PrintToString(text);
    EXPECT_EQ(text.substr(0, end), free_text[i].substr(0, end)) << "free up to the text";
    if (run.finish.at(i) != FinishReason::kStop) continue;
    EXPECT_TRUE(nlohmann::json::parse(text.substr(end), nullptr, false).is_object())
        << testing::PrintToString(text);
    ++closed;
  }
  EXPECT_GT(closed, 6);

  // A token that runs past the text: its rest is what the constraint reads first ("!{" starts
  // the object; "!z" is no JSON, so the request stops there).
  EngineOptions multi = options;
  std::vector<std::string> table = multi.json_vocabulary->token_bytes();
  table['q'] = "!{";
  table['r'] = "!z";
  multi.json_vocabulary = std::make_shared<const JsonVocabulary>(std::move(table));
  Request q = GreedyRequest(64);
  q.sampling.json_object = true;
  q.sampling.constraint_after = "!";
  q.sampling.logit_bias = {{'q', 30.0f}};
  run = RunEngine({q}, multi);
  const std::vector<int32_t>& tokens = run.tokens.at(1);
  ASSERT_FALSE(tokens.empty());
  EXPECT_EQ(tokens[0], 'q');
  std::string after = "{";
  for (size_t k = 1; k < tokens.size(); ++k)
    after += multi.json_vocabulary->token_bytes()[static_cast<size_t>(tokens[k])];
  // Constrained from "{" on: a JSON document's start (the matcher is checked against nlohmann),
  // and one whole object when the request stopped by itself.
  JsonMatcher reads;
  EXPECT_TRUE(reads.Feed(after)) << after;
  if (run.finish.at(1) == FinishReason::kStop) {
    EXPECT_TRUE(nlohmann::json::parse(after, nullptr, false).is_object()) << after;
  }
  q.sampling.logit_bias = {{'r', 30.0f}};
  run = RunEngine({q}, multi);
  EXPECT_EQ(run.tokens.at(1), std::vector<int32_t>{'r'}) << "\"!z\" ends it: z starts no JSON";
  EXPECT_EQ(run.finish.at(1), FinishReason::kStop);

  CpuBackend backend(1);
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, &backend);
  ASSERT_TRUE(engine.ok());
  Request bad = GreedyRequest(8);
  bad.sampling.constraint_after = "</think>";
  EXPECT_THAT(std::string((*engine)->AddRequest(bad).message()),
              HasSubstr("constraint_after needs json_object, json_schema, regex, grammar or "
                        "structural_tag"));
}

}  // namespace
}  // namespace headroom::worker
