// libFuzzer target for the tokenizer: encode, decode, streaming and stop strings on every
// committed fixture plus the byte tokenizer. Besides crashes and sanitizer reports it checks:
//   - Encode of invalid UTF-8 fails cleanly; of valid text gives ids inside the vocabulary;
//   - Decode is valid UTF-8; streaming the ids concatenates to Decode, chunk by chunk valid;
//   - lossless tokenizers (byte tokenizer, Llama-3-style) give the text back;
//   - stop strings: any chunking gives the same result as feeding byte by byte.
// Input layout: byte 0 picks the tokenizer and the mode; the rest is the payload.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "router/tokenizer/byte_tokenizer.h"
#include "router/tokenizer/incremental_detokenizer.h"
#include "router/tokenizer/stop_matcher.h"
#include "router/tokenizer/tokenizer.h"
#include "router/tokenizer/utf8.h"

namespace {

using headroom::router::DecodeOptions;
using headroom::router::IncrementalDetokenizer;
using headroom::router::StopMatcher;
using headroom::router::StopResult;
using headroom::router::Tokenizer;

void Fail(const char* what) {
  std::fprintf(stderr, "tokenizer_fuzz: property violated: %s\n", what);
  std::abort();
}

struct Loaded {
  std::unique_ptr<Tokenizer> tokenizer;
  bool lossless = false;  // Decode(Encode(x), keep specials) == x for every valid x
};

std::vector<Loaded>& Tokenizers() {
  static auto* all = [] {
    auto* v = new std::vector<Loaded>();
    const char* env = std::getenv("HEADROOM_FIXTURES_DIR");
    const std::string dir = env != nullptr ? env : HEADROOM_FIXTURES_DIR;
    for (const char* name : {"gpt2", "llama3", "qwen2", "llama2", "mistral"}) {
      auto t = Tokenizer::FromDirectory(dir + "/" + name);
      if (!t.ok()) {
        std::fprintf(stderr, "cannot load fixture %s: %s\n", name, t.status().ToString().c_str());
        std::abort();
      }
      v->push_back({*std::move(t), std::string_view(name) == "llama3"});
    }
    auto bytes = headroom::router::MakeByteTokenizer(300);
    if (!bytes.ok()) std::abort();
    v->push_back({*std::move(bytes), true});
    return v;
  }();
  return *all;
}

void CheckStream(const Tokenizer& t, const std::vector<int32_t>& ids, DecodeOptions options) {
  const std::string full = t.Decode(ids, options);
  if (!headroom::router::utf8::IsValid(full)) Fail("Decode returned invalid UTF-8");
  IncrementalDetokenizer d(t, options);
  std::string streamed;
  for (const int32_t id : ids) {
    const std::string chunk = d.Push(id);
    if (!headroom::router::utf8::IsValid(chunk)) Fail("stream chunk is invalid UTF-8");
    streamed += chunk;
  }
  streamed += d.Finish();
  if (streamed != full) Fail("streamed text differs from Decode");
}

void FuzzEncode(const Loaded& l, std::string_view text) {
  auto ids = l.tokenizer->Encode(text);
  if (!headroom::router::utf8::IsValid(text)) {
    if (ids.ok()) Fail("Encode accepted invalid UTF-8");
    return;
  }
  if (!ids.ok()) Fail("Encode rejected valid UTF-8");
  for (const int32_t id : *ids) {
    if (id < 0 || id >= l.tokenizer->vocab_size()) Fail("Encode produced an id outside the vocab");
  }
  CheckStream(*l.tokenizer, *ids, {});
  auto plain = l.tokenizer->Encode(text, {.add_special_tokens = false});
  if (!plain.ok()) Fail("Encode without special tokens failed");
  if (l.lossless &&
      l.tokenizer->Decode(*plain, {.skip_special_tokens = false}) != std::string(text)) {
    Fail("lossless tokenizer did not round-trip");
  }
}

void FuzzDecode(const Loaded& l, std::string_view payload) {
  std::vector<int32_t> ids;
  const int32_t range = l.tokenizer->vocab_size() + 8;
  for (size_t i = 0; i + 1 < payload.size(); i += 2) {
    const int value = static_cast<unsigned char>(payload[i]) << 8 |
                      static_cast<unsigned char>(payload[i + 1]);
    ids.push_back(value % range - 4);
  }
  CheckStream(*l.tokenizer, ids, {.skip_special_tokens = true});
  CheckStream(*l.tokenizer, ids, {.skip_special_tokens = false});
}

// Payload: up to three stop strings separated by '\x01', then '\x02', then the text; chunk sizes
// come from the text's own bytes.
void FuzzStop(std::string_view payload) {
  const size_t split = payload.find('\x02');
  if (split == std::string_view::npos) return;
  headroom::router::StopMatcherOptions options;
  std::string_view stops = payload.substr(0, split);
  const std::string_view text = payload.substr(split + 1);
  while (!stops.empty() && options.stop.size() < 3) {
    const size_t sep = stops.find('\x01');
    options.stop.emplace_back(stops.substr(0, sep));
    if (sep == std::string_view::npos) break;
    stops.remove_prefix(sep + 1);
  }
  options.include_stop_str_in_output = !text.empty() && (text[0] & 1) != 0;
  auto run = [&](bool bytewise) {
    StopMatcher m(options);
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t len = bytewise ? 1 : 1 + static_cast<unsigned char>(text[pos]) % 9;
      const StopResult r = m.Push(text.substr(pos, len));
      out += r.text;
      if (r.stopped) return out + "<stopped>";
      pos += len;
    }
    return out + m.Finish();
  };
  if (run(true) != run(false)) Fail("stop strings depend on chunking");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  auto& all = Tokenizers();
  const size_t selector = data[0];
  const Loaded& l = all[selector % all.size()];
  const std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
  switch ((selector / all.size()) % 3) {
    case 0:
      FuzzEncode(l, payload);
      break;
    case 1:
      FuzzDecode(l, payload);
      break;
    default:
      FuzzStop(payload);
      break;
  }
  return 0;
}
