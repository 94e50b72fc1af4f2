// AllowedTokens: the tokens a constraint allows in one state, in the smaller of two forms.
//
//   ids:     the token ids, 4 bytes each (a key's first letters: a few dozen tokens, ~100 B);
//   bitmask: bit t % 32 of word t / 32 set when token t is allowed, words up to the largest id's
//            (JSON string text on a 128k vocabulary: ~125k tokens, 16 KB rather than 500 KB).
// The bitmask is the layout GPU masking kernels read (one 32-bit word per 32 logits). The token
// list caches (TokenMaskCache) keep lists in this form, so a bound in bytes holds many more of a
// large vocabulary's states (docs/engine.md: structured output).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace headroom::worker {

// What a sampler row is told it may choose: `ids`, or the tokens set in `bitmask` (tokens past its
// words are not allowed); at most one is non-empty, both empty means no constraint.
struct AllowedView {
  std::span<const int32_t> ids = {};
  std::span<const uint32_t> bitmask = {};
};

class AllowedTokens {
 public:
  // `ids`: each >= 0, in any order; repeats are harmless. Kept as a bitmask when that takes fewer
  // bytes than the ids (never for an empty list: an empty bitmask would read as no constraint).
  explicit AllowedTokens(std::vector<int32_t> ids);

  [[nodiscard]] AllowedView view() const { return {.ids = ids_, .bitmask = bitmask_}; }
  [[nodiscard]] bool is_bitmask() const { return !bitmask_.empty(); }
  // What the kept form holds, in bytes.
  [[nodiscard]] size_t bytes() const {
    return ids_.size() * sizeof(int32_t) + bitmask_.size() * sizeof(uint32_t);
  }
  [[nodiscard]] bool Contains(int32_t id) const;
  // Every allowed id once, ascending.
  [[nodiscard]] std::vector<int32_t> SortedIds() const;

 private:
  std::vector<int32_t> ids_;
  std::vector<uint32_t> bitmask_;
};

}  // namespace headroom::worker
