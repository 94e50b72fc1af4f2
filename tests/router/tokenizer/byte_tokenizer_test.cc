#include "router/tokenizer/byte_tokenizer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "router/tokenizer/incremental_detokenizer.h"

namespace headroom::router {
namespace {

TEST(ByteTokenizerTest, IdsAreBytesWithBos) {
  auto t = MakeByteTokenizer(260);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->vocab_size(), 260);
  EXPECT_EQ((*t)->bos_token_id(), kByteTokenizerBosId);
  EXPECT_EQ((*t)->eos_token_id(), kByteTokenizerEosId);
  auto ids = (*t)->Encode("Hi \xE2\x82\xAC");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{256, 'H', 'i', ' ', 0xE2, 0x82, 0xAC}));
  EXPECT_EQ((*t)->Decode(*ids), "Hi \xE2\x82\xAC");
  EXPECT_EQ((*t)->Decode(*ids, {.skip_special_tokens = false}), "<|bos|>Hi \xE2\x82\xAC");
  // Unused ids decode to nothing; a lone continuation byte becomes U+FFFD.
  EXPECT_EQ((*t)->Decode(std::vector<int32_t>{'a', 259, 0x80, 'b'}), "a\xEF\xBF\xBD" "b");
  // The special token text in a prompt is matched as the special token.
  auto special = (*t)->Encode("x<|eos|>", {.add_special_tokens = false});
  ASSERT_TRUE(special.ok());
  EXPECT_EQ(*special, (std::vector<int32_t>{'x', kByteTokenizerEosId}));
}

TEST(ByteTokenizerTest, Vocab256HasNoSpecials) {
  auto t = MakeByteTokenizer(256);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE((*t)->bos_token_id().has_value());
  EXPECT_FALSE((*t)->eos_token_id().has_value());
  auto ids = (*t)->Encode("<|bos|>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->size(), 7u);
}

TEST(ByteTokenizerTest, RejectsSmallVocab) {
  auto t = MakeByteTokenizer(100);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ByteTokenizerTest, StreamsCompleteCharactersOnly) {
  auto t = MakeByteTokenizer(258);
  ASSERT_TRUE(t.ok());
  IncrementalDetokenizer d(**t);
  EXPECT_EQ(d.Push(0xF0), "");
  EXPECT_EQ(d.Push(0x9F), "");
  EXPECT_EQ(d.Push(0x98), "");
  EXPECT_EQ(d.Push(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.Push('!'), "!");
  EXPECT_EQ(d.Push(0xE2), "");
  EXPECT_EQ(d.Finish(), "\xEF\xBF\xBD");
}

}  // namespace
// Each byte id is that byte, valid UTF-8 alone or not; the special tokens are their content.
TEST(ByteTokenizerTest, TokenBytesAreTheBytes) {
  auto tokenizer = MakeByteTokenizer(258);
  ASSERT_TRUE(tokenizer.ok());
  EXPECT_EQ((*tokenizer)->TokenBytes('{'), "{");
  EXPECT_EQ((*tokenizer)->TokenBytes(0xC8), "\xC8");
  EXPECT_EQ((*tokenizer)->TokenBytes(256), "<|bos|>");
  EXPECT_EQ((*tokenizer)->TokenBytes(300), "");
}

}  // namespace headroom::router
