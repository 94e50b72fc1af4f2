// Access to the committed tokenizer fixtures (tests/router/tokenizer/fixtures/<name>/).
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace headroom::router::testing {

// The fixtures made by scripts/gen_tokenizer_fixtures.py.
inline const std::vector<std::string>& FixtureNames() {
  static const std::vector<std::string> names = {"gpt2", "llama3", "qwen2", "llama2", "mistral"};
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

}  // namespace headroom::router::testing
