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
