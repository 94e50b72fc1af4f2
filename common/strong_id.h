// StrongId<Tag, Rep>: an integer id that does not convert to or from other ids or plain integers,
// so a token index can never be passed where a block id is expected.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>

namespace headroom {

template <typename Tag, typename Rep>
class StrongId {
 public:
  using ValueType = Rep;

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}

  [[nodiscard]] constexpr Rep value() const { return value_; }

  constexpr auto operator<=>(const StrongId&) const = default;

  template <typename H>
  friend H AbslHashValue(H h, StrongId id) {
    return H::combine(std::move(h), id.value_);
  }
  friend std::ostream& operator<<(std::ostream& os, StrongId id) { return os << id.value_; }

 private:
  Rep value_{};
};

}  // namespace headroom

template <typename Tag, typename Rep>
struct std::hash<headroom::StrongId<Tag, Rep>> {
  std::size_t operator()(headroom::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
