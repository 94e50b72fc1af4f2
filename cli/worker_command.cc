#include "cli/worker_command.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/exit_codes.h"
#include "cli/hf_overrides_flag.h"
#include "cli/load_format_flag.h"
#include "cli/lora_flags.h"
#include "cli/parse_flags.h"
#include "cli/stop_signals.h"
#include "cli/worker_group.h"
#include "common/flags.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "kvcache/sliding_window.h"
#include "nlohmann/json.hpp"
#include "router/tokenizer/byte_tokenizer.h"
#include "router/tokenizer/tokenizer.h"
#include "worker/backend/cpu_backend.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/comm/grpc_rendezvous.h"
#include "worker/engine/engine.h"
#include "worker/engine/engine_loop.h"
#include "worker/engine/follower.h"
#include "worker/model/checkpoint.h"
#include "worker/model/generation_config.h"
#include "worker/model/lora_adapter.h"
#include "worker/model/model_config.h"
#include "worker/model/pooling_config.h"
#include "worker/model/shard_weights.h"
#include "worker/service/worker_metrics.h"
#include "worker/service/worker_service.h"

namespace headroom::cli {
namespace {

constexpr int64_t kDefaultMetricsPort = 9100;
constexpr int64_t kMaxTensorParallelSize = 64;
// Ranks meet after loading their weights; loading times differ, so the meeting may wait long.
constexpr absl::Duration kRendezvousTimeout = absl::Minutes(10);

FlagSet MakeWorkerFlags() {
  FlagSet flags("headroom worker",
                "Load one model on the CPU backend and serve headroom.v1.Worker and "
                "grpc.health.v1.Health over gRPC. Prints 'headroom worker listening on HOST:PORT' "
                "when serving; SIGTERM/SIGINT drain and exit 0.");
  flags.AddString("model", std::nullopt,
                  "Hugging Face model directory or dummy:<preset> (seeded random weights).");
  flags.AddString("host", "127.0.0.1", "Address to listen on.");
  flags.AddInt64("port", 50061, "Port to listen on (0 = pick a free one; the line says which).");
  flags.AddInt64("max-model-len", std::nullopt,
                 "Longest prompt + output (default: the model's max_position_embeddings, or "
                 "original_max_position_embeddings x factor with yarn rope scaling).");
  flags.AddInt64("max-num-seqs", 256, "Most sequences running in one step.");
  flags.AddInt64("max-num-batched-tokens", 8192, "Most tokens in one forward step.");
  flags.AddInt64("block-size", 16, "Tokens per KV-cache block.");
  flags.AddBool("enable-prefix-caching", true, "Reuse KV blocks of shared prompt prefixes.");
  flags.AddString("scheduling-policy", "fcfs",
                  "fcfs: first come, first served; priority: by each request's priority (lower "
                  "first), then arrival; the lowest priority is preempted first. Under fcfs a "
                  "request with a priority other than 0 is refused.");
  flags.AddInt64("num-gpu-blocks-override", std::nullopt,
                 "KV blocks in the pool, the reserved null block included (default: enough for "
                 "--max-num-seqs sequences of --max-model-len tokens; CPU memory is not planned).");
  flags.AddInt64("seed", 0, "Seed of requests that bring none, and of dummy weights.");
  AddLoadFormatFlag(flags);
  AddHfOverridesFlag(flags);
  flags.AddString(
      "pooler-config", std::nullopt,
      "vLLM's: how embeddings pool, as JSON, over the checkpoint's sentence-transformers "
      "files: {\"pooling_type\": \"LAST\" | \"MEAN\" | \"CLS\", \"normalize\": "
      "true | false}.");
  flags.AddString("override-pooler-config", std::nullopt, "vLLM's older name of --pooler-config.");
  flags.AddInt64("threads", 0, "CPU threads (0 = all).");
  flags.AddInt64("drain-timeout-s", 30,
                 "On SIGTERM/SIGINT, seconds to let running requests finish before cancelling.");
  flags.AddInt64("step-stall-timeout-s", 60,
                 "An engine step running longer is taken as a hung engine (a kernel or a "
                 "collective that never returns): load reports stop until it ends, so routers "
                 "stop placing here and give up its requests (0 = never). Raise it above the "
                 "longest step: a full --max-num-batched-tokens prefill of a big model on CPU.");
  flags.AddInt64("eos-token-id", std::nullopt,
                 "End-of-sequence token (default: config.json's eos_token_id, the first if a "
                 "list; -1 = none). The model's other eos ids (config.json's and "
                 "generation_config.json's lists) stop requests too, as in vLLM.");
  flags.AddString("generation-config", "auto",
                  "Default sampling of requests that leave temperature, top_p, top_k, min_p or "
                  "repetition_penalty unset, as vLLM's flag: auto (the model's "
                  "generation_config.json, the model creator's recommendation, when it has one), "
                  "vllm (vLLM's defaults: temperature 1, top_p 1, all tokens), or a directory "
                  "holding a generation_config.json.");
  flags.AddInt64("metrics-port", kDefaultMetricsPort,
                 "Port of the Prometheus /metrics and /health HTTP endpoint on --host (0 = pick "
                 "a free one; -1 = off). A second line 'headroom worker metrics on HOST:PORT' "
                 "says which. A port that cannot be bound stops the worker with an error.");
  flags.AddDouble("gpu-memory-utilization", 0.9,
                  "Share of device memory to use, in (0, 1]. Validated but has no effect on the "
                  "CPU backend (the KV pool is sized by --num-gpu-blocks-override or "
                  "--max-num-seqs x --max-model-len).");
  flags.AddString("dtype", "auto",
                  "auto or float32: the CPU backend computes in fp32; other dtypes are refused.");
  flags.AddInt64("tensor-parallel-size", 1,
                 "Ranks of the worker group (one process each, CPU backend: Gloo over loopback). "
                 "Above 1 this process becomes the group launcher: it starts and supervises the "
                 "ranks, relays rank 0's lines, and exits non-zero within a moment of any rank "
                 "dying (docs/tensor_parallel.md).");
  flags.AddInt64("group-timeout-s", 30,
                 "Tensor-parallel groups: seconds a collective may wait for the other ranks "
                 "before the group is declared failed.");
  flags.AddInt64("rank", -1, "Internal, set by the group launcher: this process's rank.");
  flags.AddString("rendezvous", std::nullopt,
                  "Internal, set by the group launcher: host:port of its rendezvous service.");
  flags.AddString("group-id", "group",
                  "Internal, set by the group launcher: this group incarnation's key prefix.");
  flags.AddDouble("swap-space", 4,
                  "Accepted for vLLM compatibility and ignored: headroom never swaps KV to host "
                  "memory.");
  flags.AddStringList(
      "lora-modules",
      "LoRA adapters to serve, as vLLM takes them: name=path (a PEFT directory with "
      "adapter_config.json and adapter_model.safetensors) or {\"name\": ..., \"path\": ...}. "
      "A request whose model is an adapter's name runs with it; all of them are loaded at start "
      "and stay resident, and any mix of them runs in one step.");
  flags.AddBool("enable-lora", false,
                "Accepted for vLLM compatibility: --lora-modules or "
                "--allow-runtime-lora-updating enables LoRA.");
  AddRuntimeLoraFlags(flags);
  flags.AddInt64("max-cpu-loras", std::nullopt,
                 "Accepted for vLLM compatibility: adapters are never swapped to host memory.");
  flags.AddBool("fully-sharded-loras", false,
                "Accepted for vLLM compatibility: under tensor parallelism each adapter is "
                "split as its projection (docs/engine.md).");
  flags.AddInt64("max-lora-rank", worker::kDefaultMaxLoraRank,
                 "Largest adapter rank accepted (vLLM's default 16); every adapter is padded to "
                 "the largest rank given.");
  flags.MarkRequired("model");
  return flags;
}

// The model's end-of-sequence ids: config.json's eos_token_id (an id or a list), then
// generation_config.json's (what vLLM stops on), each once, in that order. Empty for dummy
// models and when neither file names one.
std::vector<int32_t> ModelEosTokenIds(const std::string& model) {
  std::vector<int32_t> ids;
  if (model.starts_with("dummy:")) return ids;
  for (const char* name : {"config.json", "generation_config.json"}) {
    std::ifstream file(absl::StrCat(model, "/", name));
    if (!file) continue;
    const nlohmann::json json = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object() || !json.contains("eos_token_id")) continue;
    const nlohmann::json& eos = json["eos_token_id"];
    for (const nlohmann::json& id : eos.is_array() ? eos : nlohmann::json::array({eos})) {
      if (!id.is_number_integer()) continue;
      const int64_t value = id.get<int64_t>();
      if (value < 0 || value > INT32_MAX) continue;
      if (std::find(ids.begin(), ids.end(), value) == ids.end()) {
        ids.push_back(static_cast<int32_t>(value));
      }
    }
  }
  return ids;
}

absl::StatusOr<int32_t> Int32Flag(const FlagSet& flags, std::string_view name, int64_t min) {
  const int64_t value = *flags.GetInt64(name);
  if (value < min || value > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", std::string(name), " must be in [", min, ", 2^31), got ", value));
  }
  return static_cast<int32_t>(value);
}

// What every rank process needs before it can load: the model's shape and the engine's limits.
struct EngineSetup {
  std::string model;
  worker::ModelConfig config;
  worker::EngineOptions options;
  worker::LoadFormat load_format = worker::LoadFormat::kAuto;
  int64_t tensor_parallel_size = 1;
  int64_t rank = 0;
  double gpu_memory_utilization = 0.9;
  std::vector<worker::LoraModuleSpec> lora_modules;
  int64_t max_lora_rank = worker::kDefaultMaxLoraRank;
  // --allow-runtime-lora-updating (options.lora_slots > 0).
  bool runtime_lora = false;
};

// --allow-runtime-lora-updating and --max-loras: the slots the engine reserves.
absl::Status ParseRuntimeLora(const FlagSet& flags, EngineSetup& setup) {
  HR_ASSIGN_OR_RETURN(setup.options.lora_slots,
                      RuntimeLoraSlots(flags, static_cast<int64_t>(setup.lora_modules.size())));
  setup.runtime_lora = setup.options.lora_slots > 0;
  setup.options.max_lora_rank = setup.max_lora_rank;
  HR_ASSIGN_OR_RETURN(setup.options.lora_resolver_dir,
                      LoraResolverDir(flags, setup.options.lora_slots));
  return absl::OkStatus();
}

worker::ShardSpec ShardOf(const EngineSetup& setup) {
  return {.tensor_parallel_size = setup.tensor_parallel_size, .rank = setup.rank};
}

// The model's tokenizer: <model>/tokenizer.json when there is one; for dummy models, and
// checkpoints without one whose vocabulary is the byte tokenizer's size (at most 258), the byte
// tokenizer (ids 0..255 are the bytes), which is what a router without --tokenizer uses.
absl::StatusOr<std::unique_ptr<router::Tokenizer>> ModelTokenizer(const std::string& model,
                                                                  int64_t vocab_size) {
  const bool dummy = model.rfind("dummy:", 0) == 0;
  const std::filesystem::path file = std::filesystem::path(model) / "tokenizer.json";
  std::error_code exists_error;
  if (!dummy && std::filesystem::exists(file, exists_error)) {
    return router::Tokenizer::FromDirectory(model);
  }
  if (dummy || vocab_size <= 258) {
    return router::MakeByteTokenizer(static_cast<int32_t>(std::max<int64_t>(vocab_size, 256)));
  }
  return absl::NotFoundError(
      absl::StrCat("no tokenizer.json, and a vocabulary of ", vocab_size, " tokens is not bytes"));
}

absl::StatusOr<EngineSetup> ParseEngineSetup(const FlagSet& flags) {
  EngineSetup setup;
  setup.model = *flags.GetString("model");
  const std::string& model = setup.model;
  HR_ASSIGN_OR_RETURN(setup.config, worker::LoadModelConfig(model, HfOverrides(flags)));
  if (setup.config.classifier.has_value() && !setup.config.classifier->from_tokens.empty()) {
    // vLLM's LLM-as-reranker conversion: the head's rows are those tokens' (every rank reads them).
    absl::StatusOr<std::unique_ptr<router::Tokenizer>> tokenizer =
        ModelTokenizer(model, setup.config.vocab_size);
    if (!tokenizer.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "classifier_from_token needs the model's tokenizer: ", tokenizer.status().message()));
    }
    HR_RETURN_IF_ERROR(worker::ResolveClassifierTokens(
        [&](std::string_view token) { return (*tokenizer)->TokenToId(token); },
        setup.config.vocab_size, *setup.config.classifier));
  }
  const worker::ModelConfig& config = setup.config;
  worker::EngineOptions& options = setup.options;
  HR_ASSIGN_OR_RETURN(options.max_num_seqs, Int32Flag(flags, "max-num-seqs", 1));
  HR_ASSIGN_OR_RETURN(options.max_num_batched_tokens,
                      Int32Flag(flags, "max-num-batched-tokens", 1));
  HR_ASSIGN_OR_RETURN(options.block_size, Int32Flag(flags, "block-size", 1));
  if (flags.GetInt64("max-model-len").has_value()) {
    HR_ASSIGN_OR_RETURN(options.max_model_len, Int32Flag(flags, "max-model-len", 1));
  } else {
    options.max_model_len = static_cast<int32_t>(worker::MaxContextLength(config));
  }
  if (flags.GetInt64("num-gpu-blocks-override").has_value()) {
    HR_ASSIGN_OR_RETURN(options.num_kv_blocks, Int32Flag(flags, "num-gpu-blocks-override", 2));
  } else {
    // Every running sequence at its longest (with a sliding window: its window and a chunk).
    const int64_t blocks_per_seq = kvcache::PeakBlocksOverGroups(
        options.max_model_len, options.block_size, worker::KvCacheLayerGroups(config).windows, 0,
        options.max_num_batched_tokens);
    const int64_t blocks = 1 + int64_t{options.max_num_seqs} * blocks_per_seq;
    if (blocks > INT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("the default KV pool (", blocks,
                       " blocks) is too large; give --num-gpu-blocks-override"));
    }
    options.num_kv_blocks = static_cast<int32_t>(blocks);
  }
  options.enable_prefix_caching = flags.GetBool("enable-prefix-caching");
  if (const std::string policy = *flags.GetString("scheduling-policy"); policy == "priority") {
    options.scheduling_policy = worker::SchedulingPolicy::kPriority;
  } else if (policy != "fcfs") {
    return absl::InvalidArgumentError(
        absl::StrCat("--scheduling-policy must be fcfs or priority, got \"", policy, "\""));
  }
  options.seed = static_cast<uint64_t>(*flags.GetInt64("seed"));
  HR_ASSIGN_OR_RETURN(options.pooling, worker::LoadPoolingConfig(model));
  const std::optional<std::string> pooler = flags.GetString("pooler-config");
  const std::optional<std::string> older = flags.GetString("override-pooler-config");
  if (pooler.has_value() && older.has_value()) {
    return absl::InvalidArgumentError(
        "give --pooler-config or --override-pooler-config (its older name), not both");
  }
  if (pooler.has_value() || older.has_value()) {
    HR_RETURN_IF_ERROR(
        worker::ApplyPoolerConfig(pooler.has_value() ? *pooler : *older, options.pooling));
  }
  // The first id is the EOS (constrained decoding offers it where a reply may end); the others
  // stop a request like its stop_token_ids.
  const std::vector<int32_t> eos_ids = ModelEosTokenIds(model);
  if (flags.GetInt64("eos-token-id").has_value()) {
    HR_ASSIGN_OR_RETURN(options.eos_token_id, Int32Flag(flags, "eos-token-id", -1));
  } else {
    options.eos_token_id = eos_ids.empty() ? -1 : eos_ids.front();
  }
  for (int32_t id : eos_ids) {
    if (id != options.eos_token_id) options.extra_eos_token_ids.push_back(id);
  }
  const double gpu_memory_utilization = *flags.GetDouble("gpu-memory-utilization");
  if (!(gpu_memory_utilization > 0.0 && gpu_memory_utilization <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu-memory-utilization must be in (0, 1], got ", gpu_memory_utilization));
  }
  setup.gpu_memory_utilization = gpu_memory_utilization;
  const std::string dtype = *flags.GetString("dtype");
  if (dtype != "auto" && dtype != "float32") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype ", dtype,
                     " is not supported: the CPU backend computes in float32 (use auto or "
                     "float32)"));
  }
  if (*flags.GetDouble("swap-space") < 0) {
    return absl::InvalidArgumentError("--swap-space must be >= 0");
  }
  HR_ASSIGN_OR_RETURN(setup.load_format, worker::ParseLoadFormat(*flags.GetString("load-format")));
  setup.tensor_parallel_size = *flags.GetInt64("tensor-parallel-size");
  if (setup.tensor_parallel_size < 1 || setup.tensor_parallel_size > kMaxTensorParallelSize) {
    return absl::InvalidArgumentError(absl::StrCat("--tensor-parallel-size must be in [1, ",
                                                   kMaxTensorParallelSize, "], got ",
                                                   setup.tensor_parallel_size));
  }
  setup.rank = std::max<int64_t>(0, *flags.GetInt64("rank"));
  HR_RETURN_IF_ERROR(worker::CheckShardable(config, ShardOf(setup)));
  setup.max_lora_rank = *flags.GetInt64("max-lora-rank");
  if (setup.max_lora_rank < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-lora-rank must be at least 1, got ", setup.max_lora_rank));
  }
  for (const std::string& entry : flags.GetStringList("lora-modules")) {
    HR_ASSIGN_OR_RETURN(worker::LoraModuleSpec spec, worker::ParseLoraModule(entry));
    for (const worker::LoraModuleSpec& earlier : setup.lora_modules) {
      if (earlier.name == spec.name) {
        return absl::InvalidArgumentError(absl::StrCat("--lora-modules names \"", spec.name,
                                                       "\" twice (", earlier.path, ", ", spec.path,
                                                       ")"));
      }
    }
    if (spec.name == model) {
      return absl::InvalidArgumentError(absl::StrCat("--lora-modules: adapter name \"", spec.name,
                                                     "\" is the base model's; rename it"));
    }
    setup.lora_modules.push_back(std::move(spec));
  }
  HR_RETURN_IF_ERROR(ParseRuntimeLora(flags, setup));
  if (setup.tensor_parallel_size > 1 && !flags.GetString("rendezvous").has_value()) {
    return absl::InvalidArgumentError("a rank of a tensor-parallel group needs --rendezvous");
  }
  return setup;
}

// This rank's shard of the weights (the whole model for a group of one), read or generated
// slice by slice: the rank never holds the whole model.
absl::StatusOr<worker::ModelWeights> LoadShard(const EngineSetup& setup) {
  return worker::LoadModelWeights(setup.config, setup.model, setup.load_format, setup.options.seed,
                                  ShardOf(setup));
}

// This rank's shards of the --lora-modules adapters, in slot order (null without any).
absl::StatusOr<std::shared_ptr<const std::vector<worker::LoraAdapter>>> LoadLoraShards(
    const EngineSetup& setup) {
  if (setup.lora_modules.empty()) return nullptr;
  auto adapters = std::make_shared<std::vector<worker::LoraAdapter>>();
  for (const worker::LoraModuleSpec& spec : setup.lora_modules) {
    HR_ASSIGN_OR_RETURN(
        worker::LoraAdapter adapter,
        worker::LoadLoraAdapter(setup.config, spec, setup.max_lora_rank, ShardOf(setup)));
    adapters->push_back(std::move(adapter));
  }
  return adapters;
}

// "sql (rank 8, scale 2: q_proj, v_proj)" for each adapter.
std::string DescribeAdapters(const std::vector<worker::LoraAdapter>& adapters) {
  std::vector<std::string> parts;
  for (const worker::LoraAdapter& adapter : adapters) {
    std::vector<std::string> targets;
    for (size_t t = 0; t < worker::kNumLoraTargets; ++t) {
      if (adapter.targets[t]) {
        targets.emplace_back(worker::LoraTargetName(static_cast<worker::LoraTarget>(t)));
      }
    }
    parts.push_back(absl::StrCat(adapter.name, " (rank ", adapter.rank, ", scale ", adapter.scale,
                                 ": ", absl::StrJoin(targets, ", "), ")"));
  }
  return absl::StrJoin(parts, "; ");
}

// Meets the other ranks of the group (after loading, so slow loaders only delay the meeting).
absl::StatusOr<std::unique_ptr<worker::Communicator>> JoinGroup(const FlagSet& flags,
                                                                const EngineSetup& setup) {
  if (setup.tensor_parallel_size == 1) return std::make_unique<worker::SingleRankCommunicator>();
  const int64_t timeout_s = *flags.GetInt64("group-timeout-s");
  if (timeout_s < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--group-timeout-s must be at least 1, got ", timeout_s));
  }
  worker::GrpcRendezvousStore store(*flags.GetString("rendezvous"));
  HR_ASSIGN_OR_RETURN(
      std::unique_ptr<worker::GlooCommunicator> comm,
      worker::GlooCommunicator::Create({.rank = static_cast<int>(setup.rank),
                                        .world_size = static_cast<int>(setup.tensor_parallel_size),
                                        .store = &store,
                                        .prefix = *flags.GetString("group-id"),
                                        .host = "127.0.0.1",
                                        .timeout = absl::Seconds(timeout_s),
                                        .rendezvous_timeout = kRendezvousTimeout}));
  return comm;
}

// A rank > 0: its shard of the model, run as the leader says until it says stop.
absl::Status RunFollower(const FlagSet& flags, std::ostream& err) {
  HR_ASSIGN_OR_RETURN(const EngineSetup setup, ParseEngineSetup(flags));
  worker::CpuBackend backend(static_cast<int>(*flags.GetInt64("threads")));
  HR_ASSIGN_OR_RETURN(const worker::ModelWeights shard, LoadShard(setup));
  worker::EngineOptions options = setup.options;
  HR_ASSIGN_OR_RETURN(options.lora_adapters, LoadLoraShards(setup));
  HR_ASSIGN_OR_RETURN(std::unique_ptr<worker::Communicator> comm, JoinGroup(flags, setup));
  HR_ASSIGN_OR_RETURN(std::unique_ptr<worker::Follower> follower,
                      worker::Follower::Create(setup.config, shard, options, &backend, comm.get()));
  options.lora_adapters = nullptr;  // the host copies go: the device holds the adapters
  err << "headroom worker rank " << setup.rank << " of " << setup.tensor_parallel_size
      << ": following rank 0\n";
  HR_RETURN_IF_ERROR(follower->Run());
  err << "headroom worker rank " << setup.rank << ": stopped after " << follower->steps()
      << " steps\n";
  return absl::OkStatus();
}

// The bytes each token id adds to a text, for JSON mode: from the model's tokenizer
// (ModelTokenizer; special tokens: none). Null when it has none, with a warning: the worker
// serves and refuses JSON mode (a larger vocabulary read as bytes would constrain nonsense).
std::shared_ptr<const worker::JsonVocabulary> LoadJsonVocabulary(const std::string& model,
                                                                 int64_t vocab_size,
                                                                 std::ostream& err) {
  absl::StatusOr<std::unique_ptr<router::Tokenizer>> tokenizer = ModelTokenizer(model, vocab_size);
  if (!tokenizer.ok()) {
    err << "headroom worker: " << model << ": " << tokenizer.status().message()
        << "; response_format json_object and json_schema are refused\n";
    return nullptr;
  }
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  for (int64_t id = 0; id < vocab_size; ++id) {
    const auto token = static_cast<int32_t>(id);
    if (!(*tokenizer)->IsSpecialToken(token)) {
      bytes[static_cast<size_t>(id)] = (*tokenizer)->TokenBytes(token);
    }
  }
  return std::make_shared<const worker::JsonVocabulary>(std::move(bytes));
}

// A group of one, or rank 0 of a group: serves headroom.v1.Worker and leads the followers.
absl::Status Serve(const FlagSet& flags, const sigset_t& stop_signals, std::ostream& out,
                   std::ostream& err) {
  HR_ASSIGN_OR_RETURN(const EngineSetup setup, ParseEngineSetup(flags));
  const std::string& model = setup.model;
  worker::EngineOptions options = setup.options;
  options.json_vocabulary = LoadJsonVocabulary(model, setup.config.vocab_size, err);
  HR_ASSIGN_OR_RETURN(const worker::SamplingDefaults sampling_defaults,
                      worker::LoadSamplingDefaults(*flags.GetString("generation-config"), model));
  if (!sampling_defaults.empty()) {
    // vLLM says so at startup too: outputs differ from a server with vLLM's defaults.
    err << "headroom worker: requests that leave them unset sample with the model's "
           "generation_config.json values ("
        << worker::DescribeSamplingDefaults(sampling_defaults)
        << ", the model creator's recommendation); pass --generation-config vllm for vLLM's "
           "defaults\n";
  }
  if (!options.pooling.source.empty()) {
    err << "headroom worker: embeddings "
        << (options.pooling.last_token()
                ? absl::StrCat("pool the last token",
                               options.pooling.normalize ? ", normalized" : ", not normalized")
                : absl::StrCat("are refused: the model pools by ", options.pooling.mode,
                               " and headroom by the last token only"))
        << " (" << options.pooling.source << ")\n";
  }
  const int64_t drain_timeout_s = *flags.GetInt64("drain-timeout-s");
  const int64_t step_stall_s = *flags.GetInt64("step-stall-timeout-s");
  if (step_stall_s < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--step-stall-timeout-s must be >= 0 (0: never), got ", step_stall_s));
  }
  const absl::Duration step_stall_timeout = step_stall_s == 0
                                                ? absl::InfiniteDuration()
                                                : absl::Seconds(static_cast<double>(step_stall_s));
  const int64_t port = *flags.GetInt64("port");
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--port must be in [0, 65535], got ", port));
  }
  const std::string host = *flags.GetString("host");
  const int64_t metrics_port = *flags.GetInt64("metrics-port");
  if (metrics_port < -1 || metrics_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-port must be in [-1, 65535], got ", metrics_port));
  }

  metrics::Registry registry;
  // The CPU backend keeps its KV pool in float32 (--dtype allows nothing else).
  worker::WorkerMetrics worker_metrics(&registry, model, options.max_model_len,
                                       {.block_size = options.block_size,
                                        .cache_dtype = "float32",
                                        .enable_prefix_caching = options.enable_prefix_caching,
                                        .gpu_memory_utilization = setup.gpu_memory_utilization,
                                        .num_gpu_blocks = options.num_kv_blocks},
                                       !setup.lora_modules.empty() || setup.runtime_lora);
  std::atomic<bool> serving{false};

  // The server comes up first, NOT_SERVING, so health probes answer while the weights load.
  worker::WorkerService service(
      {.model = model,
       .max_model_len = options.max_model_len,
       .block_size = options.block_size,
       .sliding_window = static_cast<int32_t>(worker::KvCacheSlidingWindow(setup.config)),
       .kv_group_windows = worker::KvCacheLayerGroups(setup.config).windows,
       .max_num_batched_tokens = options.max_num_batched_tokens,
       .priority_scheduling = options.scheduling_policy == worker::SchedulingPolicy::kPriority,
       .lora_resolver = !options.lora_resolver_dir.empty(),
       .classifier = setup.config.classifier.has_value(),
       .reranker = setup.config.classifier.has_value() && !setup.config.classifier->method.empty(),
       .num_labels = setup.config.classifier.has_value()
                         ? static_cast<int32_t>(setup.config.classifier->num_labels())
                         : 0,
       .step_stall_timeout = step_stall_timeout,
       .observer = &worker_metrics,
       .sampling_defaults = sampling_defaults});
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(absl::StrCat(host, ":", port), grpc::InsecureServerCredentials(),
                           &selected_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", port));
  }
  service.SetHealthService(server->GetHealthCheckService());
  // Up while the weights load, so /health answers 503 rather than refusing connections.
  std::unique_ptr<metrics::MetricsHttpServer> metrics_server;
  if (metrics_port >= 0) {
    absl::StatusOr<std::unique_ptr<metrics::MetricsHttpServer>> started =
        metrics::MetricsHttpServer::Start(host, static_cast<int>(metrics_port), &registry,
                                          [&serving] { return serving.load(); });
    if (!started.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--metrics-port ", metrics_port, ": ", started.status().message(),
                       " (pass --metrics-port 0 for a free port or -1 to serve without metrics)"));
    }
    metrics_server = *std::move(started);
  }

  const auto load_start = absl::Now();
  worker::CpuBackend backend(static_cast<int>(*flags.GetInt64("threads")));
  std::unique_ptr<worker::Communicator> comm;
  std::mutex failure_mu;
  absl::Status group_failure;  // guarded by failure_mu
  std::unique_ptr<worker::EngineLoop> loop;
  {
    HR_ASSIGN_OR_RETURN(const worker::ModelWeights shard, LoadShard(setup));
    HR_ASSIGN_OR_RETURN(options.lora_adapters, LoadLoraShards(setup));
    if (options.lora_adapters != nullptr) {
      err << "headroom worker: LoRA adapters " << DescribeAdapters(*options.lora_adapters) << "\n";
    }
    if (setup.runtime_lora) {
      err << "headroom worker: " << options.lora_slots << " LoRA slots at rank "
          << options.max_lora_rank << " reserved for adapters loaded at run time\n";
    }
    if (!options.lora_resolver_dir.empty()) {
      err << "headroom worker: LoRA adapters named by requests load from "
          << options.lora_resolver_dir << "/<name> on first use\n";
    }
    HR_ASSIGN_OR_RETURN(comm, JoinGroup(flags, setup));
    HR_ASSIGN_OR_RETURN(std::unique_ptr<worker::Engine> engine,
                        worker::Engine::Create(setup.config, shard, options, &backend, comm.get()));
    options.lora_adapters = nullptr;  // the host copies go: the device holds the adapters
    // A failed group stops this process like a SIGTERM (its requests already ended
    // UNAVAILABLE), and the exit status says it failed.
    loop = std::make_unique<worker::EngineLoop>(
        std::move(engine),
        [&failure_mu, &group_failure](const absl::Status& failure) {
          {
            std::lock_guard<std::mutex> lock(failure_mu);
            group_failure = failure;
          }
          kill(getpid(), SIGTERM);
        },
        [&worker_metrics](int32_t tokens) { worker_metrics.OnStep(tokens); });
  }
  service.SetReady(loop.get());
  worker_metrics.SetLoop(loop.get());
  serving = true;
  err << "headroom worker: " << model
      << (setup.tensor_parallel_size > 1
              ? absl::StrCat(" (rank 0 of ", setup.tensor_parallel_size, ")")
              : std::string())
      << " loaded in " << absl::FormatDuration(absl::Now() - load_start) << "; "
      << options.num_kv_blocks << " KV blocks of " << options.block_size
      << " tokens, max_model_len " << options.max_model_len << ", eos " << options.eos_token_id
      << (options.extra_eos_token_ids.empty()
              ? std::string()
              : absl::StrCat(" (also stops on ", absl::StrJoin(options.extra_eos_token_ids, ","),
                             ")"))
      << "\n";
  out << "headroom worker listening on " << host << ":" << selected_port << std::endl;
  if (metrics_server != nullptr) {
    out << "headroom worker metrics on " << host << ":" << metrics_server->port() << std::endl;
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  err << "headroom worker: signal " << signal_number << ", draining (at most " << drain_timeout_s
      << " s)\n";
  serving = false;
  service.StartDrain();
  if (!service.WaitForIdle(absl::Now() + absl::Seconds(drain_timeout_s))) {
    err << "headroom worker: drain timeout; cancelling the requests left\n";
  }
  service.Shutdown();
  // Streams still open are cancelled; their requests get aborted by the still-running loop.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  if (metrics_server != nullptr) metrics_server->Stop();  // before the loop its hook reads
  worker_metrics.SetLoop(nullptr);
  loop->Stop();
  err << "headroom worker: stopped\n";
  std::lock_guard<std::mutex> lock(failure_mu);
  return group_failure;
}

}  // namespace

int RunWorkerCommand(absl::Span<const std::string_view> args, std::ostream& out,
                     std::ostream& err) {
  FlagSet flags = MakeWorkerFlags();
  if (const std::optional<int> done = ParseFlagsOrExit(flags, args, out, err)) return *done;
  const sigset_t stop_signals = BlockStopSignals();
  // A peer rank that died must fail a collective (EPIPE), not kill this process.
  signal(SIGPIPE, SIG_IGN);
  const int64_t tp = *flags.GetInt64("tensor-parallel-size");
  const int64_t rank = *flags.GetInt64("rank");
  if (tp > 1 && rank < 0) return RunWorkerGroup(args, flags, stop_signals, out, err);
  const absl::Status status =
      rank > 0 ? RunFollower(flags, err) : Serve(flags, stop_signals, out, err);
  if (!status.ok()) {
    err << "error: " << status.message() << "\n";
    return kExitRefused;
  }
  return kExitOk;
}

}  // namespace headroom::cli
