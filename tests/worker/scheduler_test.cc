// Scheduler scenarios, table-driven: each step lists the requests that arrive, the plan expected
// ("id:tokens" per scheduled sequence, '*' when it samples, "+Nb" blocks it gains) and the
// running / waiting sets after the sampled tokens are applied.
#include "worker/engine/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace headroom::worker {
namespace {

using ::testing::HasSubstr;

constexpr int32_t kEos = 999;

Request MakeRequest(int64_t id, int32_t prompt_len, int32_t max_tokens, int32_t first_token = 0) {
  Request r;
  r.id = RequestId{id};
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back((first_token + i) % 1000);
  r.sampling.max_tokens = max_tokens;
  return r;
}

struct Step {
  std::vector<Request> arrive = {};
  std::string plan = "";     // e.g. "1:1* 2:4+1b"
  std::string running = "";  // after Update, e.g. "1 2"
  std::string waiting = "";
  std::string preempted = "";
};

std::string Ids(const std::vector<RequestId>& ids) {
  return absl::StrJoin(ids, " ",
                       [](std::string* out, RequestId id) { absl::StrAppend(out, id.value()); });
}

std::string Describe(const StepPlan& plan) {
  std::vector<std::string> parts;
  for (const ScheduledSequence& s : plan.sequences) {
    parts.push_back(absl::StrCat(
        s.id.value(), ":", s.token_ids.size(), s.sample ? "*" : "",
        s.new_block_ids.empty() ? "" : absl::StrCat("+", s.new_block_ids.size(), "b")));
  }
  return absl::StrJoin(parts, " ");
}

class SchedulerHarness {
 public:
  SchedulerHarness(int32_t num_blocks, int32_t block_size, SchedulerConfig config,
                   int32_t watermark = 0) {
    kv_ = *kvcache::KvCacheManager::Create({.num_blocks = num_blocks,
                                            .block_size = block_size,
                                            .enable_prefix_caching = true,
                                            .watermark_blocks = watermark});
    config.vocab_size = 1000;
    config.eos_token_id = kEos;
    scheduler_ = std::make_unique<Scheduler>(config, kv_.get());
  }

  void Run(const std::vector<Step>& steps) {
    for (size_t i = 0; i < steps.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("step ", i + 1));
      for (const Request& r : steps[i].arrive) ASSERT_TRUE(scheduler_->AddRequest(r).ok());
      const StepPlan plan = scheduler_->Schedule();
      EXPECT_EQ(Describe(plan), steps[i].plan);
      EXPECT_EQ(Ids(plan.preempted), steps[i].preempted);
      std::vector<int32_t> sampled;
      for (const ScheduledSequence& s : plan.sequences) {
        if (s.sample) sampled.push_back(next_token_++);
      }
      scheduler_->Update(plan, sampled);
      EXPECT_EQ(Ids(scheduler_->RunningIds()), steps[i].running);
      EXPECT_EQ(Ids(scheduler_->WaitingIds()), steps[i].waiting);
      ASSERT_TRUE(kv_->CheckInvariants().ok());
    }
  }

  Scheduler& scheduler() { return *scheduler_; }
  kvcache::KvCacheManager& kv() { return *kv_; }

 private:
  std::unique_ptr<kvcache::KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  int32_t next_token_ = 500;
};

SchedulerConfig Config(int32_t max_seqs, int32_t budget, int32_t max_len = 1000) {
  return {.max_num_seqs = max_seqs, .max_num_batched_tokens = budget, .max_model_len = max_len};
}

TEST(SchedulerTest, LongPromptIsPrefilledInChunks) {
  SchedulerHarness h(/*num_blocks=*/20, /*block_size=*/4, Config(4, /*budget=*/4));
  h.Run({
      {.arrive = {MakeRequest(1, 10, 2)}, .plan = "1:4+1b", .running = "1", .waiting = ""},
      {.plan = "1:4+1b", .running = "1", .waiting = ""},
      {.plan = "1:2*+1b", .running = "1", .waiting = ""},
      {.plan = "1:1*", .running = "", .waiting = ""},  // second token: max_tokens reached
  });
}

TEST(SchedulerTest, DecodesGoFirstThenPrefillChunksThenAdmissions) {
  SchedulerHarness h(40, 4, Config(4, /*budget=*/6));
  h.Run({
      {.arrive = {MakeRequest(1, 3, 5)}, .plan = "1:3*+1b", .running = "1", .waiting = ""},
      {.arrive = {MakeRequest(2, 9, 5, 100), MakeRequest(3, 2, 5, 200)},
       .plan = "1:1* 2:5+2b",  // the decode, then 5 tokens of the budget to the new prompt
       .running = "1 2",
       .waiting = "3"},
      {.plan = "1:1*+1b 2:4*+1b 3:1+1b", .running = "1 2 3", .waiting = ""},
      {.plan = "1:1* 2:1* 3:1*", .running = "1 2 3", .waiting = ""},
  });
}

TEST(SchedulerTest, MaxNumSeqsCapsRunning) {
  SchedulerHarness h(40, 4, Config(/*max_seqs=*/2, 64));
  h.Run({
      {.arrive = {MakeRequest(1, 2, 1), MakeRequest(2, 2, 3, 10), MakeRequest(3, 2, 1, 20)},
       .plan = "1:2*+1b 2:2*+1b",
       .running = "2",  // 1 finished after its only token
       .waiting = "3"},
      {.plan = "2:1* 3:2*+1b", .running = "2", .waiting = ""},
      {.plan = "2:1*", .running = "", .waiting = ""},
  });
}

TEST(SchedulerTest, PrefixHitSkipsCachedTokens) {
  SchedulerHarness h(40, 4, Config(4, 64));
  h.Run({
      {.arrive = {MakeRequest(1, 10, 1)}, .plan = "1:10*+3b", .running = "", .waiting = ""},
      // Same first 8 tokens: two cached blocks, 2 tokens computed (the table holds 3 blocks).
      {.arrive = {MakeRequest(2, 10, 1)}, .plan = "2:2*+3b", .running = "", .waiting = ""},
  });
  EXPECT_EQ(h.kv().Stats().prefix_hits, 8);
}

TEST(SchedulerTest, NewestIsPreemptedAndResumesOnlyWhenItsWholeContextFits) {
  // 6 usable blocks of 4 tokens. Two requests of 8-token prompts (2 blocks each) decode until
  // the pool runs dry; the newer one is preempted, its 4 blocks freed, and it waits until the
  // older one finishes, because its whole context (prompt + generated) must fit to resume.
  SchedulerHarness h(/*num_blocks=*/7, 4, Config(4, 64));
  h.Run({
      {.arrive = {MakeRequest(1, 8, 7), MakeRequest(2, 8, 8, 100)},
       .plan = "1:8*+2b 2:8*+2b",
       .running = "1 2",
       .waiting = ""},
      {.plan = "1:1*+1b 2:1*+1b", .running = "1 2", .waiting = ""},  // 9 tokens: 3 blocks each
      {.plan = "1:1* 2:1*", .running = "1 2", .waiting = ""},
      {.plan = "1:1* 2:1*", .running = "1 2", .waiting = ""},
      {.plan = "1:1* 2:1*", .running = "1 2", .waiting = ""},  // 12 tokens each, pool full
      {.plan = "1:1*+1b", .running = "1", .waiting = "2", .preempted = "2"},
      {.plan = "1:1*", .running = "", .waiting = "2"},  // 1 finished (7 tokens): blocks freed
      // 2 resumes: 13 tokens of context recomputed (8 from its own cached prompt blocks).
      {.plan = "2:5*+4b", .running = "2", .waiting = ""},
  });
  EXPECT_EQ(h.scheduler().Stats().num_preemptions, 1);
}

Request WithPriority(Request r, int32_t priority) {
  r.priority = priority;
  return r;
}

SchedulerConfig PriorityConfig(int32_t max_seqs, int32_t budget) {
  SchedulerConfig config = Config(max_seqs, budget);
  config.policy = SchedulingPolicy::kPriority;
  return config;
}

// The scenario above under priority scheduling, with the older request at the lower priority:
// it is the one preempted, although the other is newer.
TEST(SchedulerTest, PriorityPreemptsTheLowestPriorityNotTheNewest) {
  SchedulerHarness h(/*num_blocks=*/7, 4, PriorityConfig(4, 64));
  h.Run({
      {.arrive = {WithPriority(MakeRequest(1, 8, 8), 1),
                  WithPriority(MakeRequest(2, 8, 7, 100), 0)},
       .plan = "2:8*+2b 1:8*+2b",
       .running = "2 1",
       .waiting = ""},
      {.plan = "2:1*+1b 1:1*+1b", .running = "2 1", .waiting = ""},
      {.plan = "2:1* 1:1*", .running = "2 1", .waiting = ""},
      {.plan = "2:1* 1:1*", .running = "2 1", .waiting = ""},
      {.plan = "2:1* 1:1*", .running = "2 1", .waiting = ""},
      {.plan = "2:1*+1b", .running = "2", .waiting = "1", .preempted = "1"},
      {.plan = "2:1*", .running = "", .waiting = "1"},
      {.plan = "1:5*+4b", .running = "1", .waiting = ""},
  });
}

// Lower values first, ties in arrival order; a preempted request waits in its (priority,
// arrival) place, not at the front.
TEST(SchedulerTest, PriorityOrdersAdmissionAndAPreemptedRequestWaitsInItsPlace) {
  SchedulerHarness h(/*num_blocks=*/40, 4, PriorityConfig(/*max_seqs=*/1, 64));
  h.Run({
      {.arrive = {WithPriority(MakeRequest(1, 2, 1, 10), 5),
                  WithPriority(MakeRequest(2, 2, 1, 20), 0),
                  WithPriority(MakeRequest(3, 2, 1, 30), 5),
                  WithPriority(MakeRequest(4, 2, 1, 40), -1)},
       .plan = "4:2*+1b",
       .running = "",
       .waiting = "2 1 3"},
      {.plan = "2:2*+1b", .running = "", .waiting = "1 3"},
      {.plan = "1:2*+1b", .running = "", .waiting = "3"},
      {.plan = "3:2*+1b", .running = "", .waiting = ""},
  });

  // 3 usable blocks of 4: 5 (priority 0) runs; 6 (priority 1, older than 7) is preempted for
  // it...
  SchedulerHarness tight(/*num_blocks=*/4, 4, PriorityConfig(4, 64));
  tight.Run({
      {.arrive = {WithPriority(MakeRequest(5, 4, 6, 100), 0),
                  WithPriority(MakeRequest(6, 4, 6, 200), 1)},
       .plan = "5:4*+1b 6:4*+1b",
       .running = "5 6",
       .waiting = ""},
      {.plan = "5:1*+1b", .running = "5", .waiting = "6", .preempted = "6"},
      // ...and waits behind a newer request of higher priority (which does not fit yet), in
      // front of a newer one of its own.
      {.arrive = {WithPriority(MakeRequest(7, 8, 1, 300), 0),
                  WithPriority(MakeRequest(8, 2, 1, 400), 1)},
       .plan = "5:1*",
       .running = "5",
       .waiting = "7 6 8"},
  });
}

TEST(SchedulerTest, FcfsRefusesAPriority) {
  SchedulerHarness h(20, 4, Config(4, 64));
  const absl::Status status = h.scheduler().AddRequest(WithPriority(MakeRequest(1, 4, 2), 3));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("priority 3 needs priority scheduling"));
  EXPECT_THAT(status.message(), HasSubstr("--scheduling-policy priority"));
  EXPECT_TRUE(h.scheduler().AddRequest(WithPriority(MakeRequest(2, 4, 2), 0)).ok());
}

TEST(SchedulerTest, HeadOfLineRequestBlocksAdmissionBehindIt) {
  SchedulerHarness h(/*num_blocks=*/7, 4, Config(4, 64));
  h.Run({
      {.arrive = {MakeRequest(1, 16, 3)}, .plan = "1:16*+4b", .running = "1", .waiting = ""},
      // 2 needs 3 blocks (2 free): it waits, and 3 (1 block) waits behind it.
      {.arrive = {MakeRequest(2, 12, 1, 100), MakeRequest(3, 2, 1, 200)},
       .plan = "1:1*+1b",
       .running = "1",
       .waiting = "2 3"},
      {.plan = "1:1*", .running = "", .waiting = "2 3"},
      {.plan = "2:12*+3b 3:2*+1b", .running = "", .waiting = ""},
  });
}

TEST(SchedulerTest, AbortReleasesBlocksInTheNextPlan) {
  SchedulerHarness h(20, 4, Config(4, 64));
  ASSERT_TRUE(h.scheduler().AddRequest(MakeRequest(1, 6, 10)).ok());
  ASSERT_TRUE(h.scheduler().AddRequest(MakeRequest(2, 6, 10, 50)).ok());
  StepPlan plan = h.scheduler().Schedule();
  h.scheduler().Update(plan, std::vector<int32_t>{1, 2});
  EXPECT_TRUE(h.scheduler().Abort(RequestId{1}));
  EXPECT_FALSE(h.scheduler().Abort(RequestId{1}));
  EXPECT_EQ(h.kv().Stats().num_sequences, 1);
  plan = h.scheduler().Schedule();
  EXPECT_EQ(Ids(plan.released), "1");
  EXPECT_EQ(Describe(plan), "2:1*");
  // A request that fits the pool but not the free blocks waits; aborting it empties the queue.
  ASSERT_TRUE(h.scheduler().AddRequest(MakeRequest(3, 70, 5)).ok());
  h.scheduler().Update(plan, std::vector<int32_t>{3});
  EXPECT_EQ(Describe(h.scheduler().Schedule()), "2:1*");
  EXPECT_EQ(Ids(h.scheduler().WaitingIds()), "3");
  EXPECT_TRUE(h.scheduler().Abort(RequestId{3}));
  EXPECT_EQ(Ids(h.scheduler().WaitingIds()), "");
}

TEST(SchedulerTest, StopConditions) {
  SchedulerHarness h(40, 4, Config(8, 64, /*max_len=*/12));
  Request eos = MakeRequest(1, 2, 10);
  Request ignore = MakeRequest(2, 2, 3);
  ignore.sampling.ignore_eos = true;
  Request stop_id = MakeRequest(3, 2, 10);
  stop_id.sampling.stop_token_ids = {77};
  Request long_context = MakeRequest(4, 10, 2);  // 10 + 2 = max_model_len
  for (Request* r : {&eos, &ignore, &stop_id, &long_context}) {
    ASSERT_TRUE(h.scheduler().AddRequest(*r).ok());
  }
  StepPlan plan = h.scheduler().Schedule();
  std::vector<TokenOutput> out =
      h.scheduler().Update(plan, std::vector<int32_t>{kEos, kEos, 77, 5});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].finish, FinishReason::kStop);
  EXPECT_TRUE(out[0].stop_token) << "EOS stopped it";
  EXPECT_EQ(out[1].finish, FinishReason::kNone);  // ignore_eos
  EXPECT_FALSE(out[1].stop_token);
  EXPECT_EQ(out[2].finish, FinishReason::kStop);
  EXPECT_TRUE(out[2].stop_token) << "a stop token stopped it";
  EXPECT_EQ(out[3].finish, FinishReason::kNone);
  plan = h.scheduler().Schedule();
  out = h.scheduler().Update(plan, std::vector<int32_t>{6, 7});
  EXPECT_EQ(out[0].finish, FinishReason::kNone);
  EXPECT_EQ(out[1].finish, FinishReason::kLength);  // max_tokens 2 == max_model_len
  EXPECT_FALSE(out[1].stop_token);
  plan = h.scheduler().Schedule();
  out = h.scheduler().Update(plan, std::vector<int32_t>{8});
  EXPECT_EQ(out[0].finish, FinishReason::kLength);  // max_tokens 3
  EXPECT_FALSE(h.scheduler().HasWork());
  EXPECT_EQ(h.kv().Stats().num_used_blocks, 0);
}

// A satisfied constraint (guided choice, a whole JSON value) stops a request with an ordinary
// token, which is not a stop token: its text is part of the answer.
TEST(SchedulerTest, AConstraintStopIsNotAStopToken) {
  SchedulerHarness h(40, 4, Config(8, 64, /*max_len=*/64));
  ASSERT_TRUE(h.scheduler().AddRequest(MakeRequest(1, 2, 10)).ok());
  const StepPlan plan = h.scheduler().Schedule();
  const std::vector<TokenOutput> out =
      h.scheduler().Update(plan, std::vector<int32_t>{'}'}, std::vector<uint8_t>{1});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].finish, FinishReason::kStop);
  EXPECT_FALSE(out[0].stop_token);

  // A constraint that offered EOS where its text may end, taken under ignore_eos: the request
  // ends on that EOS, which is the stop token.
  Request ignoring = MakeRequest(2, 2, 10);
  ignoring.sampling.ignore_eos = true;
  ASSERT_TRUE(h.scheduler().AddRequest(ignoring).ok());
  const StepPlan next = h.scheduler().Schedule();
  const std::vector<TokenOutput> ended =
      h.scheduler().Update(next, std::vector<int32_t>{kEos}, std::vector<uint8_t>{1});
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].finish, FinishReason::kStop);
  EXPECT_TRUE(ended[0].stop_token);
}

TEST(SchedulerTest, RefusesRequestsThatCanNeverRun) {
  SchedulerHarness h(/*num_blocks=*/11, 16, Config(8, 64, /*max_len=*/4096), /*watermark=*/1);
  Scheduler& s = h.scheduler();
  EXPECT_THAT(s.AddRequest(MakeRequest(1, 0, 1)).message(), HasSubstr("prompt is empty"));
  Request bad_token = MakeRequest(2, 2, 1);
  bad_token.prompt[1] = 1000;
  EXPECT_THAT(s.AddRequest(bad_token).message(),
              HasSubstr("token id 1000 is out of vocabulary (size 1000)"));
  EXPECT_THAT(s.AddRequest(MakeRequest(3, 4, 0)).message(), HasSubstr("max_tokens must be"));
  EXPECT_EQ(s.AddRequest(MakeRequest(4, 4000, 100)).message(),
            "this model's maximum context length is 4096 tokens; the request needs 4100 (4000 "
            "in the prompt, 100 max_tokens)");
  // 150 + 20 tokens = 11 blocks of 16; the pool has 10.
  EXPECT_EQ(s.AddRequest(MakeRequest(5, 150, 20)).message(),
            "the request can never fit the KV cache: 170 tokens (150 prompt + 20 max_tokens) "
            "need 11 blocks of 16 tokens, the pool has 10 blocks (1 held back for running "
            "sequences)");
  EXPECT_EQ(s.AddRequest(MakeRequest(5, 150, 20)).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.AddRequest(MakeRequest(6, 140, 20)).ok());  // 10 blocks: fits when alone
  EXPECT_EQ(s.AddRequest(MakeRequest(6, 1, 1)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.Stats().num_waiting, 1);
  EXPECT_EQ(s.Stats().waiting_demand_blocks, 9);  // the 140-token prompt
}

}  // namespace
}  // namespace headroom::worker
