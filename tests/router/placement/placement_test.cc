// Placement by KV blocks, table-driven: each case is a set of group loads, a request size and
// the expected outcome (and group).
#include "router/placement/placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace headroom::router {
namespace {

GroupLoad Group(std::string name, int32_t total, int32_t free, int64_t waiting_demand = 0,
                int64_t reserved = 0, int32_t running = 0) {
  return GroupLoad{.group = std::move(name),
                   .up = true,
                   .total_blocks = total,
                   .free_blocks = free,
                   .block_size = 16,
                   .running = running,
                   .waiting_demand_blocks = waiting_demand,
                   .max_model_len = 4096,
                   .reserved_blocks = reserved};
}

struct Case {
  const char* name;
  std::vector<GroupLoad> groups;
  int64_t tokens;
  PlacementOutcome outcome;
  std::string group = "";
  int64_t demand = 0;
};

TEST(PlacementTest, Table) {
  GroupLoad down = Group("down", 100, 100);
  down.up = false;
  GroupLoad draining = Group("draining", 100, 100);
  draining.draining = true;
  GroupLoad short_context = Group("short", 1000, 1000);
  short_context.max_model_len = 1024;
  const std::vector<Case> cases = {
      {"most blocks left wins",
       {Group("a", 100, 40), Group("b", 100, 60)},
       160,
       PlacementOutcome::kPlaced,
       "b",
       10},
      {"waiting demand counts against free",
       {Group("a", 100, 60, 30), Group("b", 100, 40)},
       16,
       PlacementOutcome::kPlaced,
       "b",
       1},
      {"router reservations count against free",
       {Group("a", 100, 60, 0, 30), Group("b", 100, 40)},
       16,
       PlacementOutcome::kPlaced,
       "b",
       1},
      {"tie goes to the least loaded",
       {Group("a", 100, 50, 0, 0, 9), Group("b", 100, 50, 0, 0, 3)},
       16,
       PlacementOutcome::kPlaced,
       "b",
       1},
      {"tie of load goes to the name",
       {Group("b", 100, 50), Group("a", 100, 50)},
       16,
       PlacementOutcome::kPlaced,
       "a",
       1},
      {"exact fit places", {Group("a", 100, 10)}, 160, PlacementOutcome::kPlaced, "a", 10},
      {"one token over waits", {Group("a", 100, 10)}, 161, PlacementOutcome::kWait},
      {"down and draining groups are skipped",
       {down, draining, Group("c", 100, 5)},
       16,
       PlacementOutcome::kPlaced,
       "c",
       1},
      {"no group up", {down, draining}, 16, PlacementOutcome::kNoGroup},
      {"no group at all", {}, 16, PlacementOutcome::kNoGroup},
      {"bigger than every pool",
       {Group("a", 10, 10), Group("b", 20, 20)},
       321,
       PlacementOutcome::kNeverFits},
      {"beyond max_model_len", {short_context}, 1025, PlacementOutcome::kNeverFits},
      {"fits a busy big pool later",
       {Group("small", 10, 10), Group("big", 100, 0)},
       320,
       PlacementOutcome::kWait},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PlacementDecision d =
        LeastLoadedByBlocks{}(c.groups, {.max_total_tokens = c.tokens, .cached_blocks = {}});
    EXPECT_EQ(d.outcome, c.outcome);
    if (c.outcome == PlacementOutcome::kPlaced) {
      EXPECT_EQ(c.groups[d.group].group, c.group);
      EXPECT_EQ(d.demand_blocks, c.demand);
    }
  }
}

// A group whose model attends 64 positions back in every layer (prefill chunks of up to 32): a
// request holds at most the 64 - 1 + 32 positions of a chunk and the window before it, which
// touch at most ceil(95 / 16) + 1 = 7 blocks, so a request longer than the whole pool fits.
TEST(PlacementTest, ASlidingWindowGroupCountsOnlyTheWindowsBlocks) {
  GroupLoad windowed = Group("windowed", 10, 10);
  windowed.sliding_window = 64;
  windowed.max_num_batched_tokens = 32;
  PlacementDecision d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{windowed},
                                              {.max_total_tokens = 4000, .cached_blocks = {}});
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(d.demand_blocks, 7);
  // A short request holds all of its blocks, as anywhere.
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{windowed},
                            {.max_total_tokens = 33, .cached_blocks = {}});
  EXPECT_EQ(d.demand_blocks, 3);
  // 6 free blocks: it waits; the same pool without a window can never hold it.
  windowed.free_blocks = 6;
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{windowed},
                            {.max_total_tokens = 4000, .cached_blocks = {}});
  EXPECT_EQ(d.outcome, PlacementOutcome::kWait);
  windowed.sliding_window = 0;
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{windowed},
                            {.max_total_tokens = 4000, .cached_blocks = {}});
  EXPECT_EQ(d.outcome, PlacementOutcome::kNeverFits);
}

// A group whose KV cache has layer groups (Gemma 2/3: one table per group, LoadReport
// kv_group_windows) counts a request's blocks in every group: all of them in the full-attention
// group, at most the 7 of the window above in each windowed one.
TEST(PlacementTest, LayerGroupsSumEachGroupsBlocks) {
  GroupLoad grouped = Group("grouped", 300, 300);
  grouped.kv_group_windows = {0, 64, 64};
  grouped.max_num_batched_tokens = 32;
  PlacementDecision d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{grouped},
                                              {.max_total_tokens = 4000, .cached_blocks = {}});
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(d.demand_blocks, 250 + 2 * 7);
  // A short request holds all of its blocks in each of the three groups.
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{grouped},
                            {.max_total_tokens = 33, .cached_blocks = {}});
  EXPECT_EQ(d.demand_blocks, 3 * 3);
  // 260 blocks hold 4000 tokens in one group, not in three, and the refusal says so.
  grouped.total_blocks = 260;
  grouped.free_blocks = 260;
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{grouped},
                            {.max_total_tokens = 4000, .cached_blocks = {}});
  EXPECT_EQ(d.outcome, PlacementOutcome::kNeverFits);
  EXPECT_EQ(NeverFitsMessage(4000, d),
            "prompt + max_tokens = 4000 tokens can never fit a worker group: they need 264 KV "
            "blocks of 16 tokens at most (summed over 3 layer groups), the closest group's pool "
            "has 260 usable blocks (largest max_model_len 4096)");
}

// A held group (an earlier queued request waits for it) is a candidate that is never chosen: the
// request goes elsewhere, or waits for it rather than being refused; wait_groups lists what it
// waits for, held or short of blocks.
TEST(PlacementTest, HeldGroupsAreCandidatesButNotChosen) {
  const std::vector<GroupLoad> groups = {Group("a", 100, 90), Group("b", 100, 20),
                                         Group("c", 100, 5)};
  const bool hold_a[] = {true, false, false};
  PlacementDecision d = LeastLoadedByBlocks{}(
      groups,
      {.max_total_tokens = 160, .cached_blocks = {}, .needs_priority = false, .held = hold_a});
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(d.group, 1u) << "a has the most room but is held";
  EXPECT_TRUE(d.wait_groups.empty());
  const bool hold_a_b[] = {true, true, false};
  d = LeastLoadedByBlocks{}(
      groups,
      {.max_total_tokens = 160, .cached_blocks = {}, .needs_priority = false, .held = hold_a_b});
  EXPECT_EQ(d.outcome, PlacementOutcome::kWait);
  EXPECT_EQ(std::vector<size_t>(d.wait_groups.begin(), d.wait_groups.end()),
            (std::vector<size_t>{0, 1, 2}))
      << "held a, b; c short of blocks";
  // Held or not, a request no group can hold is refused.
  d = LeastLoadedByBlocks{}(
      groups,
      {.max_total_tokens = 5000, .cached_blocks = {}, .needs_priority = false, .held = hold_a_b});
  EXPECT_EQ(d.outcome, PlacementOutcome::kNeverFits);
}

// A request no group can hold is told which limit it exceeds: every max_model_len, or the pool
// of the group least short of blocks. 4000 tokens are 250 blocks of 16 ("b" is 230 short, "c"
// 50) or 125 blocks of 32 ("d", 25 short: the closest, though "c" has the larger pool); "a"
// cannot take 4000 tokens at all, however large its pool.
TEST(PlacementTest, NeverFitsNamesTheLimitAndTheClosestPool) {
  GroupLoad a = Group("a", 1000, 1000);
  a.max_model_len = 2048;
  GroupLoad d = Group("d", 100, 100);
  d.block_size = 32;
  std::vector<GroupLoad> groups = {a, Group("b", 20, 20), Group("c", 200, 200), d};
  PlacementDecision decision =
      LeastLoadedByBlocks{}(groups, {.max_total_tokens = 5000, .cached_blocks = {}});
  EXPECT_EQ(decision.outcome, PlacementOutcome::kNeverFits);
  EXPECT_EQ(NeverFitsMessage(5000, decision),
            "prompt + max_tokens = 5000 tokens exceed every worker group's max_model_len "
            "(largest 4096)");
  decision = LeastLoadedByBlocks{}(groups, {.max_total_tokens = 4000, .cached_blocks = {}});
  EXPECT_EQ(decision.outcome, PlacementOutcome::kNeverFits);
  EXPECT_EQ(NeverFitsMessage(4000, decision),
            "prompt + max_tokens = 4000 tokens can never fit a worker group: they need 125 KV "
            "blocks of 32 tokens at most, the closest group's pool has 100 usable blocks "
            "(largest max_model_len 4096)");
  // Without "d", "c" is the closest.
  groups.pop_back();
  decision = LeastLoadedByBlocks{}(groups, {.max_total_tokens = 4000, .cached_blocks = {}});
  EXPECT_EQ(NeverFitsMessage(4000, decision),
            "prompt + max_tokens = 4000 tokens can never fit a worker group: they need 250 KV "
            "blocks of 16 tokens at most, the closest group's pool has 200 usable blocks "
            "(largest max_model_len 4096)");
}

// A request for a LoRA adapter goes only to groups serving it, even when another has more room;
// with none up it never fits, and the decision says why.
TEST(PlacementTest, AnAdapterNeedsAGroupThatServesIt) {
  GroupLoad base_only = Group("base", 100, 90);
  GroupLoad with_sql = Group("sql", 100, 20);
  with_sql.lora_adapters = {"chat", "sql"};
  const std::vector<GroupLoad> both = {base_only, with_sql};
  PlacementDecision d = LeastLoadedByBlocks{}(
      both, {.max_total_tokens = 160, .cached_blocks = {}, .lora_adapter = "sql"});
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(both[d.group].group, "sql");
  d = LeastLoadedByBlocks{}(both, {.max_total_tokens = 160, .cached_blocks = {}});
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(both[d.group].group, "base");  // the base model runs anywhere
  d = LeastLoadedByBlocks{}(
      both, {.max_total_tokens = 160, .cached_blocks = {}, .lora_adapter = "sql-v2"});
  EXPECT_EQ(d.outcome, PlacementOutcome::kNeverFits);
  EXPECT_TRUE(d.no_adapter_group);
  EXPECT_FALSE(d.no_priority_group);
  with_sql.free_blocks = 5;
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{base_only, with_sql},
                            {.max_total_tokens = 160, .cached_blocks = {}, .lora_adapter = "sql"});
  EXPECT_EQ(d.outcome, PlacementOutcome::kWait);
}

// An adapter no group up serves goes to a group that loads adapters on first use (even when
// another has more room); one a group serves goes there, and waits for it rather than being
// loaded elsewhere.
TEST(PlacementTest, AnAdapterNoGroupServesGoesToAGroupThatLoadsIt) {
  GroupLoad base_only = Group("base", 100, 90);
  GroupLoad resolver = Group("resolver", 100, 40);
  resolver.lora_resolver = true;
  GroupLoad with_sql = Group("sql", 100, 20);
  with_sql.lora_adapters = {"sql"};
  std::vector<GroupLoad> groups = {base_only, resolver, with_sql};
  const auto place = [&groups](std::string_view adapter) {
    return LeastLoadedByBlocks{}(
        groups, {.max_total_tokens = 160, .cached_blocks = {}, .lora_adapter = adapter});
  };
  PlacementDecision d = place("tuned");
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(groups[d.group].group, "resolver");
  d = place("sql");
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(groups[d.group].group, "sql");
  groups[2].free_blocks = 5;
  EXPECT_EQ(place("sql").outcome, PlacementOutcome::kWait);
  // Its only server down, the adapter goes to the group that loads it.
  groups[2].up = false;
  d = place("sql");
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(groups[d.group].group, "resolver");
  groups[1].up = false;
  d = place("tuned");
  EXPECT_EQ(d.outcome, PlacementOutcome::kNeverFits);
  EXPECT_TRUE(d.no_adapter_group);
}

// Of the groups that load adapters on first use, one with a LoRA slot open takes an adapter no
// group serves, even with fewer blocks left or a cached prefix elsewhere (the other would make
// it wait for a slot); with none open, or for an adapter a group serves, the score decides.
TEST(PlacementTest, AnAdapterNoGroupServesGoesWhereASlotIsOpen) {
  GroupLoad roomy = Group("roomy", 100, 90);
  roomy.lora_resolver = true;
  GroupLoad open = Group("open", 100, 30);
  open.lora_resolver = true;
  open.lora_slots_open = 1;
  std::vector<GroupLoad> groups = {roomy, open};
  const std::vector<int64_t> cached_on_roomy = {5, 0};
  const auto place = [&](std::string_view adapter) {
    const PlacementDecision d = LeastLoadedByBlocks{}(
        groups,
        {.max_total_tokens = 160, .cached_blocks = cached_on_roomy, .lora_adapter = adapter});
    EXPECT_EQ(d.outcome, PlacementOutcome::kPlaced);
    return groups[d.group].group;
  };
  EXPECT_EQ(place("tuned"), "open");
  EXPECT_EQ(place(""), "roomy");  // the base model: blocks and prefix
  groups[1].lora_slots_open = 0;
  EXPECT_EQ(place("tuned"), "roomy");
  // Served by both: no slot is needed, the score decides.
  groups[0].lora_adapters = groups[1].lora_adapters = {"tuned"};
  groups[1].lora_slots_open = 2;
  EXPECT_EQ(place("tuned"), "roomy");
}

// A request with a priority goes only to groups that schedule by priority, even when another has
// more room; with none up it never fits, and the decision says why.
TEST(PlacementTest, APriorityNeedsAGroupThatSchedulesByPriority) {
  GroupLoad fcfs = Group("fcfs", 100, 90);
  GroupLoad priority = Group("priority", 100, 20);
  priority.priority_scheduling = true;
  const std::vector<GroupLoad> both = {fcfs, priority};
  PlacementDecision d = LeastLoadedByBlocks{}(
      both, {.max_total_tokens = 160, .cached_blocks = {}, .needs_priority = true});
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(both[d.group].group, "priority");
  d = LeastLoadedByBlocks{}(both, {.max_total_tokens = 160, .cached_blocks = {}});
  ASSERT_EQ(d.outcome, PlacementOutcome::kPlaced);
  EXPECT_EQ(both[d.group].group, "fcfs");  // no priority: the roomier group, as before
  // The priority group is full: wait for it, not for the fcfs one.
  priority.free_blocks = 5;
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{fcfs, priority},
                            {.max_total_tokens = 160, .cached_blocks = {}, .needs_priority = true});
  EXPECT_EQ(d.outcome, PlacementOutcome::kWait);
  d = LeastLoadedByBlocks{}(std::vector<GroupLoad>{fcfs},
                            {.max_total_tokens = 160, .cached_blocks = {}, .needs_priority = true});
  EXPECT_EQ(d.outcome, PlacementOutcome::kNeverFits);
  EXPECT_TRUE(d.no_priority_group);
  d = LeastLoadedByBlocks{}(
      std::vector<GroupLoad>{priority},
      {.max_total_tokens = 5000, .cached_blocks = {}, .needs_priority = true});
  EXPECT_EQ(d.outcome, PlacementOutcome::kNeverFits);
  EXPECT_FALSE(d.no_priority_group);  // it does schedule by priority; the request is too long
}

// The name of the group `policy` places a 160-token request (10 blocks) on, or "" if none.
std::string PlacedOn(const LeastLoadedByBlocks& policy, const std::vector<GroupLoad>& groups,
                     const std::vector<int64_t>& cached) {
  const PlacementDecision d = policy(groups, {.max_total_tokens = 160, .cached_blocks = cached});
  return d.outcome == PlacementOutcome::kPlaced ? groups[d.group].group : "";
}

TEST(PlacementTest, ACachedPrefixWinsUnlessItsGroupIsBusierByMoreThanItSaves) {
  const LeastLoadedByBlocks policy;  // weight 1: a cached block is worth one free block
  // Equal load: the group holding 3 blocks of the prompt takes it.
  EXPECT_EQ(PlacedOn(policy, {Group("a", 100, 50), Group("b", 100, 50)}, {0, 3}), "b");
  // b has 2 blocks fewer left but saves 3: b. With 4 fewer it is busier than the prefix saves: a.
  EXPECT_EQ(PlacedOn(policy, {Group("a", 100, 60), Group("b", 100, 58)}, {0, 3}), "b");
  EXPECT_EQ(PlacedOn(policy, {Group("a", 100, 60), Group("b", 100, 56)}, {0, 3}), "a");
  // The longer prefix wins between two groups that hold one.
  EXPECT_EQ(PlacedOn(policy, {Group("a", 100, 50), Group("b", 100, 50)}, {5, 2}), "a");
  // No cached blocks anywhere (or none given): most blocks left, as without affinity.
  EXPECT_EQ(PlacedOn(policy, {Group("a", 100, 50), Group("b", 100, 51)}, {}), "b");
  // A heavier weight lets the prefix outweigh more imbalance: 50 + 4 x 3 > 61.
  EXPECT_EQ(PlacedOn(LeastLoadedByBlocks(4.0), {Group("a", 100, 61), Group("b", 100, 50)}, {0, 3}),
            "b");
  // Weight 0 turns affinity off.
  EXPECT_EQ(PlacedOn(LeastLoadedByBlocks(0.0), {Group("a", 100, 51), Group("b", 100, 50)}, {0, 9}),
            "a");
}

TEST(PlacementTest, AffinityNeverOverridesTheFit) {
  const LeastLoadedByBlocks policy(1000.0);
  // b holds the whole prompt but has 9 of the 10 blocks the request needs: a takes it.
  EXPECT_EQ(PlacedOn(policy, {Group("a", 100, 10), Group("b", 100, 9)}, {0, 9}), "a");
  // Nothing else fits: it waits rather than overfill b.
  const std::vector<GroupLoad> only_b = {Group("b", 100, 9)};
  const std::vector<int64_t> cached = {9};
  EXPECT_EQ(policy(only_b, {.max_total_tokens = 160, .cached_blocks = cached}).outcome,
            PlacementOutcome::kWait);
  // Down and draining groups stay skipped whatever they hold.
  GroupLoad down = Group("down", 100, 100);
  down.up = false;
  EXPECT_EQ(PlacedOn(policy, {down, Group("c", 100, 20)}, {9, 0}), "c");
}

}  // namespace
}  // namespace headroom::router
