// Holds an EngineLoop's thread in a posted op until released (or the holder goes), so that the
// requests submitted meanwhile are taken in one go, in order.
#pragma once

#include <future>

#include "absl/status/status.h"
#include "worker/engine/engine_loop.h"

namespace headroom::worker::testing {

class EngineThreadHold {
 public:
  explicit EngineThreadHold(EngineLoop& loop) {
    loop.Post(
        [released = released_](Engine&) {
          released.wait();
          return absl::OkStatus();
        },
        [](const absl::Status&) {});
  }
  ~EngineThreadHold() { Release(); }
  EngineThreadHold(const EngineThreadHold&) = delete;
  EngineThreadHold& operator=(const EngineThreadHold&) = delete;

  void Release() {
    if (released_set_) return;
    release_.set_value();
    released_set_ = true;
  }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  bool released_set_ = false;
};

}  // namespace headroom::worker::testing
