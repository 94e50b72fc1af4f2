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
// Bounded: past `max_bytes` in all (each entry counting kEntryBytes more for its key and node),
// the cache starts over. The engine thread's: not thread-safe.
#pragma once

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

template <typename Key>
class TokenMaskCache {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{4} << 20;
  // What an entry costs beyond its tokens (the key, the node, the vectors), in bytes.
  static constexpr size_t kEntryBytes = 128;

  TokenMaskCache() = default;
  explicit TokenMaskCache(size_t max_bytes) : max_bytes_(max_bytes) {}

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
    const size_t cost = list->bytes() + kEntryBytes;
    if (bytes_ + cost > max_bytes_) {
      lists_.clear();
      bytes_ = 0;
    }
    bytes_ += cost;
    ++misses_;
    return lists_.insert_or_assign(key, std::move(list)).first->second;
  }
  // Lists computed so far (for tests and the bench).
  [[nodiscard]] int64_t misses() const { return misses_; }
  // What the kept entries cost, as counted against the bound.
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  absl::flat_hash_map<Key, List> lists_;
  size_t max_bytes_ = kDefaultMaxBytes;
  size_t bytes_ = 0;
  int64_t misses_ = 0;
};

}  // namespace headroom::worker
