// GrammarMatcher: reads an output a byte at a time against an EbnfGrammar (ebnf_grammar.h), as
// an Earley recognizer: one set of items per byte read, an item being a position in an
// alternative and the set where that alternative started. Nullable rules are skipped over when
// they are predicted (Aycock and Horspool), so a set is finished in one pass.
//
// Prefix-exact: the grammar keeps only rules that derive some text, so every item can still be
// finished, and a byte is accepted exactly when the text plus it is the start of some sentence.
// A request whose every token was chosen from GrammarAllowedTokens never dead-ends.
//
// Costs: a set holds the items alive at that byte, a handful for grammars written with
// repetition (a list is left-recursive, so reading its thousandth element costs what the first
// did); a grammar written with right recursion (`list ::= item list | item`) keeps one item per
// open level, and each byte then costs as many (Leo's refinement is not implemented).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "worker/engine/ebnf_grammar.h"

namespace headroom::worker {

// Numbers the matcher states that accept the same bytes from there on (for the token-list
// cache): a set's id stands for its live items, each an alternative's position and the id of the
// set where its rule started. Bounded: past kMaxIds it starts over under a new generation (lists
// cached under the old ids must then be dropped). The engine thread's: not thread-safe.
class GrammarStateIds {
 public:
  static constexpr size_t kMaxIds = size_t{1} << 18;

  int32_t Intern(const std::string& key);
  [[nodiscard]] int64_t generation() const { return generation_; }

 private:
  absl::flat_hash_map<std::string, int32_t> ids_;
  int64_t generation_ = 0;
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const EbnfGrammar> grammar);

  // False (and nothing read) when no sentence of the grammar continues the text with `byte`.
  [[nodiscard]] bool Feed(uint8_t byte);
  // Reads the bytes one by one; false at the first refused one (those before it stay read).
  [[nodiscard]] bool Feed(std::string_view bytes);
  // Forgets the bytes read after the first `length` (for trying tokens: Feed, then back).
  void Truncate(size_t length);
  // Bytes read so far.
  [[nodiscard]] size_t length() const { return set_start_.size() - 2; }

  // The text so far is a sentence of the grammar: the engine may offer EOS.
  [[nodiscard]] bool CanEnd() const;
  // It is one, and no byte can follow: the request is done.
  [[nodiscard]] bool Complete() const;

  // A key for the current state: equal keys accept the same bytes from here on (and agree on
  // CanEnd). Uses and fills `ids` (the same object for all matchers of the grammar). False, and
  // no key, for a text of more sets than `ids` can number at once.
  [[nodiscard]] bool AppendStateKey(GrammarStateIds& ids, std::string* key);

 private:
  struct Item {
    int32_t position;
    int32_t origin;  // the set where the item's alternative started
    friend bool operator==(const Item&, const Item&) = default;
  };

  [[nodiscard]] size_t SetBegin(size_t set) const { return set_start_[set]; }
  [[nodiscard]] size_t SetEnd(size_t set) const { return set_start_[set + 1]; }
  // Adds `item` to the set being built (the last) unless it is there.
  void Add(Item item);
  // Predicts and completes over the set being built until nothing new comes.
  void Close();

  std::shared_ptr<const EbnfGrammar> grammar_;
  // The sets end to end: set k is items_[set_start_[k], set_start_[k + 1]).
  std::vector<Item> items_;
  std::vector<size_t> set_start_;
  // The set being built's items, for Add.
  absl::flat_hash_set<uint64_t> building_;
  // AppendStateKey: the id of each set so far, under ids_generation_.
  std::vector<int32_t> set_ids_;
  int64_t ids_generation_ = -1;
  // AppendStateKey's buffers for one set: its live items (position, origin's id) and their key.
  std::vector<std::pair<int32_t, int32_t>> scratch_live_;
  std::string scratch_key_;
};

}  // namespace headroom::worker
