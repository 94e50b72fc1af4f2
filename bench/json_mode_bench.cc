// JSON mode's per-step cost: JsonAllowedTokens (worker/engine/json_matcher.h) runs a copy of the
// request's matcher over every token's bytes, once per step and request. Measured on the token
// bytes of real vocabularies (the fixture tokenizers: GPT-2 50k, Llama-3 128k entries) in three
// states: inside a string (most tokens continue it), where a value must start (most stop at their
// first byte), and inside a number; and the same for json_schema (JsonSchemaMatcher, a pydantic-
// shaped schema) where a key starts, inside a free string, where an anyOf value starts, inside an
// enum value, inside a number and inside a date-time (a pattern); and for guided_regex
// (RegexMatcher) inside free text, an e-mail address and a phone number; for guided_grammar
// (GrammarMatcher through its vocabulary trie) in the same JSON states under a JSON grammar and in
// free text; for a structural tag (StructuralTagMatcher) in free text, a trigger, a begin, a value
// and an end; and whole documents stepped as the engine steps them, with and without its per-state
// TokenMaskCache. Results: docs/performance.md.
//   build/main/bench/json_mode_bench
// Fixtures are read from $HEADROOM_SOURCE_DIR/tests/router/tokenizer/fixtures (default: the source
// tree this binary was built from); pointing it at a tree whose llama3/tokenizer.json is a real
// 128k vocabulary (bench/regex_class_groups.py --save DIR trains one) measures that instead.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "router/tokenizer/tokenizer.h"
#include "worker/engine/allowed_tokens.h"
#include "worker/engine/constraint_check.h"
#include "worker/engine/grammar_tokens.h"
#include "worker/engine/json_matcher.h"
#include "worker/engine/json_schema.h"
#include "worker/engine/regex_tokens.h"
#include "worker/engine/structural_tag.h"
#include "worker/engine/token_mask_cache.h"

namespace headroom::worker {
namespace {

std::string FixtureDir(const std::string& name) {
  const char* env = std::getenv("HEADROOM_SOURCE_DIR");
  const std::string root = env != nullptr && env[0] != '\0' ? env : HEADROOM_SOURCE_DIR;
  return root + "/tests/router/tokenizer/fixtures/" + name;
}

// TokenBytes of every id, special tokens empty (as the worker builds them); "llama3x100" is the
// Llama-3 fixture's table repeated 100 times (126k entries, the size of the real vocabulary with
// the fixture's mix of tokens).
const router::Tokenizer& TokenizerFor(const std::string& name) {
  static auto* tokenizers = new std::map<std::string, std::unique_ptr<router::Tokenizer>>();
  std::unique_ptr<router::Tokenizer>& tokenizer = (*tokenizers)[name];
  if (tokenizer == nullptr) {
    auto loaded = router::Tokenizer::FromDirectory(FixtureDir(name));
    if (!loaded.ok()) std::abort();
    tokenizer = *std::move(loaded);
  }
  return *tokenizer;
}

const JsonVocabulary& Vocabulary(const std::string& name) {
  static auto* tables = new std::map<std::string, JsonVocabulary>();  // node-based: stable refs
  if (auto it = tables->find(name); it != tables->end()) return it->second;
  const bool repeated = name == "llama3x100";
  const router::Tokenizer& tokenizer = TokenizerFor(repeated ? "llama3" : name);
  std::vector<std::string> table(static_cast<size_t>(tokenizer.vocab_size()));
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (!tokenizer.IsSpecialToken(id)) table[static_cast<size_t>(id)] = tokenizer.TokenBytes(id);
  }
  if (repeated) {
    std::vector<std::string> many;
    for (int copy = 0; copy < 100; ++copy) many.insert(many.end(), table.begin(), table.end());
    table = std::move(many);
  }
  return tables->emplace(name, JsonVocabulary(std::move(table))).first->second;
}

// One step's JsonAllowedTokens for `matcher` after it read `prefix`.
template <typename Matcher>
void RunAllowedTokens(benchmark::State& state, const std::string& vocabulary, Matcher matcher,
                      const std::string& prefix) {
  const JsonVocabulary& table = Vocabulary(vocabulary);
  if (!matcher.Feed(prefix)) std::abort();
  std::vector<int32_t> allowed;
  for (auto _ : state) {
    JsonAllowedTokens(matcher, table, &allowed);
    benchmark::DoNotOptimize(allowed.data());
  }
  state.counters["vocab"] = static_cast<double>(table.token_bytes().size());
  state.counters["allowed"] = static_cast<double>(allowed.size());
}

void BM_JsonAllowedTokens(benchmark::State& state, const std::string& vocabulary,
                          const std::string& prefix) {
  RunAllowedTokens(state, vocabulary, JsonMatcher(), prefix);
}

BENCHMARK_CAPTURE(BM_JsonAllowedTokens, gpt2_in_string, "gpt2", R"({"name": "Ad)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, gpt2_value_start, "gpt2", R"({"name": )")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, gpt2_in_number, "gpt2", R"({"age": 4)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, llama3_in_string, "llama3", R"({"name": "Ad)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, llama3_value_start, "llama3", R"({"name": )")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, llama3_in_number, "llama3", R"({"age": 4)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, llama3x100_in_string, "llama3x100", R"({"name": "Ad)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, llama3x100_value_start, "llama3x100", R"({"name": )")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonAllowedTokens, llama3x100_in_number, "llama3x100", R"({"age": 4)")
    ->Unit(benchmark::kMicrosecond);

// What the openai client's parse() sends for a pydantic model with a nested model, an Optional
// field, a Literal, a list and an optional datetime.
constexpr char kPydanticSchema[] = R"({"$defs":{"Address":{"type":"object","properties":{
    "city":{"type":"string"},"zip":{"type":"string"}},"required":["city","zip"],
    "additionalProperties":false}},"type":"object","properties":{"name":{"type":"string"},
    "age":{"type":"integer"},"answer":{"enum":["yes","no"],"type":"string"},
    "nickname":{"anyOf":[{"type":"string"},{"type":"null"}]},"address":{"$ref":"#/$defs/Address"},
    "tags":{"type":"array","items":{"type":"string"}},
    "opened":{"type":"string","format":"date-time"}},
    "required":["name","age","answer","nickname","address","tags"],"additionalProperties":false})";

void BM_SchemaAllowedTokens(benchmark::State& state, const std::string& vocabulary,
                            const std::string& prefix) {
  const auto schema = JsonSchema::Compile(kPydanticSchema);
  if (!schema.ok()) std::abort();
  RunAllowedTokens(state, vocabulary, JsonSchemaMatcher(schema->get()), prefix);
}

// vLLM's docs example of a structural tag (worker/engine/structural_tag.h): in free text (every
// token is tried), inside a trigger's first bytes, in the begin after the trigger, inside the
// value's string and where the end must follow.
constexpr char kWeatherTag[] = R"({"structures": [{"begin": "<function=get_weather>",
    "schema": {"type": "object", "properties": {"city": {"type": "string"}},
    "required": ["city"]}, "end": "</function>"}], "triggers": ["<function="]})";

void BM_StructuralTagAllowedTokens(benchmark::State& state, const std::string& vocabulary,
                                   const std::string& prefix) {
  const auto tag = StructuralTag::Compile(kWeatherTag);
  if (!tag.ok()) std::abort();
  RunAllowedTokens(state, vocabulary, StructuralTagMatcher(tag->get()), prefix);
}

BENCHMARK_CAPTURE(BM_StructuralTagAllowedTokens, llama3x100_free_text, "llama3x100", "It is ")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StructuralTagAllowedTokens, llama3x100_in_trigger, "llama3x100", "It <func")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StructuralTagAllowedTokens, llama3x100_in_begin, "llama3x100", "<function=")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StructuralTagAllowedTokens, llama3x100_in_string, "llama3x100",
                  R"(<function=get_weather>{"city": "Bo)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StructuralTagAllowedTokens, llama3x100_at_end, "llama3x100",
                  R"(<function=get_weather>{"city": "Boston"})")
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_CAPTURE(BM_SchemaAllowedTokens, llama3x100_key_start, "llama3x100", R"({"name": "A", )")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SchemaAllowedTokens, llama3x100_in_string, "llama3x100", R"({"name": "Ad)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SchemaAllowedTokens, llama3x100_any_of_start, "llama3x100", R"({"nickname": )")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SchemaAllowedTokens, llama3x100_in_enum, "llama3x100", R"({"answer": "y)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SchemaAllowedTokens, llama3x100_in_number, "llama3x100", R"({"age": 4)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SchemaAllowedTokens, llama3x100_in_date_time, "llama3x100",
                  R"({"opened": "2024-0)")
    ->Unit(benchmark::kMicrosecond);

// A whole document, token by token as the tokenizer splits it, as the engine steps it: each step's
// list, then the token fed. `cached`: as Engine::JsonStepTokens does, each state's tokens come
// from a TokenMaskCache kept across documents (the engine keeps one per grammar: JSON mode, or a
// schema's text), so after the first document every state is a hit; without, every step tries
// the vocabulary. Counters: SetDocumentCounters.
constexpr char kDocument[] =
    R"({"name": "Ada Lovelace", "age": 36, "answer": "yes", "nickname": null, )"
    R"("address": {"city": "London", "zip": "W1J 6BD"}, "tags": ["mathematics", "poetry", )"
    R"("engines"], "opened": "1843-07-10T12:00:00Z"})";

// A document benchmark's counters: tokens per document, time per token, the cache's misses per
// document (the first one's over all iterations) and the KB it keeps.
void SetDocumentCounters(benchmark::State& state, size_t tokens,
                         const TokenMaskCache<std::string>& masks) {
  const auto n = static_cast<double>(tokens);
  state.counters["tokens"] = n;
  state.counters["per_token"] = benchmark::Counter(
      n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["misses"] =
      benchmark::Counter(static_cast<double>(masks.misses()), benchmark::Counter::kAvgIterations);
  state.counters["kept_kb"] = static_cast<double>(masks.bytes()) / 1024;
}

template <typename Matcher>
void RunDocument(benchmark::State& state, const std::string& vocabulary, const Matcher& start,
                 bool cached) {
  const JsonVocabulary& table = Vocabulary(vocabulary);
  const absl::StatusOr<std::vector<int32_t>> tokens = TokenizerFor(vocabulary).Encode(kDocument);
  if (!tokens.ok()) std::abort();
  TokenMaskCache<std::string> masks;  // the engine's bound
  std::string key;
  std::vector<int32_t> scratch;
  for (auto _ : state) {
    Matcher matcher = start;
    for (const int32_t token : *tokens) {
      AllowedView allowed{.ids = scratch};
      TokenMaskCache<std::string>::List held;
      if (cached) {
        key.clear();
        matcher.AppendStateKey(&key);
        held = masks.Get(
            key, [&](std::vector<int32_t>* list) { JsonAllowedTokens(matcher, table, list); });
        allowed = held->view();
      } else {
        JsonAllowedTokens(matcher, table, &scratch);
        allowed = {.ids = scratch};
      }
      benchmark::DoNotOptimize(allowed.ids.data());
      benchmark::DoNotOptimize(allowed.bitmask.data());
      if (!matcher.Feed(table.token_bytes()[static_cast<size_t>(token)])) std::abort();
    }
    if (!matcher.Complete()) std::abort();
  }
  SetDocumentCounters(state, tokens->size(), masks);
}

void BM_JsonDocument(benchmark::State& state, const std::string& vocabulary, bool cached) {
  RunDocument(state, vocabulary, JsonMatcher(), cached);
}
void BM_SchemaDocument(benchmark::State& state, const std::string& vocabulary, bool cached) {
  const auto schema = JsonSchema::Compile(kPydanticSchema);
  if (!schema.ok()) std::abort();
  RunDocument(state, vocabulary, JsonSchemaMatcher(schema->get()), cached);
}
BENCHMARK_CAPTURE(BM_JsonDocument, llama3_each_step, "llama3", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_JsonDocument, llama3_cached, "llama3", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaDocument, llama3_each_step, "llama3", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaDocument, llama3_cached, "llama3", true)->Unit(benchmark::kMillisecond);

// guided_regex (RegexMatcher): a pattern of free text (most tokens fit), an e-mail address
// inside its local part, and a phone number inside its digits (few tokens fit); each token tried
// (JsonAllowedTokens) or one per class sequence (RegexAllowedTokens, what the engine runs).
enum class RegexMethod { kEachToken, kClassGroups };

void BM_RegexAllowedTokens(benchmark::State& state, RegexMethod method,
                           const std::string& vocabulary, const std::string& pattern,
                           const std::string& prefix) {
  const absl::StatusOr<JsonRegex> regex = CompileGuidedRegex(pattern);
  if (!regex.ok()) std::abort();
  const JsonVocabulary& table = Vocabulary(vocabulary);
  const RegexTokenClasses classes(*regex, table);
  RegexMatcher matcher(&*regex);
  if (!matcher.Feed(prefix)) std::abort();
  std::vector<int32_t> allowed;
  for (auto _ : state) {
    if (method == RegexMethod::kClassGroups) {
      RegexAllowedTokens(matcher, classes, table, &allowed);
    } else {
      JsonAllowedTokens(matcher, table, &allowed);
    }
    benchmark::DoNotOptimize(allowed.data());
  }
  state.counters["vocab"] = static_cast<double>(table.token_bytes().size());
  state.counters["allowed"] = static_cast<double>(allowed.size());
  state.counters["groups"] = static_cast<double>(classes.groups().size());
}

constexpr char kFreeText[] = R"([A-Za-z ,']+\.)";
constexpr char kEmail[] = R"([a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4})";
constexpr char kPhone[] = R"(\(\d{3}\) \d{3}-\d{4})";

#define HEADROOM_REGEX_BENCH(vocab)                                                              \
  BENCHMARK_CAPTURE(BM_RegexAllowedTokens, vocab##_free_text_each, RegexMethod::kEachToken,      \
                    #vocab, kFreeText, "Hello wor")                                              \
      ->Unit(benchmark::kMicrosecond);                                                           \
  BENCHMARK_CAPTURE(BM_RegexAllowedTokens, vocab##_free_text_grouped, RegexMethod::kClassGroups, \
                    #vocab, kFreeText, "Hello wor")                                              \
      ->Unit(benchmark::kMicrosecond);                                                           \
  BENCHMARK_CAPTURE(BM_RegexAllowedTokens, vocab##_email_each, RegexMethod::kEachToken, #vocab,  \
                    kEmail, "ada")                                                               \
      ->Unit(benchmark::kMicrosecond);                                                           \
  BENCHMARK_CAPTURE(BM_RegexAllowedTokens, vocab##_email_grouped, RegexMethod::kClassGroups,     \
                    #vocab, kEmail, "ada")                                                       \
      ->Unit(benchmark::kMicrosecond);                                                           \
  BENCHMARK_CAPTURE(BM_RegexAllowedTokens, vocab##_phone_each, RegexMethod::kEachToken, #vocab,  \
                    kPhone, "(55")                                                               \
      ->Unit(benchmark::kMicrosecond);                                                           \
  BENCHMARK_CAPTURE(BM_RegexAllowedTokens, vocab##_phone_grouped, RegexMethod::kClassGroups,     \
                    #vocab, kPhone, "(55")                                                       \
      ->Unit(benchmark::kMicrosecond)

HEADROOM_REGEX_BENCH(llama3);
HEADROOM_REGEX_BENCH(llama3x100);

// Grouping a vocabulary by a regex's classes: once per guided_regex request, when it is added.
void BM_RegexTokenClassesBuild(benchmark::State& state, const std::string& vocabulary) {
  const absl::StatusOr<JsonRegex> regex = CompileGuidedRegex(kFreeText);
  if (!regex.ok()) std::abort();
  const JsonVocabulary& table = Vocabulary(vocabulary);
  for (auto _ : state) {
    const RegexTokenClasses classes(*regex, table);
    benchmark::DoNotOptimize(classes.groups().data());
  }
}
BENCHMARK_CAPTURE(BM_RegexTokenClassesBuild, llama3, "llama3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RegexTokenClassesBuild, llama3x100, "llama3x100")
    ->Unit(benchmark::kMillisecond);

// The engine's step for a guided regex in a state seen before (by any request with the pattern):
// a RegexMaskCache hit. Counter: the bytes its tokens are kept in.
void BM_RegexCachedAllowedTokens(benchmark::State& state) {
  const JsonVocabulary& table = Vocabulary("llama3x100");
  const absl::StatusOr<JsonRegex> regex = CompileGuidedRegex(R"([A-Za-z ,']+\.)");
  if (!regex.ok()) std::abort();
  RegexMatcher matcher(&*regex);
  if (!matcher.Feed("Hello wor")) std::abort();
  RegexMaskCache cache;
  const auto compute = [&](std::vector<int32_t>* list) { JsonAllowedTokens(matcher, table, list); };
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = cache.Get(matcher, compute)->bytes();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RegexCachedAllowedTokens)->Unit(benchmark::kMicrosecond);

// guided_grammar: a JSON grammar (strings without escapes, integers) and a sentence grammar.
constexpr char kJsonGrammar[] = R"(root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (pair ("," ws pair)*)? "}"
pair ::= string ws ":" ws value ws
array ::= "[" ws (value ws ("," ws value ws)*)? "]"
string ::= "\"" [^"\\]* "\""
number ::= "-"? [0-9]+
ws ::= [ ]?)";
constexpr char kSentenceGrammar[] = R"(root ::= [A-Za-z ,']+ ".")";

// One step's list computed by walking the trie (no cache), after `prefix`.
void BM_GrammarAllowedTokens(benchmark::State& state, const std::string& vocabulary,
                             const char* ebnf, const std::string& prefix) {
  const JsonVocabulary& table = Vocabulary(vocabulary);
  const auto grammar = EbnfGrammar::Compile(ebnf);
  if (!grammar.ok()) std::abort();
  const GrammarTokenTrie trie(**grammar, table);
  GrammarMatcher matcher(*grammar);
  if (!matcher.Feed(prefix)) std::abort();
  std::vector<int32_t> allowed;
  for (auto _ : state) {
    GrammarAllowedTokens(matcher, trie, &allowed);
    benchmark::DoNotOptimize(allowed.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed.size());
  state.counters["trie_nodes"] = static_cast<double>(trie.nodes().size());
}
#define HEADROOM_GRAMMAR_BENCH(vocab)                                                        \
  BENCHMARK_CAPTURE(BM_GrammarAllowedTokens, vocab##_json_in_string, #vocab, kJsonGrammar,   \
                    R"({"name": "Ad)")                                                       \
      ->Unit(benchmark::kMicrosecond);                                                       \
  BENCHMARK_CAPTURE(BM_GrammarAllowedTokens, vocab##_json_value_start, #vocab, kJsonGrammar, \
                    R"({"name": )")                                                          \
      ->Unit(benchmark::kMicrosecond);                                                       \
  BENCHMARK_CAPTURE(BM_GrammarAllowedTokens, vocab##_json_in_number, #vocab, kJsonGrammar,   \
                    R"({"age": 4)")                                                          \
      ->Unit(benchmark::kMicrosecond);                                                       \
  BENCHMARK_CAPTURE(BM_GrammarAllowedTokens, vocab##_free_text, #vocab, kSentenceGrammar,    \
                    "Hello wor")                                                             \
      ->Unit(benchmark::kMicrosecond)

HEADROOM_GRAMMAR_BENCH(llama3x100);
// The same states over "llama3": the 1.26k fixture, or a real 128k vocabulary with
// HEADROOM_SOURCE_DIR set as bench/regex_class_groups.py --save leaves it (its trie has ~100x the
// nodes of llama3x100's, which repeats the fixture's spellings).
HEADROOM_GRAMMAR_BENCH(llama3);

// Building the trie: once per grammar text, when a request first gives it.
void BM_GrammarTrieBuild(benchmark::State& state, const std::string& vocabulary) {
  const auto grammar = EbnfGrammar::Compile(kJsonGrammar);
  if (!grammar.ok()) std::abort();
  const JsonVocabulary& table = Vocabulary(vocabulary);
  for (auto _ : state) {
    const GrammarTokenTrie trie(**grammar, table);
    benchmark::DoNotOptimize(trie.nodes().data());
  }
}
BENCHMARK_CAPTURE(BM_GrammarTrieBuild, llama3x100, "llama3x100")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarTrieBuild, llama3, "llama3")->Unit(benchmark::kMillisecond);

// The router's check of a request's grammar (worker/engine/constraint_check.h): compiling it, and
// the kept verdict a repeat (or the HTTP request's second check) gets. `rules` rules of
// keyword alternatives, ~29 bytes each.
std::string ManyRuleGrammar(int rules) {
  std::string ebnf = "root ::= r0 (\",\" r0)*\n";
  for (int i = 0; i < rules; ++i) {
    const std::string n = std::to_string(i);
    ebnf += "r" + n + " ::= \"k" + n + "\" | [0-9]+" +
            (i + 1 < rules ? " r" + std::to_string(i + 1) : "") + "\n";
  }
  return ebnf;
}

void BM_GrammarCheck(benchmark::State& state, bool kept) {
  const std::string ebnf = ManyRuleGrammar(static_cast<int>(state.range(0)));
  headroom::worker::ConstraintChecks checks;
  for (auto _ : state) {
    if (kept) {
      benchmark::DoNotOptimize(checks.Check(headroom::worker::ConstraintKind::kGrammar, ebnf));
    } else {
      benchmark::DoNotOptimize(EbnfGrammar::Compile(ebnf));
    }
  }
  state.counters["bytes"] = static_cast<double>(ebnf.size());
}
BENCHMARK_CAPTURE(BM_GrammarCheck, compile, false)
    ->Arg(10)
    ->Arg(1500)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GrammarCheck, kept, true)->Arg(10)->Arg(1500)->Unit(benchmark::kMicrosecond);

// A JSON document under the JSON grammar, token by token, as the engine steps it: `cached` keeps
// a SharedGrammar across documents (after the first, every state is a hit), else each step walks
// the trie.
constexpr char kGrammarDocument[] =
    R"({"name": "Ada Lovelace", "age": 36, "address": {"city": "London", "zip": "W1J 6BD"}, )"
    R"("tags": ["mathematics", "poetry", "engines"], "answer": true})";

void BM_GrammarDocument(benchmark::State& state, const std::string& vocabulary, bool cached) {
  const JsonVocabulary& table = Vocabulary(vocabulary);
  const absl::StatusOr<std::vector<int32_t>> tokens =
      TokenizerFor(vocabulary).Encode(kGrammarDocument);
  const auto grammar = EbnfGrammar::Compile(kJsonGrammar);
  if (!tokens.ok() || !grammar.ok()) std::abort();
  SharedGrammar shared(*grammar, table);
  std::vector<int32_t> scratch;
  for (auto _ : state) {
    GrammarMatcher matcher(*grammar);
    for (const int32_t token : *tokens) {
      if (cached) {
        const auto list = shared.Allowed(matcher, [&](std::vector<int32_t>* out) {
          GrammarAllowedTokens(matcher, shared.trie, out);
        });
        benchmark::DoNotOptimize(list.get());
      } else {
        GrammarAllowedTokens(matcher, shared.trie, &scratch);
        benchmark::DoNotOptimize(scratch.data());
      }
      if (!matcher.Feed(table.token_bytes()[static_cast<size_t>(token)])) std::abort();
    }
    if (!matcher.CanEnd()) std::abort();
  }
  SetDocumentCounters(state, tokens->size(), shared.masks);
}
BENCHMARK_CAPTURE(BM_GrammarDocument, llama3_each_step, "llama3", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarDocument, llama3_cached, "llama3", true)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace headroom::worker
