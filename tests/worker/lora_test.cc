// LoRA adapters (worker/model/lora_adapter.h) against PEFT on the committed fixtures
// (scripts/gen_lora_fixtures.py: seeded random adapters saved by PEFT's save_pretrained for the
// base fixtures, and the float32 outputs of the PEFT model reloaded from them):
//   - prompt logits of sequences under different adapters and the base model, computed in ONE
//     step, each within 1e-4 + 1e-4 |hf| of its own reference;
//   - greedy continuations through an Engine serving the base model and every adapter at once,
//     by model_parity_test's rule (greedy_parity.h), after the base model has filled the prefix
//     cache with the same prompts;
//   - what the loader reads (rank, scale, targets, tensor-parallel shards) and what it refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fixture_model.h"
#include "follower_thread.h"
#include "greedy_parity.h"
#include "kvcache/memory_planner.h"
#include "nlohmann/json.hpp"
#include "worker/backend/cpu_backend.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/rendezvous_store.h"
#include "worker/engine/engine.h"
#include "worker/model/llama_model.h"
#include "worker/model/lora_adapter.h"
#include "worker/model/shard_weights.h"

namespace headroom::worker {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

fs::path AdapterDir(const std::string& name) { return testdata::FixtureDir("lora") / name; }

json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

LoraAdapter LoadAdapter(const std::string& base, const std::string& name, ShardSpec shard = {}) {
  absl::StatusOr<LoraAdapter> adapter = LoadLoraAdapter(
      testdata::LoadFixtureModel(base).config, {.name = name, .path = AdapterDir(name).string()},
      kDefaultMaxLoraRank, shard);
  EXPECT_TRUE(adapter.ok()) << adapter.status();
  return adapter.ok() ? *std::move(adapter) : LoraAdapter{};
}

// The targets an adapter changes, by name.
std::vector<std::string> Targets(const LoraAdapter& adapter) {
  std::vector<std::string> names;
  for (size_t t = 0; t < kNumLoraTargets; ++t) {
    if (adapter.targets[t]) names.emplace_back(LoraTargetName(static_cast<LoraTarget>(t)));
  }
  return names;
}

TEST(LoraAdapterTest, ReadsRankScaleAndTargetsAsPeftSavedThem) {
  const LoraAdapter all = LoadAdapter("llama-gqa", "llama-gqa-all");
  EXPECT_EQ(all.rank, 8);
  EXPECT_DOUBLE_EQ(all.scale, ReadJson(AdapterDir("llama-gqa-all") / "expected.json")["scale"]);
  EXPECT_EQ(Targets(all), (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj",
                                                    "gate_proj", "up_proj", "down_proj"}));
  // rsLoRA: lora_alpha / sqrt(r) = 8 / 2, where plain LoRA would give 8 / 4.
  const LoraAdapter rslora = LoadAdapter("llama-gqa", "llama-gqa-rslora");
  EXPECT_EQ(rslora.rank, 4);
  EXPECT_DOUBLE_EQ(rslora.scale, 4.0);
  EXPECT_DOUBLE_EQ(rslora.scale,
                   ReadJson(AdapterDir("llama-gqa-rslora") / "expected.json")["scale"]);
  EXPECT_EQ(Targets(rslora), (std::vector<std::string>{"q_proj", "v_proj", "down_proj"}));
  // Phi-3's fused qkv_proj and gate_up_proj become their parts, sharing A.
  const LoraAdapter phi = LoadAdapter("phi3-fused", "phi3-fused-all");
  EXPECT_EQ(Targets(phi), Targets(all));
  const LoraLayer& layer = phi.layers[1];
  const auto q = static_cast<size_t>(LoraTarget::kQ);
  const auto v = static_cast<size_t>(LoraTarget::kV);
  EXPECT_EQ(layer.a[q].data, layer.a[v].data);
  EXPECT_EQ(layer.b[q].shape, (std::vector<int64_t>{64, 8}));  // 4 heads x 16
  EXPECT_EQ(layer.b[v].shape, (std::vector<int64_t>{32, 8}));  // 2 KV heads x 16
}

TEST(LoraAdapterTest, TensorParallelShardsSplitAsTheirProjections) {
  const LoraAdapter whole = LoadAdapter("llama-gqa", "llama-gqa-all");
  const LoraAdapter r0 = LoadAdapter("llama-gqa", "llama-gqa-all", {2, 0});
  const LoraAdapter r1 = LoadAdapter("llama-gqa", "llama-gqa-all", {2, 1});
  // Column-parallel q_proj: B's rows split (rank 0 the first 32), A whole on both.
  const auto q = static_cast<size_t>(LoraTarget::kQ);
  const std::vector<float>& b = whole.layers[0].b[q].data;
  EXPECT_EQ(r0.layers[0].b[q].data, std::vector<float>(b.begin(), b.begin() + 32 * 8));
  EXPECT_EQ(r1.layers[0].b[q].data, std::vector<float>(b.begin() + 32 * 8, b.end()));
  EXPECT_EQ(r1.layers[0].a[q].data, whole.layers[0].a[q].data);
  // Row-parallel down_proj: A's columns split (intermediate 128: 64 each), B whole.
  const auto down = static_cast<size_t>(LoraTarget::kDown);
  const HostTensor& a = whole.layers[0].a[down];
  ASSERT_EQ(a.shape, (std::vector<int64_t>{8, 128}));
  ASSERT_EQ(r1.layers[0].a[down].shape, (std::vector<int64_t>{8, 64}));
  for (int64_t row = 0; row < 8; ++row) {
    for (int64_t col = 0; col < 64; ++col) {
      ASSERT_EQ(r1.layers[0].a[down].data[static_cast<size_t>(row * 64 + col)],
                a.data[static_cast<size_t>(row * 128 + 64 + col)]);
    }
  }
  EXPECT_EQ(r0.layers[0].b[down].data, whole.layers[0].b[down].data);
}

// A copy of a fixture adapter in a temporary directory, its adapter_config.json edited.
class EditedAdapter {
 public:
  EditedAdapter(const std::string& name, const std::function<void(json&)>& edit)
      : dir_(fs::temp_directory_path() / absl::StrCat("headroom_lora_", ::getpid(), "_", name)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(AdapterDir(name) / "adapter_model.safetensors", dir_ / "adapter_model.safetensors");
    json config = ReadJson(AdapterDir(name) / "adapter_config.json");
    edit(config);
    std::ofstream(dir_ / "adapter_config.json") << config.dump();
  }
  ~EditedAdapter() { fs::remove_all(dir_); }
  [[nodiscard]] LoraModuleSpec spec() const { return {.name = "edited", .path = dir_.string()}; }
  [[nodiscard]] const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// The status of loading `spec` for `base`, and its message.
absl::Status Load(const std::string& base, const LoraModuleSpec& spec,
                  int64_t max_rank = kDefaultMaxLoraRank) {
  return LoadLoraAdapter(testdata::LoadFixtureModel(base).config, spec, max_rank).status();
}

void ExpectRefused(const absl::Status& status, absl::StatusCode code, const std::string& words) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_NE(status.message().find(words), std::string::npos) << status;
}

// The cache key (what an adapter's prefix-cache blocks are keyed by) follows the files: the same
// files give the same key under any name; another scale over the same weights (a config edit)
// computes other KV, so it gets another key.
TEST(LoraAdapterTest, TheCacheKeyFollowsTheWeightsAndTheConfig) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  const auto key = [&](const LoraModuleSpec& spec) {
    absl::StatusOr<LoraAdapter> adapter = LoadLoraAdapter(m.config, spec, kDefaultMaxLoraRank);
    EXPECT_TRUE(adapter.ok()) << adapter.status();
    return adapter.ok() ? adapter->cache_key : std::string();
  };
  std::string plain;
  {
    const EditedAdapter copy("llama-gqa-all", [](json&) {});
    plain = key(copy.spec());
    EXPECT_EQ(plain.size(), 5u + 32u) << plain;
    EXPECT_EQ(key({.name = "other-name", .path = copy.dir().string()}), plain);
  }
  const EditedAdapter scaled("llama-gqa-all", [](json& config) { config["lora_alpha"] = 64; });
  EXPECT_NE(key(scaled.spec()), plain);
  EXPECT_NE(LoadAdapter("llama-gqa", "llama-gqa-rslora").cache_key,
            LoadAdapter("llama-gqa", "llama-gqa-all").cache_key);
}

TEST(LoraAdapterTest, RefusesWhatItWouldServeAsLessThanItIs) {
  constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, json>>{{"use_dora", true},
                                                 {"bias", "lora_only"},
                                                 {"modules_to_save", json::array({"lm_head"})},
                                                 {"rank_pattern", json{{"q_proj", 16}}},
                                                 {"fan_in_fan_out", true}}) {
    const EditedAdapter edited("llama-gqa-all", [&](json& c) { c[key] = value; });
    ExpectRefused(Load("llama-gqa", edited.spec()), kInvalid, absl::StrCat("sets ", key));
  }
  const EditedAdapter prefix("llama-gqa-all", [](json& c) { c["peft_type"] = "PREFIX_TUNING"; });
  ExpectRefused(Load("llama-gqa", prefix.spec()), kInvalid, "only LORA adapters are served");
  // A rank the config does not match: every tensor's shape says so.
  const EditedAdapter wrong_rank("llama-gqa-all", [](json& c) { c["r"] = 4; });
  ExpectRefused(Load("llama-gqa", wrong_rank.spec()), kInvalid, "], expected [4, ");
  const LoraModuleSpec all{.name = "all", .path = AdapterDir("llama-gqa-all").string()};
  ExpectRefused(Load("llama-gqa", all, /*max_rank=*/4), kInvalid,
                "has rank 8, greater than --max-lora-rank 4");
  // Bases the adapter does not fit: other shapes, fused projections, experts.
  ExpectRefused(Load("llama-tied", all), kInvalid, "has shape [32, 8], expected [128, 8]");
  ExpectRefused(Load("phi3-fused", all), kInvalid, "names gate_proj, which");
  ExpectRefused(Load("phi3-fused", all), kInvalid, "does not have (its mlp fuses its projections)");
  ExpectRefused(Load("llama-gqa", {.name = "phi", .path = AdapterDir("phi3-fused-all").string()}),
                kInvalid, "does not have (its mlp splits its projections)");
  ExpectRefused(Load("mixtral-moe", all), kInvalid, "LoRA on experts is not served");
  // Missing files.
  ExpectRefused(Load("llama-gqa", {.name = "x", .path = "/nonexistent/adapter"}),
                absl::StatusCode::kNotFound, "not a directory");
  const EditedAdapter no_weights("llama-gqa-all", [](json&) {});
  fs::remove(no_weights.dir() / "adapter_model.safetensors");
  std::ofstream(no_weights.dir() / "adapter_model.bin") << "pickle";
  ExpectRefused(Load("llama-gqa", no_weights.spec()), absl::StatusCode::kNotFound,
                "safe_serialization=True");
}

TEST(LoraAdapterTest, ParsesVllmsLoraModulesForms) {
  absl::StatusOr<LoraModuleSpec> plain = ParseLoraModule("sql=/models/sql-lora");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->name, "sql");
  EXPECT_EQ(plain->path, "/models/sql-lora");
  absl::StatusOr<LoraModuleSpec> json_form =
      ParseLoraModule(R"({"name": "sql", "path": "/a=b", "base_model_name": "meta-llama/x"})");
  ASSERT_TRUE(json_form.ok()) << json_form.status();
  EXPECT_EQ(json_form->path, "/a=b");
  for (const char* bad : {"sql", "=path", "sql=", R"({"name": "sql"})", "{not json"}) {
    EXPECT_EQ(ParseLoraModule(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// One base fixture with adapters, and the references: `expected[0]` the base model's, then each
// adapter's in slot order.
struct Served {
  std::string base;
  std::vector<std::string> adapters;
};

void PrintTo(const Served& served, std::ostream* os) { *os << served.base; }

class LoraParityTest : public ::testing::TestWithParam<Served> {
 protected:
  void SetUp() override {
    expected_.push_back(ReadJson(testdata::FixtureDir(GetParam().base) / "expected.json"));
    auto adapters = std::make_shared<std::vector<LoraAdapter>>();
    for (const std::string& name : GetParam().adapters) {
      adapters->push_back(LoadAdapter(GetParam().base, name));
      expected_.push_back(ReadJson(AdapterDir(name) / "expected.json"));
    }
    adapters_ = adapters;
  }

  const json& prompts(int32_t slot) const {
    return expected_[static_cast<size_t>(slot + 1)]["prompts"];
  }

  std::vector<json> expected_;
  std::shared_ptr<const std::vector<LoraAdapter>> adapters_;
};

constexpr int32_t kBlockSize = 16;

TEST_P(LoraParityTest, PromptLogitsOfEveryAdapterAndTheBaseMatchPeftInOneStep) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(GetParam().base);
  CpuBackend backend(1);
  const int32_t slots = static_cast<int32_t>(adapters_->size());
  // Each prompt that has reference logits, under the base model and every adapter, in an order
  // that puts different adapters side by side and one adapter in two places.
  struct Seq {
    size_t prompt;
    int32_t slot;
  };
  std::vector<Seq> seqs;
  for (int32_t slot = slots - 1; slot >= -1; --slot) {
    for (size_t p = 0; p < prompts(-1).size(); ++p) {
      if (prompts(-1)[p].contains("logits")) seqs.push_back({p, slot});
    }
  }
  ASSERT_GE(seqs.size(), 4u);
  const int32_t max_model_len = 64;
  const int32_t per_seq = max_model_len / kBlockSize;
  ASSERT_EQ(KvCacheLayerGroups(m.config).num_groups(), 1);
  auto model = LlamaModel::Create(m.config, m.weights,
                                  {.max_num_batched_tokens = 512,
                                   .max_num_seqs = 16,
                                   .max_model_len = max_model_len,
                                   .num_kv_blocks = 1 + per_seq * static_cast<int32_t>(seqs.size()),
                                   .block_size = kBlockSize},
                                  &backend, nullptr, *adapters_);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->num_lora_slots(), slots);

  // Sequence s in blocks [1 + s * per_seq, ...), every row's logits.
  ForwardInput in;
  in.query_start = {0};
  in.block_tables.assign(seqs.size() * static_cast<size_t>((*model)->max_blocks_per_seq()), 0);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto ids = prompts(-1)[seqs[s].prompt]["ids"].get<std::vector<int32_t>>();
    const int32_t n = static_cast<int32_t>(ids.size());
    ASSERT_LE(n, max_model_len);
    const int32_t first_block = 1 + static_cast<int32_t>(s) * per_seq;
    for (int32_t i = 0; i < n; ++i) {
      in.token_ids.push_back(ids[static_cast<size_t>(i)]);
      in.positions.push_back(i);
      in.slot_mapping.push_back(int64_t{first_block + i / kBlockSize} * kBlockSize +
                                i % kBlockSize);
      in.logits_rows.push_back(static_cast<int32_t>(in.token_ids.size()) - 1);
    }
    for (int32_t b = 0; b * kBlockSize < n; ++b) {
      in.block_tables[s * static_cast<size_t>((*model)->max_blocks_per_seq()) +
                      static_cast<size_t>(b)] = first_block + b;
    }
    in.query_start.push_back(static_cast<int32_t>(in.token_ids.size()));
    in.context_lens.push_back(n);
    in.lora_slots.push_back(seqs[s].slot);
  }
  // The step's logits rows exceed max_num_seqs: take them as prompt logits instead.
  in.prompt_logits_rows = in.logits_rows;
  in.logits_rows.clear();
  std::vector<float> logits(static_cast<size_t>(in.num_tokens() * m.config.vocab_size));
  std::vector<float> ignored;
  const int64_t vocab = m.config.vocab_size;
  const absl::Status status =
      (*model)->Forward(in, &ignored, [&](size_t first, int64_t count, const float* rows) {
        std::copy_n(rows, count * vocab, logits.begin() + static_cast<int64_t>(first) * vocab);
        return absl::OkStatus();
      });
  ASSERT_TRUE(status.ok()) << status;

  for (size_t s = 0; s < seqs.size(); ++s) {
    const json& hf = prompts(seqs[s].slot)[seqs[s].prompt]["logits"];
    SCOPED_TRACE(
        absl::StrCat("sequence ", s, ": prompt ", seqs[s].prompt, " under slot ", seqs[s].slot));
    const int64_t row0 = in.query_start[s];
    for (size_t row = 0; row < hf.size(); ++row) {
      for (size_t v = 0; v < static_cast<size_t>(vocab); ++v) {
        const double want = hf[row][v].get<double>();
        const double got =
            logits[static_cast<size_t>(row0 * vocab) + row * static_cast<size_t>(vocab) + v];
        ASSERT_LE(std::abs(got - want), 1e-4 + 1e-4 * std::abs(want))
            << "row " << row << ", token " << v;
      }
    }
  }
}

// Every prompt under every adapter, all added at once (request id slot * 100 + prompt), run to
// 32 greedy tokens with top-5 logprobs: the tokens by [slot][prompt].
std::vector<std::vector<std::vector<StepToken>>> RunEveryAdapter(
    Engine& engine, const json& prompts, const std::vector<std::string>& adapters) {
  const size_t n = prompts.size();
  for (size_t slot = 0; slot < adapters.size(); ++slot) {
    for (size_t p = 0; p < n; ++p) {
      Request r;
      r.id = RequestId{static_cast<int64_t>(slot * 100 + p)};
      r.prompt = prompts[p]["ids"].get<std::vector<int32_t>>();
      r.sampling.temperature = 0;
      r.sampling.max_tokens = 32;
      r.sampling.ignore_eos = true;
      r.sampling.logprobs = 5;
      r.lora_slot = static_cast<int32_t>(slot);
      r.lora_name = adapters[slot];
      const absl::Status added = engine.AddRequest(r);
      EXPECT_TRUE(added.ok()) << added;
    }
  }
  std::vector<std::vector<std::vector<StepToken>>> out(adapters.size(),
                                                       std::vector<std::vector<StepToken>>(n));
  while (engine.HasWork()) {
    auto step = engine.Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (StepToken& t : *step) {
      out[static_cast<size_t>(t.id.value() / 100)][static_cast<size_t>(t.id.value() % 100)]
          .push_back(std::move(t));
    }
  }
  for (size_t slot = 0; slot < adapters.size(); ++slot) {
    for (size_t p = 0; p < n; ++p) EXPECT_EQ(out[slot][p].size(), 32u) << slot << " " << p;
  }
  return out;
}

TEST_P(LoraParityTest, GreedyContinuationsMatchPeftWithAdaptersMixedInEveryStep) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(GetParam().base);
  CpuBackend backend(1);
  EngineOptions options{.max_num_seqs = 32,
                        .max_num_batched_tokens = 512,
                        .max_model_len = 128,
                        .block_size = kBlockSize,
                        .num_kv_blocks = 160,
                        .lora_adapters = adapters_};
  auto engine = Engine::Create(m.config, m.weights, options, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  // The engine let go of the host copies (on the device now): this fixture and `options` hold
  // them.
  EXPECT_EQ(adapters_.use_count(), 2);
  // The base model first: its blocks of the same prompts are then cached, and an adapter that
  // took them would read the base model's KV.
  EXPECT_EQ(testing::ExpectGreedyMatches(prompts(-1), testing::RunGreedy(**engine, prompts(-1))),
            0);
  // Then every adapter's requests at once, so each step mixes them.
  const auto out = RunEveryAdapter(**engine, prompts(-1), GetParam().adapters);
  for (size_t slot = 0; slot < out.size(); ++slot) {
    SCOPED_TRACE(GetParam().adapters[slot]);
    RecordProperty(absl::StrCat("diverged_", GetParam().adapters[slot]),
                   testing::ExpectGreedyMatches(prompts(static_cast<int32_t>(slot)), out[slot]));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LoraParityTest,
                         ::testing::Values(Served{"llama-gqa",
                                                  {"llama-gqa-all", "llama-gqa-rslora"}},
                                           Served{"phi3-fused", {"phi3-fused-all"}},
                                           Served{"granite-mup", {"granite-mup-out"}},
                                           Served{"glm4-sandwich", {"glm4-sandwich-all"}}),
                         [](const ::testing::TestParamInfo<Served>& param_info) {
                           std::string name = param_info.param.base;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A tensor-parallel group of two (leader and follower threads over Gloo), each rank holding its
// shard of the base model and of both adapters: the same tokens as PEFT.
TEST(LoraGroupTest, AGroupOfTwoServesItsAdapterShardsAsPeft) {
  const std::string base = "llama-gqa";
  const std::vector<std::string> names = {"llama-gqa-all", "llama-gqa-rslora"};
  const testdata::FixtureModel& m = testdata::LoadFixtureModel(base);
  const auto shards = [&](int64_t rank) {
    auto adapters = std::make_shared<std::vector<LoraAdapter>>();
    for (const std::string& name : names) adapters->push_back(LoadAdapter(base, name, {2, rank}));
    return adapters;
  };
  EngineOptions options{.max_num_seqs = 8,
                        .max_num_batched_tokens = 64,
                        .max_model_len = 128,
                        .block_size = kBlockSize,
                        .num_kv_blocks = 80};
  InMemoryRendezvousStore store;
  EngineOptions rank_options = options;
  rank_options.lora_adapters = shards(1);
  testing::FollowerThread follower(store, m.config, testdata::LoadFixtureShard(base, 2, 1),
                                   rank_options);
  const std::unique_ptr<GlooCommunicator> comm = testing::LeaderComm(store);
  ASSERT_NE(comm, nullptr);
  options.lora_adapters = shards(0);
  CpuBackend backend(1);
  auto leader = Engine::Create(m.config, testdata::LoadFixtureShard(base, 2, 0), options, &backend,
                               comm.get());
  ASSERT_TRUE(leader.ok()) << leader.status();
  const json prompts = ReadJson(testdata::FixtureDir(base) / "expected.json")["prompts"];
  const auto out = RunEveryAdapter(**leader, prompts, names);
  ASSERT_TRUE((*leader)->StopFollowers().ok());
  follower.Join();
  for (size_t slot = 0; slot < names.size(); ++slot) {
    SCOPED_TRACE(names[slot]);
    testing::ExpectGreedyMatches(ReadJson(AdapterDir(names[slot]) / "expected.json")["prompts"],
                                 out[slot]);
  }
}

// The device memory the adapters take is what the planner counts (kvcache::LoraParamsPerRank,
// in fp32 on the CPU backend) plus the arena's scratch and segment rows: the plan and the model
// agree to the byte (but for the backend's 64-byte rounding of the segment rows).
TEST(LoraMemoryTest, TheModelAllocatesWhatThePlannerCounts) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  const std::vector<LoraAdapter> adapters = {LoadAdapter("llama-gqa", "llama-gqa-all"),
                                             LoadAdapter("llama-gqa", "llama-gqa-rslora")};
  const ModelLimits limits{.max_num_batched_tokens = 96,
                           .max_num_seqs = 5,
                           .max_model_len = 64,
                           .num_kv_blocks = 9,
                           .block_size = kBlockSize};
  CpuBackend plain_backend(1);
  ASSERT_TRUE(LlamaModel::Create(m.config, m.weights, limits, &plain_backend).ok());
  CpuBackend lora_backend(1);
  ASSERT_TRUE(
      LlamaModel::Create(m.config, m.weights, limits, &lora_backend, nullptr, adapters).ok());
  const kvcache::LoraDims dims = LoraDimsOf(adapters);
  EXPECT_EQ(dims.max_rank, 8);
  const int64_t params = kvcache::LoraParamsPerRank(ModelDimsOf(m.config), 1, dims);
  // The CPU backend rounds each buffer up to 64 bytes: only the segment rows are not multiples.
  const auto round_up = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  EXPECT_EQ(lora_backend.allocated_bytes() - plain_backend.allocated_bytes(),
            4 * (params + 96 * dims.max_rank) + round_up(4 * (5 + 1)) + round_up(4 * 5));
}

// An engine on llama-gqa serving `names` (fixture adapters, slots in this order) with a pool of
// 16 blocks.
absl::StatusOr<std::unique_ptr<Engine>> SmallAdapterEngine(const std::vector<std::string>& names,
                                                           int32_t max_num_seqs, Backend* backend) {
  const testdata::FixtureModel& m = testdata::LoadFixtureModel("llama-gqa");
  auto adapters = std::make_shared<std::vector<LoraAdapter>>();
  for (const std::string& name : names) adapters->push_back(LoadAdapter("llama-gqa", name));
  return Engine::Create(m.config, m.weights,
                        {.max_num_seqs = max_num_seqs,
                         .max_num_batched_tokens = 64,
                         .max_model_len = 64,
                         .block_size = kBlockSize,
                         .num_kv_blocks = 16,
                         .lora_adapters = adapters},
                        backend);
}

// The scheduler counts each adapter's running and waiting requests (headroom:lora_requests_*).
TEST(LoraEngineTest, StatsCountEachAdaptersRunningAndWaitingRequests) {
  CpuBackend backend(1);
  auto engine = SmallAdapterEngine({"llama-gqa-all", "llama-gqa-rslora"}, 2, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  // Arrival order: sql, rs, rs, base; two run.
  const std::vector<int32_t> slots = {0, 1, 1, -1};
  for (size_t i = 0; i < slots.size(); ++i) {
    Request r;
    r.id = RequestId{static_cast<int64_t>(i)};
    r.prompt = {1, 2, 3, 4};
    r.sampling.max_tokens = 4;
    r.lora_slot = slots[i];
    ASSERT_TRUE((*engine)->AddRequest(r).ok());
  }
  ASSERT_TRUE((*engine)->Step().ok());
  const SchedulerStats stats = (*engine)->Stats().scheduler;
  EXPECT_EQ(stats.num_running, 2);
  EXPECT_EQ(stats.lora_running, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(stats.lora_waiting, (std::vector<int32_t>{0, 1}));
}

TEST(LoraEngineTest, RefusesASlotTheModelDoesNotHave) {
  CpuBackend backend(1);
  auto engine = SmallAdapterEngine({"llama-gqa-rslora"}, 4, &backend);
  ASSERT_TRUE(engine.ok()) << engine.status();
  Request r;
  r.id = RequestId{1};
  r.prompt = {1, 2, 3};
  r.sampling.max_tokens = 1;
  r.lora_slot = 1;
  ExpectRefused((*engine)->AddRequest(r), absl::StatusCode::kInvalidArgument,
                "LoRA slot 1 holds no adapter (the model has 1 LoRA slots)");
  EXPECT_FALSE((*engine)->HasWork());
}

}  // namespace
}  // namespace headroom::worker
