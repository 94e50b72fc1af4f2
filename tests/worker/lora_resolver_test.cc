// Adapters loaded on first use from a directory (EngineOptions::lora_resolver_dir: vLLM's
// lora_filesystem_resolver), against PEFT on the committed fixtures:
//   - a request naming an adapter not served loads <dir>/<name> and gets PEFT's tokens, without
//     allocating device memory;
//   - with every slot taken, the least recently requested idle adapter loaded this way gives way;
//     with none idle, the request waits until one's requests finish (and that adapter's new
//     requests wait behind it); one loaded explicitly never gives way;
//   - in a tensor-parallel group the followers load their shards too;
//   - a name that is not there, or not a plain name, or an adapter that does not fit, is refused
//     saying why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine_thread_hold.h"
#include "fixture_model.h"
#include "lora_runtime_helpers.h"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"
#include "worker/engine/engine_loop.h"

namespace headroom::worker {
namespace {

namespace fs = std::filesystem;
using testing::AdapterPrompts;
using testing::ExpectPrompt3Of;
using testing::ExpectRefused;
using testing::Greedy;
using testing::kBase;
using testing::LongPromptRequest;
using testing::ReservedEngine;
using testing::ReservedOptions;
using testing::RunSteps;
using testing::Served;

// A resolver directory whose entries are the PEFT fixtures under other names: "sql" and "sql2"
// (llama-gqa-all, rank 8), "rs" (llama-gqa-rslora, rank 4), "phi" (an adapter for another model).
class ResolverDir {
 public:
  explicit ResolverDir(const std::string& test)
      : dir_(fs::temp_directory_path() /
             absl::StrCat("headroom_resolver_", ::getpid(), "_", test)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const fs::path fixtures = testdata::FixtureDir("lora");
    fs::create_directory_symlink(fixtures / "llama-gqa-all", dir_ / "sql");
    fs::create_directory_symlink(fixtures / "llama-gqa-all", dir_ / "sql2");
    fs::create_directory_symlink(fixtures / "llama-gqa-rslora", dir_ / "rs");
    fs::create_directory_symlink(fixtures / "phi3-fused-all", dir_ / "phi");
    fs::create_directories(dir_ / "empty");
  }
  ResolverDir(const ResolverDir&) = delete;
  ResolverDir& operator=(const ResolverDir&) = delete;
  ~ResolverDir() { fs::remove_all(dir_); }

  [[nodiscard]] std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

EngineOptions ResolverOptions(int32_t slots, const ResolverDir& dir) {
  EngineOptions options = ReservedOptions(slots, 8);
  options.lora_resolver_dir = dir.path();
  return options;
}

TEST(LoraResolverTest, ARequestLoadsItsAdapterFromTheDirectoryAndGetsPeftsTokens) {
  const ResolverDir dir("first_use");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(2, dir), &backend);
  ASSERT_NE(engine, nullptr);
  const int64_t allocations = engine->Stats().device_allocations;
  EXPECT_TRUE(Served(*engine).empty());
  EXPECT_EQ(testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-all"), Greedy(*engine, "sql")),
            0);
  EXPECT_EQ(testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), Greedy(*engine, "rs")),
            0);
  EXPECT_EQ(Served(*engine), (std::vector<std::string>{"sql", "rs"}));
  EXPECT_EQ(engine->Stats().lora_adapters->at(0).path, dir.path() + "/sql");
  EXPECT_EQ(engine->Stats().device_allocations, allocations);
}

// Two slots: "sql" then "rs" load; "sql" is asked for again, so the third adapter takes the slot
// of "rs", the least recently requested.
TEST(LoraResolverTest, TheLeastRecentlyRequestedIdleAdapterGivesWay) {
  const ResolverDir dir("lru");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(2, dir), &backend);
  ASSERT_NE(engine, nullptr);
  std::vector<StepToken> out;
  int64_t id = 0;
  for (const char* name : {"sql", "rs", "sql"}) {
    ASSERT_TRUE(engine->AddRequest(LongPromptRequest(++id, name)).ok());
    RunSteps(*engine, /*whole=*/true, out);
  }
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(100, "sql2")).ok());
  EXPECT_EQ(Served(*engine), (std::vector<std::string>{"sql", "sql2"}));
  out.clear();
  RunSteps(*engine, /*whole=*/true, out);
  ExpectPrompt3Of("llama-gqa-all", out);
  // "rs" loads again when asked for, in the slot of "sql" (now the least recently requested).
  out.clear();
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(101, "rs")).ok());
  EXPECT_EQ(Served(*engine), (std::vector<std::string>{"rs", "sql2"}));
  RunSteps(*engine, /*whole=*/true, out);
  ExpectPrompt3Of("llama-gqa-rslora", out);
}

// Runs `engine` until it is idle: each request's tokens, and the step that gave its first and its
// last.
struct Steps {
  std::map<int64_t, std::vector<StepToken>> tokens;
  std::map<int64_t, int> first_step;
  std::map<int64_t, int> last_step;
};
Steps RunToIdle(Engine& engine) {
  Steps run;
  for (int step = 0; engine.HasWork(); ++step) {
    auto tokens = engine.Step();
    EXPECT_TRUE(tokens.ok()) << tokens.status();
    if (!tokens.ok()) break;
    for (StepToken& t : *tokens) {
      const int64_t id = t.id.value();
      run.first_step.try_emplace(id, step);
      run.last_step[id] = step;
      run.tokens[id].push_back(std::move(t));
    }
  }
  return run;
}

// Steps `engine` until a request finishes, appending the tokens to `out`.
void StepUntilARequestFinishes(Engine& engine, std::vector<StepToken>& out) {
  do {
    RunSteps(engine, /*whole=*/false, out);
  } while (!::testing::Test::HasFatalFailure() &&
           (out.empty() || out.back().finish == FinishReason::kNone));
}

// One slot, "rs" running: a request for "sql" waits (counted as waiting) instead of being
// refused, and a later "rs" request waits behind it (rs gives way), so "sql" is not starved.
// Each gets PEFT's tokens; nothing allocates device memory.
TEST(LoraResolverTest, ARequestFindingEverySlotInUseWaitsForOne) {
  const ResolverDir dir("wait");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(1, dir), &backend);
  ASSERT_NE(engine, nullptr);
  const int64_t allocations = engine->Stats().device_allocations;
  EXPECT_EQ(engine->Stats().lora_slots_open, 1);
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(1, "rs")).ok());
  std::vector<StepToken> first;
  RunSteps(*engine, /*whole=*/false, first);
  EXPECT_EQ(engine->Stats().lora_slots_open, 0);  // rs is in use
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(2, "sql")).ok());
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(3, "rs")).ok());
  const EngineStats waiting = engine->Stats();
  EXPECT_EQ(waiting.lora_slot_waiting, 2);
  EXPECT_EQ(waiting.scheduler.num_waiting, 2);
  EXPECT_EQ(waiting.scheduler.num_running, 1);
  // Both prompts' blocks (61 tokens in blocks of 4), as the router reads the demand.
  EXPECT_EQ(waiting.scheduler.waiting_demand_blocks, 2 * 16);
  EXPECT_EQ(Served(*engine), std::vector<std::string>{"rs"});

  Steps run = RunToIdle(*engine);
  run.tokens[1].insert(run.tokens[1].begin(), first.begin(), first.end());
  ExpectPrompt3Of("llama-gqa-rslora", run.tokens[1]);
  ExpectPrompt3Of("llama-gqa-all", run.tokens[2]);
  ExpectPrompt3Of("llama-gqa-rslora", run.tokens[3]);
  // In turn: sql once rs's request finished, the second rs once sql's had.
  EXPECT_GT(run.first_step[2], run.last_step[1]);
  EXPECT_GT(run.first_step[3], run.last_step[2]);
  EXPECT_TRUE(engine->TakeRefused().empty());
  EXPECT_EQ(engine->Stats().lora_slot_waiting, 0);
  EXPECT_EQ(engine->Stats().lora_slots_open, 1);  // rs, idle, would give way
  EXPECT_EQ(engine->Stats().device_allocations, allocations);
}

// A slot that frees between steps goes to the request waiting for one, not to a request for
// another adapter that arrives before the next step.
TEST(LoraResolverTest, AFreedSlotGoesToTheRequestWaitingLongest) {
  const ResolverDir dir("fifo");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(1, dir), &backend);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(1, "rs")).ok());
  std::vector<StepToken> out;
  RunSteps(*engine, /*whole=*/false, out);
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(2, "sql")).ok());
  StepUntilARequestFinishes(*engine, out);
  ASSERT_EQ(out.back().id, RequestId{1});
  EXPECT_EQ(engine->Stats().lora_slots_open, 0);  // rs is idle, but sql waits for its slot
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(3, "sql2")).ok());
  EXPECT_EQ(engine->Stats().lora_slot_waiting, 2);
  Steps run = RunToIdle(*engine);
  ExpectPrompt3Of("llama-gqa-all", run.tokens[2]);
  ExpectPrompt3Of("llama-gqa-all", run.tokens[3]);
  EXPECT_GT(run.first_step[3], run.last_step[2]);
}

// A waiting request can be aborted, and one whose turn comes is refused (TakeRefused) when its
// adapter does not load or an explicit load has taken the slot meanwhile.
TEST(LoraResolverTest, AWaitingRequestIsAbortedOrRefusedWhenItsTurnComes) {
  const ResolverDir dir("wait_refused");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(1, dir), &backend);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(1, "rs")).ok());
  std::vector<StepToken> out;
  RunSteps(*engine, /*whole=*/false, out);
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(2, "sql")).ok());
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(3, "phi")).ok());  // another model's
  ExpectRefused(engine->AddRequest(LongPromptRequest(2, "sql2")), absl::StatusCode::kAlreadyExists,
                "request 2 exists");
  EXPECT_TRUE(engine->Abort(RequestId{2}));
  EXPECT_EQ(engine->Stats().lora_slot_waiting, 1);
  Steps run = RunToIdle(*engine);
  EXPECT_FALSE(run.tokens.contains(2));
  EXPECT_FALSE(run.tokens.contains(3));
  std::vector<std::pair<RequestId, absl::Status>> refused = engine->TakeRefused();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].first, RequestId{3});
  ExpectRefused(refused[0].second, absl::StatusCode::kInvalidArgument,
                "LoRA adapter \"phi\" was found");

  // An explicit load between the step that finishes "rs" and the next takes the slot "sql" waits
  // for: "sql" is refused when its turn comes.
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(4, "rs")).ok());
  RunSteps(*engine, /*whole=*/false, out);
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(5, "sql")).ok());
  out.clear();
  StepUntilARequestFinishes(*engine, out);
  EXPECT_EQ(out.back().id, RequestId{4});
  EXPECT_EQ(engine->Stats().lora_slot_waiting, 1);
  ASSERT_TRUE(engine->LoadLora(testing::Spec("pinned", "llama-gqa-all")).ok());
  RunSteps(*engine, /*whole=*/true, out);
  refused = engine->TakeRefused();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].first, RequestId{5});
  ExpectRefused(refused[0].second, absl::StatusCode::kResourceExhausted, "serving pinned.");
  EXPECT_FALSE(engine->HasWork());
}

// Through the engine loop: a request that waited for a slot gets its tokens, one refused when
// its turn comes gets the refusal, each through its callback.
TEST(LoraResolverTest, TheLoopAnswersWaitingRequestsWithTokensOrTheirRefusal) {
  const ResolverDir dir("loop");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(1, dir), &backend);
  ASSERT_NE(engine, nullptr);
  struct Answer {
    std::vector<StepToken> tokens;
    absl::Status status;
    std::promise<void> done;
  };
  std::map<int64_t, Answer> answers;
  for (const int64_t id : {1, 2, 3}) answers[id];
  EngineLoop loop(std::move(engine));
  // The engine thread is held until all three are in, so "rs" (first) takes the slot and the
  // others wait: "phi" (another model's adapter, which cannot load) and "sql".
  testing::EngineThreadHold hold(loop);
  int64_t id = 0;
  for (const char* name : {"rs", "phi", "sql"}) {
    Answer& answer = answers[++id];
    loop.Submit(LongPromptRequest(id, name), [&answer](const absl::StatusOr<StepToken>& event) {
      if (!event.ok()) {
        answer.status = event.status();
        answer.done.set_value();
        return;
      }
      answer.tokens.push_back(*event);
      if (event->finish != FinishReason::kNone) answer.done.set_value();
    });
  }
  hold.Release();
  for (auto& [request, answer] : answers) {
    ASSERT_EQ(answer.done.get_future().wait_for(std::chrono::seconds(60)),
              std::future_status::ready)
        << "request " << request << " was never answered";
  }
  EXPECT_TRUE(answers[1].status.ok()) << answers[1].status;
  ExpectPrompt3Of("llama-gqa-rslora", answers[1].tokens);
  ExpectRefused(answers[2].status, absl::StatusCode::kInvalidArgument,
                "LoRA adapter \"phi\" was found");
  EXPECT_TRUE(answers[2].tokens.empty());
  EXPECT_TRUE(answers[3].status.ok()) << answers[3].status;
  ExpectPrompt3Of("llama-gqa-all", answers[3].tokens);
  EXPECT_EQ(loop.Stats().lora_slot_waiting, 0);
}

// Adapters loaded explicitly keep their slots: a request finding every slot held by one is
// refused at once (it would wait forever), and an explicit load takes an idle resolved
// adapter's slot.
TEST(LoraResolverTest, AnAdapterLoadedExplicitlyNeverGivesWay) {
  const ResolverDir dir("pinned");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(1, dir), &backend);
  ASSERT_NE(engine, nullptr);
  std::vector<StepToken> out;
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(1, "rs")).ok());
  RunSteps(*engine, /*whole=*/true, out);
  EXPECT_EQ(engine->Stats().lora_slots_open, 1);
  ASSERT_TRUE(engine->LoadLora(testing::Spec("pinned", "llama-gqa-all")).ok());
  EXPECT_EQ(Served(*engine), std::vector<std::string>{"pinned"});
  EXPECT_EQ(engine->Stats().lora_slots_open, 0);
  ExpectRefused(
      engine->AddRequest(LongPromptRequest(2, "rs")), absl::StatusCode::kResourceExhausted,
      absl::StrCat("LoRA adapter \"rs\" was found (", dir.path(),
                   "/rs) but no slot can take it (adapters loaded at start or by "
                   "/v1/load_lora_adapter keep theirs): all 1 LoRA slots (--max-loras) are "
                   "taken: serving pinned."));
  EXPECT_FALSE(engine->HasWork());
}

TEST(LoraResolverTest, RefusalsSayWhy) {
  const ResolverDir dir("refusals");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(1, dir), &backend);
  ASSERT_NE(engine, nullptr);
  ExpectRefused(engine->AddRequest(LongPromptRequest(1, "nope")), absl::StatusCode::kNotFound,
                absl::StrCat("LoRA adapter \"nope\" does not exist: ", dir.path(),
                             "/nope/adapter_config.json is not a file (LoRA adapters: none)"));
  ExpectRefused(engine->AddRequest(LongPromptRequest(2, "empty")), absl::StatusCode::kNotFound,
                "/empty/adapter_config.json is not a file");
  // A name is never a path: ".." and "a/b" do not leave or descend the directory.
  for (const char* name : {"..", "../resolver/sql", "sql/."}) {
    ExpectRefused(engine->AddRequest(LongPromptRequest(3, name)), absl::StatusCode::kNotFound,
                  "its name is not a directory name under --lora-resolver-dir");
  }
  ExpectRefused(engine->AddRequest(LongPromptRequest(4, "phi")), absl::StatusCode::kInvalidArgument,
                absl::StrCat("LoRA adapter \"phi\" was found (", dir.path(),
                             "/phi) but could not be loaded: "));
  EXPECT_TRUE(Served(*engine).empty());
  // Resolving needs the slots of run-time loading.
  EngineOptions no_slots = ResolverOptions(0, dir);
  CpuBackend other(1);
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(kBase);
  ExpectRefused(Engine::Create(m.config, m.weights, no_slots, &other).status(),
                absl::StatusCode::kInvalidArgument, "give --allow-runtime-lora-updating too");
}

// A group of two: the leader resolves the adapter, the follower loads its shard from the path,
// also when a waiting request's adapter loads at the start of a step.
TEST(LoraResolverTest, AGroupResolvesOnEveryRank) {
  const ResolverDir dir("group");
  const EngineOptions options = ResolverOptions(1, dir);
  testing::GroupOfTwo group(options, options);
  ASSERT_NE(group.leader, nullptr);
  const auto out = Greedy(*group.leader, "rs");
  EXPECT_EQ(testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), out), 0);
  ASSERT_TRUE(group.leader->AddRequest(LongPromptRequest(1, "rs")).ok());
  std::vector<StepToken> first;
  RunSteps(*group.leader, /*whole=*/false, first);
  ASSERT_TRUE(group.leader->AddRequest(LongPromptRequest(2, "sql")).ok());
  EXPECT_EQ(group.leader->Stats().lora_slot_waiting, 1);
  Steps run = RunToIdle(*group.leader);
  group.Stop();
  ExpectPrompt3Of("llama-gqa-all", run.tokens[2]);
}

}  // namespace
}  // namespace headroom::worker
