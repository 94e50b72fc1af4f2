// The worker the multi-process tests start: `headroom worker` serving the llama-gqa fixture
// (vocabulary 256, so the router's byte tokenizer fits it) with a small KV pool.
#pragma once

#include <string>
#include <vector>

#include "fixtures.h"

namespace headroom::e2e {

// Its flags: `blocks` KV blocks of 16 tokens, 4 sequences, 256 tokens per step and per
// sequence, one thread, any free port; metrics_port -1 = no /metrics, 0 = a free port.
inline std::vector<std::string> FixtureWorkerFlags(int blocks, int metrics_port = -1) {
  return {"--model",
          worker::testdata::FixtureDir("llama-gqa").string(),
          "--port",
          "0",
          "--metrics-port",
          std::to_string(metrics_port),
          "--num-gpu-blocks-override",
          std::to_string(blocks),
          "--block-size",
          "16",
          "--max-num-seqs",
          "4",
          "--max-num-batched-tokens",
          "256",
          "--max-model-len",
          "256",
          "--threads",
          "1"};
}

}  // namespace headroom::e2e
