// Randomized scheduler soak: random arrivals, prompt lengths, shared prefixes and aborts on tiny
// KV pools, with a tensor-parallel follower's block tables rebuilt only from the
// StepPlans by ApplyToBlockTable (what Follower runs). After every step: the step respects its
// token budget and max_num_seqs, the follower's tables equal the leader's, every scheduled token
// has a slot, and the KV invariants hold. At the end every request that was not aborted has
// produced exactly max_tokens tokens. Under priority scheduling (random priorities) the same, and a
// step never preempts a sequence of higher priority than one it scheduled. With a sliding window
// the requests outrun the whole pool: the follower nulls the released entries the plans name, and
// every key a scheduled query reads is still in a block.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/engine/scheduler.h"

namespace headroom::worker {
namespace {

struct Shape {
  int32_t num_blocks;
  int32_t block_size;
  int32_t max_num_seqs;
  int32_t budget;
  int32_t watermark;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  int32_t window = 0;  // every layer's sliding window; 0 = none
};

class SchedulerRandomizedTest : public ::testing::TestWithParam<Shape> {};

TEST_P(SchedulerRandomizedTest, EveryRequestCompletesAndFollowersAgree) {
  const Shape shape = GetParam();
  int64_t total_preemptions = 0;
  int64_t total_prefix_hits = 0;
  int64_t longest_finished = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937 rng(seed);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto kv = *kvcache::KvCacheManager::Create({.num_blocks = shape.num_blocks,
                                                .block_size = shape.block_size,
                                                .enable_prefix_caching = true,
                                                .watermark_blocks = shape.watermark,
                                                .sliding_window = shape.window});
    const int32_t pool_tokens = (shape.num_blocks - 1) * shape.block_size;
    const int32_t max_model_len = shape.window > 0 ? 4 * pool_tokens : pool_tokens;
    Scheduler scheduler({.max_num_seqs = shape.max_num_seqs,
                         .max_num_batched_tokens = shape.budget,
                         .max_model_len = max_model_len,
                         .vocab_size = 1000,
                         .eos_token_id = 999,
                         .policy = shape.policy},
                        kv.get());
    std::vector<std::vector<int32_t>> system_prompts;
    for (int i = 0; i < 3; ++i) {
      std::vector<int32_t> p;
      for (int t = 0; t < uniform(0, 3 * shape.block_size); ++t) p.push_back(uniform(0, 998));
      system_prompts.push_back(p);
    }
    std::map<int64_t, int32_t> expected_tokens;  // id -> max_tokens, for requests not aborted
    std::map<int64_t, int32_t> produced;
    std::map<int64_t, int32_t> priority;
    std::map<int64_t, int64_t> prompt_len;
    std::map<int64_t, BlockTables> follower;
    int64_t next_id = 1;
    int arrivals = 0;
    for (int step = 0; step < 20000 && (arrivals < 100 || scheduler.HasWork()); ++step) {
      while (arrivals < 100 && uniform(0, 2) == 0) {
        ++arrivals;
        Request r;
        r.id = RequestId{next_id++};
        r.prompt = system_prompts[static_cast<size_t>(uniform(0, 2))];
        const int extra = uniform(1, 4 * shape.block_size);
        for (int t = 0; t < extra; ++t) r.prompt.push_back(uniform(0, 998));
        r.sampling.max_tokens = uniform(1, (shape.window > 0 ? 40 : 6) * shape.block_size);
        if (shape.policy == SchedulingPolicy::kPriority) r.priority = uniform(-2, 2);
        priority[r.id.value()] = r.priority;
        prompt_len[r.id.value()] = static_cast<int64_t>(r.prompt.size());
        if (scheduler.AddRequest(r).ok()) expected_tokens[r.id.value()] = r.sampling.max_tokens;
      }
      if (!expected_tokens.empty() && uniform(0, 40) == 0) {  // abort a random live request
        auto it = expected_tokens.begin();
        std::advance(it, uniform(0, static_cast<int>(expected_tokens.size()) - 1));
        if (produced[it->first] < it->second && scheduler.Abort(RequestId{it->first})) {
          expected_tokens.erase(it);
        }
      }
      const StepPlan plan = scheduler.Schedule();
      ASSERT_LE(plan.num_tokens, shape.budget);
      if (shape.policy == SchedulingPolicy::kPriority) {
        for (const RequestId victim : plan.preempted) {
          for (const ScheduledSequence& s : plan.sequences) {
            ASSERT_GE(priority[victim.value()], priority[s.id.value()])
                << "request " << victim.value() << " was preempted for " << s.id.value();
          }
        }
      }
      ASSERT_LE(static_cast<int32_t>(scheduler.RunningIds().size()), shape.max_num_seqs);
      for (RequestId id : plan.released) follower.erase(id.value());
      std::vector<int32_t> sampled;
      for (const ScheduledSequence& s : plan.sequences) {
        BlockTables& tables = follower[s.id.value()];
        tables.resize(static_cast<size_t>(kv->num_groups()));
        ASSERT_TRUE(ApplyToBlockTable(s, tables));  // what a real follower runs
        const std::vector<kvcache::BlockId>& table = tables.front();
        const int32_t end = s.num_computed_tokens + static_cast<int32_t>(s.token_ids.size());
        ASSERT_LE(end, static_cast<int64_t>(table.size()) * shape.block_size);
        // The keys this step's queries read, and the slots of its tokens, are in real blocks.
        const int32_t first_read =
            shape.window > 0 ? std::max(0, s.num_computed_tokens - shape.window + 1) : 0;
        for (int32_t p = first_read; p < end; ++p) {
          ASSERT_NE(table[static_cast<size_t>(p / shape.block_size)], kvcache::kNullBlockId)
              << "request " << s.id.value() << " position " << p;
        }
        if (s.sample) sampled.push_back(uniform(0, 998));
      }
      for (RequestId id : scheduler.RunningIds()) {
        for (int32_t g = 0; g < kv->num_groups(); ++g) {
          const auto leader = kv->BlockTable(id, g);
          ASSERT_EQ(std::vector<kvcache::BlockId>(leader.begin(), leader.end()),
                    follower[id.value()][static_cast<size_t>(g)]);
        }
      }
      for (const TokenOutput& out : scheduler.Update(plan, sampled)) {
        ++produced[out.id.value()];
        if (out.finish != FinishReason::kNone) {
          longest_finished = std::max<int64_t>(
              longest_finished, prompt_len[out.id.value()] + produced[out.id.value()]);
        }
      }
      ASSERT_TRUE(kv->CheckInvariants().ok()) << kv->CheckInvariants();
    }
    ASSERT_FALSE(scheduler.HasWork()) << "requests left after the step limit";
    for (const auto& [id, max_tokens] : expected_tokens) {
      EXPECT_EQ(produced[id], max_tokens) << "request " << id;
    }
    EXPECT_EQ(kv->Stats().num_used_blocks, 0);
    total_preemptions += scheduler.Stats().num_preemptions;
    total_prefix_hits += kv->Stats().prefix_hits;
  }
  EXPECT_GT(total_preemptions, 0) << "the pools never ran dry: nothing was tested";
  EXPECT_GT(total_prefix_hits, 0);
  if (shape.window > 0) {
    EXPECT_GT(longest_finished, (shape.num_blocks - 1) * shape.block_size)
        << "no request outran the pool";
  }
}

INSTANTIATE_TEST_SUITE_P(TinyPools, SchedulerRandomizedTest,
                         ::testing::Values(Shape{24, 4, 8, 16, 0}, Shape{40, 4, 16, 32, 2},
                                           Shape{17, 8, 4, 8, 1}, Shape{64, 16, 32, 64, 1},
                                           Shape{24, 4, 8, 16, 0, SchedulingPolicy::kPriority},
                                           Shape{40, 4, 16, 32, 2, SchedulingPolicy::kPriority},
                                           Shape{24, 4, 8, 16, 0, SchedulingPolicy::kFcfs, 6},
                                           Shape{13, 8, 4, 8, 1, SchedulingPolicy::kFcfs, 20},
                                           Shape{40, 4, 16, 32, 2, SchedulingPolicy::kPriority, 9}),
                         [](const ::testing::TestParamInfo<Shape>& param_info) {
                           const Shape& s = param_info.param;
                           return absl::StrCat(
                               "blocks", s.num_blocks, "_bs", s.block_size, "_seqs", s.max_num_seqs,
                               "_budget", s.budget, "_wm", s.watermark,
                               s.policy == SchedulingPolicy::kPriority ? "_priority" : "",
                               s.window > 0 ? absl::StrCat("_window", s.window) : "");
                         });

}  // namespace
}  // namespace headroom::worker
