// GroupLoad: what the router knows about one worker group, from the LoadReports the group pushes
// (WatchLoad) plus the router's own reservations for requests the group has not reported yet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::router {

struct GroupLoad {
  // Address of the group leader ("10.0.0.7:50061"); also the group's name in metrics.
  std::string group;
  // The group's WatchLoad stream is up and its health is SERVING.
  bool up = false;
  // The group is draining: it finishes its streams but takes no new requests.
  bool draining = false;
  // Sequence number of the last report (increases per group).
  uint64_t sequence = 0;
  // Usable KV blocks of the group's pool, and how many are free (evictable included).
  int32_t total_blocks = 0;
  int32_t free_blocks = 0;
  // Free blocks that still hold cached prefixes (reclaimable; already counted in free_blocks).
  int32_t evictable_blocks = 0;
  int32_t block_size = 16;
  int32_t running = 0;
  int32_t waiting = 0;
  // KV blocks the group's own waiting queue will need.
  int64_t waiting_demand_blocks = 0;
  int32_t max_model_len = 0;
  // Every layer of the group's model attends at most this many positions back (0: none), and its
  // largest prefill chunk: a request holds at most PeakBlocksPerSequence blocks there.
  int32_t sliding_window = 0;
  int32_t max_num_batched_tokens = 0;
  // Its KV cache's layer groups' windows (empty: one group attending sliding_window).
  std::vector<int32_t> kv_group_windows = {};
  // The group schedules by request priority; only such groups take a priority other than 0.
  bool priority_scheduling = false;
  // The LoRA adapters the group serves (--lora-modules names); only such groups take a request
  // for one of them.
  std::vector<std::string> lora_adapters = {};
  // The group loads an adapter it does not serve when a request names it (--lora-resolver-dir).
  bool lora_resolver = false;
  // Slots it would load such an adapter into without waiting (LoadReport.lora_slots_open).
  int32_t lora_slots_open = 0;
  // Blocks this router has sent to the group that the last report does not reflect yet.
  int64_t reserved_blocks = 0;

  // The window of the layer group whose blocks the group reports in its prefix cache (group 0:
  // full attention whenever some layer has none).
  [[nodiscard]] int32_t prefix_cache_window() const {
    return kv_group_windows.empty() ? sliding_window : kv_group_windows.front();
  }

  // Blocks a new request can count on now: free, minus what the group's queue and this
  // router's unreported requests will take.
  [[nodiscard]] int64_t available_blocks() const {
    return int64_t{free_blocks} - waiting_demand_blocks - reserved_blocks;
  }
};

}  // namespace headroom::router
