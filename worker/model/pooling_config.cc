#include "worker/model/pooling_config.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kPoolingModule = "sentence_transformers.models.Pooling";
constexpr std::string_view kNormalizeModule = "sentence_transformers.models.Normalize";
constexpr std::string_view kModePrefix = "pooling_mode_";

// The file's JSON; nullopt when it does not exist.
absl::StatusOr<std::optional<Json>> ReadJson(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::optional<Json>();
  std::stringstream text;
  text << file.rdbuf();
  Json parsed = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not valid JSON"));
  }
  return std::optional<Json>(std::move(parsed));
}

}  // namespace

absl::StatusOr<PoolingConfig> LoadPoolingConfig(std::string_view model) {
  PoolingConfig config;
  if (model.starts_with("dummy:")) return config;
  const std::string modules_path = absl::StrCat(std::string(model), "/modules.json");
  absl::StatusOr<std::optional<Json>> modules = ReadJson(modules_path);
  if (!modules.ok()) return modules.status();
  if (!modules->has_value()) return config;
  if (!(*modules)->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(modules_path, " must be a list of modules"));
  }
  std::string pooling_path;
  bool normalize = false;
  for (const Json& module : **modules) {
    const auto type = module.find("type");
    if (!module.is_object() || type == module.end() || !type->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          modules_path, ": every module needs a \"type\" string, got ", module.dump()));
    }
    if (*type == kNormalizeModule) normalize = true;
    if (*type == kPoolingModule) {
      const auto path = module.find("path");
      if (path == module.end() || !path->is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(modules_path, ": the Pooling module needs a \"path\" string"));
      }
      pooling_path =
          absl::StrCat(std::string(model), "/", path->get<std::string>(), "/config.json");
    }
  }
  config.normalize = normalize;
  if (pooling_path.empty()) return config;  // no Pooling module: the default mode
  absl::StatusOr<std::optional<Json>> pooling = ReadJson(pooling_path);
  if (!pooling.ok()) return pooling.status();
  if (!pooling->has_value() || !(*pooling)->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(pooling_path, " (the Pooling module of ",
                                                   modules_path,
                                                   ") is missing or not a JSON object"));
  }
  for (const auto& [key, value] : (*pooling)->items()) {
    if (key.starts_with(kModePrefix) && value.is_boolean() && value.get<bool>()) {
      config.mode = key.substr(kModePrefix.size());
      config.source = pooling_path;
      return config;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(pooling_path, " sets no pooling_mode_* key to true"));
}

absl::Status ApplyPoolerConfig(std::string_view json, PoolingConfig& config) {
  const Json parsed = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pooler-config must be a JSON object, got ", std::string(json)));
  }
  PoolingConfig out = config;
  for (const auto& [key, value] : parsed.items()) {
    if (key == "pooling_type" || key == "seq_pooling_type") {
      const std::string type = value.is_string() ? value.get<std::string>() : "";
      if (type == "LAST") {
        out.mode = "lasttoken";
      } else if (type == "MEAN") {
        out.mode = "mean_tokens";
      } else if (type == "CLS") {
        out.mode = "cls_token";
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--pooler-config: ", key,
                         " must be \"LAST\", \"MEAN\" or \"CLS\" (token pooling, "
                         "\"ALL\" and \"STEP\", is not served), got ",
                         value.dump()));
      }
    } else if (key == "normalize" || key == "use_activation") {
      if (!value.is_boolean()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--pooler-config: ", key, " must be true or false, got ", value.dump()));
      }
      out.normalize = value.get<bool>();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--pooler-config: \"", key,
                       "\" is not served (pooling_type, seq_pooling_type, normalize and "
                       "use_activation are)"));
    }
  }
  out.source = "--pooler-config";
  config = std::move(out);
  return absl::OkStatus();
}

}  // namespace headroom::worker
