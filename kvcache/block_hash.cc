#include "kvcache/block_hash.h"

#include <xxhash.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace headroom::kvcache {
namespace {

// Root of unsalted sequences: an arbitrary fixed value (not the hash of any salt).
constexpr BlockHash kUnsaltedRoot{0x6865616472'6f6f6dULL, 0x9e3779b97f4a7c15ULL};

// Parent hash and token ids hashed as one contiguous buffer; block sizes up to this many tokens
// use a stack buffer, larger ones a heap buffer.
constexpr size_t kStackTokens = 256;

BlockHash FromXxh(XXH128_hash_t h) { return BlockHash{h.low64, h.high64}; }

}  // namespace

BlockHash RootBlockHash(std::string_view salt, std::string_view adapter) {
  if (adapter.empty()) {
    if (salt.empty()) return kUnsaltedRoot;
    return FromXxh(XXH3_128bits(salt.data(), salt.size()));
  }
  // The name's length, the name, then the salt: (name, salt) pairs cannot run into each other,
  // and the seed keeps these roots apart from the salt-only ones.
  constexpr XXH64_hash_t kAdapterSeed = 0x6c6f7261'61646170ULL;  // "loraadap"
  std::string bytes(sizeof(uint64_t), '\0');
  const uint64_t length = adapter.size();
  std::memcpy(bytes.data(), &length, sizeof(length));
  bytes.append(adapter);
  bytes.append(salt);
  return FromXxh(XXH3_128bits_withSeed(bytes.data(), bytes.size(), kAdapterSeed));
}

BlockHash HashBlock(const BlockHash& parent, absl::Span<const int32_t> token_ids) {
  const size_t bytes = sizeof(BlockHash) + token_ids.size() * sizeof(int32_t);
  auto hash_buffer = [&](unsigned char* buffer) {
    std::memcpy(buffer, &parent, sizeof(BlockHash));
    std::memcpy(buffer + sizeof(BlockHash), token_ids.data(), token_ids.size() * sizeof(int32_t));
    return FromXxh(XXH3_128bits(buffer, bytes));
  };
  if (token_ids.size() <= kStackTokens) {
    std::array<unsigned char, sizeof(BlockHash) + kStackTokens * sizeof(int32_t)> buffer;
    return hash_buffer(buffer.data());
  }
  std::vector<unsigned char> buffer(bytes);
  return hash_buffer(buffer.data());
}

BlockHash LayerGroupHash(const BlockHash& hash, int32_t group) {
  if (group == 0) return hash;
  // XOR with a per-group 128-bit constant: equal to another block's hash only by a 2^-128 chance.
  const XXH128_hash_t mix = XXH3_128bits(&group, sizeof(group));
  return BlockHash{hash.low ^ mix.low64, hash.high ^ mix.high64};
}

std::vector<BlockHash> PromptBlockHashes(absl::Span<const int32_t> tokens, int32_t block_size,
                                         std::string_view salt, std::string_view adapter) {
  std::vector<BlockHash> hashes;
  if (block_size <= 0) return hashes;
  const size_t size = static_cast<size_t>(block_size);
  hashes.reserve(tokens.size() / size);
  BlockHash parent = RootBlockHash(salt, adapter);
  for (size_t start = 0; start + size <= tokens.size(); start += size) {
    parent = HashBlock(parent, tokens.subspan(start, size));
    hashes.push_back(parent);
  }
  return hashes;
}

namespace {

void AppendLittleEndian(uint64_t word, std::string& out) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((word >> (8 * i)) & 0xff));
}

uint64_t ReadLittleEndian(std::string_view bytes) {
  uint64_t word = 0;
  for (int i = 7; i >= 0; --i) {
    word = (word << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  }
  return word;
}

}  // namespace

std::string PackBlockHashes(absl::Span<const BlockHash> hashes) {
  std::string out;
  out.reserve(hashes.size() * sizeof(BlockHash));
  for (const BlockHash& h : hashes) {
    AppendLittleEndian(h.low, out);
    AppendLittleEndian(h.high, out);
  }
  return out;
}

std::optional<std::vector<BlockHash>> UnpackBlockHashes(std::string_view bytes) {
  if (bytes.size() % sizeof(BlockHash) != 0) return std::nullopt;
  std::vector<BlockHash> hashes;
  hashes.reserve(bytes.size() / sizeof(BlockHash));
  for (size_t at = 0; at < bytes.size(); at += sizeof(BlockHash)) {
    hashes.push_back({.low = ReadLittleEndian(bytes.substr(at, 8)),
                      .high = ReadLittleEndian(bytes.substr(at + 8, 8))});
  }
  return hashes;
}

}  // namespace headroom::kvcache
