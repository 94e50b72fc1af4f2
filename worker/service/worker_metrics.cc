#include "worker/service/worker_metrics.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {
namespace {

const std::vector<std::string> kModel = {"model_name"};

// Bucket bounds in seconds; chosen for CPU and GPU serving alike (headroom's choice, close in
// range to vLLM's so the same dashboards read sensibly).
const std::vector<double> kTtftBounds = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                         0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                         20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBounds = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                        0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBounds = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                        5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// Tokens per engine step (vLLM's bounds).
const std::vector<double> kIterationTokenBounds = {1,   8,    16,   32,   64,   128,  256,
                                                   512, 1024, 2048, 4096, 8192, 16384};

// Preemptions of one request (headroom's choice: most requests are never preempted, so 0 is a
// bucket of its own).
const std::vector<double> kPreemptionBounds = {0, 1, 2, 5, 10, 20, 50, 100};

// A histogram labelled by model_name only.
metrics::Histogram& ModelHistogram(metrics::Registry* registry, const std::string& name,
                                   const std::string& help, const std::vector<double>& bounds,
                                   const std::string& model_name) {
  return registry->AddHistogram(name, help, kModel, bounds).WithLabels({model_name});
}

// Advances `counter` by how far `value` moved since `last` (a smaller value restarts the count).
void AdvanceCounter(metrics::Counter& counter, int64_t value, int64_t& last) {
  if (value > last) counter.Increment(static_cast<double>(value - last));
  last = value;
}

}  // namespace

WorkerMetrics::WorkerMetrics(metrics::Registry* registry, const std::string& model_name,
                             int32_t max_model_len, const CacheConfigInfo& cache, bool lora)
    : num_requests_running_(
          registry
              ->AddGauge("vllm:num_requests_running",
                         "Number of requests running on the engine (holding KV blocks).", kModel)
              .WithLabels({model_name})),
      num_requests_waiting_(registry
                                ->AddGauge("vllm:num_requests_waiting",
                                           "Number of requests waiting for admission, preempted "
                                           "ones included.",
                                           kModel)
                                .WithLabels({model_name})),
      kv_cache_usage_perc_(registry
                               ->AddGauge("vllm:kv_cache_usage_perc",
                                          "KV-cache usage: used blocks / usable blocks, 0 to 1.",
                                          kModel)
                               .WithLabels({model_name})),
      kv_blocks_total_(registry
                           ->AddGauge("headroom:kv_blocks_total",
                                      "KV blocks that can hold tokens (the pool without the "
                                      "null block).",
                                      kModel)
                           .WithLabels({model_name})),
      kv_blocks_free_(registry
                          ->AddGauge("headroom:kv_blocks_free",
                                     "KV blocks in no block table, evictable cached ones "
                                     "included.",
                                     kModel)
                          .WithLabels({model_name})),
      kv_blocks_evictable_(registry
                               ->AddGauge("headroom:kv_blocks_evictable",
                                          "Free KV blocks that still hold a cached prefix.", kModel)
                               .WithLabels({model_name})),
      kv_internal_waste_slots_(registry
                                   ->AddGauge("headroom:kv_internal_waste_slots",
                                              "Assigned but unused token slots in the running "
                                              "sequences' last blocks (internal fragmentation).",
                                              kModel)
                                   .WithLabels({model_name})),
      device_allocations_(registry
                              ->AddGauge("headroom:device_allocations",
                                         "Device allocations made by the engine (constant after "
                                         "startup).",
                                         kModel)
                              .WithLabels({model_name})),
      constraint_cache_bytes_(registry
                                  ->AddGauge("headroom:constraint_cache_bytes",
                                             "Host memory the structured-output token lists "
                                             "keep, all constraints together (at most 64 MiB).",
                                             kModel)
                                  .WithLabels({model_name})),
      model_name_(model_name),
      num_preemptions_(
          registry->AddCounter("vllm:num_preemptions", "Cumulative number of preemptions.", kModel)
              .WithLabels({model_name})),
      prefix_cache_queries_(registry
                                ->AddCounter("vllm:prefix_cache_queries",
                                             "Prefix-cache queries, in prompt tokens looked up.",
                                             kModel)
                                .WithLabels({model_name})),
      prefix_cache_hits_(registry
                             ->AddCounter("vllm:prefix_cache_hits",
                                          "Prefix-cache hits, in prompt tokens served from "
                                          "cached blocks.",
                                          kModel)
                             .WithLabels({model_name})),
      prompt_tokens_(
          registry->AddCounter("vllm:prompt_tokens", "Number of prefill tokens processed.", kModel)
              .WithLabels({model_name})),
      generation_tokens_(registry
                             ->AddCounter("vllm:generation_tokens",
                                          "Number of generation tokens processed.", kModel)
                             .WithLabels({model_name})),
      request_success_(registry->AddCounter("vllm:request_success",
                                            "Count of finished requests, by finish reason.",
                                            {"finished_reason", "model_name"})),
      time_to_first_token_(ModelHistogram(registry, "vllm:time_to_first_token_seconds",
                                          "Histogram of time to first token in seconds.",
                                          kTtftBounds, model_name)),
      inter_token_latency_(ModelHistogram(registry, "vllm:inter_token_latency_seconds",
                                          "Histogram of inter-token latency in seconds.",
                                          kItlBounds, model_name)),
      e2e_request_latency_(ModelHistogram(registry, "vllm:e2e_request_latency_seconds",
                                          "Histogram of end-to-end request latency in "
                                          "seconds.",
                                          kE2eBounds, model_name)),
      // vLLM's request phases, with its bounds (those of the end-to-end latency).
      request_queue_time_(ModelHistogram(registry, "vllm:request_queue_time_seconds",
                                         "Histogram of time spent waiting to be first "
                                         "scheduled, in seconds.",
                                         kE2eBounds, model_name)),
      request_prefill_time_(ModelHistogram(registry, "vllm:request_prefill_time_seconds",
                                           "Histogram of time from first scheduled to the "
                                           "first token, in seconds.",
                                           kE2eBounds, model_name)),
      request_decode_time_(ModelHistogram(registry, "vllm:request_decode_time_seconds",
                                          "Histogram of time from the first token to the "
                                          "last, in seconds.",
                                          kE2eBounds, model_name)),
      request_inference_time_(ModelHistogram(registry, "vllm:request_inference_time_seconds",
                                             "Histogram of time from first scheduled to the "
                                             "last token (prefill + decode), in seconds.",
                                             kE2eBounds, model_name)),
      request_prompt_tokens_(ModelHistogram(registry, "vllm:request_prompt_tokens",
                                            "Number of prefill tokens processed.",
                                            metrics::OneTwoFiveBounds(max_model_len), model_name)),
      request_generation_tokens_(ModelHistogram(
          registry, "vllm:request_generation_tokens", "Number of generation tokens processed.",
          metrics::OneTwoFiveBounds(max_model_len), model_name)),
      request_params_max_tokens_(ModelHistogram(registry, "vllm:request_params_max_tokens",
                                                "Histogram of the max_tokens request "
                                                "parameter.",
                                                metrics::OneTwoFiveBounds(max_model_len),
                                                model_name)),
      iteration_tokens_(ModelHistogram(registry, "vllm:iteration_tokens_total",
                                       "Histogram of the number of tokens per engine step.",
                                       kIterationTokenBounds, model_name)),
      request_time_per_output_token_(
          ModelHistogram(registry, "vllm:request_time_per_output_token_seconds",
                         "Histogram of a request's mean time per output token after the "
                         "first (its decode time / (generation tokens - 1)), in seconds.",
                         kItlBounds, model_name)),
      request_num_preemptions_(ModelHistogram(registry, "vllm:request_num_preemptions",
                                              "Number of times a request was preempted, "
                                              "observed when it ends.",
                                              kPreemptionBounds, model_name)) {
  // Every reason is exported from the start, so rate() sees the first request of each.
  success_stop_ = &request_success_.WithLabels({"stop", model_name});
  success_length_ = &request_success_.WithLabels({"length", model_name});
  success_abort_ = &request_success_.WithLabels({"abort", model_name});
  // Python's str() of each value, as vLLM writes its config into the labels.
  registry
      ->AddGauge("vllm:cache_config_info", "Information of the KV cache configuration (value 1).",
                 {"block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization",
                  "num_gpu_blocks", "model_name"})
      .WithLabels({absl::StrCat(cache.block_size), cache.cache_dtype,
                   cache.enable_prefix_caching ? "True" : "False",
                   absl::StrCat(cache.gpu_memory_utilization), absl::StrCat(cache.num_gpu_blocks),
                   model_name})
      .Set(1);
  // One series per adapter (vLLM's vllm:lora_requests_info puts the running and waiting adapters'
  // names into label values instead, a new series for every combination; not exported).
  if (lora) {
    lora_running_ = &registry->AddGauge("headroom:lora_requests_running",
                                        "Requests of each LoRA adapter holding KV blocks.",
                                        {"lora_name", "model_name"});
    lora_waiting_ = &registry->AddGauge("headroom:lora_requests_waiting",
                                        "Requests of each LoRA adapter waiting for admission.",
                                        {"lora_name", "model_name"});
    lora_slot_waiting_ =
        &registry
             ->AddGauge("headroom:lora_requests_waiting_for_slot",
                        "Requests whose LoRA adapter waits for a slot to load into (counted in "
                        "vllm:num_requests_waiting too).",
                        kModel)
             .WithLabels({model_name});
  }
  registry->AddCollectHook([this] { Collect(); });
}

void WorkerMetrics::Collect() {
  // The process's budget: read without the engine thread (atomic).
  constraint_cache_bytes_.Set(static_cast<double>(MaskBudget::Default().used()));
  EngineLoop* loop = loop_.load();
  if (loop == nullptr) return;
  const EngineStats stats = loop->Stats();
  num_requests_running_.Set(stats.scheduler.num_running);
  num_requests_waiting_.Set(stats.scheduler.num_waiting);
  kv_cache_usage_perc_.Set(stats.kv.usage);
  kv_blocks_total_.Set(stats.kv.num_usable_blocks);
  kv_blocks_free_.Set(stats.kv.num_free_blocks);
  kv_blocks_evictable_.Set(stats.kv.num_evictable_blocks);
  kv_internal_waste_slots_.Set(static_cast<double>(stats.kv.internal_waste_slots));
  device_allocations_.Set(static_cast<double>(stats.device_allocations));
  const auto per_slot = [](const std::vector<int32_t>& counts, size_t slot) {
    return slot < counts.size() ? counts[slot] : 0;
  };
  if (lora_running_ != nullptr) {
    lora_slot_waiting_->Set(stats.lora_slot_waiting);
    for (const std::string& name : lora_exported_) {  // unloaded ones stay at 0
      lora_running_->WithLabels({name, model_name_}).Set(0);
      lora_waiting_->WithLabels({name, model_name_}).Set(0);
    }
    for (const ServedLoraAdapter& adapter : *stats.lora_adapters) {
      const auto slot = static_cast<size_t>(adapter.slot);
      lora_running_->WithLabels({adapter.name, model_name_})
          .Set(per_slot(stats.scheduler.lora_running, slot));
      lora_waiting_->WithLabels({adapter.name, model_name_})
          .Set(per_slot(stats.scheduler.lora_waiting, slot));
      if (std::find(lora_exported_.begin(), lora_exported_.end(), adapter.name) ==
          lora_exported_.end()) {
        lora_exported_.push_back(adapter.name);
      }
    }
  }
  AdvanceCounter(num_preemptions_, stats.scheduler.num_preemptions, last_preemptions_);
  AdvanceCounter(prefix_cache_queries_, stats.kv.prefix_queries, last_prefix_queries_);
  AdvanceCounter(prefix_cache_hits_, stats.kv.prefix_hits, last_prefix_hits_);
}

void WorkerMetrics::OnFirstToken(absl::Duration ttft, int32_t prompt_tokens) {
  prompt_tokens_.Increment(prompt_tokens);
  generation_tokens_.Increment();
  time_to_first_token_.Observe(absl::ToDoubleSeconds(ttft));
}

void WorkerMetrics::OnNextToken(absl::Duration inter_token) {
  generation_tokens_.Increment();
  inter_token_latency_.Observe(absl::ToDoubleSeconds(inter_token));
}

void WorkerMetrics::OnFinish(const FinishedRequest& request) {
  switch (request.reason) {
    case FinishReason::kStop:
      success_stop_->Increment();
      break;
    case FinishReason::kLength:
      success_length_->Increment();
      break;
    case FinishReason::kAbort:
      success_abort_->Increment();
      break;
    case FinishReason::kNone:
      return;
  }
  e2e_request_latency_.Observe(absl::ToDoubleSeconds(request.e2e));
  request_prompt_tokens_.Observe(request.prompt_tokens);
  request_generation_tokens_.Observe(request.generation_tokens);
  request_params_max_tokens_.Observe(request.max_tokens);
  request_num_preemptions_.Observe(request.num_preemptions);
  if (const std::optional<RequestPhases>& phases = request.phases; phases.has_value()) {
    request_queue_time_.Observe(absl::ToDoubleSeconds(phases->queue));
    request_prefill_time_.Observe(absl::ToDoubleSeconds(phases->prefill));
    request_decode_time_.Observe(absl::ToDoubleSeconds(phases->decode));
    request_inference_time_.Observe(absl::ToDoubleSeconds(phases->prefill + phases->decode));
    if (request.generation_tokens > 1) {
      request_time_per_output_token_.Observe(absl::ToDoubleSeconds(phases->decode) /
                                             (request.generation_tokens - 1));
    }
  }
}

}  // namespace headroom::worker
