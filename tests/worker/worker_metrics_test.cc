// WorkerMetrics against a real EngineLoop: the per-adapter gauges follow the adapters' names
// through run-time loads and unloads, whatever slots they sit in.
#include "worker/service/worker_metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"
#include "common/metrics.h"
#include "engine_thread_hold.h"
#include "fixture_model.h"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine_loop.h"
#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {
namespace {

constexpr const char* kModel = "m";
// The cache the engines below have (their 80 blocks of 16 tokens).
const CacheConfigInfo kCache = {.block_size = 16,
                                .cache_dtype = "float32",
                                .enable_prefix_caching = true,
                                .gpu_memory_utilization = 0.9,
                                .num_gpu_blocks = 80};

LoraModuleSpec Spec(const std::string& name, const std::string& fixture) {
  return {.name = name, .path = (testdata::FixtureDir("lora") / fixture).string()};
}

// Runs `op` on the loop's thread and returns its status.
absl::Status RunOnLoop(EngineLoop& loop, EngineLoop::EngineOp op) {
  std::promise<absl::Status> done;
  loop.Post(std::move(op), [&done](const absl::Status& status) { done.set_value(status); });
  return done.get_future().get();
}

std::string Sample(const std::string& series, const std::string& adapter, int value) {
  return series + "{lora_name=\"" + adapter + "\",model_name=\"" + kModel + "\"} " +
         std::to_string(value);
}

// The token lists structured output keeps, all constraints together (MaskBudget): what the
// process's caches hold, read at each scrape (no engine needed), and back to what it was once a
// cache lets its lists go.
TEST(WorkerMetricsTest, TheConstraintCacheGaugeIsWhatTheTokenListsKeep) {
  metrics::Registry registry;
  WorkerMetrics worker_metrics(&registry, kModel, 256, kCache);
  const std::string series =
      std::string("headroom:constraint_cache_bytes{model_name=\"") + kModel + "\"} ";
  const size_t before = MaskBudget::Default().used();
  size_t kept = 0;
  {
    TokenMaskCache<std::string> cache;
    cache.Get("state", [](std::vector<int32_t>* ids) { ids->assign({4, 8, 15, 16, 23, 42}); });
    kept = cache.bytes();
    ASSERT_GT(kept, 0u);
    EXPECT_NE(registry.Render().find(series + std::to_string(before + kept) + "\n"),
              std::string::npos)
        << registry.Render();
  }
  EXPECT_NE(registry.Render().find(series + std::to_string(before) + "\n"), std::string::npos);
}

// One sequence at a time, so the first request runs (its 250 tokens take hundreds of steps)
// while the others wait. The adapters end up as rs in slot 1 and sql2 in slot 2, sql unloaded
// from slot 0: neither sits at its index among the adapters served.
TEST(WorkerMetricsTest, LoraGaugesCountEachAdaptersRequestsByName) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  auto adapters = std::make_shared<std::vector<LoraAdapter>>();
  absl::StatusOr<LoraAdapter> sql =
      LoadLoraAdapter(m.config, Spec("sql", "llama-gqa-all"), kDefaultMaxLoraRank);
  ASSERT_TRUE(sql.ok()) << sql.status();
  adapters->push_back(*std::move(sql));
  CpuBackend backend(1);
  auto engine = Engine::Create(m.config, m.weights,
                               {.max_num_seqs = 1,
                                .max_num_batched_tokens = 64,
                                .max_model_len = 256,
                                .block_size = 16,
                                .num_kv_blocks = 80,
                                .lora_adapters = adapters,
                                .lora_slots = 3,
                                .max_lora_rank = 8},
                               &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  metrics::Registry registry;
  WorkerMetrics worker_metrics(&registry, kModel, 256, kCache, /*lora=*/true);
  const std::vector<std::string> order = {"rs", "sql2", "sql2", "", "rs", "rs", "rs"};
  // Before the loop: requests it cancels as it is destroyed still find theirs.
  std::vector<std::promise<void>> ended(order.size());
  EngineLoop loop(*std::move(engine));
  worker_metrics.SetLoop(&loop);
  ASSERT_TRUE(
      RunOnLoop(loop, [](Engine& e) { return e.LoadLora(Spec("rs", "llama-gqa-rslora")); }).ok());
  ASSERT_TRUE(
      RunOnLoop(loop, [](Engine& e) { return e.LoadLora(Spec("sql2", "llama-gqa-all")); }).ok());
  // Scraped while sql is served: its series exist from here on.
  EXPECT_NE(registry.Render().find(Sample("headroom:lora_requests_waiting", "sql", 0)),
            std::string::npos);
  ASSERT_TRUE(RunOnLoop(loop, [](Engine& e) { return e.UnloadLora("sql"); }).ok());

  for (size_t i = 0; i < order.size(); ++i) {
    Request r;
    r.id = RequestId{static_cast<int64_t>(i + 1)};
    r.prompt = {1, 2, 3, 4, 5};
    r.sampling.max_tokens = 250;
    r.sampling.ignore_eos = true;
    r.lora_name = order[i];
    loop.Submit(std::move(r), [&ended, i](const absl::StatusOr<StepToken>& event) {
      if (!event.ok() || event->finish != FinishReason::kNone) ended[i].set_value();
    });
  }
  // Once every request is in (the first running), hold the engine thread so the counts stand
  // still; whatever happens next, it is let go before the loop is destroyed.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (loop.Stats().scheduler.num_running + loop.Stats().scheduler.num_waiting < 7 &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Microseconds(100));
  }
  std::promise<void> held;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  absl::Cleanup let_go = [&release] { release.set_value(); };
  loop.Post(
      [&held, released](Engine&) {
        held.set_value();
        released.wait();
        return absl::OkStatus();
      },
      [](const absl::Status&) {});
  held.get_future().wait();
  const SchedulerStats stats = loop.Stats().scheduler;
  ASSERT_EQ(stats.num_running, 1);
  ASSERT_EQ(stats.num_waiting, 6) << "the first request finished before the engine was held";

  const std::string text = registry.Render();
  for (const std::string& sample : {Sample("headroom:lora_requests_running", "rs", 1),
                                    Sample("headroom:lora_requests_waiting", "rs", 3),
                                    Sample("headroom:lora_requests_running", "sql2", 0),
                                    Sample("headroom:lora_requests_waiting", "sql2", 2),
                                    Sample("headroom:lora_requests_running", "sql", 0),
                                    Sample("headroom:lora_requests_waiting", "sql", 0)}) {
    EXPECT_NE(text.find(sample + "\n"), std::string::npos) << sample << "\n" << text;
  }
  std::move(let_go).Invoke();
  for (size_t i = 0; i < order.size(); ++i) loop.Abort(RequestId{static_cast<int64_t>(i + 1)});
  for (std::promise<void>& end : ended) end.get_future().wait();
}

// One slot, adapters resolved from a directory: while "rs" runs, requests for "sql" and "sql2"
// wait for its slot, which the gauge (read on the engine thread, at rs's first token) counts.
TEST(WorkerMetricsTest, TheSlotWaitingGaugeCountsRequestsWaitingForALoraSlot) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("headroom_metrics_resolver_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  absl::Cleanup remove_dir = [&dir] { fs::remove_all(dir); };
  for (const char* name : {"rs", "sql", "sql2"}) {
    fs::create_directory_symlink(testdata::FixtureDir("lora") / "llama-gqa-all", dir / name);
  }
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  CpuBackend backend(1);
  auto engine = Engine::Create(m.config, m.weights,
                               {.max_num_seqs = 4,
                                .max_num_batched_tokens = 64,
                                .max_model_len = 256,
                                .block_size = 16,
                                .num_kv_blocks = 80,
                                .lora_slots = 1,
                                .max_lora_rank = 8,
                                .lora_resolver_dir = dir.string()},
                               &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  metrics::Registry registry;
  WorkerMetrics worker_metrics(&registry, kModel, 256, kCache, /*lora=*/true);
  std::string while_waiting;
  std::vector<std::promise<void>> ended(3);
  EngineLoop loop(*std::move(engine));
  worker_metrics.SetLoop(&loop);
  // Held until all three are in, so they are taken in one go, "rs" first.
  testing::EngineThreadHold hold(loop);
  int64_t id = 0;
  for (const char* name : {"rs", "sql", "sql2"}) {
    Request r;
    r.id = RequestId{++id};
    r.prompt = {1, 2, 3, 4, 5};
    r.sampling.max_tokens = 8;
    r.sampling.ignore_eos = true;
    r.lora_name = name;
    loop.Submit(std::move(r), [&, i = static_cast<size_t>(id - 1),
                               first = true](const absl::StatusOr<StepToken>& event) mutable {
      if (i == 0 && first) while_waiting = registry.Render();
      first = false;
      if (!event.ok() || event->finish != FinishReason::kNone) ended[i].set_value();
    });
  }
  hold.Release();
  for (std::promise<void>& end : ended) end.get_future().wait();
  const std::string waiting =
      std::string("headroom:lora_requests_waiting_for_slot{model_name=\"") + kModel + "\"} ";
  EXPECT_NE(while_waiting.find(waiting + "2\n"), std::string::npos) << while_waiting;
  EXPECT_NE(while_waiting.find(std::string("vllm:num_requests_waiting{model_name=\"") + kModel +
                               "\"} 2\n"),
            std::string::npos)
      << while_waiting;
  EXPECT_NE(registry.Render().find(waiting + "0\n"), std::string::npos);
}

}  // namespace
}  // namespace headroom::worker
