#include "router/service/group_table.h"

#include <algorithm>
#include <utility>

namespace headroom::router {

GroupTable::GroupTable(std::vector<std::string> addresses, absl::Duration stale_after)
    : stale_after_(stale_after) {
  SetGroups(addresses);
}

GroupChange GroupTable::SetGroups(const std::vector<std::string>& addresses) {
  GroupChange change;
  std::vector<char> listed(loads_.size(), 0);
  for (const std::string& address : addresses) {
    auto [it, inserted] = slot_of_.try_emplace(address, loads_.size());
    const size_t group = it->second;
    if (inserted) {
      GroupLoad& load = loads_.emplace_back();
      load.group = address;
      reports_.emplace_back();
      last_report_.push_back(absl::InfinitePast());
      silence_noticed_.push_back(1);  // a silence starts at a report
      current_.push_back(0);
      listed.push_back(0);
    }
    if (listed[group] != 0) continue;  // a duplicate
    listed[group] = 1;
    if (current_[group] == 0) {
      current_[group] = 1;
      loads_[group].up = false;     // until its first report
      silence_noticed_[group] = 1;  // the silence before it was not watched
      change.added.push_back(group);
    }
  }
  for (size_t g = 0; g < loads_.size(); ++g) {
    if (current_[g] != 0 && listed[g] == 0) {
      current_[g] = 0;
      loads_[g].up = false;
      change.removed.push_back(g);
    }
  }
  return change;
}

std::vector<GroupSlot> GroupTable::slots() const {
  std::vector<GroupSlot> out;
  out.reserve(loads_.size());
  for (size_t g = 0; g < loads_.size(); ++g) {
    out.push_back(GroupSlot{loads_[g].group, current_[g] != 0});
  }
  return out;
}

void GroupTable::ApplyReport(size_t group, const v1::LoadReport& report, absl::Time now) {
  if (current_[group] == 0) return;
  GroupLoad& load = loads_[group];
  load.up = true;
  load.draining = report.draining();
  load.sequence = report.sequence();
  load.total_blocks = report.total_blocks();
  load.free_blocks = report.free_blocks();
  load.evictable_blocks = report.evictable_blocks();
  load.block_size = report.block_size() > 0 ? report.block_size() : 16;
  load.running = report.running();
  load.waiting = report.waiting();
  load.waiting_demand_blocks = report.waiting_demand_blocks();
  load.max_model_len = report.max_model_len();
  load.sliding_window = report.sliding_window();
  load.kv_group_windows.assign(report.kv_group_windows().begin(), report.kv_group_windows().end());
  load.max_num_batched_tokens = report.max_num_batched_tokens();
  load.priority_scheduling = report.priority_scheduling();
  load.lora_resolver = report.lora_resolver();
  load.lora_slots_open = report.lora_slots_open();
  load.lora_adapters.clear();
  for (const v1::LoraAdapter& adapter : report.lora_adapters()) {
    load.lora_adapters.push_back(adapter.name());
  }
  reports_[group] = report;
  last_report_[group] = now;
  silence_noticed_[group] = 0;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    const Reservation& r = it->second;
    if (r.group == group && r.release_after.has_value() && report.sequence() > *r.release_after) {
      load.reserved_blocks -= r.blocks;
      reservations_.erase(it++);
    } else {
      ++it;
    }
  }
}

void GroupTable::MarkDown(size_t group) { loads_[group].up = false; }

int GroupTable::ExpireStale(absl::Time now) {
  int expired = 0;
  for (size_t g = 0; g < loads_.size(); ++g) {
    if (loads_[g].up && now - last_report_[g] > stale_after_) {
      loads_[g].up = false;
      ++expired;
    }
  }
  return expired;
}

std::vector<size_t> GroupTable::NewlySilent(absl::Time now, absl::Duration silence) {
  std::vector<size_t> out;
  for (size_t g = 0; g < loads_.size(); ++g) {
    if (current_[g] != 0 && silence_noticed_[g] == 0 && now - last_report_[g] > silence) {
      silence_noticed_[g] = 1;
      out.push_back(g);
    }
  }
  return out;
}

void GroupTable::Track(int64_t request, size_t group, int64_t blocks) {
  reservations_[request] = Reservation{group, blocks, std::nullopt};
}

void GroupTable::MarkFirstToken(int64_t request) {
  auto it = reservations_.find(request);
  if (it == reservations_.end() || it->second.release_after.has_value()) return;
  it->second.release_after = loads_[it->second.group].sequence;
}

void GroupTable::Release(int64_t request) {
  auto it = reservations_.find(request);
  if (it == reservations_.end()) return;
  loads_[it->second.group].reserved_blocks -= it->second.blocks;
  reservations_.erase(it);
}

bool GroupTable::any_up() const {
  return std::any_of(loads_.begin(), loads_.end(), [](const GroupLoad& l) { return l.up; });
}

int32_t GroupTable::largest_max_model_len() const {
  int32_t largest = 0;
  for (const GroupLoad& l : loads_) {
    if (l.up) largest = std::max(largest, l.max_model_len);
  }
  return largest;
}

}  // namespace headroom::router
