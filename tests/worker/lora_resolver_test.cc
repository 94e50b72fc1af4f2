// Adapters loaded on first use from a directory (EngineOptions::lora_resolver_dir: vLLM's
// lora_filesystem_resolver), against PEFT on the committed fixtures:
//   - a request naming an adapter not served loads <dir>/<name> and gets PEFT's tokens, without
//     allocating device memory;
//   - with every slot taken, the least recently requested idle adapter loaded this way gives way;
//     one with requests in flight, or one loaded explicitly, never does;
//   - in a tensor-parallel group the followers load their shards too;
//   - a name that is not there, or not a plain name, or an adapter that does not fit, is refused
//     saying why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fixture_model.h"
#include "lora_runtime_helpers.h"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"

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

// An adapter with a request in flight keeps its slot, and so does one loaded explicitly; an
// explicit load takes an idle resolved adapter's slot.
TEST(LoraResolverTest, AnAdapterInUseOrLoadedExplicitlyNeverGivesWay) {
  const ResolverDir dir("in_use");
  CpuBackend backend(1);
  auto engine = ReservedEngine(ResolverOptions(1, dir), &backend);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->AddRequest(LongPromptRequest(1, "rs")).ok());
  std::vector<StepToken> out;
  RunSteps(*engine, /*whole=*/false, out);
  ExpectRefused(engine->AddRequest(LongPromptRequest(2, "sql")),
                absl::StatusCode::kResourceExhausted,
                absl::StrCat("LoRA adapter \"sql\" was found (", dir.path(),
                             "/sql) but no slot can take it now: all 1 LoRA slots (--max-loras) "
                             "are taken: serving rs."));
  RunSteps(*engine, /*whole=*/true, out);
  ExpectPrompt3Of("llama-gqa-rslora", out);  // its slot was never overwritten

  ASSERT_TRUE(engine->LoadLora(testing::Spec("pinned", "llama-gqa-all")).ok());
  EXPECT_EQ(Served(*engine), std::vector<std::string>{"pinned"});
  ExpectRefused(engine->AddRequest(LongPromptRequest(3, "rs")),
                absl::StatusCode::kResourceExhausted, "serving pinned.");
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

// A group of two: the leader resolves the adapter, the follower loads its shard from the path.
TEST(LoraResolverTest, AGroupResolvesOnEveryRank) {
  const ResolverDir dir("group");
  const EngineOptions options = ResolverOptions(1, dir);
  testing::GroupOfTwo group(options, options);
  ASSERT_NE(group.leader, nullptr);
  const auto out = Greedy(*group.leader, "rs");
  group.Stop();
  EXPECT_EQ(testing::ExpectGreedyMatches(AdapterPrompts("llama-gqa-rslora"), out), 0);
}

}  // namespace
}  // namespace headroom::worker
