// absl::StrCat / StrAppend that also take std::string_view: Debian's Abseil has its own
// string_view type, which StrCat's arguments convert from but std::string_view does not (Sv()
// converts, as elsewhere in the router).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "router/tokenizer/string_util.h"

namespace headroom::router::jinja {

template <typename T>
decltype(auto) CatArg(const T& v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return Sv(v);
  } else {
    return (v);
  }
}

template <typename... T>
std::string Cat(const T&... args) {
  return absl::StrCat(CatArg(args)...);
}

template <typename... T>
void CatTo(std::string* out, const T&... args) {
  absl::StrAppend(out, CatArg(args)...);
}

}  // namespace headroom::router::jinja
