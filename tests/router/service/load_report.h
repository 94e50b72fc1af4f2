// A LoadReport of a group of 100 blocks of 16 tokens (max_model_len 512, model "m") with
// `free_blocks` free: the report the router service tests feed their tables.
#pragma once

#include <cstdint>

#include "headroom/v1/worker.pb.h"

namespace headroom::router {

inline v1::LoadReport Report(uint64_t sequence, int32_t free_blocks) {
  v1::LoadReport r;
  r.set_sequence(sequence);
  r.set_total_blocks(100);
  r.set_free_blocks(free_blocks);
  r.set_block_size(16);
  r.set_max_model_len(512);
  r.set_model("m");
  return r;
}

}  // namespace headroom::router
