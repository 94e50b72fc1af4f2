// libFuzzer target for the OpenAI-compatible request parsers (router/openai/openai_protocol.h,
// responses_api.h: any body a client sends) and what the router does next with a body it
// accepts: the chat template's render and the validation every request passes before a worker
// sees it (router/service/request_validation.h). Input: one byte choosing the endpoint, then the
// body. A custom mutator edits the body as JSON half the time (a value replaced by an extreme
// number, another type or a copy of another value; a member removed), so that mutations reach
// past the JSON parser into the fields. Besides crashes, hangs and sanitizer reports (an
// out-of-range number converted, say) it checks:
//   - a refused body is INVALID_ARGUMENT with a message (the 400 the client gets), or NOT_FOUND
//     for a Responses previous_response_id;
//   - an accepted chat request renders under ChatML and Llama 3.1's and Qwen3's real templates
//     (with its tools, kwargs and continue_final_message), or the template refuses it with
//     INVALID_ARGUMENT or RESOURCE_EXHAUSTED (the render's bounds);
//   - the accepted request's prompt (the render's tokens for chat) validates against the gpt2
//     fixture tokenizer, or is refused with INVALID_ARGUMENT.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "router/openai/chat_template.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/responses_api.h"
#include "router/service/request_validation.h"
#include "router/tokenizer/tokenizer.h"

namespace {

namespace openai = headroom::router::openai;
using headroom::router::Tokenizer;

void Fail(const char* what, const absl::Status& status, std::string_view body) {
  std::fprintf(stderr, "openai_request_fuzz: property violated: %s (%s) for %.*s\n", what,
               status.ToString().c_str(), static_cast<int>(body.size()), body.data());
  std::abort();
}

std::string FixturePath(const char* env, const char* fallback) {
  const char* dir = std::getenv(env);
  return dir != nullptr ? dir : fallback;
}

const Tokenizer& Gpt2() {
  static const Tokenizer* tokenizer = [] {
    auto t = Tokenizer::FromDirectory(FixturePath("HEADROOM_FIXTURES_DIR", HEADROOM_FIXTURES_DIR) +
                                      "/gpt2");
    if (!t.ok()) {
      std::fprintf(stderr, "openai_request_fuzz: gpt2 fixture: %s\n",
                   t.status().ToString().c_str());
      std::abort();
    }
    return t.value().release();
  }();
  return *tokenizer;
}

// ChatML, then the real templates named, from the Jinja fixtures.
const std::vector<openai::ChatTemplate>& Templates() {
  static const auto* templates = [] {
    auto* out = new std::vector<openai::ChatTemplate>();
    out->push_back(openai::ChatTemplate::Builtin(openai::ChatFormat::kChatML,
                                                 openai::TokenizerSpecialTokens(Gpt2())));
    std::ifstream in(FixturePath("HEADROOM_JINJA_FIXTURES", HEADROOM_JINJA_FIXTURES) +
                     "/jinja_chat_templates.json");
    const nlohmann::json fixture = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!fixture.contains("templates")) {
      std::fprintf(stderr, "openai_request_fuzz: jinja_chat_templates.json not found\n");
      std::abort();
    }
    for (const nlohmann::json& t : fixture["templates"]) {
      if (t["name"] != "llama3.1" && t["name"] != "qwen3") continue;
      openai::ChatTemplateTokens tokens;
      const nlohmann::json& special = t["special_tokens"];
      if (special.contains("bos_token")) tokens.bos_token = special["bos_token"];
      if (special.contains("eos_token")) tokens.eos_token = special["eos_token"];
      auto created = openai::ChatTemplate::Create(t["template"].get<std::string>(), tokens);
      if (!created.ok()) std::abort();
      out->push_back(*std::move(created));
    }
    if (out->size() != 3) std::abort();
    return out;
  }();
  return *templates;
}

bool Refusal(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument && !status.message().empty();
}

void Validate(const openai::ParsedRequest& parsed, std::string_view body) {
  const auto validated = headroom::router::ValidateGenerateRequest(parsed.generate, Gpt2(), 4096);
  if (!validated.ok() && !Refusal(validated.status())) {
    Fail("a validation error that is not INVALID_ARGUMENT", validated.status(), body);
  }
}

// What the HTTP front does with an accepted chat request: render, tokenize, validate.
void RenderAndValidate(openai::ParsedRequest& parsed, std::string_view body) {
  const nlohmann::ordered_json tools =
      parsed.tools.given ? parsed.tools.tools : nlohmann::ordered_json();
  for (const openai::ChatTemplate& tmpl : Templates()) {
    const absl::StatusOr<std::string> prompt =
        parsed.continue_final_message
            ? tmpl.RenderContinuingFinalMessage(parsed.messages, tools, parsed.chat_template_kwargs)
            : tmpl.Render(parsed.messages, parsed.add_generation_prompt, tools,
                          parsed.chat_template_kwargs);
    if (!prompt.ok()) {
      if (!Refusal(prompt.status()) &&
          prompt.status().code() != absl::StatusCode::kResourceExhausted) {
        Fail("a render error that is not INVALID_ARGUMENT or RESOURCE_EXHAUSTED", prompt.status(),
             body);
      }
      continue;
    }
    const absl::StatusOr<std::vector<int32_t>> ids =
        Gpt2().Encode(*prompt, {.add_special_tokens = false});
    if (!ids.ok()) {
      if (!Refusal(ids.status())) Fail("a prompt encoding error", ids.status(), body);
      continue;
    }
    parsed.generate.mutable_token_ids()->mutable_ids()->Assign(ids->begin(), ids->end());
    Validate(parsed, body);
  }
}

// Every value in `j` (itself included), depth first.
void Values(nlohmann::json& j, std::vector<nlohmann::json*>* out) {
  out->push_back(&j);
  if (j.is_structured()) {
    for (nlohmann::json& child : j) Values(child, out);
  }
}

// Replaces one value of `body` (or removes a member, or grows one) by a choice of `rng`.
void MutateJson(nlohmann::json& body, std::mt19937& rng) {
  std::vector<nlohmann::json*> values;
  Values(body, &values);
  nlohmann::json& target = *values[rng() % values.size()];
  static const nlohmann::json kReplacements = nlohmann::json::parse(R"([
    0, -1, 1, 2, 255, 65536, 2147483647, 2147483648, -2147483649, 4294967296,
    9223372036854775807, -9223372036854775808, 18446744073709551615, 1e308, -1e308, 1e-320,
    0.5, -0.0, 1.0000001, "", "x", "\u00e9\ud83d\ude00", null, true, false, [], {}, [0], [[1]],
    {"type": "object"}, {"type": "text", "text": "t"}])");
  switch (rng() % 4) {
    case 0:
      target = kReplacements[rng() % kReplacements.size()];
      break;
    case 1: {
      const nlohmann::json copy = *values[rng() % values.size()];  // maybe an ancestor
      target = copy;
      break;
    }
    case 2:
      if (target.is_object() && !target.empty()) {
        auto it = target.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng() % target.size()));
        target.erase(it);
      } else if (target.is_array() && !target.empty()) {
        target.erase(static_cast<size_t>(rng() % target.size()));
      }
      break;
    default:
      if (target.is_array()) {
        const nlohmann::json element =
            target.empty() ? nlohmann::json(0) : target[rng() % target.size()];
        target.push_back(element);
      } else if (target.is_string()) {
        target = target.get<std::string>() + target.get<std::string>();
      } else if (target.is_number()) {
        target = target.get<double>() * -3.0;
      }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  if (size > 1 && rng() % 2 == 0) {
    nlohmann::json body = nlohmann::json::parse(data + 1, data + size, nullptr, false);
    if (!body.is_discarded()) {
      MutateJson(body, rng);
      const std::string text = body.dump();
      if (text.size() + 1 <= max_size) {
        std::copy(text.begin(), text.end(), data + 1);
        return text.size() + 1;
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t endpoint = data[0] % 6;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  absl::StatusOr<openai::ParsedRequest> parsed = absl::UnknownError("unset");
  bool chat = false;
  switch (endpoint) {
    case 0:
      parsed = openai::ParseCompletionRequest(body);
      break;
    case 1:
      parsed = openai::ParseChatRequest(body);
      chat = true;
      break;
    case 2:
      parsed = openai::ParseEmbeddingRequest(body);
      break;
    case 3:
      parsed = openai::ParseScoreRequest(body);
      break;
    case 4:
      parsed = openai::ParseRerankRequest(body);
      break;
    default: {
      const absl::StatusOr<openai::ResponsesRequest> responses =
          openai::ParseResponsesRequest(body);
      if (!responses.ok()) {
        if (!Refusal(responses.status()) &&
            responses.status().code() != absl::StatusCode::kNotFound) {
          Fail("a Responses refusal that is not INVALID_ARGUMENT or NOT_FOUND", responses.status(),
               body);
        }
        return 0;
      }
      parsed = openai::ParseChatObject(responses->chat);
      chat = true;
    }
  }
  if (!parsed.ok()) {
    if (!Refusal(parsed.status())) {
      Fail("a refusal that is not INVALID_ARGUMENT", parsed.status(), body);
    }
    return 0;
  }
  if (chat) {
    RenderAndValidate(*parsed, body);
  } else {
    Validate(*parsed, body);
  }
  return 0;
}
