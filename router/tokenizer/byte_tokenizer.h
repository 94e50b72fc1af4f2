// The self-contained tokenizer of the dummy models (`dummy:<preset>`): no file needed.
//
//   ids 0..255   the bytes 0x00..0xFF (text is encoded as its UTF-8 bytes, one id per byte);
//   id 256       <|bos|> (special), when vocab_size >= 257; Encode puts it first;
//   id 257       <|eos|> (special), when vocab_size >= 258;
//   ids 258..    unused: Decode skips them (a dummy model with a larger vocab may sample them).
//
// Decoding turns the bytes back into text with invalid sequences as U+FFFD, and streams like any
// byte-level tokenizer (IncrementalDetokenizer holds back incomplete UTF-8).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router {

// InvalidArgument when vocab_size < 256.
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeByteTokenizer(int32_t vocab_size);

inline constexpr int32_t kByteTokenizerBosId = 256;
inline constexpr int32_t kByteTokenizerEosId = 257;

}  // namespace headroom::router
