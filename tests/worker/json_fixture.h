// A committed JSON fixture (tests/worker/fixtures/<name>, written by the scripts/gen_*_fixtures.py
// generators) and the byte strings they store as hex.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "tests/worker/fixtures.h"

namespace headroom::worker::testdata {

// The fixture parsed, or an empty object (and a test failure) when it is missing.
inline nlohmann::json LoadJsonFixture(std::string_view name) {
  std::ifstream in(FixtureDir(name));
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// A fixture's "hex" field as the bytes it spells.
inline std::string HexBytes(const nlohmann::json& hex) {
  return absl::HexStringToBytes(hex.get<std::string>());
}

}  // namespace headroom::worker::testdata
