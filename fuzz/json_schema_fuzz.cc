// libFuzzer target for JSON Schema constrained decoding (worker/engine/json_schema.h). Input: a
// schema's text, a 0 byte, then bytes to feed. Besides crashes, hangs and sanitizer reports it
// checks:
//   - Compile never fails with anything but InvalidArgument;
//   - the matcher never dead-ends: after every prefix it accepted, some byte is accepted or the
//     document may end there (Complete / CanEnd);
//   - a complete document is JSON (nlohmann, exponents cut to fit double), and nothing is
//     accepted after it;
//   - JsonAllowedTokens over a byte vocabulary agrees with trying each byte on a copy.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tests/worker/json_text.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_schema.h"

namespace {

using headroom::worker::JsonAllowedTokens;
using headroom::worker::JsonSchema;
using headroom::worker::JsonSchemaMatcher;
using headroom::worker::JsonVocabulary;

void Fail(const char* what, std::string_view text) {
  std::fprintf(stderr, "json_schema_fuzz: property violated: %s after %.*s\n", what,
               static_cast<int>(text.size()), text.data());
  std::abort();
}

const JsonVocabulary& Bytes() {
  static const JsonVocabulary* vocabulary = [] {
    std::vector<std::string> table;
    for (int b = 0; b < 256; ++b) table.emplace_back(1, static_cast<char>(b));
    return new JsonVocabulary(std::move(table));
  }();
  return *vocabulary;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view schema_text = input.substr(0, split);
  const std::string_view feed =
      split == std::string_view::npos ? std::string_view() : input.substr(split + 1, 512);
  const auto schema = JsonSchema::Compile(schema_text);
  if (!schema.ok()) {
    if (schema.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("a compile error that is not InvalidArgument", schema_text);
    }
    return 0;
  }
  JsonSchemaMatcher matcher(schema->get());
  std::string text;
  std::vector<int32_t> allowed;
  for (const char c : feed) {
    JsonAllowedTokens(matcher, Bytes(), &allowed);
    std::vector<bool> by_index(256, false);
    for (const int32_t id : allowed) by_index[static_cast<size_t>(id)] = true;
    bool any = false;
    for (int b = 0; b < 256; ++b) {
      JsonSchemaMatcher next = matcher;
      const bool accepted = next.Feed(static_cast<uint8_t>(b));
      if (accepted != by_index[static_cast<size_t>(b)]) Fail("JsonAllowedTokens disagrees", text);
      any = any || accepted;
    }
    if (matcher.Complete()) {
      if (any) Fail("a byte accepted after a complete document", text);
      if (!headroom::worker::testdata::Parses(text)) Fail("a complete document is not JSON", text);
      return 0;
    }
    if (!any && !matcher.CanEnd()) Fail("dead end", text);
    if (!matcher.Feed(static_cast<uint8_t>(c))) return 0;
    text.push_back(c);
  }
  return 0;
}
