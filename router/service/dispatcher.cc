#include "router/service/dispatcher.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace headroom::router {

Dispatcher::Dispatcher(DispatcherOptions options)
    : options_(std::move(options)),
      policy_(options_.prefix_affinity_weight),
      table_(options_.groups, options_.stale_after),
      queue_(options_.admission) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::SetUpListener(std::function<void(bool)> listener) {
  up_listener_ = std::move(listener);
}

void Dispatcher::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Dispatcher::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;
  }
  wake_.notify_all();
}

SubmitResult Dispatcher::Submit(int64_t id, int64_t max_total_tokens, absl::Time deadline,
                                std::weak_ptr<PlacementListener> listener, PromptPrefix prompt,
                                int32_t priority) {
  SubmitResult result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!table_.any_up()) {
      result.status = absl::UnavailableError("no worker group is serving; retry later");
      return result;
    }
    const OfferResult offer = queue_.Offer(id, max_total_tokens, deadline, priority);
    if (!offer.accepted) {
      ++refused_;
      result.retry_after_s = offer.retry_after_s;
      result.status = absl::ResourceExhaustedError(
          absl::StrCat("every worker group is full and the router's queue holds ", queue_.size(),
                       " requests; retry after ", offer.retry_after_s, " s"));
      return result;
    }
    queued_[id] = Pending{.max_total_tokens = max_total_tokens,
                          .deadline = deadline,
                          .listener = std::move(listener),
                          .tried = {},
                          .prompt = std::move(prompt),
                          .priority = priority,
                          .hashed_block_size = 0,
                          .hashed_lora_key = {},
                          .hashes = {}};
    dirty_ = true;
  }
  wake_.notify_all();
  return result;
}

void Dispatcher::Resubmit(int64_t id, int64_t max_total_tokens, absl::Time deadline,
                          absl::flat_hash_set<size_t> tried,
                          std::weak_ptr<PlacementListener> listener, PromptPrefix prompt,
                          int32_t priority) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    failover_[id] = Pending{.max_total_tokens = max_total_tokens,
                            .deadline = deadline,
                            .listener = std::move(listener),
                            .tried = std::move(tried),
                            .prompt = std::move(prompt),
                            .priority = priority,
                            .hashed_block_size = 0,
                            .hashed_lora_key = {},
                            .hashes = {}};
    retries_.push_back(id);
    dirty_ = true;
  }
  wake_.notify_all();
}

void Dispatcher::Cancel(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queued_.erase(id) > 0) queue_.Remove(id);
  if (failover_.erase(id) > 0) std::erase(retries_, id);
}

void Dispatcher::FirstToken(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  table_.MarkFirstToken(id);
}

void Dispatcher::Finished(int64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    table_.Release(id);
    if (placed_.erase(id) > 0) --in_flight_;
    dirty_ = true;
  }
  wake_.notify_all();
}

std::vector<GroupSlot> Dispatcher::SetGroups(const std::vector<std::string>& addresses) {
  std::vector<GroupSlot> slots;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t group : table_.SetGroups(addresses).removed) prefixes_.Clear(group);
    slots = table_.slots();
    dirty_ = true;
  }
  wake_.notify_all();
  return slots;
}

void Dispatcher::OnReport(size_t group, v1::LoadReport report) {
  // The prefix-cache delta is not kept in the table (nor shown by GetClusterState); it is decoded
  // before taking the lock that every placement needs.
  const bool affinity = options_.prefix_affinity_weight > 0;
  const bool reset = report.prefix_cache().reset();
  std::optional<std::vector<kvcache::BlockHash>> added, removed;
  if (affinity) {
    added = kvcache::UnpackBlockHashes(report.prefix_cache().added());
    removed = kvcache::UnpackBlockHashes(report.prefix_cache().removed());
  }
  report.clear_prefix_cache();
  {
    std::lock_guard<std::mutex> lock(mu_);
    table_.ApplyReport(group, report, absl::Now());
    if (affinity) {
      // A malformed delta leaves the group's view unknown: start it over.
      if (reset || !added.has_value() || !removed.has_value()) prefixes_.Clear(group);
      if (added.has_value() && removed.has_value()) {
        prefixes_.Forget(group, *removed);
        prefixes_.Record(group, *added, report.total_blocks());
      }
    }
    dirty_ = true;
  }
  wake_.notify_all();
}

void Dispatcher::OnStreamDown(size_t group) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    table_.MarkDown(group);
    // The worker may come back as a new process with an empty prefix cache.
    prefixes_.Clear(group);
    dirty_ = true;
  }
  wake_.notify_all();
}

int32_t Dispatcher::largest_max_model_len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.largest_max_model_len();
}

const v1::LoadReport* Dispatcher::FirstUpReport() const {
  for (size_t g = 0; g < table_.size(); ++g) {
    if (table_.load(g).up && table_.report(g).has_value()) return &*table_.report(g);
  }
  return nullptr;
}

std::string Dispatcher::reported_model() const {
  return ReadFirstUpReport([](const v1::LoadReport* report) {
    return report != nullptr ? report->model() : std::string();
  });
}

std::vector<v1::LoraAdapter> Dispatcher::reported_lora_adapters() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::LoraAdapter> adapters;
  for (size_t g = 0; g < table_.size(); ++g) {
    if (!table_.load(g).up || !table_.report(g).has_value()) continue;
    for (const v1::LoraAdapter& adapter : table_.report(g)->lora_adapters()) {
      const bool known = std::any_of(adapters.begin(), adapters.end(),
                                     [&](const auto& a) { return a.name() == adapter.name(); });
      if (!known) adapters.push_back(adapter);
    }
  }
  return adapters;
}

bool Dispatcher::ServesLoraLocked(size_t group, const std::string& name) const {
  const auto& adapters = table_.load(group).lora_adapters;
  return std::find(adapters.begin(), adapters.end(), name) != adapters.end();
}

bool Dispatcher::lora_adapter_servable(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t g = 0; g < table_.size(); ++g) {
    const GroupLoad& load = table_.load(g);
    if (load.up && (load.lora_resolver || ServesLoraLocked(g, name))) return true;
  }
  return false;
}

bool Dispatcher::AwaitLoraReports(const std::vector<LoraChange>& changed, const std::string& name,
                                  bool served, absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto settled = [&] {
    for (const LoraChange& change : changed) {
      const size_t g = change.group;
      if (g >= table_.size() || !table_.load(g).up || !table_.report(g).has_value()) continue;
      const bool reported =
          change.report_sequence > 0 && table_.report(g)->sequence() >= change.report_sequence;
      if (!reported && ServesLoraLocked(g, name) != served) return false;
    }
    return true;
  };
  while (!settled()) {
    const absl::Time now = absl::Now();
    if (now >= deadline) return false;
    wake_.wait_for(lock, absl::ToChronoMilliseconds(deadline - now));
  }
  return true;
}

bool Dispatcher::any_up() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.any_up();
}

v1::ClusterState Dispatcher::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  v1::ClusterState state;
  for (size_t g = 0; g < table_.size(); ++g) {
    if (!table_.current(g)) continue;
    v1::GroupState* group = state.add_groups();
    const GroupLoad& load = table_.load(g);
    group->set_address(load.group);
    group->set_healthy(load.up && !load.draining);
    if (table_.report(g).has_value()) *group->mutable_load() = *table_.report(g);
    group->set_reserved_blocks(load.reserved_blocks);
  }
  state.set_queued(queue_.size() + static_cast<int32_t>(failover_.size()));
  state.set_refused(refused_);
  state.set_in_flight(in_flight_);
  return state;
}

absl::Span<const kvcache::BlockHash> Dispatcher::HashesForLocked(Pending& p, size_t group) {
  const std::string* key = nullptr;
  static const std::string kBase;
  if (p.prompt.lora_adapter.empty()) {
    key = &kBase;
  } else if (table_.report(group).has_value()) {
    for (const v1::LoraAdapter& adapter : table_.report(group)->lora_adapters()) {
      if (adapter.name() == p.prompt.lora_adapter) key = &adapter.cache_key();
    }
  }
  if (key == nullptr) return {};  // the group does not serve the adapter
  const int32_t block_size = table_.load(group).block_size;
  if (p.hashed_block_size != block_size || p.hashed_lora_key != *key) {
    p.hashes = kvcache::PromptBlockHashes(p.prompt.tokens, block_size, p.prompt.cache_salt, *key);
    p.hashed_block_size = block_size;
    p.hashed_lora_key = *key;
  }
  return p.hashes;
}

PlacementDecision Dispatcher::PlaceLocked(absl::Span<const GroupLoad> groups, Pending& p,
                                          absl::Span<const bool> held) {
  std::vector<int64_t> cached;
  if (options_.prefix_affinity_weight > 0 && !p.prompt.tokens.empty()) {
    cached.assign(groups.size(), 0);
    for (size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].up && groups[g].block_size > 0) {
        cached[g] = prefixes_.Match(g, HashesForLocked(p, g), groups[g].block_size,
                                    groups[g].prefix_cache_window());
      }
    }
  }
  return policy_(groups, {.max_total_tokens = p.max_total_tokens,
                          .cached_blocks = cached,
                          .needs_priority = p.priority != 0,
                          .lora_adapter = p.prompt.lora_adapter,
                          .held = held});
}

void Dispatcher::RecordPlacementLocked(size_t group, Pending& p) {
  if (options_.prefix_affinity_weight <= 0 || p.prompt.tokens.empty()) return;
  prefixes_.Record(group, HashesForLocked(p, group), table_.load(group).total_blocks);
}

std::vector<Dispatcher::Delivery> Dispatcher::PassLocked(absl::Time now) {
  std::vector<Delivery> out;
  table_.ExpireStale(now);
  for (const size_t g : table_.NewlySilent(now, options_.silence_timeout)) {
    for (const auto& [id, call] : placed_) {
      if (call.group == g) {
        out.push_back({call.listener, id, Delivery::Kind::kGroupLost, g, absl::OkStatus()});
      }
    }
  }
  for (int64_t id : queue_.Expire(now)) {
    auto it = queued_.find(id);
    if (it == queued_.end()) continue;
    out.push_back({it->second.listener, id, Delivery::Kind::kRejected, 0,
                   absl::DeadlineExceededError(
                       "the request's deadline passed while it waited for a worker group")});
    queued_.erase(it);
  }
  // Failover retries first: they were admitted before anything in the queue.
  for (auto it = retries_.begin(); it != retries_.end();) {
    const int64_t id = *it;
    Pending& p = failover_[id];
    if (p.deadline <= now) {
      out.push_back({p.listener, id, Delivery::Kind::kRejected, 0,
                     absl::DeadlineExceededError(
                         "the request's deadline passed while it waited for another group")});
      failover_.erase(id);
      it = retries_.erase(it);
      continue;
    }
    std::vector<GroupLoad> view(table_.loads().begin(), table_.loads().end());
    for (size_t g : p.tried) view[g].up = false;
    const PlacementDecision d = PlaceLocked(view, p);
    if (d.outcome == PlacementOutcome::kWait) {
      ++it;
      continue;
    }
    if (d.outcome == PlacementOutcome::kPlaced) {
      RecordPlacementLocked(d.group, p);
      table_.loads()[d.group].reserved_blocks += d.demand_blocks;
      table_.Track(id, d.group, d.demand_blocks);
      placed_[id] = PlacedCall{.group = d.group, .listener = p.listener};
      ++in_flight_;
      out.push_back({p.listener, id, Delivery::Kind::kPlaced, d.group, absl::OkStatus()});
    } else {
      out.push_back({p.listener, id, Delivery::Kind::kRejected, 0,
                     absl::UnavailableError(absl::StrCat(
                         "the worker group failed before the first token and no other group "
                         "can take the request (tried ",
                         p.tried.size(), ")"))});
    }
    failover_.erase(id);
    it = retries_.erase(it);
  }
  const auto place = [this](absl::Span<const GroupLoad> groups, int64_t id,
                            int64_t max_total_tokens, absl::Span<const bool> held) {
    auto it = queued_.find(id);
    if (it == queued_.end()) {
      return policy_(groups, {.max_total_tokens = max_total_tokens,
                              .cached_blocks = {},
                              .needs_priority = false,
                              .held = held});
    }
    return PlaceLocked(groups, it->second, held);
  };
  for (const PlacedRequest& placed : queue_.Place(table_.loads(), place, now)) {
    auto it = queued_.find(placed.id);
    if (it == queued_.end()) continue;
    if (placed.outcome == PlacementOutcome::kPlaced) {
      RecordPlacementLocked(placed.group, it->second);
      table_.Track(placed.id, placed.group, placed.demand_blocks);
      placed_[placed.id] = PlacedCall{.group = placed.group, .listener = it->second.listener};
      ++in_flight_;
      out.push_back({it->second.listener, placed.id, Delivery::Kind::kPlaced, placed.group,
                     absl::OkStatus()});
    } else {
      const Pending& p = it->second;
      const PlacementDecision d = policy_(table_.loads(), {.max_total_tokens = p.max_total_tokens,
                                                           .cached_blocks = {},
                                                           .needs_priority = p.priority != 0,
                                                           .lora_adapter = p.prompt.lora_adapter});
      out.push_back(
          {p.listener, placed.id, Delivery::Kind::kRejected, 0,
           absl::InvalidArgumentError(
               d.no_adapter_group ? absl::StrCat("LoRA adapter \"", p.prompt.lora_adapter,
                                                 "\" is not served by any worker group serving now")
               : d.no_priority_group
                   ? absl::StrCat("priority ", p.priority,
                                  " needs priority scheduling and no worker group serving now "
                                  "schedules by priority (start workers with "
                                  "--scheduling-policy priority)")
                   : NeverFitsMessage(p.max_total_tokens, d))});
    }
    queued_.erase(it);
  }
  return out;
}

void Dispatcher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, absl::ToChronoMilliseconds(options_.tick),
                   [this] { return dirty_ || stopping_; });
    if (stopping_) break;
    dirty_ = false;
    std::vector<Delivery> deliveries = PassLocked(absl::Now());
    const bool any_up = table_.any_up();
    lock.unlock();
    for (Delivery& d : deliveries) {
      std::shared_ptr<PlacementListener> listener = d.listener.lock();
      if (listener == nullptr) {
        if (d.kind == Delivery::Kind::kPlaced) Finished(d.id);  // the request ended meanwhile
        continue;
      }
      switch (d.kind) {
        case Delivery::Kind::kPlaced:
          listener->OnPlaced(d.group);
          break;
        case Delivery::Kind::kRejected:
          listener->OnRejected(d.status);
          break;
        case Delivery::Kind::kGroupLost:
          listener->OnGroupLost(d.group, options_.silence_timeout);
          break;
      }
    }
    if (any_up != last_any_up_) {
      last_any_up_ = any_up;
      if (up_listener_) up_listener_(any_up);
    }
    lock.lock();
  }
}

}  // namespace headroom::router
