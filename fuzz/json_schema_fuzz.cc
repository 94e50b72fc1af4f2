// libFuzzer target for JSON Schema, guided-regex, EBNF- or Lark-grammar and structural-tag
// constrained decoding (worker/engine/json_schema.h, regex_matcher.h, ebnf_grammar.h,
// lark_grammar.h, structural_tag.h). Input: a schema's text (or 0x01 and a regex, 0x02 and a
// grammar, 0x03 and a structural tag's JSON), a 0 byte, then bytes to feed. Besides crashes, hangs
// and sanitizer reports it checks:
//   - Compile never fails with anything but InvalidArgument;
//   - the matcher never dead-ends: after every prefix it accepted, some byte is accepted or the
//     answer may end there (Complete / CanEnd);
//   - an answer that is complete or may end is whole: JSON (nlohmann, exponents cut to fit
//     double), or text the regex matches as decoded code points; nothing is accepted after a
//     complete one;
//   - JsonAllowedTokens over a byte vocabulary agrees with trying each byte on a copy, and for a
//     regex RegexAllowedTokens (tokens grouped by character classes) agrees with it;
//   - for a schema, two prefixes with the same state key (what the engine caches token lists by)
//     accept the same bytes and may end alike;
//   - for a grammar: GrammarAllowedTokens (a walk of the vocabulary's trie) gives the tokens
//     trying each one gives, over the bytes and over the word vocabulary; equal state keys accept
//     the same bytes and may end alike; Truncate to half the text and feeding the rest again
//     comes back to the same state key. Whether a text the grammar may end on is a sentence has
//     no second implementation here: tests/worker/grammar_test.cc checks that against xgrammar;
//   - for a structural tag: JsonAllowedTokens over the word vocabulary gives the tokens trying
//     each one gives; equal state keys accept the same bytes and may end alike
//     (tests/worker/structural_tag_test.cc checks what it reads against xgrammar).
#include <algorithm>
#include <bitset>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tests/worker/json_text.h"
#include "worker/engine/ebnf_grammar.h"
#include "worker/engine/grammar_matcher.h"
#include "worker/engine/grammar_tokens.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_schema.h"
#include "worker/engine/lark_grammar.h"
#include "worker/engine/regex_matcher.h"
#include "worker/engine/regex_tokens.h"
#include "worker/engine/structural_tag.h"

namespace {

using headroom::worker::CompileGuidedGrammar;
using headroom::worker::GrammarMatcher;
using headroom::worker::GrammarStateIds;
using headroom::worker::GrammarTokenTrie;
using headroom::worker::JsonAllowedTokens;
using headroom::worker::JsonSchema;
using headroom::worker::JsonSchemaMatcher;
using headroom::worker::JsonVocabulary;
using headroom::worker::RegexMatcher;
using headroom::worker::RegexTokenClasses;

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

// Regex mode's second vocabulary: the bytes, pairs of ASCII characters and whole multi-byte
// characters, so that tokens share class sequences.
const JsonVocabulary& Words() {
  static const JsonVocabulary* vocabulary = [] {
    std::vector<std::string> table;
    for (int b = 0; b < 256; ++b) table.emplace_back(1, static_cast<char>(b));
    const std::string_view chars = "az AZ09.-_\"{}";
    for (const char a : chars) {
      for (const char b : chars) table.push_back(std::string{a, b});
    }
    for (const char* word : {"é", "😀", "😁", " é", "ab😀", "\xC3", "\xF0\x9F", "\x98\x80"}) {
      table.emplace_back(word);
    }
    return new JsonVocabulary(std::move(table));
  }();
  return *vocabulary;
}

// Feeds `feed` to `matcher` byte by byte, checking the properties above at every step;
// `allowed_bytes(matcher, &ids)` lists the bytes (as ids of Bytes()) the matcher's own token
// lister allows, `whole(text)` says whether a text the matcher may end on is a whole answer, and
// `step(matcher, text)` checks more in each state.
template <typename Matcher, typename AllowedBytes, typename Whole, typename Step>
void Walk(Matcher matcher, std::string_view feed, AllowedBytes allowed_bytes, Whole whole,
          Step step) {
  std::string text;
  std::vector<int32_t> allowed;
  for (const char c : feed) {
    step(matcher, text);
    allowed_bytes(matcher, &allowed);
    std::vector<bool> by_index(256, false);
    for (const int32_t id : allowed) by_index[static_cast<size_t>(id)] = true;
    bool any = false;
    for (int b = 0; b < 256; ++b) {
      Matcher next = matcher;
      const bool accepted = next.Feed(static_cast<uint8_t>(b));
      if (accepted != by_index[static_cast<size_t>(b)]) Fail("the allowed bytes disagree", text);
      any = any || accepted;
    }
    if (matcher.Complete()) {
      if (any) Fail("a byte accepted after a complete answer", text);
      if (!whole(text)) Fail("a complete answer is not whole", text);
      return;
    }
    if (matcher.CanEnd() && !whole(text)) Fail("an answer that may end is not whole", text);
    if (!any && !matcher.CanEnd()) Fail("dead end", text);
    if (!matcher.Feed(static_cast<uint8_t>(c))) return;
    text.push_back(c);
  }
}

// The JSON and regex matchers' token lister over the bytes.
template <typename Matcher>
void JsonAllowedBytes(const Matcher& matcher, std::vector<int32_t>* allowed) {
  JsonAllowedTokens(matcher, Bytes(), allowed);
}

// What `matcher` accepts next: the 256 bytes, then Complete and CanEnd.
template <typename Matcher>
std::bitset<258> Accepts(const Matcher& matcher) {
  std::bitset<258> accepts;
  for (int b = 0; b < 256; ++b) {
    Matcher next = matcher;
    accepts[static_cast<size_t>(b)] = next.Feed(static_cast<uint8_t>(b));
  }
  accepts[256] = matcher.Complete();
  accepts[257] = matcher.CanEnd();
  return accepts;
}

// Fails unless `lister` gives the tokens of `vocabulary` (none empty) that feeding each to a copy
// of `matcher` accepts.
template <typename Matcher, typename Lister>
void CheckTokenList(const Matcher& matcher, const JsonVocabulary& vocabulary, Lister lister,
                    const std::string& text) {
  std::vector<int32_t> listed;
  lister(&listed);
  std::sort(listed.begin(), listed.end());
  std::vector<int32_t> tried;
  const std::vector<std::string>& tokens = vocabulary.token_bytes();
  for (size_t id = 0; id < tokens.size(); ++id) {
    Matcher next = matcher;
    if (next.Feed(tokens[id])) tried.push_back(static_cast<int32_t>(id));
  }
  if (listed != tried) Fail("the token lister disagrees with trying each token", text);
}

// Fails unless every prefix with `key` accepts what the first one did (`accepts`: Accepts).
void CheckStateKey(std::unordered_map<std::string, std::bitset<258>>& by_key, std::string key,
                   const std::bitset<258>& accepts, const std::string& text) {
  const auto [it, added] = by_key.emplace(std::move(key), accepts);
  if (!added && it->second != accepts) Fail("two states with one key differ", text);
}

void FuzzGrammar(std::string_view spec, std::string_view feed) {
  const auto grammar = CompileGuidedGrammar(spec);  // EBNF, or Lark without a `::=` line
  if (!grammar.ok()) {
    if (grammar.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("a grammar compile error that is not InvalidArgument", spec);
    }
    return;
  }
  const GrammarTokenTrie byte_trie(**grammar, Bytes());
  const GrammarTokenTrie word_trie(**grammar, Words());
  GrammarStateIds ids;
  std::unordered_map<std::string, std::bitset<258>> by_key;
  Walk(
      GrammarMatcher(*grammar), feed,
      [&](const GrammarMatcher& matcher, std::vector<int32_t>* allowed) {
        GrammarMatcher copy = matcher;
        headroom::worker::GrammarAllowedTokens(copy, byte_trie, allowed);
        if (copy.length() != matcher.length()) Fail("GrammarAllowedTokens moved the matcher", "");
      },
      [](const std::string&) { return true; },
      [&](const GrammarMatcher& matcher, const std::string& text) {
        GrammarMatcher copy = matcher;
        CheckTokenList(
            matcher, Words(),
            [&](std::vector<int32_t>* listed) {
              headroom::worker::GrammarAllowedTokens(copy, word_trie, listed);
            },
            text);
        std::string key;
        if (!copy.AppendStateKey(ids, &key)) return;
        CheckStateKey(by_key, key, Accepts(matcher), text);
        // Back to half the text, then the rest again: the same state.
        GrammarMatcher again = matcher;
        again.Truncate(text.size() / 2);
        if (!again.Feed(std::string_view(text).substr(text.size() / 2))) {
          Fail("a text refused after Truncate", text);
        }
        std::string key_again;
        if (again.AppendStateKey(ids, &key_again) && key_again != key) {
          Fail("Truncate and feeding again changed the state key", text);
        }
      });
}

void FuzzStructuralTag(std::string_view spec, std::string_view feed) {
  const auto tag = headroom::worker::StructuralTag::Compile(spec);
  if (!tag.ok()) {
    if (tag.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("a structural tag compile error that is not InvalidArgument", spec);
    }
    return;
  }
  using headroom::worker::StructuralTagMatcher;
  std::unordered_map<std::string, std::bitset<258>> by_key;
  Walk(
      StructuralTagMatcher(tag->get()), feed, JsonAllowedBytes<StructuralTagMatcher>,
      [](const std::string&) { return true; },
      [&](const StructuralTagMatcher& matcher, const std::string& text) {
        CheckTokenList(
            matcher, Words(),
            [&](std::vector<int32_t>* listed) { JsonAllowedTokens(matcher, Words(), listed); },
            text);
        std::string key;
        matcher.AppendStateKey(&key);
        CheckStateKey(by_key, std::move(key), Accepts(matcher), text);
      });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // A leading 0x01 byte: the part before the 0 byte is a guided regex, not a schema; 0x02: an
  // EBNF grammar; 0x03: a structural tag.
  const char mode = input.empty() ? '\0' : input[0];
  const bool regex_mode = mode == '\x01';
  if (regex_mode || mode == '\x02' || mode == '\x03') input.remove_prefix(1);
  const size_t split = input.find('\0');
  const std::string_view spec = input.substr(0, split);
  const std::string_view feed =
      split == std::string_view::npos ? std::string_view() : input.substr(split + 1, 512);
  if (mode == '\x02') {
    FuzzGrammar(spec, feed);
    return 0;
  }
  if (mode == '\x03') {
    FuzzStructuralTag(spec, feed);
    return 0;
  }
  if (regex_mode) {
    const auto regex = headroom::worker::CompileGuidedRegex(spec);
    if (!regex.ok()) {
      if (regex.status().code() != absl::StatusCode::kInvalidArgument) {
        Fail("a regex compile error that is not InvalidArgument", spec);
      }
      return 0;
    }
    // The byte-at-a-time reading agrees with matching the decoded text, and grouping tokens by
    // character classes gives the lists trying each token gives.
    const RegexTokenClasses classes(*regex, Words());
    std::vector<int32_t> grouped;
    std::vector<int32_t> each;
    Walk(
        RegexMatcher(&*regex), feed, JsonAllowedBytes<RegexMatcher>,
        [&](const std::string& text) { return regex->Matches(text); },
        [&](const RegexMatcher& matcher, const std::string& text) {
          headroom::worker::RegexAllowedTokens(matcher, classes, Words(), &grouped);
          JsonAllowedTokens(matcher, Words(), &each);
          std::sort(grouped.begin(), grouped.end());
          std::sort(each.begin(), each.end());
          if (grouped != each) Fail("RegexAllowedTokens disagrees", text);
        });
    return 0;
  }
  const auto schema = JsonSchema::Compile(spec);
  if (!schema.ok()) {
    if (schema.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("a compile error that is not InvalidArgument", spec);
    }
    return 0;
  }
  // What each state key's first prefix accepted: the 256 bytes, then Complete and CanEnd.
  std::unordered_map<std::string, std::bitset<258>> by_key;
  Walk(JsonSchemaMatcher(schema->get()), feed, JsonAllowedBytes<JsonSchemaMatcher>,
       headroom::worker::testdata::Parses,
       [&](const JsonSchemaMatcher& matcher, const std::string& text) {
         std::string key;
         matcher.AppendStateKey(&key);
         CheckStateKey(by_key, std::move(key), Accepts(matcher), text);
       });
  return 0;
}
