#include "kvcache/free_block_queue.h"

#include "common/check.h"

namespace headroom::kvcache {

FreeBlockQueue::FreeBlockQueue(int32_t capacity) : links_(static_cast<size_t>(capacity)) {
  HR_CHECK(capacity >= 0);
}

size_t FreeBlockQueue::Index(BlockId block) const {
  HR_DCHECK(block.value() >= 0 && static_cast<size_t>(block.value()) < links_.size());
  return static_cast<size_t>(block.value());
}

void FreeBlockQueue::PushBack(BlockId block) {
  Link& link = links_[Index(block)];
  HR_CHECK_MSG(!link.in_queue, "block is already free");
  link.prev = tail_;
  link.next = kNone;
  link.in_queue = true;
  if (tail_ == kNone) {
    head_ = block.value();
  } else {
    links_[static_cast<size_t>(tail_)].next = block.value();
  }
  tail_ = block.value();
  ++size_;
}

BlockId FreeBlockQueue::PopFront() {
  HR_CHECK_MSG(head_ != kNone, "no free block");
  const BlockId block{head_};
  Remove(block);
  return block;
}

void FreeBlockQueue::Remove(BlockId block) {
  Link& link = links_[Index(block)];
  HR_CHECK_MSG(link.in_queue, "block is not free");
  if (link.prev == kNone) {
    head_ = link.next;
  } else {
    links_[static_cast<size_t>(link.prev)].next = link.next;
  }
  if (link.next == kNone) {
    tail_ = link.prev;
  } else {
    links_[static_cast<size_t>(link.next)].prev = link.prev;
  }
  link = Link{};
  --size_;
}

std::vector<BlockId> FreeBlockQueue::ToVector() const {
  std::vector<BlockId> order;
  order.reserve(static_cast<size_t>(size_));
  for (int32_t i = head_; i != kNone; i = links_[static_cast<size_t>(i)].next) {
    order.push_back(BlockId{i});
  }
  return order;
}

}  // namespace headroom::kvcache
