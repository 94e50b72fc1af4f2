// PrefixIndex: the router's view of which prompt blocks each worker group holds in its prefix
// cache, so that placement can send a request to the group that already computed most of its
// prompt (multi-turn chats, shared system prompts, few-shot templates).
//
// Two sources feed it, both in chained hashes of full blocks (kvcache/block_hash.h, the hashes the
// worker's BlockPool caches them under):
//   - what the group's worker reports (LoadReport.prefix_cache: blocks cached and evicted, by
//     this router's placements or anyone else's), applied with Record and Forget;
//   - what this router places there (kvcache::PromptBlockHashes of the prompt), recorded at
//     once, since the worker's report comes up to 50 ms later.
// A phantom entry (placed but never cached, e.g. a request cancelled while queued) stays until
// it is least recently used beyond the group's pool size; it costs a missed cache hit, never a
// wrong answer (the worker looks the prefix up itself).
// Memory is bounded by construction: at most total_blocks entries per group (16 bytes of hash
// plus the LRU links each), so the index can never grow past the cluster's KV pools.
//
// Not thread-safe: the dispatcher owns one under its mutex.
#pragma once

#include <cstdint>
#include <list>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "kvcache/block_hash.h"

namespace headroom::router {

class PrefixIndex {
 public:
  // How many leading blocks of the prompt whose block hashes are `hashes` the group can serve
  // from its cache (0 for an unknown group), by the worker's rule (KvCacheManager::
  // FindCachedPrefix): without a window, the leading recorded entries; when the group's cache
  // attends `window` positions of `block_size`-token blocks, the longest n whose blocks inside
  // the window of the token after them are recorded, so a long conversation whose first blocks
  // were evicted still matches its recent window.
  [[nodiscard]] int64_t Match(size_t group, absl::Span<const kvcache::BlockHash> hashes,
                              int32_t block_size = 0, int32_t window = 0) const;

  // Records `hashes` (a prompt's, in order) as placed on `group`, the first most recently used,
  // and forgets the least recently used entries beyond `capacity` (the group's pool size).
  void Record(size_t group, absl::Span<const kvcache::BlockHash> hashes, int64_t capacity);

  // Forgets `hashes` for `group` (the worker evicted those blocks).
  void Forget(size_t group, absl::Span<const kvcache::BlockHash> hashes);

  // Forgets everything about `group` (it went down or its slot now names another group).
  void Clear(size_t group);

  // Entries recorded for `group`.
  [[nodiscard]] int64_t size(size_t group) const;

 private:
  struct Group {
    std::list<kvcache::BlockHash> lru;  // front: most recently used
    absl::flat_hash_map<kvcache::BlockHash, std::list<kvcache::BlockHash>::iterator> where;
  };
  std::vector<Group> groups_;  // by group slot
};

}  // namespace headroom::router
