// Holds an EngineLoop's thread in a posted op until released (or the holder goes), so that the
// requests submitted meanwhile are taken in one go, in order. The constructor returns once the
// thread is inside the op: the loop takes its inbox's submissions and ops together, so a request
// submitted before that could be taken with the op and run ahead of the others.
#pragma once

#include <future>
#include <memory>

#include "absl/status/status.h"
#include "worker/engine/engine_loop.h"

namespace headroom::worker::testing {

class EngineThreadHold {
 public:
  explicit EngineThreadHold(EngineLoop& loop) {
    // Shared: EngineLoop's ops are std::functions, which copy.
    auto holding = std::make_shared<std::promise<void>>();
    std::future<void> held = holding->get_future();
    loop.Post(
        [released = released_, holding](Engine&) {
          holding->set_value();
          released.wait();
          return absl::OkStatus();
        },
        [](const absl::Status&) {});
    held.wait();
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
