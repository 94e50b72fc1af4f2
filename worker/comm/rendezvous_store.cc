#include "worker/comm/rendezvous_store.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace headroom::worker {

absl::Status InMemoryRendezvousStore::Set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = value;
  }
  changed_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<std::string> InMemoryRendezvousStore::Get(const std::string& key,
                                                         absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool found = changed_.wait_until(lock, absl::ToChronoTime(absl::Now() + timeout),
                                         [&] { return values_.contains(key); });
  if (!found) {
    return absl::DeadlineExceededError(absl::StrCat("rendezvous key \"", key,
                                                    "\" was not set within ",
                                                    absl::FormatDuration(timeout)));
  }
  return values_.at(key);
}

}  // namespace headroom::worker
