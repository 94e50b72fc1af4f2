// TokenMaskCache: the token list a constraint allows in each state it has been in, computed once.
//
// A constrained step tries the vocabulary's tokens against the matcher, which costs 0.05-10 ms on
// a real 128k vocabulary (docs/performance.md), but a generation comes back to the same states
// over and over (free text under a regex; a JSON value's start, the digits of a number, the text
// of a string at the same depth). So each state's list is kept, keyed by the state (a
// RegexMatcher; a JSON matcher's canonical key, AppendStateKey), for all the requests that share
// the constraint.
//
// Bounded: past `max_ids` ids in all (each list counting kEntryIds more for its entry), the cache
// starts over. The engine thread's: not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace headroom::worker {

// Appends `value`'s bytes to a state key (a scalar: no padding to leave undefined).
template <typename T>
void AppendKeyBytes(std::string* key, T value) {
  static_assert(std::is_scalar_v<T>);
  key->append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename Key>
class TokenMaskCache {
 public:
  static constexpr size_t kDefaultMaxIds = size_t{1} << 19;  // 2 MiB of ids
  // What an entry costs beyond its ids (the key, the node, the vector), in ids.
  static constexpr size_t kEntryIds = 32;

  TokenMaskCache() = default;
  explicit TokenMaskCache(size_t max_ids) : max_ids_(max_ids) {}

  using List = std::shared_ptr<const std::vector<int32_t>>;

  // The list for `key`; `compute(&list)` fills it on a miss. It stays valid while the caller holds
  // it, whatever the cache does meanwhile (several requests of a step share one cache).
  template <typename Compute>
  List Get(const Key& key, Compute compute) {
    if (auto it = lists_.find(key); it != lists_.end()) return it->second;
    auto list = std::make_shared<std::vector<int32_t>>();
    compute(list.get());
    const size_t cost = list->size() + kEntryIds;
    if (ids_ + cost > max_ids_) {
      lists_.clear();
      ids_ = 0;
    }
    ids_ += cost;
    ++misses_;
    return lists_.insert_or_assign(key, std::move(list)).first->second;
  }
  // Lists computed so far (for tests and the bench).
  [[nodiscard]] int64_t misses() const { return misses_; }

 private:
  absl::flat_hash_map<Key, List> lists_;
  size_t max_ids_ = kDefaultMaxIds;
  size_t ids_ = 0;
  int64_t misses_ = 0;
};

}  // namespace headroom::worker
