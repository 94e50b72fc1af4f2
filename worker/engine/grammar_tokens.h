// The token lists of a guided grammar (grammar_matcher.h), made cheaper than trying every token:
//
// GrammarTokenTrie: the grammar tells bytes apart only by which of its byte sets hold them (for
// `[a-z]+ "."`: letters, the dot and the rest), so the vocabulary is kept as a trie over those
// classes, built once per grammar. A step walks it depth first, reading one byte per node into
// the matcher and going back up after; a byte the matcher refuses prunes the whole subtree, and
// every token of a node whose byte was read is allowed. Tokens that differ only by letters the
// grammar reads alike share their nodes.
//
// SharedGrammar: a grammar as the engine keeps it for all the requests that give the same text,
// with each state's token list once computed (keyed by GrammarMatcher::AppendStateKey; the
// engine thread's: not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "worker/engine/allowed_tokens.h"
#include "worker/engine/ebnf_grammar.h"
#include "worker/engine/grammar_matcher.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {

class GrammarTokenTrie {
 public:
  // In depth-first order; the root (the empty text) is not one. A node's subtree is the nodes
  // after it up to subtree_end.
  struct Node {
    uint8_t byte;  // one byte of the node's class: all read alike
    int32_t depth;
    int32_t subtree_end;
    int32_t first_token;  // its tokens: token_ids()[first_token, end_token)
    int32_t end_token;
  };

  GrammarTokenTrie(const EbnfGrammar& grammar, const JsonVocabulary& vocabulary);

  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  [[nodiscard]] const std::vector<int32_t>& token_ids() const { return token_ids_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
};

// Writes to `allowed` (cleared first, in no particular order) every token id whose bytes
// `matcher` accepts whole (`trie` built for the matcher's grammar). The matcher is left as it was.
void GrammarAllowedTokens(GrammarMatcher& matcher, const GrammarTokenTrie& trie,
                          std::vector<int32_t>* allowed);

struct SharedGrammar {
  SharedGrammar(std::shared_ptr<const EbnfGrammar> compiled, const JsonVocabulary& vocabulary)
      : grammar(std::move(compiled)), trie(*grammar, vocabulary) {}

  // This step's tokens for `matcher`: `compute(&ids)` lists them where no request of the grammar
  // has been in that state yet (or the state has no key).
  template <typename Compute>
  TokenMaskCache<std::string>::List Allowed(GrammarMatcher& matcher, Compute compute) {
    key_.clear();
    const int64_t generation = ids.generation();
    if (!matcher.AppendStateKey(ids, &key_)) {
      std::vector<int32_t> list;
      compute(&list);
      return std::make_shared<const AllowedTokens>(std::move(list));
    }
    // Ids that started over mean other states now: the lists kept under the old ones go.
    if (ids.generation() != generation) masks = TokenMaskCache<std::string>();
    return masks.Get(key_, compute);
  }

  std::shared_ptr<const EbnfGrammar> grammar;
  GrammarTokenTrie trie;
  TokenMaskCache<std::string> masks;
  // The states' ids the keys of `masks` are made of.
  GrammarStateIds ids;

 private:
  std::string key_;
};

}  // namespace headroom::worker
