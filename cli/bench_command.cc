#include "cli/bench_command.h"

#include <chrono>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/bench_serve.h"
#include "cli/exit_codes.h"
#include "cli/hf_overrides_flag.h"
#include "cli/load_format_flag.h"
#include "cli/parse_flags.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "worker/backend/cpu_backend.h"
#include "worker/engine/engine.h"
#include "worker/model/checkpoint.h"
#include "worker/model/model_config.h"

namespace headroom::cli {
namespace {

FlagSet MakeBenchFlags() {
  FlagSet flags("headroom bench",
                "Offline throughput: --num-prompts random prompts of --input-len tokens, each "
                "generating --output-len tokens (EOS ignored), all queued at once, run to "
                "completion on the CPU backend. Prints requests/s, output and total tokens/s and "
                "preemptions. `headroom bench serve --help`: the online benchmark against a "
                "running router.");
  flags.AddString("model", std::nullopt,
                  "Hugging Face model directory or dummy:<preset> (seeded random weights).");
  flags.AddInt64("num-prompts", 100, "Requests to run.");
  flags.AddInt64("input-len", 128, "Prompt tokens per request.");
  flags.AddInt64("output-len", 128, "Generated tokens per request.");
  flags.AddInt64("max-num-seqs", 256, "Most sequences running in one step.");
  flags.AddInt64("max-num-batched-tokens", 8192, "Most tokens in one forward step.");
  flags.AddInt64("max-model-len", std::nullopt,
                 "Longest sequence (default: input-len + output-len).");
  flags.AddInt64("block-size", 16, "Tokens per KV-cache block.");
  flags.AddInt64("num-gpu-blocks-override", std::nullopt,
                 "KV blocks in the pool, the null block included (default: enough for "
                 "--max-num-seqs sequences of --max-model-len tokens).");
  flags.AddBool("enable-prefix-caching", true, "Reuse KV blocks of shared prompt prefixes.");
  AddLoadFormatFlag(flags);
  AddHfOverridesFlag(flags);
  flags.AddDouble("temperature", 0.0, "Sampling temperature (0 = greedy).");
  flags.AddInt64("prompt-logprobs", -1,
                 "Top-N prompt logprobs every request asks for (-1 = none; vLLM's "
                 "prompt_logprobs).");
  flags.AddInt64("seed", 0, "Seed of the prompts and of the dummy weights.");
  flags.AddInt64("threads", 0, "CPU threads (0 = all).");
  flags.MarkRequired("model");
  return flags;
}

absl::Status Bench(const FlagSet& flags, std::ostream& out) {
  const std::string model_name = *flags.GetString("model");
  HR_ASSIGN_OR_RETURN(worker::ModelConfig config,
                      worker::LoadModelConfig(model_name, HfOverrides(flags)));
  const int64_t num_prompts = *flags.GetInt64("num-prompts");
  const int64_t input_len = *flags.GetInt64("input-len");
  const int64_t output_len = *flags.GetInt64("output-len");
  if (num_prompts < 1 || input_len < 1 || output_len < 1) {
    return absl::InvalidArgumentError("--num-prompts, --input-len and --output-len must be >= 1");
  }
  if (const int64_t n = *flags.GetInt64("prompt-logprobs"); n < -1 || n > 20) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prompt-logprobs must be -1 (none) or in [0, 20], got ", n));
  }
  const int64_t max_model_len = flags.GetInt64("max-model-len").value_or(input_len + output_len);
  const int64_t block_size = *flags.GetInt64("block-size");
  const int64_t max_num_seqs = *flags.GetInt64("max-num-seqs");
  if (block_size < 1 || max_num_seqs < 1) {
    return absl::InvalidArgumentError("--block-size and --max-num-seqs must be >= 1");
  }
  const int64_t num_blocks =
      flags.GetInt64("num-gpu-blocks-override")
          .value_or(1 + max_num_seqs * ((max_model_len + block_size - 1) / block_size));
  const uint64_t seed = static_cast<uint64_t>(*flags.GetInt64("seed"));

  const auto load_start = std::chrono::steady_clock::now();
  HR_ASSIGN_OR_RETURN(const worker::LoadFormat load_format,
                      worker::ParseLoadFormat(*flags.GetString("load-format")));
  absl::StatusOr<worker::ModelWeights> weights =
      worker::LoadModelWeights(config, model_name, load_format, seed);
  HR_RETURN_IF_ERROR(weights.status());
  worker::CpuBackend backend(static_cast<int>(*flags.GetInt64("threads")));
  HR_ASSIGN_OR_RETURN(
      auto engine,
      worker::Engine::Create(config, *weights,
                             {.max_num_seqs = static_cast<int32_t>(max_num_seqs),
                              .max_num_batched_tokens =
                                  static_cast<int32_t>(*flags.GetInt64("max-num-batched-tokens")),
                              .max_model_len = static_cast<int32_t>(max_model_len),
                              .block_size = static_cast<int32_t>(block_size),
                              .num_kv_blocks = static_cast<int32_t>(num_blocks),
                              .enable_prefix_caching = flags.GetBool("enable-prefix-caching")},
                             &backend));
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();

  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(config.vocab_size) - 1);
  for (int64_t i = 0; i < num_prompts; ++i) {
    worker::Request r;
    r.id = worker::RequestId{i};
    for (int64_t t = 0; t < input_len; ++t) r.prompt.push_back(token(rng));
    r.sampling.max_tokens = static_cast<int32_t>(output_len);
    r.sampling.ignore_eos = true;
    r.sampling.temperature = static_cast<float>(*flags.GetDouble("temperature"));
    r.sampling.prompt_logprobs = static_cast<int32_t>(*flags.GetInt64("prompt-logprobs"));
    HR_RETURN_IF_ERROR(engine->AddRequest(std::move(r)));
  }
  int64_t output_tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  while (engine->HasWork()) {
    HR_ASSIGN_OR_RETURN(const std::vector<worker::StepToken> tokens, engine->Step());
    output_tokens += static_cast<int64_t>(tokens.size());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const worker::EngineStats stats = engine->Stats();
  const double requests = static_cast<double>(num_prompts);
  const double total_tokens = static_cast<double>(num_prompts * input_len + output_tokens);
  out << absl::StrFormat(
      "model %s on %s: %d prompts x (%d in, %d out), max_num_seqs %d, %d KV blocks of %d\n"
      "loaded in %.2f s; ran %d steps in %.2f s\n"
      "Throughput: %.2f requests/s, %.2f total tokens/s, %.2f output tokens/s\n"
      "preemptions: %d\n",
      model_name, backend.name(), num_prompts, input_len, output_len, max_num_seqs, num_blocks,
      block_size, load_seconds, stats.steps, seconds, requests / seconds, total_tokens / seconds,
      static_cast<double>(output_tokens) / seconds, stats.scheduler.num_preemptions);
  return absl::OkStatus();
}

}  // namespace

int RunBenchCommand(absl::Span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && args[0] == "serve") return RunBenchServe(args.subspan(1), out, err);
  FlagSet flags = MakeBenchFlags();
  if (const std::optional<int> done = ParseFlagsOrExit(flags, args, out, err)) return *done;
  if (absl::Status status = Bench(flags, out); !status.ok()) {
    err << "error: " << status.message() << "\n";
    return kExitRefused;
  }
  return kExitOk;
}

}  // namespace headroom::cli
