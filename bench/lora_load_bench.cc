// What a run-time LoRA load costs before its slot is written (Engine::LoadLora, and a request's
// first use with --lora-resolver-dir): reading, checking, hashing and converting a PEFT adapter
// (LoadLoraAdapter) at Llama-3-8B's shapes, every target (q/k/v/o/gate/up/down) in 32 layers,
// stored bf16 as PEFT saves it.
//   BM_LoadLoraAdapter8B/R/TP: rank R (16: 41.9M parameters, 84 MB; 64: 336 MB), this rank's
//     shard of a group of TP. The file is in the page cache after the first iteration, as it is
//     for a second group on the same node; a cold read adds the disk's time.
// The serving pause of a load is this plus the slot write (a copy of the converted factors into
// memory the model holds, plus zeros for the rank's padding).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "nlohmann/json.hpp"
#include "worker/model/lora_adapter.h"
#include "worker/model/model_config.h"

namespace headroom::worker {
namespace {

namespace fs = std::filesystem;

// A PEFT adapter directory of rank `rank` on every target of `config`, written once per rank.
fs::path WriteAdapter(const ModelConfig& config, int64_t rank) {
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("headroom_lora_bench_", ::getpid(), "_r", rank);
  if (fs::exists(dir / "adapter_model.safetensors")) return dir;
  fs::create_directories(dir);
  const nlohmann::json adapter_config = {
      {"peft_type", "LORA"},
      {"r", rank},
      {"lora_alpha", 2 * rank},
      {"target_modules",
       {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
      {"bias", "none"},
      {"use_rslora", false},
      {"use_dora", false},
      {"fan_in_fan_out", false},
      {"modules_to_save", nullptr},
      {"base_model_name_or_path", config.source}};
  std::ofstream(dir / "adapter_config.json") << adapter_config.dump(2);

  const int64_t hidden = config.hidden_size;
  const int64_t q = config.num_attention_heads * config.head_dim;
  const int64_t kv = config.num_key_value_heads * config.head_dim;
  const int64_t ffn = config.intermediate_size;
  struct Target {
    const char* module;
    int64_t in, out;
  };
  const std::vector<Target> targets = {
      {"self_attn.q_proj", hidden, q},  {"self_attn.k_proj", hidden, kv},
      {"self_attn.v_proj", hidden, kv}, {"self_attn.o_proj", q, hidden},
      {"mlp.gate_proj", hidden, ffn},   {"mlp.up_proj", hidden, ffn},
      {"mlp.down_proj", ffn, hidden}};
  nlohmann::json header = nlohmann::json::object();
  int64_t offset = 0;
  const auto add = [&](const std::string& name, int64_t rows, int64_t cols) {
    const int64_t bytes = rows * cols * 2;
    header[name] = {
        {"dtype", "BF16"}, {"shape", {rows, cols}}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  };
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const Target& t : targets) {
      const std::string prefix =
          absl::StrCat("base_model.model.model.layers.", layer, ".", t.module, ".");
      add(prefix + "lora_A.weight", rank, t.in);
      add(prefix + "lora_B.weight", t.out, rank);
    }
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // the data section 8-byte aligned
  std::ofstream out(dir / "adapter_model.safetensors", std::ios::binary);
  const uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xff));
  out << text;
  // bf16 0.01 (0x3C24), little-endian, in 1 MiB writes.
  std::string chunk(1 << 20, '\0');
  for (size_t i = 0; i < chunk.size(); i += 2) {
    chunk[i] = static_cast<char>(0x24);
    chunk[i + 1] = static_cast<char>(0x3C);
  }
  for (int64_t left = offset; left > 0; left -= static_cast<int64_t>(chunk.size())) {
    out.write(chunk.data(), std::min<int64_t>(left, static_cast<int64_t>(chunk.size())));
  }
  return dir;
}

void BM_LoadLoraAdapter8B(benchmark::State& state) {
  const int64_t rank = state.range(0);
  const ShardSpec shard{.tensor_parallel_size = state.range(1), .rank = 0};
  absl::StatusOr<ModelConfig> config = LoadModelConfig("dummy:llama-3-8b");
  HR_CHECK(config.ok());
  const LoraModuleSpec spec{.name = "bench", .path = WriteAdapter(*config, rank).string()};
  int64_t params = 0;
  for (auto _ : state) {
    absl::StatusOr<LoraAdapter> adapter = LoadLoraAdapter(*config, spec, rank, shard);
    HR_CHECK_MSG(adapter.ok(), adapter.status().ToString().c_str());
    params = 0;
    for (const LoraLayer& layer : adapter->layers) {
      for (size_t t = 0; t < kNumLoraTargets; ++t) {
        params += static_cast<int64_t>(layer.a[t].data.size() + layer.b[t].data.size());
      }
    }
    benchmark::DoNotOptimize(adapter);
  }
  state.counters["params_this_rank"] = static_cast<double>(params);
  state.SetBytesProcessed(state.iterations() * params * 2);  // the bf16 bytes read
}
BENCHMARK(BM_LoadLoraAdapter8B)
    ->Args({16, 1})
    ->Args({16, 2})
    ->Args({64, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace headroom::worker
