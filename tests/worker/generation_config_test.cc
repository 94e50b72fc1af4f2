// generation_config.json's sampling defaults (vLLM's --generation-config auto), and how a Submit
// takes them for the fields it leaves unset.
#include "worker/model/generation_config.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/service/conversions.h"

namespace headroom::worker {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Qwen/Qwen3-8B's generation_config.json, as published.
constexpr char kQwen3GenerationConfig[] = R"({
  "bos_token_id": 151643,
  "do_sample": true,
  "eos_token_id": [151645, 151643],
  "pad_token_id": 151643,
  "temperature": 0.6,
  "top_k": 20,
  "top_p": 0.95,
  "transformers_version": "4.51.0"
})";

TEST(GenerationConfigTest, ReadsTheSamplingFieldsOnly) {
  const absl::StatusOr<SamplingDefaults> d = ParseGenerationConfig(kQwen3GenerationConfig, "g");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FLOAT_EQ(d->temperature.value_or(-1), 0.6f);
  EXPECT_FLOAT_EQ(d->top_p.value_or(-1), 0.95f);
  EXPECT_EQ(d->top_k, 20);
  EXPECT_FALSE(d->min_p.has_value());
  EXPECT_FALSE(d->repetition_penalty.has_value());
  EXPECT_EQ(DescribeSamplingDefaults(*d), "temperature=0.6, top_k=20, top_p=0.95");

  // -1 is vLLM's "all" for top_k; null is "not given"; an empty object gives no defaults.
  EXPECT_EQ(ParseGenerationConfig(R"({"top_k": -1, "min_p": null})", "g")->top_k, 0);
  EXPECT_TRUE(ParseGenerationConfig(R"({"eos_token_id": 2})", "g")->empty());
  // transformers' own default top_k 50 is what vLLM's diff of the file leaves out.
  EXPECT_FALSE(ParseGenerationConfig(R"({"top_k": 50})", "g")->top_k.has_value());
  EXPECT_EQ(ParseGenerationConfig(R"({"top_k": 51})", "g")->top_k, 51);
}

TEST(GenerationConfigTest, ValuesNoRequestCouldCarryAreRefusedByName) {
  for (const auto& [json, field] :
       {std::pair{R"({"temperature": -0.5})", "temperature"}, std::pair{R"({"top_p": 0})", "top_p"},
        std::pair{R"({"top_p": 1.5})", "top_p"}, std::pair{R"({"top_k": 2.5})", "top_k"},
        std::pair{R"({"top_k": -2})", "top_k"}, std::pair{R"({"min_p": 2})", "min_p"},
        std::pair{R"({"repetition_penalty": 0})", "repetition_penalty"},
        std::pair{R"({"temperature": "hot"})", "temperature"}}) {
    const absl::StatusOr<SamplingDefaults> d =
        ParseGenerationConfig(json, "/m/generation_config.json");
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(std::string(d.status().message()),
                AllOf(HasSubstr("/m/generation_config.json"), HasSubstr(field)))
        << json;
  }
  EXPECT_EQ(ParseGenerationConfig("[1]", "g").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGenerationConfig("{", "g").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GenerationConfigTest, TheFlagPicksTheSource) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("headroom_genconfig_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "generation_config.json") << kQwen3GenerationConfig;
  EXPECT_EQ(LoadSamplingDefaults("auto", dir.string())->top_k, 20);
  EXPECT_TRUE(LoadSamplingDefaults("vllm", dir.string())->empty());
  EXPECT_EQ(LoadSamplingDefaults(dir.string(), "dummy:tiny")->top_k, 20);  // another directory
  EXPECT_TRUE(LoadSamplingDefaults("auto", "dummy:tiny")->empty());
  std::filesystem::remove(dir / "generation_config.json");
  EXPECT_TRUE(LoadSamplingDefaults("auto", dir.string())->empty()) << "none: vLLM's defaults";
  const absl::StatusOr<SamplingDefaults> missing = LoadSamplingDefaults(dir.string(), "m");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("generation_config.json"));
  std::filesystem::remove_all(dir);
}

// A Submit takes the defaults for the fields it leaves unset and keeps the ones it sets, an
// explicit top_k 0 (all) and min_p 0 included.
TEST(GenerationConfigTest, UnsetSamplingFieldsTakeTheDefaults) {
  SamplingDefaults defaults;
  defaults.temperature = 0.6f;
  defaults.top_p = 0.95f;
  defaults.top_k = 20;
  defaults.min_p = 0.05f;
  defaults.repetition_penalty = 1.1f;
  v1::SubmitRequest proto;
  proto.add_prompt_token_ids(1);
  absl::StatusOr<Request> unset = RequestFromProto(proto, RequestId{1}, defaults);
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_FLOAT_EQ(unset->sampling.temperature, 0.6f);
  EXPECT_FLOAT_EQ(unset->sampling.top_p, 0.95f);
  EXPECT_EQ(unset->sampling.top_k, 20);
  EXPECT_FLOAT_EQ(unset->sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(unset->sampling.repetition_penalty, 1.1f);

  v1::TokenSamplingParams& s = *proto.mutable_sampling();
  s.set_temperature(1.0f);
  s.set_top_p(1.0f);
  s.set_top_k(0);
  s.set_min_p(0.0f);
  s.set_repetition_penalty(1.0f);
  absl::StatusOr<Request> set = RequestFromProto(proto, RequestId{2}, defaults);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_FLOAT_EQ(set->sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(set->sampling.top_p, 1.0f);
  EXPECT_EQ(set->sampling.top_k, 0);
  EXPECT_FLOAT_EQ(set->sampling.min_p, 0.0f);
  EXPECT_FLOAT_EQ(set->sampling.repetition_penalty, 1.0f);
}

}  // namespace
}  // namespace headroom::worker
