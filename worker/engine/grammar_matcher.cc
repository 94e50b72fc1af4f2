#include "worker/engine/grammar_matcher.h"

#include <algorithm>
#include <utility>

#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {
namespace {

// Sets up to this many items are searched for duplicates one by one; larger ones through a hash
// set.
constexpr size_t kLinearSearch = 48;

uint64_t ItemKey(int32_t position, int32_t origin) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(position)) << 32) |
         static_cast<uint32_t>(origin);
}

}  // namespace

int32_t GrammarStateIds::Intern(const std::string& key) {
  if (const auto it = ids_.find(key); it != ids_.end()) return it->second;
  if (ids_.size() >= kMaxIds) {
    ids_.clear();
    ++generation_;
  }
  const auto id = static_cast<int32_t>(ids_.size());
  ids_.emplace(key, id);
  return id;
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const EbnfGrammar> grammar)
    : grammar_(std::move(grammar)) {
  set_start_.push_back(0);
  for (const int32_t position : grammar_->alternatives(grammar_->root())) {
    Add({.position = position, .origin = 0});
  }
  Close();
  set_start_.push_back(items_.size());
}

void GrammarMatcher::Add(Item item) {
  const size_t begin = set_start_.back();
  const size_t size = items_.size() - begin;
  if (size < kLinearSearch) {
    for (size_t i = begin; i < items_.size(); ++i) {
      if (items_[i] == item) return;
    }
  } else {
    if (building_.empty()) {
      for (size_t i = begin; i < items_.size(); ++i) {
        building_.insert(ItemKey(items_[i].position, items_[i].origin));
      }
    }
    if (!building_.insert(ItemKey(item.position, item.origin)).second) return;
  }
  items_.push_back(item);
}

void GrammarMatcher::Close() {
  const auto set = static_cast<int32_t>(set_start_.size() - 1);
  for (size_t i = set_start_.back(); i < items_.size(); ++i) {
    const Item item = items_[i];
    const int32_t symbol = grammar_->symbol(item.position);
    if (symbol == EbnfGrammar::kEnd) {
      // A rule that started in this very set read nothing: it is nullable, and whatever waited
      // on it was moved past it when it was predicted.
      if (item.origin == set) continue;
      const int32_t rule = grammar_->lhs(item.position);
      const auto origin = static_cast<size_t>(item.origin);
      for (size_t j = SetBegin(origin); j < SetEnd(origin); ++j) {
        const Item waiting = items_[j];
        if (grammar_->symbol(waiting.position) == rule) {
          Add({.position = waiting.position + 1, .origin = waiting.origin});
        }
      }
    } else if (symbol >= 0) {
      for (const int32_t position : grammar_->alternatives(symbol)) {
        Add({.position = position, .origin = set});
      }
      if (grammar_->nullable(symbol)) Add({.position = item.position + 1, .origin = item.origin});
    }
  }
  if (!building_.empty()) building_.clear();
}

bool GrammarMatcher::Feed(uint8_t byte) {
  const size_t last = set_start_.size() - 2;
  const size_t begin = items_.size();
  for (size_t i = SetBegin(last); i < SetEnd(last); ++i) {
    const Item item = items_[i];
    const int32_t symbol = grammar_->symbol(item.position);
    if (EbnfGrammar::IsTerminal(symbol) && grammar_->bytes(symbol)[byte]) {
      Add({.position = item.position + 1, .origin = item.origin});
    }
  }
  if (items_.size() == begin) return false;
  Close();
  set_start_.push_back(items_.size());
  return true;
}

bool GrammarMatcher::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (!Feed(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

void GrammarMatcher::Truncate(size_t length) {
  if (length >= this->length()) return;
  set_start_.resize(length + 2);
  items_.resize(set_start_.back());
  if (set_ids_.size() > length + 1) set_ids_.resize(length + 1);
}

bool GrammarMatcher::CanEnd() const {
  const size_t last = set_start_.size() - 2;
  for (size_t i = SetBegin(last); i < SetEnd(last); ++i) {
    const Item item = items_[i];
    if (item.origin == 0 && grammar_->symbol(item.position) == EbnfGrammar::kEnd &&
        grammar_->lhs(item.position) == grammar_->root()) {
      return true;
    }
  }
  return false;
}

bool GrammarMatcher::Complete() const {
  if (!CanEnd()) return false;
  const size_t last = set_start_.size() - 2;
  for (size_t i = SetBegin(last); i < SetEnd(last); ++i) {
    if (EbnfGrammar::IsTerminal(grammar_->symbol(items_[i].position))) return false;
  }
  return true;
}

bool GrammarMatcher::AppendStateKey(GrammarStateIds& ids, std::string* key) {
  const size_t num_sets = set_start_.size() - 1;
  std::vector<std::pair<int32_t, int32_t>>& live = scratch_live_;
  for (int restarts = 0; set_ids_.size() < num_sets || ids_generation_ != ids.generation();) {
    if (ids_generation_ != ids.generation()) {
      // The ids started over (or were never taken): every set's id is taken again.
      if (++restarts > 2) break;
      set_ids_.clear();
      ids_generation_ = ids.generation();
    }
    // A set is what its live items make it: an item that started in it was predicted from them,
    // and a finished one has done all it will (CanEnd aside, which the key adds). The first set's
    // items were predicted from the root instead: it has a live item of its own (-1, -1), else
    // it would share its key with every finished text (no live items) that may end.
    const size_t set = set_ids_.size();
    live.clear();
    if (set == 0) live.emplace_back(-1, -1);
    for (size_t i = SetBegin(set); i < SetEnd(set); ++i) {
      const Item item = items_[i];
      if (static_cast<size_t>(item.origin) < set &&
          grammar_->symbol(item.position) != EbnfGrammar::kEnd) {
        live.emplace_back(item.position, set_ids_[static_cast<size_t>(item.origin)]);
      }
    }
    std::sort(live.begin(), live.end());
    live.erase(std::unique(live.begin(), live.end()), live.end());
    scratch_key_.clear();
    for (const auto& [position, origin_id] : live) {
      AppendKeyBytes(&scratch_key_, position);
      AppendKeyBytes(&scratch_key_, origin_id);
    }
    const int32_t id = ids.Intern(scratch_key_);
    if (ids_generation_ == ids.generation()) set_ids_.push_back(id);
  }
  // A chart longer than the ids can hold has no key.
  if (set_ids_.size() != num_sets || ids_generation_ != ids.generation()) return false;
  key->push_back(CanEnd() ? '\1' : '\0');
  AppendKeyBytes(key, set_ids_.back());
  return true;
}

}  // namespace headroom::worker
