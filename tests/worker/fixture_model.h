// A committed fixture checkpoint (tests/worker/fixtures/<name>), loaded once per test binary.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/check.h"
#include "gtest/gtest.h"
#include "fixtures.h"
#include "worker/model/checkpoint.h"
#include "worker/model/model_config.h"

namespace headroom::worker::testdata {

struct FixtureModel {
  ModelConfig config;
  ModelWeights weights;
};

// Loads (the first time) and returns the fixture; a broken fixture is a broken test setup.
inline const FixtureModel& LoadFixtureModel(const std::string& name) {
  static std::map<std::string, FixtureModel>* cache = new std::map<std::string, FixtureModel>();
  auto it = cache->find(name);
  if (it == cache->end()) {
    const std::string dir = FixtureDir(name).string();
    absl::StatusOr<ModelConfig> config = LoadModelConfig(dir);
    HR_CHECK_MSG(config.ok(), "fixture config.json does not load");
    absl::StatusOr<ModelWeights> weights = LoadWeights(*config, dir);
    HR_CHECK_MSG(weights.ok(), "fixture weights do not load");
    it = cache->emplace(name, FixtureModel{*config, *std::move(weights)}).first;
  }
  return it->second;
}

// Every tensor of `got` equals the one of `want` (names, shapes, values), and none is missing.
inline void ExpectSameWeights(const ModelWeights& got, const ModelWeights& want) {
  const std::vector<NamedWeight> g = ListWeights(got);
  const std::vector<NamedWeight> w = ListWeights(want);
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i].name, w[i].name);
    EXPECT_EQ(g[i].tensor->shape, w[i].tensor->shape) << g[i].name;
    EXPECT_TRUE(g[i].tensor->data == w[i].tensor->data) << g[i].name;
  }
}

// Rank `rank`'s shard of the fixture for a group of `tp`, loaded as a worker rank loads it.
inline ModelWeights LoadFixtureShard(const std::string& name, int64_t tp, int64_t rank) {
  const FixtureModel& m = LoadFixtureModel(name);
  absl::StatusOr<ModelWeights> shard =
      LoadWeights(m.config, FixtureDir(name).string(), {.tensor_parallel_size = tp, .rank = rank});
  HR_CHECK_MSG(shard.ok(), "fixture shard does not load");
  return *std::move(shard);
}

}  // namespace headroom::worker::testdata
