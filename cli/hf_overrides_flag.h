// --hf-overrides, vLLM's flag, shared by `headroom worker`, `plan`, `bench` and `up`: a JSON
// object whose keys replace the model directory's config.json keys before it is read
// (worker::LoadModelConfig), e.g. Qwen's YaRN block for contexts past 32768.
#pragma once

#include <string>

#include "common/flags.h"

namespace headroom::cli {

inline void AddHfOverridesFlag(FlagSet& flags) {
  flags.AddString("hf-overrides", std::nullopt,
                  "JSON object of config.json keys to replace before the model is read (vLLM's "
                  "flag), e.g. '{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                  "\"original_max_position_embeddings\": 32768}}'.");
}

// The flag's value, or "" when it is not given.
inline std::string HfOverrides(const FlagSet& flags) {
  return flags.GetString("hf-overrides").value_or("");
}

}  // namespace headroom::cli
