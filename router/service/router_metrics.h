// RouterMetrics: the router's Prometheus metrics (docs/metrics.md lists them). Served on the
// router's HTTP port at /metrics.
//
// Two sources:
//   - the Dispatcher's Snapshot(), read at every scrape (a registry collect hook): queue depth,
//     requests in flight, and every group's load as the router sees it, labelled by `group` (the
//     leader's address), so one scrape of a router shows the whole cluster;
//   - the InferenceService's Generate streams: refusals by reason, failovers, placement latency;
//   - finished requests (the Inference service for gRPC ones, the HTTP front for OpenAI ones,
//     which know their `n`): vLLM's vllm:request_params_n and
//     vllm:request_max_num_generation_tokens, labelled by model_name.
#pragma once

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metrics.h"

namespace headroom::router {

class Dispatcher;

// Why a Generate was refused before it reached a worker (the `reason` label).
enum class RefusalReason {
  kInvalid,       // INVALID_ARGUMENT: bad field, prompt too long, never fits any group
  kUnknownModel,  // NOT_FOUND
  kQueueFull,     // RESOURCE_EXHAUSTED: admission queue above its high watermark
  kNoGroup,       // UNAVAILABLE: no group up (or none left to fail over to)
  kDeadline,      // DEADLINE_EXCEEDED while queued
  kBusy,          // RESOURCE_EXHAUSTED: too many calls wait to be parsed or tokenized (HandlerPool)
  kConnections,   // HTTP 429: a connection past --max-connections (refused before any request)
};
const char* RefusalReasonLabel(RefusalReason reason);
// The reason for a status a request ended with before placement; kInvalid for codes not listed.
RefusalReason RefusalReasonOf(absl::StatusCode code);

class RouterMetrics {
 public:
  // Adds the families to `registry`; `dispatcher` is read at every scrape. Both must outlive the
  // registry's renders.
  RouterMetrics(metrics::Registry* registry, const Dispatcher* dispatcher);

  void OnRefused(RefusalReason reason);
  void OnFailover();
  // Time from admission (Submit) to the first placement decision.
  void OnPlaced(absl::Duration waited);
  // A request whose `n` samples all finished (any finish reason); `max_generation_tokens` is the
  // most tokens one of them generated.
  void OnRequestFinished(const std::string& model_name, int32_t n, int64_t max_generation_tokens);

 private:
  // Copies the dispatcher's snapshot into the gauges. Runs under the registry lock, one scrape at
  // a time, so known_groups_ needs no lock of its own.
  void Collect();

  const Dispatcher* const dispatcher_;
  metrics::Gauge& queue_depth_;
  metrics::Gauge& in_flight_;
  metrics::Family<metrics::Counter>& refusals_;
  metrics::Counter& failovers_;
  metrics::Histogram& placement_latency_;
  metrics::Family<metrics::Histogram>& params_n_;
  metrics::Family<metrics::Histogram>& max_generation_tokens_;
  metrics::Family<metrics::Gauge>& group_up_;
  metrics::Family<metrics::Gauge>& group_blocks_total_;
  metrics::Family<metrics::Gauge>& group_blocks_free_;
  metrics::Family<metrics::Gauge>& group_blocks_evictable_;
  metrics::Family<metrics::Gauge>& group_blocks_reserved_;
  metrics::Family<metrics::Gauge>& group_running_;
  metrics::Family<metrics::Gauge>& group_waiting_;
  // Groups exported so far: one that leaves the snapshot keeps its series, with group_up 0.
  absl::flat_hash_set<std::string> known_groups_;
};

}  // namespace headroom::router
