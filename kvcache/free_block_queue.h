// FreeBlockQueue: the blocks nobody references, in eviction order (front is taken first).
//
// An intrusive doubly-linked list over block indices: push to the back, pop from the front and
// remove from the middle (a cached block that gets a prefix hit) are all O(1) and never allocate.
// Free-but-cached blocks stay in the queue in LRU order, so taking the front evicts the least
// recently freed one; blocks that never held a hash are indistinguishable from evicted ones.
#pragma once

#include <cstdint>
#include <vector>

#include "kvcache/block_id.h"

namespace headroom::kvcache {

class FreeBlockQueue {
 public:
  // A queue that can hold block ids in [0, capacity); it starts empty.
  explicit FreeBlockQueue(int32_t capacity);

  FreeBlockQueue(const FreeBlockQueue&) = delete;
  FreeBlockQueue& operator=(const FreeBlockQueue&) = delete;

  [[nodiscard]] int32_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] bool Contains(BlockId block) const { return links_[Index(block)].in_queue; }

  // Appends `block` (not in the queue) at the back: it will be taken last.
  void PushBack(BlockId block);
  // Removes and returns the front block. The queue must not be empty.
  BlockId PopFront();
  // Removes `block` (in the queue) wherever it is.
  void Remove(BlockId block);

  // Front-to-back order; O(n), for tests and invariant checks.
  [[nodiscard]] std::vector<BlockId> ToVector() const;

 private:
  static constexpr int32_t kNone = -1;
  struct Link {
    int32_t prev = kNone;
    int32_t next = kNone;
    bool in_queue = false;
  };

  [[nodiscard]] size_t Index(BlockId block) const;

  std::vector<Link> links_;
  int32_t head_ = kNone;
  int32_t tail_ = kNone;
  int32_t size_ = 0;
};

}  // namespace headroom::kvcache
