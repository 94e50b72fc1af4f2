#include "router/service/router_metrics.h"

#include <vector>

#include "router/service/dispatcher.h"

namespace headroom::router {
namespace {

constexpr RefusalReason kAllReasons[] = {RefusalReason::kInvalid,    RefusalReason::kUnknownModel,
                                         RefusalReason::kQueueFull,  RefusalReason::kNoGroup,
                                         RefusalReason::kDeadline,   RefusalReason::kBusy,
                                         RefusalReason::kConnections};

// Placement waits: from immediate (a group has room) to the default request deadline.
const std::vector<double> kPlacementBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,  5,     10,
                                              30,     60,    120,    300,   600};

// vLLM's bounds for n.
const std::vector<double> kParamsNBounds = {1, 2, 5, 10, 20};
// Generated tokens: vLLM's 1-2-5 bounds, up to a context of a million tokens (a router does not
// know its workers' max_model_len when it starts).
constexpr int64_t kMaxGenerationBound = 1'000'000;

}  // namespace

const char* RefusalReasonLabel(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::kInvalid:
      return "invalid";
    case RefusalReason::kUnknownModel:
      return "unknown_model";
    case RefusalReason::kQueueFull:
      return "queue_full";
    case RefusalReason::kNoGroup:
      return "no_group";
    case RefusalReason::kDeadline:
      return "deadline";
    case RefusalReason::kBusy:
      return "busy";
    case RefusalReason::kConnections:
      return "connections";
  }
  return "invalid";
}

RefusalReason RefusalReasonOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound:
      return RefusalReason::kUnknownModel;
    case absl::StatusCode::kResourceExhausted:
      return RefusalReason::kQueueFull;
    case absl::StatusCode::kUnavailable:
      return RefusalReason::kNoGroup;
    case absl::StatusCode::kDeadlineExceeded:
      return RefusalReason::kDeadline;
    default:
      return RefusalReason::kInvalid;
  }
}

RouterMetrics::RouterMetrics(metrics::Registry* registry, const Dispatcher* dispatcher)
    : dispatcher_(dispatcher),
      queue_depth_(registry
                       ->AddGauge("headroom:router_queue_depth",
                                  "Requests admitted by this router and waiting for a group "
                                  "(admission queue plus failover retries).")
                       .WithLabels({})),
      in_flight_(registry
                     ->AddGauge("headroom:router_in_flight",
                                "Requests this router placed whose worker stream is open.")
                     .WithLabels({})),
      refusals_(registry->AddCounter("headroom:router_refusals",
                                     "Requests refused before reaching a worker, by reason.",
                                     {"reason"})),
      failovers_(registry
                     ->AddCounter("headroom:router_failovers",
                                  "Requests placed again after their group failed before the "
                                  "first token.")
                     .WithLabels({})),
      placement_latency_(registry
                             ->AddHistogram("headroom:router_placement_latency_seconds",
                                            "Time from admission to the placement decision.", {},
                                            kPlacementBounds)
                             .WithLabels({})),
      params_n_(registry->AddHistogram("vllm:request_params_n",
                                       "The n (samples) of finished requests.", {"model_name"},
                                       kParamsNBounds)),
      max_generation_tokens_(
          registry->AddHistogram("vllm:request_max_num_generation_tokens",
                                 "The most tokens one sample of a finished request generated.",
                                 {"model_name"}, metrics::OneTwoFiveBounds(kMaxGenerationBound))),
      group_up_(registry->AddGauge(
          "headroom:group_up", "1 while the group is serving and reporting, else 0.", {"group"})),
      group_blocks_total_(registry->AddGauge("headroom:group_kv_blocks_total",
                                             "Usable KV blocks of the group (last report).",
                                             {"group"})),
      group_blocks_free_(registry->AddGauge("headroom:group_kv_blocks_free",
                                            "Free KV blocks of the group (last report).",
                                            {"group"})),
      group_blocks_evictable_(
          registry->AddGauge("headroom:group_kv_blocks_evictable",
                             "Cached prefix blocks the group can evict (last report).", {"group"})),
      group_blocks_reserved_(registry->AddGauge(
          "headroom:group_kv_blocks_reserved",
          "Blocks this router reserved on the group for requests its report does not show yet.",
          {"group"})),
      group_running_(registry->AddGauge("headroom:group_num_requests_running",
                                        "Running requests of the group (last report).", {"group"})),
      group_waiting_(registry->AddGauge("headroom:group_num_requests_waiting",
                                        "Waiting requests of the group (last report).",
                                        {"group"})) {
  // Every reason is exported from the start, so rate() sees the first refusal of each.
  for (RefusalReason reason : kAllReasons) refusals_.WithLabels({RefusalReasonLabel(reason)});
  registry->AddCollectHook([this] { Collect(); });
}

void RouterMetrics::OnRefused(RefusalReason reason) {
  refusals_.WithLabels({RefusalReasonLabel(reason)}).Increment();
}

void RouterMetrics::OnFailover() { failovers_.Increment(); }

void RouterMetrics::OnPlaced(absl::Duration waited) {
  placement_latency_.Observe(absl::ToDoubleSeconds(waited));
}

void RouterMetrics::Collect() {
  const v1::ClusterState state = dispatcher_->Snapshot();
  queue_depth_.Set(state.queued());
  in_flight_.Set(state.in_flight());
  absl::flat_hash_set<std::string> seen;
  for (const v1::GroupState& group : state.groups()) {
    const std::vector<std::string> label = {group.address()};
    seen.insert(group.address());
    known_groups_.insert(group.address());
    const v1::LoadReport& load = group.load();
    group_up_.WithLabels(label).Set(group.healthy() ? 1 : 0);
    group_blocks_total_.WithLabels(label).Set(static_cast<double>(load.total_blocks()));
    group_blocks_free_.WithLabels(label).Set(static_cast<double>(load.free_blocks()));
    group_blocks_evictable_.WithLabels(label).Set(static_cast<double>(load.evictable_blocks()));
    group_blocks_reserved_.WithLabels(label).Set(static_cast<double>(group.reserved_blocks()));
    group_running_.WithLabels(label).Set(load.running());
    group_waiting_.WithLabels(label).Set(load.waiting());
  }
  for (const std::string& address : known_groups_) {
    if (!seen.contains(address)) group_up_.WithLabels({address}).Set(0);
  }
}

void RouterMetrics::OnRequestFinished(const std::string& model_name, int32_t n,
                                      int64_t max_generation_tokens) {
  params_n_.WithLabels({model_name}).Observe(n);
  max_generation_tokens_.WithLabels({model_name})
      .Observe(static_cast<double>(max_generation_tokens));
}

}  // namespace headroom::router
