#include "worker/engine/grammar_tokens.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace headroom::worker {

GrammarTokenTrie::GrammarTokenTrie(const EbnfGrammar& grammar, const JsonVocabulary& vocabulary) {
  // Bytes in the same byte sets, all of them, are one class.
  std::array<uint8_t, 256> class_of{};
  std::array<uint8_t, 256> representative{};
  {
    const std::vector<std::bitset<256>>& sets = grammar.terminals();
    absl::flat_hash_map<std::string, uint8_t> classes;
    for (size_t byte = 0; byte < 256; ++byte) {
      std::string membership(sets.size(), '0');
      for (size_t s = 0; s < sets.size(); ++s) {
        if (sets[s][byte]) membership[s] = '1';
      }
      const auto [it, added] = classes.emplace(membership, static_cast<uint8_t>(classes.size()));
      if (added) representative[it->second] = static_cast<uint8_t>(byte);
      class_of[byte] = it->second;
    }
  }
  const std::vector<std::string>& bytes = vocabulary.token_bytes();
  std::vector<std::string> spelled(bytes.size());
  std::vector<int32_t> order;
  for (size_t id = 0; id < bytes.size(); ++id) {
    if (bytes[id].empty()) continue;  // special tokens and ids without text
    for (const char c : bytes[id]) {
      spelled[id].push_back(static_cast<char>(class_of[static_cast<uint8_t>(c)]));
    }
    order.push_back(static_cast<int32_t>(id));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return spelled[static_cast<size_t>(a)] < spelled[static_cast<size_t>(b)];
  });
  // The path from the root to the last token's node; a token's nodes are its classes.
  std::vector<int32_t> path;
  std::string_view previous;
  token_ids_.reserve(order.size());
  for (const int32_t id : order) {
    const std::string& classes = spelled[static_cast<size_t>(id)];
    size_t common = 0;
    while (common < previous.size() && common < classes.size() &&
           previous[common] == classes[common]) {
      ++common;
    }
    while (path.size() > common) {
      nodes_[static_cast<size_t>(path.back())].subtree_end = static_cast<int32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t depth = common; depth < classes.size(); ++depth) {
      path.push_back(static_cast<int32_t>(nodes_.size()));
      nodes_.push_back({.byte = representative[static_cast<uint8_t>(classes[depth])],
                        .depth = static_cast<int32_t>(depth + 1),
                        .subtree_end = 0,
                        .first_token = static_cast<int32_t>(token_ids_.size()),
                        .end_token = static_cast<int32_t>(token_ids_.size())});
    }
    // Equal spellings are next to each other, so a node's tokens are one run.
    Node& node = nodes_[static_cast<size_t>(path.back())];
    token_ids_.push_back(id);
    node.end_token = static_cast<int32_t>(token_ids_.size());
    previous = classes;
  }
  while (!path.empty()) {
    nodes_[static_cast<size_t>(path.back())].subtree_end = static_cast<int32_t>(nodes_.size());
    path.pop_back();
  }
}

void GrammarAllowedTokens(GrammarMatcher& matcher, const GrammarTokenTrie& trie,
                          std::vector<int32_t>* allowed) {
  allowed->clear();
  const size_t base = matcher.length();
  const std::vector<GrammarTokenTrie::Node>& nodes = trie.nodes();
  const std::vector<int32_t>& ids = trie.token_ids();
  for (size_t i = 0; i < nodes.size();) {
    const GrammarTokenTrie::Node& node = nodes[i];
    matcher.Truncate(base + static_cast<size_t>(node.depth) - 1);
    if (!matcher.Feed(node.byte)) {
      i = static_cast<size_t>(node.subtree_end);
      continue;
    }
    allowed->insert(allowed->end(), ids.begin() + node.first_token, ids.begin() + node.end_token);
    ++i;
  }
  matcher.Truncate(base);
}

}  // namespace headroom::worker
