// Access to the committed tokenizer fixtures (tests/router/tokenizer/fixtures/<name>/).
#pragma once

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router::testing {

// The fixtures made by scripts/gen_tokenizer_fixtures.py.
inline const std::vector<std::string>& FixtureNames() {
  static const std::vector<std::string> names = {"gpt2",    "llama3", "qwen2", "llama2",
                                                 "mistral", "gemma",  "phi4"};
  return names;
}

inline std::string FixtureDir(const std::string& name) {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/router/tokenizer/fixtures/" + name;
}

// One JSON object per line.
inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path << " (is HEADROOM_SOURCE_DIR set?)";
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

inline std::vector<int32_t> Ids(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

// Tests parameterized by fixture name, with that fixture's tokenizer loaded.
class FixtureTokenizerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto t = Tokenizer::FromDirectory(FixtureDir(GetParam()));
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = *std::move(t);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace headroom::router::testing
