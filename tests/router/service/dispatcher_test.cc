// Dispatcher with groups that come and go (SetGroups): real dispatch thread, reports posted by
// hand as the GroupMonitor would.
#include "router/service/dispatcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "kvcache/block_hash.h"
#include "load_report.h"

namespace headroom::router {
namespace {

class Listener : public PlacementListener {
 public:
  void OnPlaced(size_t group) override {
    std::lock_guard<std::mutex> lock(mu_);
    placed_ = group;
    cv_.notify_all();
  }
  void OnRejected(const absl::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    rejected_ = status;
    cv_.notify_all();
  }
  void OnGroupLost(size_t group, absl::Duration silence) override {
    std::lock_guard<std::mutex> lock(mu_);
    lost_.emplace_back(group, silence);
    cv_.notify_all();
  }
  // The OnGroupLost calls so far, after waiting up to `timeout` for at least `count`.
  std::vector<std::pair<size_t, absl::Duration>> Lost(size_t count,
                                                      std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return lost_.size() >= count; });
    return lost_;
  }
  // The group it was placed on, once decided within `timeout` (nullopt: not placed).
  std::optional<size_t> Placed(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return placed_.has_value() || rejected_.has_value(); });
    EXPECT_FALSE(rejected_.has_value()) << *rejected_;
    return placed_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<size_t> placed_;
  std::optional<absl::Status> rejected_;
  std::vector<std::pair<size_t, absl::Duration>> lost_;
};

DispatcherOptions Options(std::vector<std::string> groups) {
  DispatcherOptions options;
  options.groups = std::move(groups);
  options.admission.high_watermark = 8;
  options.admission.low_watermark = 6;
  options.stale_after = absl::Seconds(30);  // no staleness in these tests
  options.tick = absl::Milliseconds(10);
  return options;
}

std::vector<std::string> Addresses(const v1::ClusterState& state) {
  std::vector<std::string> out;
  for (const v1::GroupState& g : state.groups()) out.push_back(g.address());
  return out;
}

TEST(DispatcherSetGroupsTest, QueuedRequestGoesToTheRemainingGroupAndARemovedOneComesBack) {
  Dispatcher dispatcher(Options({"a:1", "b:2"}));
  dispatcher.Start();
  dispatcher.OnReport(0, Report(1, 2));  // a is up but full for a 64-token (4-block) request
  auto queued = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher.Submit(1, 64, absl::Now() + absl::Seconds(30), queued).status.ok());
  EXPECT_FALSE(queued->Placed(std::chrono::milliseconds(100)).has_value());  // waits for room

  // a leaves; b joins the table's view only once it reports.
  std::vector<GroupSlot> slots = dispatcher.SetGroups({"b:2"});
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_FALSE(slots[0].current);
  EXPECT_TRUE(slots[1].current);
  dispatcher.OnReport(0, Report(2, 100));  // a late report of a: must not place on it
  EXPECT_FALSE(queued->Placed(std::chrono::milliseconds(100)).has_value());
  dispatcher.OnReport(1, Report(1, 100));
  EXPECT_EQ(queued->Placed(std::chrono::seconds(5)), std::optional<size_t>(1));
  EXPECT_EQ(Addresses(dispatcher.Snapshot()), std::vector<std::string>{"b:2"});

  // b leaves while request 1 streams from it: it stays in flight until it finishes.
  slots = dispatcher.SetGroups({"a:1"});  // a comes back: its old slot 0
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].address, "a:1");
  EXPECT_TRUE(slots[0].current);
  EXPECT_FALSE(slots[1].current);
  EXPECT_FALSE(dispatcher.any_up());  // a is down until it reports again
  EXPECT_EQ(dispatcher.Snapshot().in_flight(), 1);
  dispatcher.Finished(1);
  EXPECT_EQ(dispatcher.Snapshot().in_flight(), 0);

  dispatcher.OnReport(0, Report(3, 100));
  auto next = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher.Submit(2, 64, absl::Now() + absl::Seconds(30), next).status.ok());
  EXPECT_EQ(next->Placed(std::chrono::seconds(5)), std::optional<size_t>(0));
  const v1::ClusterState state = dispatcher.Snapshot();
  EXPECT_EQ(Addresses(state), std::vector<std::string>{"a:1"});
  ASSERT_EQ(state.groups_size(), 1);
  EXPECT_TRUE(state.groups(0).healthy());
  dispatcher.Stop();
}

// A run-time unload is settled by a report that no longer lists the adapter, or by the report the
// worker's answer named even if it lists the adapter again (a resolving group loaded it again for
// a request): waiting for the adapter to be gone would then time out though the unload was done.
TEST(DispatcherLoraTest, AnUnloadIsSettledByTheReportItsAnswerNamed) {
  Dispatcher dispatcher(Options({"a:1", "b:2"}));
  const auto serving = [](uint64_t sequence, bool lists) {
    v1::LoadReport r = Report(sequence, 100);
    r.set_lora_resolver(true);
    if (lists) r.add_lora_adapters()->set_name("x");
    return r;
  };
  dispatcher.OnReport(0, serving(4, true));
  dispatcher.OnReport(1, serving(9, true));
  const auto settles = [&](std::vector<LoraChange> changed) {
    return dispatcher.AwaitLoraReports(changed, "x", /*served=*/false,
                                       absl::Now() + absl::Milliseconds(50));
  };
  EXPECT_FALSE(settles({{.group = 0, .report_sequence = 5}}));
  dispatcher.OnReport(0, serving(5, true));  // after the unload, loaded again
  EXPECT_TRUE(settles({{.group = 0, .report_sequence = 5}}));
  // b named no report (an older worker): only the adapter gone settles it.
  EXPECT_FALSE(settles({{.group = 0, .report_sequence = 5}, {.group = 1, .report_sequence = 0}}));
  dispatcher.OnReport(1, serving(10, false));
  EXPECT_TRUE(settles({{.group = 0, .report_sequence = 5}, {.group = 1, .report_sequence = 0}}));
}

// A group that sends no report for silence_timeout is lost: each request placed there and not
// finished is told, once per silence; requests on a group that keeps reporting, and finished
// ones, are not. A report and a new silence tell again.
TEST(DispatcherSilenceTest, RequestsOnAGroupSilentPastTheTimeoutAreToldOncePerSilence) {
  DispatcherOptions options = Options({"a:1", "b:2"});
  options.silence_timeout = absl::Milliseconds(600);
  Dispatcher dispatcher(options);
  dispatcher.Start();
  dispatcher.OnReport(0, Report(1, 100));
  dispatcher.OnReport(1, Report(1, 2));  // b has no room: the first requests go to a
  auto on_a = std::make_shared<Listener>();
  auto finished = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher.Submit(1, 64, absl::Now() + absl::Seconds(30), on_a).status.ok());
  ASSERT_TRUE(dispatcher.Submit(2, 64, absl::Now() + absl::Seconds(30), finished).status.ok());
  ASSERT_EQ(on_a->Placed(std::chrono::seconds(5)), std::optional<size_t>(0));
  ASSERT_EQ(finished->Placed(std::chrono::seconds(5)), std::optional<size_t>(0));
  dispatcher.Finished(2);
  uint64_t b_sequence = 2;
  dispatcher.OnReport(1, Report(b_sequence++, 100));
  auto on_b = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher.Submit(3, 64, absl::Now() + absl::Seconds(30), on_b).status.ok());
  ASSERT_EQ(on_b->Placed(std::chrono::seconds(5)), std::optional<size_t>(1));

  // b keeps reporting every 50 ms; a says nothing.
  const auto report_b_for = [&](std::chrono::milliseconds span) {
    for (const auto end = std::chrono::steady_clock::now() + span;
         std::chrono::steady_clock::now() < end;) {
      dispatcher.OnReport(1, Report(b_sequence++, 96));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  report_b_for(std::chrono::milliseconds(1500));
  const auto lost = on_a->Lost(1, std::chrono::milliseconds(0));
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].first, 0u);
  EXPECT_EQ(lost[0].second, absl::Milliseconds(600));
  EXPECT_TRUE(finished->Lost(1, std::chrono::milliseconds(0)).empty());
  EXPECT_TRUE(on_b->Lost(1, std::chrono::milliseconds(0)).empty());

  dispatcher.OnReport(0, Report(2, 92));  // a speaks again, then falls silent again
  report_b_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(on_a->Lost(2, std::chrono::milliseconds(0)).size(), 2u);
  EXPECT_TRUE(on_b->Lost(1, std::chrono::milliseconds(0)).empty());
  dispatcher.Stop();
}

// A request with a priority waits for the only group that schedules by priority (full); a plain
// request queued after it goes to the other group meanwhile rather than waiting behind it.
TEST(DispatcherQueueTest, APriorityRequestWaitingForItsGroupDoesNotHoldBackTheOthers) {
  Dispatcher dispatcher(Options({"priority:1", "fcfs:2"}));
  dispatcher.Start();
  v1::LoadReport priority = Report(1, 2);
  priority.set_priority_scheduling(true);
  dispatcher.OnReport(0, priority);
  dispatcher.OnReport(1, Report(1, 100));
  auto waiting = std::make_shared<Listener>();
  ASSERT_TRUE(
      dispatcher.Submit(1, 64, absl::Now() + absl::Seconds(30), waiting, {}, -1).status.ok());
  auto plain = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher.Submit(2, 64, absl::Now() + absl::Seconds(30), plain).status.ok());
  EXPECT_EQ(plain->Placed(std::chrono::seconds(5)), std::optional<size_t>(1));
  EXPECT_FALSE(waiting->Placed(std::chrono::milliseconds(100)).has_value());
  priority.set_sequence(2);
  priority.set_free_blocks(100);
  dispatcher.OnReport(0, priority);
  EXPECT_EQ(waiting->Placed(std::chrono::seconds(5)), std::optional<size_t>(0));
  dispatcher.Stop();
}

// Two groups whose model attends 32 positions (blocks of 16): a conversation of 8 blocks and a
// token whose first 5 blocks group 0 evicted is still a hit of 8 blocks there (its next token reads
// only blocks 6 and 7), so affinity sends it to group 0 over the freer group 1. Counting only the
// leading cached blocks would see nothing there and pick group 1.
TEST(DispatcherQueueTest, AffinityCountsAWindowedGroupsBlocksInsideTheWindow) {
  DispatcherOptions options = Options({"evicted-head:1", "empty:2"});
  options.prefix_affinity_weight = 10;
  Dispatcher dispatcher(options);
  dispatcher.Start();
  std::vector<int32_t> prompt(8 * 16 + 1);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i * 7 % 251);
  const std::vector<kvcache::BlockHash> hashes = kvcache::PromptBlockHashes(prompt, 16, "");
  ASSERT_EQ(hashes.size(), 8u);
  const auto windowed = [](uint64_t sequence, int32_t free_blocks) {
    v1::LoadReport r = Report(sequence, free_blocks);
    r.set_sliding_window(32);
    r.add_kv_group_windows(32);
    r.set_max_num_batched_tokens(64);
    return r;
  };
  v1::LoadReport cached = windowed(1, 80);
  cached.mutable_prefix_cache()->set_reset(true);
  cached.mutable_prefix_cache()->set_added(
      kvcache::PackBlockHashes(absl::MakeConstSpan(hashes).subspan(5)));
  dispatcher.OnReport(0, cached);
  dispatcher.OnReport(1, windowed(1, 100));
  auto listener = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher
                  .Submit(1, static_cast<int64_t>(prompt.size()) + 16,
                          absl::Now() + absl::Seconds(30), listener,
                          {.tokens = prompt, .cache_salt = "", .lora_adapter = ""})
                  .status.ok());
  EXPECT_EQ(listener->Placed(std::chrono::seconds(5)), std::optional<size_t>(0));
  dispatcher.Stop();
}

// A LoRA adapter's request: each group's cached blocks are matched by hashing the prompt under
// the cache key that group reports for the adapter (a hash of its files), as its workers key
// them, not under the adapter's name or as the base model's. Group 0 holds the prompt's blocks
// under its key and wins over the freer group 1; group 2 has them cached for the base model only.
TEST(DispatcherQueueTest, AffinityHashesAnAdaptersPromptUnderTheKeyEachGroupReports) {
  DispatcherOptions options = Options({"adapter-cached:1", "empty:2", "base-cached:3"});
  options.prefix_affinity_weight = 10;
  Dispatcher dispatcher(options);
  dispatcher.Start();
  std::vector<int32_t> prompt(4 * 16 + 1);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i * 5 % 251);
  const auto serving = [](uint64_t sequence, int32_t free_blocks, const std::string& key,
                          const std::vector<kvcache::BlockHash>& cached) {
    v1::LoadReport r = Report(sequence, free_blocks);
    v1::LoraAdapter* sql = r.add_lora_adapters();
    sql->set_name("sql");
    sql->set_cache_key(key);
    r.mutable_prefix_cache()->set_reset(true);
    r.mutable_prefix_cache()->set_added(kvcache::PackBlockHashes(cached));
    return r;
  };
  const std::string key = "lora:0123456789abcdef0123456789abcdef";
  dispatcher.OnReport(0, serving(1, 80, key, kvcache::PromptBlockHashes(prompt, 16, "", key)));
  dispatcher.OnReport(1, serving(1, 100, key, {}));
  dispatcher.OnReport(2, serving(1, 90, key, kvcache::PromptBlockHashes(prompt, 16, "")));
  auto listener = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher
                  .Submit(1, static_cast<int64_t>(prompt.size()) + 16,
                          absl::Now() + absl::Seconds(30), listener,
                          {.tokens = prompt, .cache_salt = "", .lora_adapter = "sql"})
                  .status.ok());
  EXPECT_EQ(listener->Placed(std::chrono::seconds(5)), std::optional<size_t>(0));
  // The base model's request finds its blocks on group 2.
  auto base = std::make_shared<Listener>();
  ASSERT_TRUE(dispatcher
                  .Submit(2, static_cast<int64_t>(prompt.size()) + 16,
                          absl::Now() + absl::Seconds(30), base,
                          {.tokens = prompt, .cache_salt = "", .lora_adapter = ""})
                  .status.ok());
  EXPECT_EQ(base->Placed(std::chrono::seconds(5)), std::optional<size_t>(2));
  dispatcher.Stop();
}

TEST(DispatcherSetGroupsTest, StartsEmptyAndRefusesUntilAGroupIsListedAndReports) {
  Dispatcher dispatcher(Options({}));
  dispatcher.Start();
  auto listener = std::make_shared<Listener>();
  EXPECT_EQ(dispatcher.Submit(1, 64, absl::Now() + absl::Seconds(30), listener).status.code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(dispatcher.Snapshot().groups_size(), 0);
  dispatcher.SetGroups({"a:1"});
  dispatcher.OnReport(0, Report(1, 100));
  ASSERT_TRUE(dispatcher.Submit(2, 64, absl::Now() + absl::Seconds(30), listener).status.ok());
  EXPECT_EQ(listener->Placed(std::chrono::seconds(5)), std::optional<size_t>(0));
  dispatcher.SetGroups({});
  EXPECT_FALSE(dispatcher.any_up());
  EXPECT_EQ(dispatcher.Snapshot().groups_size(), 0);
  dispatcher.Stop();
}

}  // namespace
}  // namespace headroom::router
