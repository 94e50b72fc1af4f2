// Helpers of the run-time LoRA tests (lora_runtime_test.cc, lora_resolver_test.cc): engines
// with reserved adapter slots over the llama-gqa fixture, and the PEFT fixtures' expectations
// (scripts/gen_lora_fixtures.py).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fixture_model.h"
#include "follower_thread.h"
#include "greedy_parity.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"
#include "worker/engine/engine.h"
#include "worker/model/lora_adapter.h"

namespace headroom::worker::testing {

inline constexpr const char* kBase = "llama-gqa";

inline LoraModuleSpec Spec(const std::string& name, const std::string& fixture) {
  return {.name = name, .path = (testdata::FixtureDir("lora") / fixture).string()};
}

inline nlohmann::json Prompts(const std::filesystem::path& dir) {
  std::ifstream in(dir / "expected.json");
  return nlohmann::json::parse(in)["prompts"];
}
inline nlohmann::json AdapterPrompts(const std::string& fixture) {
  return Prompts(testdata::FixtureDir("lora") / fixture);
}

// Small blocks, so the fixture prompts (1, 7, 23 and 61 tokens) leave full blocks cached.
inline EngineOptions ReservedOptions(int32_t slots, int64_t max_lora_rank) {
  return {.max_num_seqs = 8,
          .max_num_batched_tokens = 128,
          .max_model_len = 128,
          .block_size = 4,
          .num_kv_blocks = 256,
          .lora_slots = slots,
          .max_lora_rank = max_lora_rank};
}

inline std::unique_ptr<Engine> ReservedEngine(const EngineOptions& options, Backend* backend) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(kBase);
  auto engine = Engine::Create(m.config, m.weights, options, backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *std::move(engine) : nullptr;
}

// The fixture prompts' greedy continuations under the adapter named `name` ("" = the base).
inline std::vector<std::vector<StepToken>> Greedy(Engine& engine, const std::string& name) {
  return RunGreedy(engine, Prompts(testdata::FixtureDir(kBase)), {},
                   [&](Request& r) { r.lora_name = name; });
}

// Fixture prompt 3 (61 tokens) to 32 greedy tokens under the adapter `name`, as RunGreedy asks.
inline Request LongPromptRequest(int64_t id, const std::string& name) {
  Request r;
  r.id = RequestId{id};
  r.prompt = Prompts(testdata::FixtureDir(kBase))[3]["ids"].get<std::vector<int32_t>>();
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 32;
  r.sampling.ignore_eos = true;
  r.sampling.logprobs = 5;
  r.lora_name = name;
  return r;
}

// Runs one step (`whole`: steps until the engine is idle), appending the tokens to `out`.
inline void RunSteps(Engine& engine, bool whole, std::vector<StepToken>& out) {
  do {
    auto step = engine.Step();
    ASSERT_TRUE(step.ok()) << step.status();
    for (StepToken& t : *step) out.push_back(std::move(t));
  } while (whole && engine.HasWork());
}

// `out` (prompt 3's tokens) is the fixture adapter's greedy continuation of it.
inline void ExpectPrompt3Of(const std::string& fixture, const std::vector<StepToken>& out) {
  EXPECT_EQ(out.size(), 32u);
  EXPECT_EQ(ExpectGreedyMatches(nlohmann::json::array({AdapterPrompts(fixture)[3]}), {out}), 0);
}

inline void ExpectRefused(const absl::Status& status, absl::StatusCode code,
                          const std::string& words) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_NE(status.message().find(words), std::string::npos) << status;
}

inline std::vector<std::string> Served(const Engine& engine) {
  std::vector<std::string> names;
  for (const ServedLoraAdapter& adapter : *engine.Stats().lora_adapters) {
    names.push_back(adapter.name);
  }
  return names;
}

// A group of two over Gloo on the fixture model: the follower on a thread of its own (with
// `follower_options`), the leader's engine here (with `options`; null, a test failure, if it
// could not be made).
struct GroupOfTwo {
  GroupOfTwo(const EngineOptions& options, const EngineOptions& follower_options)
      : follower(store, testdata::LoadFixtureModel(kBase).config,
                 testdata::LoadFixtureShard(kBase, 2, 1), follower_options),
        comm(LeaderComm(store)) {
    if (comm == nullptr) return;
    auto created =
        Engine::Create(testdata::LoadFixtureModel(kBase).config,
                       testdata::LoadFixtureShard(kBase, 2, 0), options, &backend, comm.get());
    EXPECT_TRUE(created.ok()) << created.status();
    if (created.ok()) leader = *std::move(created);
  }
  // Stops the follower and waits for it to return.
  void Stop() {
    EXPECT_TRUE(leader->StopFollowers().ok());
    follower.Join();
  }

  InMemoryRendezvousStore store;
  FollowerThread follower;
  std::unique_ptr<GlooCommunicator> comm;
  CpuBackend backend{1};
  std::unique_ptr<Engine> leader;
};

}  // namespace headroom::worker::testing
