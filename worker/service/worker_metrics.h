// WorkerMetrics: a worker's Prometheus metrics, under vLLM's names where the meaning is the same
// (docs/metrics.md lists them all). Every series carries `model_name`.
//
// Two sources:
//   - EngineLoop::Stats(), read at every scrape (a registry collect hook): the gauges, and the
//     counters the engine keeps cumulatively (preemptions, prefix-cache queries and hits), which
//     are advanced by the difference from the previous scrape;
//   - the worker service's Submit streams (RequestObserver, engine thread): token counters,
//     finished requests by reason, and the latency histograms.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "worker/engine/engine_loop.h"
#include "worker/service/worker_service.h"

namespace headroom::worker {

// The KV cache as configured: the labels of vllm:cache_config_info (value 1), vLLM's names.
struct CacheConfigInfo {
  int32_t block_size = 0;
  std::string cache_dtype;  // element type of the KV pool
  bool enable_prefix_caching = false;
  double gpu_memory_utilization = 0.0;
  int32_t num_gpu_blocks = 0;  // the pool, the reserved null block included
};

class WorkerMetrics final : public RequestObserver {
 public:
  // Adds the families to `registry` (which must outlive this object's use, and this object must
  // outlive the registry's renders). `max_model_len` bounds the token-count histograms.
  // `lora`: the worker serves LoRA adapters (--lora-modules, or loads at run time): each adapter
  // it serves gets running and waiting gauges (an unloaded one's stay, at 0).
  WorkerMetrics(metrics::Registry* registry, const std::string& model_name, int32_t max_model_len,
                const CacheConfigInfo& cache, bool lora = false);

  // Statistics come from `loop` from now on (before: the engine gauges stay 0).
  void SetLoop(EngineLoop* loop) { loop_.store(loop); }

  void OnFirstToken(absl::Duration ttft, int32_t prompt_tokens) override;
  void OnNextToken(absl::Duration inter_token) override;
  void OnFinish(const FinishedRequest& request) override;
  // A step of the engine computed `tokens` tokens (EngineLoop's step callback).
  void OnStep(int32_t tokens) { iteration_tokens_.Observe(tokens); }

 private:
  // Copies EngineLoop::Stats() into the gauges and advances the stats-backed counters. Runs under
  // the registry's lock, one scrape at a time, so last_* need no lock of their own.
  void Collect();

  std::atomic<EngineLoop*> loop_{nullptr};

  // Gauges.
  metrics::Gauge& num_requests_running_;
  metrics::Gauge& num_requests_waiting_;
  metrics::Gauge& kv_cache_usage_perc_;
  metrics::Gauge& kv_blocks_total_;
  metrics::Gauge& kv_blocks_free_;
  metrics::Gauge& kv_blocks_evictable_;
  metrics::Gauge& kv_internal_waste_slots_;
  metrics::Gauge& device_allocations_;
  metrics::Gauge& constraint_cache_bytes_;
  // Per LoRA adapter (by name): its requests running and waiting; null without LoRA.
  const std::string model_name_;
  metrics::Family<metrics::Gauge>* lora_running_ = nullptr;
  metrics::Family<metrics::Gauge>* lora_waiting_ = nullptr;
  // Requests waiting for a LoRA slot (EngineStats::lora_slot_waiting); null without LoRA.
  metrics::Gauge* lora_slot_waiting_ = nullptr;
  std::vector<std::string> lora_exported_;  // names with series; Collect's, under its lock
  // Counters fed from the engine's cumulative statistics.
  metrics::Counter& num_preemptions_;
  metrics::Counter& prefix_cache_queries_;
  metrics::Counter& prefix_cache_hits_;
  int64_t last_preemptions_ = 0;
  int64_t last_prefix_queries_ = 0;
  int64_t last_prefix_hits_ = 0;
  // Counters and histograms fed from Submit streams.
  metrics::Counter& prompt_tokens_;
  metrics::Counter& generation_tokens_;
  metrics::Family<metrics::Counter>& request_success_;
  metrics::Counter* success_stop_ = nullptr;    // finished_reason="stop"
  metrics::Counter* success_length_ = nullptr;  // finished_reason="length"
  metrics::Counter* success_abort_ = nullptr;   // finished_reason="abort"
  metrics::Histogram& time_to_first_token_;
  metrics::Histogram& inter_token_latency_;
  metrics::Histogram& e2e_request_latency_;
  metrics::Histogram& request_queue_time_;
  metrics::Histogram& request_prefill_time_;
  metrics::Histogram& request_decode_time_;
  metrics::Histogram& request_inference_time_;
  metrics::Histogram& request_prompt_tokens_;
  metrics::Histogram& request_generation_tokens_;
  metrics::Histogram& request_params_max_tokens_;
  metrics::Histogram& iteration_tokens_;
  metrics::Histogram& request_time_per_output_token_;
  metrics::Histogram& request_num_preemptions_;
};

}  // namespace headroom::worker
