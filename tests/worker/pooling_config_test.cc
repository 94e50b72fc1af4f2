// Reading a checkpoint's sentence-transformers pooling files as vLLM reads them: modules.json's
// Pooling module (its config.json's pooling_mode_* key) and Normalize module. The files below have
// the shapes sentence-transformers writes (Qwen3-Embedding-0.6B's modules.json and
// 1_Pooling/config.json; a mean-pooling model's without Normalize).
#include "worker/model/pooling_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace headroom::worker {
namespace {

constexpr char kQwen3EmbeddingModules[] = R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])";
constexpr char kLastTokenPooling[] = R"({
  "word_embedding_dimension": 1024,
  "pooling_mode_cls_token": false,
  "pooling_mode_mean_tokens": false,
  "pooling_mode_max_tokens": false,
  "pooling_mode_mean_sqrt_len_tokens": false,
  "pooling_mode_weightedmean_tokens": false,
  "pooling_mode_lasttoken": true,
  "include_prompt": true
})";
constexpr char kMeanModules[] = R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}
])";
constexpr char kMeanPooling[] = R"({"word_embedding_dimension": 64,
  "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true,
  "pooling_mode_lasttoken": false})";

class PoolingConfigTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("headroom_pooling_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "1_Pooling");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }

  std::filesystem::path dir_;
};

TEST_F(PoolingConfigTest, WithoutSentenceTransformersFilesTheLastTokenNormalized) {
  for (const std::string& model : {dir_.string(), std::string("dummy:tiny")}) {
    const absl::StatusOr<PoolingConfig> config = LoadPoolingConfig(model);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(config->last_token());
    EXPECT_TRUE(config->normalize);
    EXPECT_EQ(config->source, "");
  }
}

TEST_F(PoolingConfigTest, Qwen3EmbeddingPoolsTheLastTokenAndNormalizes) {
  Write("modules.json", kQwen3EmbeddingModules);
  Write("1_Pooling/config.json", kLastTokenPooling);
  const absl::StatusOr<PoolingConfig> config = LoadPoolingConfig(dir_.string());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mode, "lasttoken");
  EXPECT_TRUE(config->last_token());
  EXPECT_TRUE(config->normalize);
  EXPECT_EQ(config->source, (dir_ / "1_Pooling" / "config.json").string());
}

TEST_F(PoolingConfigTest, AMeanPoolingModelWithoutNormalizeSaysSo) {
  Write("modules.json", kMeanModules);
  Write("1_Pooling/config.json", kMeanPooling);
  const absl::StatusOr<PoolingConfig> config = LoadPoolingConfig(dir_.string());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mode, "mean_tokens");
  EXPECT_FALSE(config->last_token());
  EXPECT_FALSE(config->normalize);
}

// vLLM's --pooler-config replaces what the files say; anything it does not serve is refused
// naming the key, and leaves the configuration as it was.
TEST_F(PoolingConfigTest, PoolerConfigOverridesTheFiles) {
  Write("modules.json", kQwen3EmbeddingModules);
  Write("1_Pooling/config.json", kLastTokenPooling);
  absl::StatusOr<PoolingConfig> config = LoadPoolingConfig(dir_.string());
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(ApplyPoolerConfig(R"({"pooling_type": "MEAN", "normalize": false})", *config).ok());
  EXPECT_EQ(config->mode, "mean_tokens");
  EXPECT_FALSE(config->normalize);
  EXPECT_EQ(config->source, "--pooler-config");
  ASSERT_TRUE(
      ApplyPoolerConfig(R"({"seq_pooling_type": "CLS", "use_activation": true})", *config).ok());
  EXPECT_EQ(config->mode, "cls_token");
  EXPECT_TRUE(config->normalize);
  ASSERT_TRUE(ApplyPoolerConfig(R"({"pooling_type": "LAST"})", *config).ok());
  EXPECT_TRUE(config->last_token());

  const PoolingConfig before = *config;
  const auto refused = [&](const std::string& json, const std::string& words) {
    const absl::Status status = ApplyPoolerConfig(json, *config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_NE(status.message().find(words), std::string::npos) << status;
    EXPECT_EQ(config->mode, before.mode) << json;
    EXPECT_EQ(config->normalize, before.normalize) << json;
  };
  refused(R"({"normalize": false, "pooling_type": "ALL"})",
          R"(pooling_type must be "LAST", "MEAN" or "CLS" (token pooling, "ALL" and "STEP", is )"
          R"(not served), got "ALL")");
  refused(R"({"normalize": "no"})", "normalize must be true or false, got \"no\"");
  refused(R"({"dimensions": 8})", "\"dimensions\" is not served");
  refused(R"(["MEAN"])", "--pooler-config must be a JSON object");
}

TEST_F(PoolingConfigTest, BrokenFilesNameTheFile) {
  Write("modules.json", "{");
  EXPECT_NE(
      LoadPoolingConfig(dir_.string()).status().message().find("modules.json is not valid JSON"),
      std::string::npos);
  Write("modules.json", R"([{"path": "1_Pooling"}])");
  EXPECT_NE(LoadPoolingConfig(dir_.string()).status().message().find("needs a \"type\" string"),
            std::string::npos);
  Write("modules.json", kMeanModules);  // its Pooling module's config.json is missing
  const absl::Status missing = LoadPoolingConfig(dir_.string()).status();
  EXPECT_NE(missing.message().find("1_Pooling/config.json (the Pooling module of"),
            std::string::npos)
      << missing;
  Write("1_Pooling/config.json", R"({"pooling_mode_lasttoken": false})");
  EXPECT_NE(LoadPoolingConfig(dir_.string())
                .status()
                .message()
                .find("sets no pooling_mode_* key to true"),
            std::string::npos);
}

}  // namespace
}  // namespace headroom::worker
