// --load-format, shared by `headroom worker` and `headroom bench` (worker::LoadFormat).
#pragma once

#include "common/flags.h"

namespace headroom::cli {

inline void AddLoadFormatFlag(FlagSet& flags) {
  flags.AddString("load-format", "auto",
                  "auto (dummy:<preset> -> random weights, a directory -> its safetensors), "
                  "safetensors, or dummy (random weights with the directory's config.json "
                  "shapes: a real model's memory plan and speed without its weights).");
}

}  // namespace headroom::cli
