// Bad input gives a clear absl::Status, never an exception or a crash.
#include <string>

#include "gtest/gtest.h"
#include "router/tokenizer/tokenizer.h"
#include "tests/router/tokenizer/fixtures.h"

namespace headroom::router {
namespace {

std::string Minimal(const std::string& model, const std::string& pre = "null",
                    const std::string& normalizer = "null", const std::string& decoder = "null") {
  return R"({"added_tokens": [], "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre +
         R"(, "post_processor": null, "decoder": )" + decoder + R"(, "model": )" + model + "}";
}

const char* const kBpe = R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << "'" << needle << "' not in: " << s;
}

TEST(TokenizerErrorsTest, MissingFileNamesThePath) {
  auto t = Tokenizer::FromDirectory("/nonexistent/model");
  ASSERT_FALSE(t.ok());
  ExpectError(t.status(), absl::StatusCode::kNotFound, "/nonexistent/model/tokenizer.json");
}

TEST(TokenizerErrorsTest, MalformedJsonNamesPosition) {
  auto t = Tokenizer::FromJson("{\n  \"model\": {\"type\": \"BPE\",,}\n}", std::nullopt, "x.json");
  ASSERT_FALSE(t.ok());
  ExpectError(t.status(), absl::StatusCode::kInvalidArgument, "x.json: JSON parse error at byte");
  ExpectError(t.status(), absl::StatusCode::kInvalidArgument, "line 2");
}

TEST(TokenizerErrorsTest, MalformedConfigNamesTheFile) {
  auto t = Tokenizer::FromJson(Minimal(kBpe), "{ nope", "x.json");
  ASSERT_FALSE(t.ok());
  ExpectError(t.status(), absl::StatusCode::kInvalidArgument, "tokenizer_config.json");
}

TEST(TokenizerErrorsTest, UnsupportedComponentsAreNamed) {
  ExpectError(Tokenizer::FromJson(Minimal(R"({"type": "Unigram", "vocab": []})")).status(),
              absl::StatusCode::kInvalidArgument, "unsupported model type 'Unigram'");
  ExpectError(Tokenizer::FromJson(Minimal(R"({"type": "WordPiece", "vocab": {}})")).status(),
              absl::StatusCode::kInvalidArgument, "unsupported model type 'WordPiece'");
  ExpectError(Tokenizer::FromJson(Minimal(kBpe, R"({"type": "BertPreTokenizer"})")).status(),
              absl::StatusCode::kInvalidArgument, "unsupported pre-tokenizer 'BertPreTokenizer'");
  ExpectError(
      Tokenizer::FromJson(Minimal(kBpe, "null", R"({"type": "Sequence", "normalizers":
                                  [{"type": "NFC"}, {"type": "Precompiled"}]})"))
          .status(),
      absl::StatusCode::kInvalidArgument, "normalizer.normalizers[1]: unsupported normalizer 'Precompiled'");
  ExpectError(Tokenizer::FromJson(Minimal(kBpe, "null", "null", R"({"type": "WordPiece"})")).status(),
              absl::StatusCode::kInvalidArgument, "unsupported decoder 'WordPiece'");
  ExpectError(Tokenizer::FromJson(Minimal(kBpe, R"json({"type": "Split", "behavior": "Isolated",
      "invert": false, "pattern": {"Regex": "a(?=b)"}})json")).status(),
              absl::StatusCode::kInvalidArgument, "lookahead");
}

TEST(TokenizerErrorsTest, BadModelFieldsNameTheirPath) {
  ExpectError(Tokenizer::FromJson(Minimal(R"({"type": "BPE", "vocab": {"a": "x"}, "merges": []})"))
                  .status(),
              absl::StatusCode::kInvalidArgument, "model.vocab.a: expected a token id");
  ExpectError(Tokenizer::FromJson(Minimal(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [3]})"))
                  .status(),
              absl::StatusCode::kInvalidArgument, "model.merges[0]");
  ExpectError(
      Tokenizer::FromJson(Minimal(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a z"]})"))
          .status(),
      absl::StatusCode::kInvalidArgument, "not in the vocab");
  ExpectError(Tokenizer::FromJson("[1, 2]").status(), absl::StatusCode::kInvalidArgument,
              "expected an object");
  ExpectError(Tokenizer::FromJson(R"({"model": {"type": "BPE", "vocab": {}}, "added_tokens": [{"id": -1}]})")
                  .status(),
              absl::StatusCode::kInvalidArgument, "added_tokens[0].id");
}

TEST(TokenizerErrorsTest, InvalidUtf8InputIsAnError) {
  auto t = Tokenizer::FromJson(Minimal(kBpe));
  ASSERT_TRUE(t.ok()) << t.status();
  auto ids = (*t)->Encode("ab\xC3");
  ASSERT_FALSE(ids.ok());
  ExpectError(ids.status(), absl::StatusCode::kInvalidArgument, "offset 2");
}

TEST(TokenizerErrorsTest, UnknownIdsAreSkippedInDecode) {
  auto t = Tokenizer::FromJson(Minimal(kBpe));
  ASSERT_TRUE(t.ok()) << t.status();
  const std::vector<int32_t> ids = {2, -5, 99, 0};
  EXPECT_EQ((*t)->Decode(ids), "ab a");  // no decoder: tokens joined by spaces
}

}  // namespace
}  // namespace headroom::router
