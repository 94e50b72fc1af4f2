// Tokenizer speed: encode / decode / streaming throughput (MB/s of text) on ~300 KB of English
// prose composed for this benchmark, for each fixture tokenizer family. Results: docs/tokenizer.md.
//   build/main/bench/tokenizer_bench [--benchmark_filter=Encode]
// Fixtures are read from $HEADROOM_SOURCE_DIR/tests/router/tokenizer/fixtures (default: the source
// tree this binary was built from).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "router/tokenizer/byte_tokenizer.h"
#include "router/tokenizer/incremental_detokenizer.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router {
namespace {

// Sentences written for this benchmark; shuffled into paragraphs until the text is ~300 KB.
constexpr const char* kSentences[] = {
    "The morning train was late again, so the platform filled with people reading newspapers.",
    "A small dog waited by the bakery door, hoping that somebody would drop a crust of bread.",
    "Engineers measured the bridge every spring and wrote the numbers into a thick grey ledger.",
    "She opened the window, listened to the rain, and decided that the letter could wait.",
    "In 1887 the town council voted to build a library, but the money ran out after two years.",
    "Nobody remembered who had planted the orchard, though everyone agreed the apples were good.",
    "The captain checked the charts twice before steering the ship into the narrow channel.",
    "When the power failed, the students finished their exams by the light of candles.",
    "He said the recipe needed three eggs, a cup of flour, and exactly forty minutes in the oven.",
    "Across the valley, church bells rang at noon and the farmers stopped to eat their lunch.",
    "It's easy to forget how quiet the world was before engines, radios and telephones.",
    "They'd walked for six hours when the path finally turned downhill toward the river.",
    "The museum kept the old clock running, although it lost about a minute every week.",
    "Our neighbour grows tomatoes, beans, onions and far too many courgettes every summer.",
    "If the bridge closes for repairs, the detour adds twenty kilometres to the journey.",
    "Children chased each other around the fountain while their parents talked on the benches.",
    "The report was short: sales rose by 4.5 percent, costs fell, and nobody was surprised.",
    "At the top of the hill stood a windmill whose sails had not turned in fifty years.",
    "Please remember to lock the gate, because the goats will escape if you leave it open.",
    "The storm moved east during the night, leaving broken branches across every road.",
    "A good map shows not only roads and rivers but also the shape of the land itself.",
    "Most of the letters were never answered, yet she kept writing them for the rest of her life.",
    "The committee's decision, announced on Friday, surprised even its own members.",
    "Under the floorboards they found a tin box holding coins, buttons and a faded photograph.",
};

std::string EnglishText(size_t target_bytes) {
  std::mt19937 rng(2026);
  std::string text;
  size_t n = 0;
  while (text.size() < target_bytes) {
    text += kSentences[rng() % std::size(kSentences)];
    text += (++n % 6 == 0) ? "\n\n" : " ";
  }
  return text;
}

// Words of random letters: nearly every word is new, so the BPE word cache rarely helps.
std::string RandomWordsText(size_t target_bytes) {
  std::mt19937 rng(7);
  std::string text;
  while (text.size() < target_bytes) {
    const size_t len = 2 + rng() % 9;
    for (size_t i = 0; i < len; ++i) text += static_cast<char>('a' + rng() % 26);
    text += ' ';
  }
  return text;
}

const std::string& English() {
  static const std::string* text = new std::string(EnglishText(300 * 1024));
  return *text;
}

const Tokenizer& Fixture(const std::string& name) {
  static auto* cache = new std::map<std::string, std::unique_ptr<Tokenizer>>();
  auto& slot = (*cache)[name];
  if (slot == nullptr) {
    const char* root = std::getenv("HEADROOM_SOURCE_DIR");
    const std::string dir =
        std::string(root != nullptr ? root : HEADROOM_SOURCE_DIR) + "/tests/router/tokenizer/fixtures/" + name;
    auto t = name == "bytes" ? MakeByteTokenizer(258) : Tokenizer::FromDirectory(dir);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
      std::abort();
    }
    slot = *std::move(t);
  }
  return *slot;
}

void BM_Encode(benchmark::State& state, const std::string& name, const std::string& text) {
  const Tokenizer& t = Fixture(name);
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = t.Encode(text);
    tokens = ids->size();
    benchmark::DoNotOptimize(ids);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["bytes_per_token"] = static_cast<double>(text.size()) / static_cast<double>(tokens);
}

void BM_Decode(benchmark::State& state, const std::string& name) {
  const Tokenizer& t = Fixture(name);
  const std::vector<int32_t> ids = *t.Encode(English());
  for (auto _ : state) benchmark::DoNotOptimize(t.Decode(ids));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(English().size()));
}

void BM_StreamDecode(benchmark::State& state, const std::string& name) {
  const Tokenizer& t = Fixture(name);
  const std::vector<int32_t> ids = *t.Encode(English());
  for (auto _ : state) {
    IncrementalDetokenizer d(t);
    size_t bytes = 0;
    for (const int32_t id : ids) bytes += d.Push(id).size();
    bytes += d.Finish().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(English().size()));
  state.counters["tokens_per_second"] = benchmark::Counter(
      static_cast<double>(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void RegisterAll() {
  static const std::string* random_words = new std::string(RandomWordsText(300 * 1024));
  for (const char* name : {"gpt2", "llama3", "qwen2", "llama2", "mistral", "bytes"}) {
    const std::string n = name;
    benchmark::RegisterBenchmark(("Encode/english/" + n).c_str(), BM_Encode, n, English())
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Encode/random_words/" + n).c_str(), BM_Encode, n, *random_words)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Decode/english/" + n).c_str(), BM_Decode, n)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("StreamDecode/english/" + n).c_str(), BM_StreamDecode, n)
        ->Unit(benchmark::kMillisecond);
  }
}

const bool kRegistered = (RegisterAll(), true);

}  // namespace
}  // namespace headroom::router
