// The real models' chat templates rendered by transformers (tests/router/jinja/fixtures/
// jinja_chat_templates.json, scripts/gen_jinja_fixtures.py), for tests that read what a model's
// template writes: a tool call, a reasoning turn, a prompt's end.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace headroom::router::openai {

// The cases ({name, messages, tools, add_generation_prompt, extra, expected | error}) of the
// template named `name` (glm4.5, seed-oss, ...); an empty array, and a failure, when it is not
// there.
inline nlohmann::ordered_json TemplateCases(const std::string& name) {
  const char* root = std::getenv("HEADROOM_SOURCE_DIR");
  std::ifstream in(std::string(root != nullptr ? root : ".") +
                   "/tests/router/jinja/fixtures/jinja_chat_templates.json");
  EXPECT_TRUE(in.good()) << "missing jinja_chat_templates.json (is HEADROOM_SOURCE_DIR set?)";
  if (!in.good()) return nlohmann::ordered_json::array();
  const nlohmann::ordered_json fixture = nlohmann::ordered_json::parse(in);
  for (const nlohmann::ordered_json& t : fixture["templates"]) {
    if (t["name"] == name) return t["cases"];
  }
  ADD_FAILURE() << "no template " << name << " in jinja_chat_templates.json";
  return nlohmann::ordered_json::array();
}

}  // namespace headroom::router::openai
