// The model creator's recommended sampling, from the checkpoint's generation_config.json, as vLLM
// applies it (its --generation-config auto, the default): a request that leaves temperature,
// top_p, top_k, min_p or repetition_penalty unset takes the file's value (Qwen3: temperature
// 0.6, top_p 0.95, top_k 20), one that sets them keeps its own. Fields the file does not name
// keep vLLM's defaults (temperature 1, top_p 1, top_k all, min_p 0, repetition_penalty 1). As
// vLLM reads only the file's differences from transformers' GenerationConfig, a top_k of 50
// (transformers' default) is not taken.
//
// Left out on purpose: max_new_tokens, which vLLM also reads as a default max_tokens. headroom's
// router sizes a request's KV reservation from its max_tokens before any worker sees it, so the
// default must be the router's (docs/router.md); do_sample, which vLLM ignores too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace headroom::worker {

struct SamplingDefaults {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int32_t> top_k;  // 0 = all (the file's -1 reads as 0, as vLLM reads it)
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;

  [[nodiscard]] bool empty() const {
    return !temperature && !top_p && !top_k && !min_p && !repetition_penalty;
  }
};

// The sampling fields of generation_config.json's text; `path` names the file in errors.
// InvalidArgument for malformed JSON or a value no request could carry (temperature < 0, top_p
// outside (0, 1], top_k < -1, min_p outside [0, 1], repetition_penalty <= 0), naming the field
// and the value. Other fields (eos_token_id, bos_token_id, ...) are not read here.
[[nodiscard]] absl::StatusOr<SamplingDefaults> ParseGenerationConfig(std::string_view json_text,
                                                                     std::string_view path);

// What --generation-config names: "auto" reads <model>/generation_config.json when there is one
// (none for dummy:<preset> models), "vllm" keeps vLLM's defaults, anything else is a directory
// whose generation_config.json must exist.
[[nodiscard]] absl::StatusOr<SamplingDefaults> LoadSamplingDefaults(std::string_view flag,
                                                                    std::string_view model);

// "temperature=0.6, top_k=20, top_p=0.95" (the fields set, in vLLM's log order), for the startup
// log.
[[nodiscard]] std::string DescribeSamplingDefaults(const SamplingDefaults& defaults);

}  // namespace headroom::worker
