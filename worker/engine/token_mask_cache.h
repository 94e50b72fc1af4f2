// TokenMaskCache: the tokens a constraint allows in each state it has been in, computed once.
//
// A constrained step tries the vocabulary's tokens against the matcher, which costs 0.05-16 ms on
// a real 128k vocabulary (docs/performance.md), but a generation comes back to the same states
// over and over (free text under a regex; a JSON value's start, the digits of a number, the text
// of a string at the same depth). So each state's tokens are kept, keyed by the state (a
// RegexMatcher; a JSON matcher's canonical key, AppendStateKey), for all the requests that share
// the constraint, as AllowedTokens: ids or a bitmask, whichever is smaller (at most 16 KB for a
// 128k vocabulary, so the default bound holds 256 of its states).
//
// Bounded twice: past `max_bytes` in all (each entry counting kEntryBytes more for its key and
// node) the cache starts over; and all caches together take at most their MaskBudget (the
// process's: 64 MiB): a cache the budget cannot grow starts over, and a list that still does not
// fit is returned without being kept (that state is computed again next time). A worker keeps
// up to 129 caches (JSON mode's, 32 of each constraint kind), 516 MiB at 4 MiB each without it.
// A cache is the engine thread's (not thread-safe); the budget is shared (atomic), and the
// worker exports what it holds as headroom:constraint_cache_bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "worker/engine/allowed_tokens.h"

namespace headroom::worker {

// Appends `value`'s bytes to a state key (a scalar: no padding to leave undefined).
template <typename T>
void AppendKeyBytes(std::string* key, T value) {
  static_assert(std::is_scalar_v<T>);
  key->append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Bytes all TokenMaskCaches together may keep. Thread-safe (caches are built on submitting
// threads and dropped wherever their last holder lets go).
class MaskBudget {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;

  explicit MaskBudget(size_t max_bytes) : max_bytes_(max_bytes) {}
  // The process's, which caches use unless given another.
  static MaskBudget& Default() {
    static MaskBudget* const budget = new MaskBudget(kDefaultMaxBytes);
    return *budget;
  }

  // Takes `bytes` when they fit; false (nothing taken) when they do not.
  [[nodiscard]] bool Take(size_t bytes) {
    size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used + bytes > max_bytes_) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void Give(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  [[nodiscard]] size_t used() const { return used_.load(std::memory_order_relaxed); }
  [[nodiscard]] size_t max_bytes() const { return max_bytes_; }

 private:
  const size_t max_bytes_;
  std::atomic<size_t> used_{0};
};

template <typename Key>
class TokenMaskCache {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{4} << 20;
  // What an entry costs beyond its tokens (the key, the node, the vectors), in bytes.
  static constexpr size_t kEntryBytes = 128;

  explicit TokenMaskCache(size_t max_bytes = kDefaultMaxBytes,
                          MaskBudget* budget = &MaskBudget::Default())
      : max_bytes_(max_bytes), budget_(budget) {}
  ~TokenMaskCache() { Clear(); }
  TokenMaskCache(const TokenMaskCache&) = delete;
  TokenMaskCache& operator=(const TokenMaskCache&) = delete;
  // What it kept stays charged to the budget, now this one's.
  TokenMaskCache(TokenMaskCache&& other) noexcept
      : lists_(std::move(other.lists_)),
        max_bytes_(other.max_bytes_),
        budget_(other.budget_),
        bytes_(std::exchange(other.bytes_, 0)),
        misses_(other.misses_) {
    other.lists_.clear();
  }
  TokenMaskCache& operator=(TokenMaskCache&& other) noexcept {
    if (this != &other) {
      Clear();
      lists_ = std::move(other.lists_);
      other.lists_.clear();
      max_bytes_ = other.max_bytes_;
      budget_ = other.budget_;
      bytes_ = std::exchange(other.bytes_, 0);
      misses_ = other.misses_;
    }
    return *this;
  }

  using List = std::shared_ptr<const AllowedTokens>;

  // The tokens for `key`; on a miss, `compute(&ids)` lists them (ids >= 0, any order). What it
  // returns stays valid while the caller holds it, whatever the cache does meanwhile (several
  // requests of a step share one cache).
  template <typename Compute>
  List Get(const Key& key, Compute compute) {
    if (auto it = lists_.find(key); it != lists_.end()) return it->second;
    std::vector<int32_t> ids;
    compute(&ids);
    auto list = std::make_shared<const AllowedTokens>(std::move(ids));
    ++misses_;
    const size_t cost = list->bytes() + kEntryBytes;
    if (bytes_ + cost > max_bytes_) Clear();
    if (!budget_->Take(cost)) {
      // The other caches hold the budget: this one starts over; if that is not room enough,
      // the list is not kept.
      Clear();
      if (!budget_->Take(cost)) return list;
    }
    bytes_ += cost;
    return lists_.insert_or_assign(key, std::move(list)).first->second;
  }
  // Lists computed so far (for tests and the bench).
  [[nodiscard]] int64_t misses() const { return misses_; }
  // What the kept entries cost, as counted against the bounds.
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  void Clear() {
    lists_.clear();
    budget_->Give(bytes_);
    bytes_ = 0;
  }

  absl::flat_hash_map<Key, List> lists_;
  size_t max_bytes_;
  MaskBudget* budget_;
  size_t bytes_ = 0;
  int64_t misses_ = 0;
};

}  // namespace headroom::worker
