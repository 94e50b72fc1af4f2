// Runs requests through an Engine to the end, for the engine tests that compare what it reports.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "worker/engine/engine.h"

namespace headroom::worker::testdata {

// A small engine for the llama-gqa parity tests: 8 sequences, 256 tokens per step, 128 per
// sequence, blocks of 4 tokens, 200 blocks (ample: no preemption unless a test shrinks it).
inline EngineOptions SmallEngineOptions() {
  return {.max_num_seqs = 8,
          .max_num_batched_tokens = 256,
          .max_model_len = 128,
          .block_size = 4,
          .num_kv_blocks = 200};
}

// Queues `requests` (all before the first step, or each once the engine is idle) and steps the
// engine until it has no work, handing every StepToken to `on_token`. A refused request or a
// failed step fails the test.
inline void DriveEngine(Engine& engine, const std::vector<Request>& requests, bool one_at_a_time,
                        const std::function<void(StepToken&)>& on_token) {
  size_t next = 0;
  while (next < requests.size() || engine.HasWork()) {
    if (next < requests.size() && (!one_at_a_time || !engine.HasWork())) {
      const absl::Status added = engine.AddRequest(requests[next++]);
      EXPECT_TRUE(added.ok()) << added;
      if (!one_at_a_time) continue;
    }
    absl::StatusOr<std::vector<StepToken>> step = engine.Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) return;
    for (StepToken& t : *step) on_token(t);
  }
}

}  // namespace headroom::worker::testdata
