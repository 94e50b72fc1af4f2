// A tokenizer fixture's vocabulary (tests/router/tokenizer/fixtures/<name>) as the worker builds
// it for constrained decoding (cli/worker_command.cc): each token's bytes, special tokens none.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "router/tokenizer/tokenizer.h"
#include "tests/worker/fixtures.h"
#include "worker/engine/json_matcher.h"

namespace headroom::worker::testdata {

inline std::shared_ptr<const JsonVocabulary> FixtureVocabulary(const std::string& name) {
  const auto dir = SourceDir() / "tests" / "router" / "tokenizer" / "fixtures" / name;
  absl::StatusOr<std::unique_ptr<router::Tokenizer>> tokenizer =
      router::Tokenizer::FromDirectory(dir.string());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  if (!tokenizer.ok()) return nullptr;
  std::vector<std::string> bytes(static_cast<size_t>((*tokenizer)->vocab_size()));
  for (int32_t id = 0; id < (*tokenizer)->vocab_size(); ++id) {
    if (!(*tokenizer)->IsSpecialToken(id)) {
      bytes[static_cast<size_t>(id)] = (*tokenizer)->TokenBytes(id);
    }
  }
  return std::make_shared<const JsonVocabulary>(std::move(bytes));
}

}  // namespace headroom::worker::testdata
