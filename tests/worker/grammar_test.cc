// EbnfGrammar and GrammarMatcher (vLLM's guided_grammar) against xgrammar, vLLM's default
// backend, as the reference: tests/worker/fixtures/grammar.json (scripts/gen_grammar_fixtures.py,
// xgrammar 0.2.8) labels 30 grammars' inputs with whether xgrammar takes them whole and how many
// of their bytes it reads before refusing one, lists grammars it refuses, and gives the token
// lists its bitmask allows after prefixes, for four of the tokenizer fixtures. Then: the state
// keys of the token-list cache, the trie walk against trying every token, and the refusals
// headroom adds.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/worker/fixture_vocabulary.h"
#include "tests/worker/json_fixture.h"
#include "worker/engine/ebnf_grammar.h"
#include "worker/engine/grammar_matcher.h"
#include "worker/engine/grammar_tokens.h"
#include "worker/engine/json_matcher.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

Json LoadFixture() { return testdata::LoadJsonFixture("grammar.json"); }

std::shared_ptr<const EbnfGrammar> MustCompile(const std::string& ebnf) {
  absl::StatusOr<std::shared_ptr<const EbnfGrammar>> grammar = EbnfGrammar::Compile(ebnf);
  EXPECT_TRUE(grammar.ok()) << ebnf << ": " << grammar.status();
  return grammar.ok() ? *std::move(grammar) : nullptr;
}

// The bytes of `text` read one by one until one is refused: how many were read.
size_t Viable(GrammarMatcher& matcher, std::string_view text) {
  size_t read = 0;
  for (const char c : text) {
    if (!matcher.Feed(static_cast<uint8_t>(c))) break;
    ++read;
  }
  return read;
}

// UTF-8 has no encoding for surrogates; xgrammar's negated classes take ED A0..BF anyway (the
// text would not be UTF-8), headroom's do not (docs/engine.md).
bool HasEncodedSurrogate(std::string_view bytes) {
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (static_cast<uint8_t>(bytes[i]) == 0xED && static_cast<uint8_t>(bytes[i + 1]) >= 0xA0 &&
        static_cast<uint8_t>(bytes[i + 1]) <= 0xBF) {
      return true;
    }
  }
  return false;
}

TEST(GrammarXgrammarTest, ReadsEveryInputAsXgrammarDoes) {
  const Json fixture = LoadFixture();
  ASSERT_FALSE(fixture["grammars"].empty());
  int compared = 0;
  int skipped = 0;
  for (const Json& g : fixture["grammars"]) {
    const auto name = g["name"].get<std::string>();
    const auto ebnf = g["ebnf"].get<std::string>();
    const std::shared_ptr<const EbnfGrammar> grammar = MustCompile(ebnf);
    if (grammar == nullptr) continue;
    for (const Json& c : g["cases"]) {
      const std::string input = testdata::HexBytes(c["hex"]);
      const auto viable = c["viable"].get<size_t>();
      if (HasEncodedSurrogate(input.substr(0, viable + 1))) {
        ++skipped;
        continue;
      }
      GrammarMatcher matcher(grammar);
      const size_t read = Viable(matcher, input);
      const bool complete = read == input.size() && matcher.CanEnd();
      const std::string where = name + " on " + c.dump();
      if (name == "unproductive_rules") {
        // xgrammar reads on into an alternative that can never end ("a" then b's "x"s); headroom
        // drops such alternatives, so it refuses there: every byte it reads stays finishable.
        EXPECT_LE(read, viable) << where;
      } else {
        EXPECT_EQ(read, viable) << where;
      }
      EXPECT_EQ(complete, c["complete"].get<bool>()) << where;
      ++compared;
    }
  }
  EXPECT_GT(compared, 1100);
  EXPECT_LT(skipped, 20);
}

TEST(GrammarXgrammarTest, RefusesWhatXgrammarRefuses) {
  const Json fixture = LoadFixture();
  ASSERT_FALSE(fixture["refused"].empty());
  // Accepted by headroom, refused by xgrammar: `true` and `false` are xgrammar keywords.
  const std::vector<std::string> accepted = {"rule_named_true"};
  for (const Json& r : fixture["refused"]) {
    const auto name = r["name"].get<std::string>();
    const absl::StatusOr<std::shared_ptr<const EbnfGrammar>> grammar =
        EbnfGrammar::Compile(r["ebnf"].get<std::string>());
    if (std::find(accepted.begin(), accepted.end(), name) != accepted.end()) {
      EXPECT_TRUE(grammar.ok()) << name << ": " << grammar.status();
      continue;
    }
    EXPECT_FALSE(grammar.ok()) << name << " (xgrammar: " << r["error"].get<std::string>() << ")";
    if (!grammar.ok()) {
      EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument) << name;
    }
  }
}

using testdata::FixtureVocabulary;

constexpr int32_t kLlama2Wow = 1509;

TEST(GrammarXgrammarTest, AllowsTheTokensXgrammarsBitmaskAllows) {
  const Json fixture = LoadFixture();
  ASSERT_FALSE(fixture["masks"].empty());
  std::map<std::string, std::shared_ptr<const JsonVocabulary>> vocabularies;
  for (const Json& m : fixture["masks"]) {
    const auto tokenizer = m["tokenizer"].get<std::string>();
    auto& vocabulary = vocabularies[tokenizer];
    if (vocabulary == nullptr) vocabulary = FixtureVocabulary(tokenizer);
    ASSERT_NE(vocabulary, nullptr);
    // transformers' len() also counts ids the configs name beyond tokenizer.json's (gemma's).
    EXPECT_LE(vocabulary->token_bytes().size(),
              fixture["tokenizers"][tokenizer]["vocab_size"].get<size_t>());
    const std::shared_ptr<const EbnfGrammar> grammar = MustCompile(m["ebnf"].get<std::string>());
    ASSERT_NE(grammar, nullptr);
    const GrammarTokenTrie trie(*grammar, *vocabulary);
    GrammarMatcher matcher(grammar);
    const std::string prefix = testdata::HexBytes(m["prefix_hex"]);
    ASSERT_TRUE(matcher.Feed(prefix)) << m.dump();
    std::vector<int32_t> allowed;
    GrammarAllowedTokens(matcher, trie, &allowed);
    std::sort(allowed.begin(), allowed.end());
    const std::string where = tokenizer + " " + m["name"].get<std::string>() + " after " +
                              m.value("prefix_text", m["prefix_hex"].get<std::string>());
    std::vector<int32_t> expected = m["allowed"].get<std::vector<int32_t>>();
    if (tokenizer == "llama2") {
      // Its added token "wow" is normalized (`normalized: true`), so its text is "▁wow", which
      // decodes as " wow" (as `tokenizers` decodes it, and the router streams it); xgrammar reads
      // it as "wow".
      std::erase(expected, kLlama2Wow);
      EXPECT_EQ(vocabulary->token_bytes()[kLlama2Wow], " wow");
      std::erase(allowed, kLlama2Wow);
    }
    EXPECT_EQ(allowed, expected) << where;
    EXPECT_EQ(matcher.CanEnd(), m["can_end"].get<bool>()) << where;
    EXPECT_EQ(matcher.length(), prefix.size()) << "the walk must leave the matcher as it was";
  }
}

std::string Message(std::string_view ebnf) {
  const absl::StatusOr<std::shared_ptr<const EbnfGrammar>> grammar = EbnfGrammar::Compile(ebnf);
  EXPECT_FALSE(grammar.ok()) << ebnf;
  return grammar.ok() ? "" : std::string(grammar.status().message());
}

TEST(GrammarTest, RefusalsSayWhatAndWhere) {
  EXPECT_EQ(Message("root ::= \"a\" b"),
            "EBNF parser error at line 1, column 14: rule \"b\" is "
            "not defined");
  EXPECT_EQ(Message("a ::= \"x\""), "the grammar has no rule named root (where a text starts)");
  EXPECT_EQ(Message("root ::= \"a\"\nroot ::= \"b\""),
            "EBNF parser error at line 2, column 1: rule \"root\" is defined more than once");
  EXPECT_EQ(Message("root ::= Regex(\"[0-9]+\")"),
            "EBNF parser error at line 1, column 10: macros (Regex(...)) are not supported; write "
            "the rule out");
  EXPECT_EQ(Message("root ::= x\nx[lazy] ::= \"a\""),
            "EBNF parser error at line 2, column 2: rule options (x[...] ::=) are not supported");
  EXPECT_EQ(Message("root ::= \"a\" (= \"b\")"),
            "EBNF parser error at line 1, column 14: lookahead assertions ((= ...)) are not "
            "supported");
  EXPECT_EQ(Message("root ::= [a-z]{1, 5000}"),
            "EBNF parser error at line 1, column 19: the upper bound of a repetition is over 4096");
  // Nesting that would spend a thread's stack (a 64 KiB grammar holds 30,000 parentheses).
  const std::string deep =
      "root ::= " + std::string(30000, '(') + "\"a\"" + std::string(30000, ')');
  EXPECT_EQ(Message(deep),
            "EBNF parser error at line 1, column 266: groups nest more than 256 deep");
  const std::string nested = "root ::= " + std::string(256, '(') + "\"a\"" + std::string(256, ')');
  EXPECT_TRUE(EbnfGrammar::Compile(nested).ok()) << "256 deep is allowed";
  std::string large = "root ::=";
  for (int i = 0; i < 17; ++i) large += " [a-z]{4000}";
  EXPECT_EQ(Message(large),
            "the grammar is too large: over 65536 positions once repetition is expanded "
            "(bounded repetitions count once per copy)");
  EXPECT_EQ(Message("root ::= \"a\" b\nb ::= b \"x\""),
            "the grammar matches no text: rule root cannot be finished (every alternative needs "
            "a rule that never ends)");
  EXPECT_EQ(Message("root ::= [z-a]"),
            "EBNF parser error at line 1, column 11: the range ends (U+0061) below where it "
            "starts (U+007A)");
  EXPECT_EQ(Message("root ::= \"a\xFF\""),
            "EBNF parser error at line 1, column 12: the grammar is not valid UTF-8 here");
  EXPECT_EQ(Message("root ::= [\xC3]"),
            "EBNF parser error at line 1, column 12: the grammar is not valid UTF-8 here");
  EXPECT_EQ(Message("root ::= \"a\" | "),
            "EBNF parser error at line 1, column 16: an alternative is empty (write \"\" for the "
            "empty text)");
}

TEST(GrammarTest, CompleteOnlyWhenNothingCanFollow) {
  const std::shared_ptr<const EbnfGrammar> grammar = MustCompile("root ::= \"ab\" | [0-9]+");
  GrammarMatcher literal(grammar);
  EXPECT_FALSE(literal.CanEnd());
  ASSERT_TRUE(literal.Feed("a"));
  EXPECT_FALSE(literal.CanEnd());
  ASSERT_TRUE(literal.Feed("b"));
  EXPECT_TRUE(literal.Complete());
  EXPECT_FALSE(literal.Feed('c'));
  EXPECT_EQ(literal.length(), 2u) << "a refused byte is not read";

  GrammarMatcher digits(grammar);
  ASSERT_TRUE(digits.Feed("12"));
  EXPECT_TRUE(digits.CanEnd());
  EXPECT_FALSE(digits.Complete()) << "another digit may follow";
  digits.Truncate(1);
  EXPECT_TRUE(digits.Feed('9'));

  // A negated class takes every character but no surrogate (UTF-8 has none: ED A0..BF).
  const std::shared_ptr<const EbnfGrammar> not_a = MustCompile("root ::= [^a]");
  GrammarMatcher below(not_a);
  EXPECT_TRUE(below.Feed("\xED\x9F\xBF")) << "U+D7FF";
  GrammarMatcher surrogate(not_a);
  EXPECT_TRUE(surrogate.Feed(uint8_t{0xED}));
  EXPECT_FALSE(surrogate.Feed(uint8_t{0xA0}));
}

// Every token whose bytes the matcher reads whole, tried one by one.
std::vector<int32_t> TryEveryToken(const GrammarMatcher& matcher,
                                   const JsonVocabulary& vocabulary) {
  std::vector<int32_t> allowed;
  for (size_t id = 0; id < vocabulary.token_bytes().size(); ++id) {
    const std::string& bytes = vocabulary.token_bytes()[id];
    GrammarMatcher copy = matcher;
    if (!bytes.empty() && copy.Feed(bytes)) allowed.push_back(static_cast<int32_t>(id));
  }
  return allowed;
}

// Random generations through the token lists (the trie walk checked against trying each token)
// never dead-end, and where two states get one cache key they allow the same tokens.
TEST(GrammarTest, RandomWalksNeverDeadEndAndEqualKeysAllowTheSame) {
  const std::shared_ptr<const JsonVocabulary> vocabulary = FixtureVocabulary("llama3");
  ASSERT_NE(vocabulary, nullptr);
  const Json fixture = LoadFixture();
  std::mt19937 rng(7);
  for (const Json& g : fixture["grammars"]) {
    const std::shared_ptr<const EbnfGrammar> grammar = MustCompile(g["ebnf"].get<std::string>());
    if (grammar == nullptr) continue;
    SharedGrammar shared(grammar, *vocabulary);
    std::map<std::string, std::vector<int32_t>> by_key;
    for (int walk = 0; walk < 4; ++walk) {
      GrammarMatcher matcher(grammar);
      for (int step = 0; step < 40 && !matcher.Complete(); ++step) {
        std::vector<int32_t> allowed;
        GrammarAllowedTokens(matcher, shared.trie, &allowed);
        std::sort(allowed.begin(), allowed.end());
        ASSERT_EQ(allowed, TryEveryToken(matcher, *vocabulary)) << g["name"];
        std::string key;
        if (matcher.AppendStateKey(shared.ids, &key)) {
          const auto [it, added] = by_key.emplace(key, allowed);
          EXPECT_EQ(it->second, allowed) << g["name"] << ": one key, two token lists";
        }
        if (allowed.empty() || (matcher.CanEnd() && rng() % 4 == 0)) {
          // The vocabulary may lack a byte the text needs; a finished text is fine.
          EXPECT_TRUE(matcher.CanEnd() || !allowed.empty()) << g["name"] << " dead-ended";
          break;
        }
        const int32_t token = allowed[rng() % allowed.size()];
        ASSERT_TRUE(matcher.Feed(vocabulary->token_bytes()[static_cast<size_t>(token)]));
      }
    }
  }
}

// The shared cache hands out what a fresh walk computes, across requests of one grammar.
TEST(GrammarTest, TheSharedCacheGivesEachStateItsOwnList) {
  const std::shared_ptr<const JsonVocabulary> vocabulary = FixtureVocabulary("gpt2");
  ASSERT_NE(vocabulary, nullptr);
  const std::shared_ptr<const EbnfGrammar> grammar =
      MustCompile("root ::= item (\",\" item)*\nitem ::= \"[\" [a-z]* \"]\" | [0-9]+");
  SharedGrammar shared(grammar, *vocabulary);
  const auto allowed = [&](GrammarMatcher& m) {
    return shared
        .Allowed(m, [&](std::vector<int32_t>* out) { GrammarAllowedTokens(m, shared.trie, out); })
        ->SortedIds();
  };
  for (const std::string text : {"[ab],[c", "12,[", "[x],[y],[z],", "7,7", "[],[],"}) {
    GrammarMatcher matcher(grammar);
    for (size_t i = 0; i < text.size(); ++i) {
      EXPECT_EQ(allowed(matcher), TryEveryToken(matcher, *vocabulary)) << text.substr(0, i);
      ASSERT_TRUE(matcher.Feed(static_cast<uint8_t>(text[i])));
    }
  }
  EXPECT_LT(shared.masks.misses(), 16) << "list elements after the second share their states";
}

// The list `shared`'s cache gives after `text` (read from the start), sorted.
std::vector<int32_t> CachedList(SharedGrammar& shared, std::string_view text) {
  GrammarMatcher matcher(shared.grammar);
  EXPECT_TRUE(matcher.Feed(text));
  return shared
      .Allowed(matcher,
               [&](std::vector<int32_t>* out) { GrammarAllowedTokens(matcher, shared.trie, out); })
      ->SortedIds();
}

// A key stands for the whole chart, not the last set alone: "(x" and "((x" leave the same items
// in their last sets, but only the second may take "))".
TEST(GrammarTest, KeysTellApartWhatTheOpenRulesWaitFor) {
  const JsonVocabulary vocabulary({"(", ")", "))", "x"});
  SharedGrammar shared(MustCompile("root ::= \"(\" root \")\" | \"x\""), vocabulary);
  const auto allowed = [&](std::string_view text) { return CachedList(shared, text); };
  EXPECT_EQ(allowed("(x"), std::vector<int32_t>({1}));
  EXPECT_EQ(allowed("((x"), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(allowed("(x"), std::vector<int32_t>({1}));
}

// The start, where the empty text is already a sentence, and a finished text both have no
// scanned item alive and may end; only the start accepts more (found by fuzz/json_schema_fuzz).
TEST(GrammarTest, TheStartIsNotKeyedLikeAFinishedText) {
  const JsonVocabulary vocabulary({"a", "b", "c"});
  SharedGrammar shared(MustCompile("root ::= \"\" | \"a\" \"b\" | \"c\""), vocabulary);
  const auto allowed = [&](std::string_view text) {
    GrammarMatcher matcher(shared.grammar);
    EXPECT_TRUE(matcher.Feed(text) && matcher.CanEnd()) << text << " is a sentence";
    return CachedList(shared, text);
  };
  EXPECT_EQ(allowed(""), std::vector<int32_t>({0, 2}));
  EXPECT_EQ(allowed("c"), std::vector<int32_t>());
  EXPECT_EQ(allowed("ab"), std::vector<int32_t>());
  EXPECT_EQ(allowed(""), std::vector<int32_t>({0, 2}));
}

}  // namespace
}  // namespace headroom::worker
