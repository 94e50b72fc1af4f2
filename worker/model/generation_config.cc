#include "worker/model/generation_config.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

constexpr double kTransformersDefaultTopK = 50;

// The number under `field` when it passes `valid` (null or absent: nullopt); InvalidArgument
// naming the field, the range and the value otherwise.
absl::StatusOr<std::optional<double>> Read(const Json& root, std::string_view path,
                                           const char* field, bool (*valid)(double),
                                           std::string_view range) {
  const auto it = root.find(field);
  if (it == root.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number() || !valid(it->get<double>())) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(path), ": ", field, " must be ",
                                                   std::string(range), ", got ", it->dump()));
  }
  return std::optional<double>(it->get<double>());
}

}  // namespace

absl::StatusOr<SamplingDefaults> ParseGenerationConfig(std::string_view json_text,
                                                       std::string_view path) {
  const Json root = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(path), ": not a JSON object (malformed generation_config.json)"));
  }
  SamplingDefaults out;
  HR_ASSIGN_OR_RETURN(const std::optional<double> temperature,
                      Read(
                          root, path, "temperature",
                          [](double v) { return v >= 0 && std::isfinite(v); }, "a number >= 0"));
  HR_ASSIGN_OR_RETURN(
      const std::optional<double> top_p,
      Read(
          root, path, "top_p", [](double v) { return v > 0 && v <= 1; }, "in (0, 1]"));
  HR_ASSIGN_OR_RETURN(const std::optional<double> top_k,
                      Read(
                          root, path, "top_k",
                          [](double v) { return v == std::trunc(v) && v >= -1 && v <= INT32_MAX; },
                          "-1, 0 (all) or a positive integer"));
  HR_ASSIGN_OR_RETURN(
      const std::optional<double> min_p,
      Read(
          root, path, "min_p", [](double v) { return v >= 0 && v <= 1; }, "in [0, 1]"));
  HR_ASSIGN_OR_RETURN(const std::optional<double> repetition_penalty,
                      Read(
                          root, path, "repetition_penalty",
                          [](double v) { return v > 0 && std::isfinite(v); }, "a number > 0"));
  if (temperature) out.temperature = static_cast<float>(*temperature);
  if (top_p) out.top_p = static_cast<float>(*top_p);
  // vLLM reads the file's differences from transformers' GenerationConfig defaults, so its
  // top_k 50 (the one default that is not also vLLM's) is no default there.
  if (top_k && *top_k != kTransformersDefaultTopK) {
    out.top_k = *top_k < 0 ? 0 : static_cast<int32_t>(*top_k);
  }
  if (min_p) out.min_p = static_cast<float>(*min_p);
  if (repetition_penalty) out.repetition_penalty = static_cast<float>(*repetition_penalty);
  return out;
}

absl::StatusOr<SamplingDefaults> LoadSamplingDefaults(std::string_view flag,
                                                      std::string_view model) {
  if (flag == "vllm") return SamplingDefaults{};
  const bool automatic = flag == "auto";
  if (automatic && model.starts_with("dummy:")) return SamplingDefaults{};
  const std::string path =
      absl::StrCat(std::string(automatic ? model : flag), "/generation_config.json");
  std::ifstream file(path);
  if (!file) {
    if (automatic) return SamplingDefaults{};  // a checkpoint without one: vLLM's defaults
    return absl::NotFoundError(absl::StrCat("--generation-config ", std::string(flag), ": ", path,
                                            " cannot be read (give auto, vllm, or a directory "
                                            "holding a generation_config.json)"));
  }
  std::stringstream text;
  text << file.rdbuf();
  return ParseGenerationConfig(text.str(), path);
}

std::string DescribeSamplingDefaults(const SamplingDefaults& defaults) {
  std::vector<std::string> parts;
  if (defaults.repetition_penalty) {
    parts.push_back(absl::StrCat("repetition_penalty=", *defaults.repetition_penalty));
  }
  if (defaults.temperature) parts.push_back(absl::StrCat("temperature=", *defaults.temperature));
  if (defaults.top_k) parts.push_back(absl::StrCat("top_k=", *defaults.top_k));
  if (defaults.top_p) parts.push_back(absl::StrCat("top_p=", *defaults.top_p));
  if (defaults.min_p) parts.push_back(absl::StrCat("min_p=", *defaults.min_p));
  return absl::StrJoin(parts, ", ");
}

}  // namespace headroom::worker
