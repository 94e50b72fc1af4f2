#include "router/frontend/http_frontend.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/json_depth.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "router/frontend/beam_search.h"
#include "router/frontend/generation.h"
#include "router/frontend/responses_writer.h"
#include "router/openai/json_fields.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/openai/responses_api.h"
#include "router/openai/tool_parser.h"

namespace headroom::router {
namespace {

// OpenAI's (and vLLM's) max_tokens when a completions request does not give it.
constexpr int32_t kCompletionsMaxTokens = 16;

using Json = nlohmann::json;
// Request bodies keep their key order (a chat body's tools reach the template as written).
using RequestJson = nlohmann::ordered_json;

constexpr char kJson[] = "application/json";

std::string RandomHex() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(24, '0');
  uint64_t bits = random();
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == 16) bits = random();
    out[i] = kDigits[bits & 15];
    bits >>= 4;
  }
  return out;
}

int64_t UnixSeconds() { return absl::ToUnixSeconds(absl::Now()); }

// Parses a JSON object body; on failure answers 400 and returns nullopt.
std::optional<RequestJson> ParseObject(const http::HttpRequest& request,
                                       http::ResponseWriter& writer) {
  if (JsonNestingDepth(request.body) > kMaxJsonNesting) {
    RespondOpenAiError(writer, 400,
                       absl::StrCat("the request body nests arrays and objects more than ",
                                    kMaxJsonNesting, " levels deep"));
    return std::nullopt;
  }
  RequestJson body = RequestJson::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    RespondOpenAiError(writer, 400, "invalid JSON in the request body");
    return std::nullopt;
  }
  if (!body.is_object()) {
    RespondOpenAiError(writer, 400, "the request body must be a JSON object");
    return std::nullopt;
  }
  return body;
}

}  // namespace

HttpFrontend::HttpFrontend(HttpFrontendOptions options)
    : options_(std::move(options)),
      stub_(v1::Inference::NewStub(options_.channel)),
      pool_(options_.handler_threads, options_.max_queued_requests) {}

std::pair<std::string, std::string> HttpFrontend::ErrorBody(int status,
                                                            const std::string& message) {
  return {kJson, openai::ErrorBody(status, message)};
}

int64_t HttpFrontend::ServerLoad() {
  int64_t open = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open = open_calls_;
  }
  return parsing_.load() + open + (options_.grpc_load ? options_.grpc_load() : 0);
}

bool HttpFrontend::Authorized(const http::HttpRequest& request) const {
  if (options_.api_key.empty()) return true;
  const std::optional<std::string> header = request.Header("authorization");
  return header.has_value() && *header == absl::StrCat("Bearer ", options_.api_key);
}

namespace {

// vLLM's X-Request-Id: a request's header, when given, is its response id's unique part (over
// the body's request_id). INVALID_ARGUMENT when it is longer than openai::kMaxRequestIdBytes.
absl::Status TakeRequestIdHeader(const http::HttpRequest& request, openai::ParsedRequest& parsed) {
  std::optional<std::string> header = request.Header("x-request-id");
  if (!header.has_value() || header->empty()) return absl::OkStatus();
  if (header->size() > openai::kMaxRequestIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the X-Request-Id header is ", header->size(),
                                                   " bytes, at most ", openai::kMaxRequestIdBytes,
                                                   " are accepted"));
  }
  parsed.request_id = *std::move(header);
  return absl::OkStatus();
}

// The response id: the endpoint's prefix, "-" and the request id (random when none was given).
std::string ResponseId(const openai::ParsedRequest& parsed) {
  return absl::StrCat(openai::ResponseIdPrefix(parsed.endpoint), "-",
                      parsed.request_id.empty() ? RandomHex() : parsed.request_id);
}

// The field a chat prompt's error names: the request's chat_template, or the messages.
std::string ChatErrorParam(const absl::Status& status) {
  std::string param = openai::ErrorParam(status);
  return param.empty() ? "messages" : param;
}

// vLLM's /invocations (SageMaker's one inference route): the route whose request the body is,
// tried in vLLM's order: chat (messages), completions (prompt), embeddings (input), score (text_1
// and text_2), rerank (query and documents); for a `classifier`, whose one task is classification
// (vLLM picks among the model's tasks), input and messages bodies are classifications. Answers
// 400 and returns nullopt when the body is none of them.
std::optional<std::string> InvocationRoute(const http::HttpRequest& request,
                                           http::ResponseWriter& writer, bool classifier) {
  const std::optional<RequestJson> body = ParseObject(request, writer);
  if (!body.has_value()) return std::nullopt;
  if (classifier && (body->contains("input") || body->contains("messages"))) return "/classify";
  if (body->contains("messages")) return "/v1/chat/completions";
  if (body->contains("prompt")) return "/v1/completions";
  if (body->contains("input")) return "/v1/embeddings";
  if (body->contains("text_1") && body->contains("text_2")) return "/score";
  if (body->contains("query") && body->contains("documents")) return "/rerank";
  RespondOpenAiError(writer, 400,
                     "cannot find a suitable handler for the request: /invocations takes a chat "
                     "completion (messages), completion (prompt), embedding (input), score "
                     "(text_1 and text_2) or rerank (query and documents) request");
  return std::nullopt;
}

// vLLM's /classify (SGLang's /v1/classify too).
bool ClassifyRoute(const std::string& path) {
  return path == "/classify" || path == "/v1/classify";
}

// /v1/embeddings, vLLM's /score and /rerank (both also under /v1, rerank under /v2 too),
// /classify and /pooling: every choice pools its prompt.
bool EmbeddingRoute(const std::string& path) {
  return path == "/v1/embeddings" || path == "/score" || path == "/v1/score" || path == "/rerank" ||
         path == "/v1/rerank" || path == "/v2/rerank" || path == "/pooling" || ClassifyRoute(path);
}

}  // namespace

void HttpFrontend::Handle(http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer) {
  if (options_.request_id_headers) {
    // vLLM's --enable-request-id-headers: the request's X-Request-Id, or one made for it, which
    // the request then carries as if the client had sent it (its response id ends with it).
    auto given = std::find_if(request.headers.begin(), request.headers.end(),
                              [](const auto& header) { return header.first == "x-request-id"; });
    if (given == request.headers.end()) {
      given = request.headers.insert(given, {"x-request-id", ""});
    }
    if (given->second.empty()) given->second = RandomHex();
    writer = WithHeaders(std::move(writer), {{"X-Request-Id", given->second}});
  }
  // CORS first, as vLLM's middleware wraps its routes: a preflight carries no API key.
  if (options_.cors.has_value() && request.Header("origin").has_value()) {
    if (std::optional<CorsPreflight> preflight = CorsPreflightAnswer(*options_.cors, request)) {
      writer->Respond(preflight->status, "text/plain; charset=utf-8", std::move(preflight->body),
                      std::move(preflight->headers));
      return;
    }
    writer = WithHeaders(std::move(writer), CorsResponseHeaders(*options_.cors, request));
  }
  const std::string& path = request.path;
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  // /ping is vLLM's (SageMaker's) health route, GET or POST.
  if ((path == "/health" && get) || (path == "/ping" && (get || post))) {
    const bool up = options_.healthy();
    writer->Respond(up ? 200 : 503, "text/plain", up ? "ok\n" : "no worker group is serving\n");
    return;
  }
  if (path == "/version" && get) {
    writer->Respond(200, kJson, Json{{"version", HEADROOM_VERSION}}.dump());
    return;
  }
  if (path == "/load" && get) {
    // vLLM's load route: the generation requests this router holds, HTTP and gRPC.
    writer->Respond(200, kJson, Json{{"server_load", ServerLoad()}}.dump());
    return;
  }
  if (path == "/metrics" && get) {
    writer->Respond(200, metrics::kExpositionContentType, options_.registry->Render());
    return;
  }
  const bool lora_route = path == "/v1/load_lora_adapter" || path == "/v1/unload_lora_adapter";
  const bool known = path == "/v1/completions" || path == "/v1/chat/completions" ||
                     path == "/invocations" || path == "/v1/responses" || EmbeddingRoute(path) ||
                     path == "/v1/models" || path == "/tokenize" || path == "/detokenize" ||
                     (lora_route && options_.update_lora);
  if (!known) {
    // vLLM's run-time adapter routes without an InferenceService to serve them: a 404 as
    // vLLM's without VLLM_ALLOW_RUNTIME_LORA_UPDATING, saying why.
    RespondOpenAiError(
        *writer, 404,
        lora_route ? absl::StrCat("no route ", request.method, " ", path,
                                  ": headroom loads LoRA adapters at start only (the workers' "
                                  "--lora-modules), so every adapter is resident and planned")
                   : absl::StrCat("no route ", request.method, " ", path));
    return;
  }
  if (!Authorized(request)) {
    RespondOpenAiError(*writer, 401,
                       request.Header("authorization").has_value()
                           ? "invalid API key in the Authorization header"
                           : "missing API key: send \"Authorization: Bearer <key>\"",
                       "", {{"WWW-Authenticate", "Bearer"}});
    return;
  }
  if (path == "/v1/models") {
    if (!get) return RespondOpenAiError(*writer, 405, "use GET for /v1/models");
    v1::ListModelsResponse models;
    if (options_.list_models) {
      models = options_.list_models();
    } else if (std::string name = options_.model_name(); !name.empty()) {
      v1::ModelInfo* model = models.add_models();
      model->set_id(std::move(name));
      model->set_max_model_len(options_.max_model_len());
    }
    writer->Respond(200, kJson, openai::ModelsBody(models, UnixSeconds()));
    return;
  }
  if (!post) return RespondOpenAiError(*writer, 405, absl::StrCat("use POST for ", path));
  // Parsing and tokenizing a body of up to 1 MiB takes up to hundreds of ms: on the pool.
  std::shared_ptr<http::ResponseWriter> refused = writer;
  const bool generation = path == "/v1/completions" || path == "/v1/chat/completions" ||
                          path == "/v1/responses" || path == "/invocations" || EmbeddingRoute(path);
  if (generation) parsing_.fetch_add(1);
  const bool queued =
      pool_.Post([this, request = std::move(request), writer = std::move(writer)]() mutable {
        if (request.path == "/invocations") {
          std::optional<std::string> route =
              InvocationRoute(request, *writer, ServedKind().classifier);
          if (!route.has_value()) {  // answered 400
            parsing_.fetch_sub(1);
            return;
          }
          request.path = *std::move(route);
        }
        if (request.path == "/tokenize") return Tokenize(request, *writer);
        if (request.path == "/detokenize") return Detokenize(request, *writer);
        if (request.path == "/v1/load_lora_adapter" || request.path == "/v1/unload_lora_adapter") {
          return UpdateLora(request, *writer);
        }
        if (EmbeddingRoute(request.path)) {
          Embed(request, std::move(writer));
        } else if (request.path == "/v1/responses") {
          Responses(request, std::move(writer));
        } else {
          Generate(request, request.path == "/v1/chat/completions", std::move(writer));
        }
        parsing_.fetch_sub(1);
      });
  if (!queued) {
    if (generation) parsing_.fetch_sub(1);
    if (options_.on_busy) options_.on_busy();
    RespondOpenAiError(*refused, 429,
                       absl::StrCat("the router's HTTP handlers are busy: ", pool_.max_queued(),
                                    " requests wait to be parsed and tokenized; retry after 1 s"),
                       "", {{"Retry-After", "1"}});
  }
}

void HttpFrontend::Generate(const http::HttpRequest& request, bool chat,
                            std::shared_ptr<http::ResponseWriter> writer) {
  absl::StatusOr<openai::ParsedRequest> parsed =
      chat ? openai::ParseChatRequest(request.body) : openai::ParseCompletionRequest(request.body);
  if (!parsed.ok()) {
    return RespondOpenAiError(*writer, 400, std::string(parsed.status().message()),
                              openai::ErrorParam(parsed.status()));
  }
  if (absl::Status st = TakeRequestIdHeader(request, *parsed); !st.ok()) {
    return RespondOpenAiError(*writer, 400, std::string(st.message()));
  }
  if (chat) {
    parsed->response_role = options_.response_role;
    openai::ToolChoice& tool_choice = parsed->tools.choice;
    if (tool_choice.kind == openai::ToolChoice::Kind::kAuto) {
      if (!options_.tool_call_parser.has_value()) {
        return RespondOpenAiError(
            *writer, 400,
            "tool_choice \"auto\" (the default when tools are given) lets the model decide "
            "whether to call a tool, which needs a parser for the model's tool-call format: "
            "start the router with --enable-auto-tool-choice --tool-call-parser NAME (hermes "
            "for Hermes and Qwen2.5 / Qwen3, llama3_json for Llama 3.x, mistral for Mistral), "
            "as vLLM needs, or use tool_choice "
            "\"required\", a named function ({\"type\": \"function\", \"function\": "
            "{\"name\": ...}}) or \"none\"",
            "tool_choice");
      }
      tool_choice.parser = options_.tool_call_parser;
      // The parser reads a special token (mistral's [TOOL_CALLS]): keep them in the text, as
      // vLLM's adjust_request does.
      if (openai::KeepsSpecialTokens(*tool_choice.parser)) {
        parsed->generate.mutable_sampling()->set_skip_special_tokens(false);
      }
    }
    const Tokenizer& tokenizer = *options_.tokenizer;
    std::string prompt;
    std::optional<std::string> eot;
    absl::StatusOr<std::vector<int32_t>> ids = ChatPromptIds(*parsed, &prompt, &eot);
    if (!ids.ok()) {
      return RespondOpenAiError(*writer, 400, std::string(ids.status().message()),
                                ChatErrorParam(ids.status()));
    }
    if (options_.reasoning_parser.has_value()) SetReasoning(prompt, *parsed);
    parsed->generate.mutable_token_ids()->mutable_ids()->Assign(ids->begin(), ids->end());
    // The turn ends at the template's end-of-turn token, which a checkpoint's eos_token may not
    // be (Llama-3-Instruct: <|eot_id|> vs <|end_of_text|>); like EOS, ignore_eos ignores it.
    v1::SamplingParams& sampling = *parsed->generate.mutable_sampling();
    if (eot.has_value() && !sampling.ignore_eos()) {
      if (const std::optional<int32_t> id = tokenizer.TokenToId(*eot); id.has_value()) {
        sampling.add_stop_token_ids(*id);
      }
    }
    // A chat reply without max_tokens / max_completion_tokens runs until the model ends its turn
    // or the context is full (vLLM's default: max_model_len - prompt), not the completions
    // default of 16 tokens. The blocks are still reserved per request (prompt + max_tokens).
    // The prompt counted is what truncate_prompt_tokens leaves of it.
    const int64_t max_model_len = options_.max_model_len();
    int64_t prompt_tokens = static_cast<int64_t>(ids->size());
    if (const int32_t keep = parsed->generate.truncate_prompt_tokens();
        parsed->generate.has_truncate_prompt_tokens() && (keep == -1 || keep >= 1)) {
      prompt_tokens = std::min(prompt_tokens, keep == -1 ? max_model_len : int64_t{keep});
    }
    if (!sampling.has_max_tokens() && max_model_len > prompt_tokens) {
      sampling.set_max_tokens(static_cast<int32_t>(max_model_len - prompt_tokens));
    }
  }
  const int32_t n = parsed->n;
  std::vector<v1::GenerateRequest> choices;
  choices.reserve(static_cast<size_t>(openai::ChoiceCount(*parsed)));
  for (int32_t i = 0; i < openai::ChoiceCount(*parsed); ++i) {
    choices.push_back(openai::ChoiceRequest(*parsed, i));
  }
  // The n samples of a text prompt are tokenized once, here, rather than n times by the Inference
  // service (whose handler pool would also count each of them as a queued request); so is a
  // prompt for beam search, or one without special tokens (add_special_tokens false; the service
  // adds them). Choices [first, first + n) share a prompt.
  const bool tokenize_here = n > 1 || parsed->beam_search || !parsed->add_special_tokens;
  for (size_t first = 0; tokenize_here && first < choices.size(); first += static_cast<size_t>(n)) {
    if (choices[first].has_token_ids()) continue;
    absl::StatusOr<std::vector<int32_t>> ids = options_.tokenizer->Encode(
        choices[first].text(), {.add_special_tokens = parsed->add_special_tokens});
    if (!ids.ok()) {
      const std::string field = parsed->more_prompts.empty()
                                    ? "prompt"
                                    : absl::StrCat("prompt[", first / static_cast<size_t>(n), "]");
      return RespondOpenAiError(*writer, 400, absl::StrCat(field, ": ", ids.status().message()),
                                "prompt");
    }
    for (size_t j = first; j < first + static_cast<size_t>(n); ++j) {
      choices[j].mutable_token_ids()->mutable_ids()->Assign(ids->begin(), ids->end());
    }
  }
  if (parsed->beam_search) return StartBeamSearch(*parsed, std::move(choices), std::move(writer));
  StartGeneration(*parsed, std::move(choices), std::move(writer));
}

void HttpFrontend::Responses(const http::HttpRequest& request,
                             std::shared_ptr<http::ResponseWriter> writer) {
  absl::StatusOr<openai::ResponsesRequest> parsed = openai::ParseResponsesRequest(request.body);
  if (!parsed.ok()) {
    return RespondOpenAiError(*writer, absl::IsNotFound(parsed.status()) ? 404 : 400,
                              std::string(parsed.status().message()),
                              openai::ErrorParam(parsed.status()));
  }
  http::HttpRequest chat = request;
  chat.body = parsed->chat.dump();
  Generate(chat, /*chat=*/true,
           ResponsesWriter(std::move(writer), *parsed, absl::StrCat("resp_", RandomHex()),
                           UnixSeconds()));
}

ServedClassifier HttpFrontend::ServedKind() const {
  return options_.served_classifier ? options_.served_classifier() : ServedClassifier{};
}

void HttpFrontend::Embed(const http::HttpRequest& request,
                         std::shared_ptr<http::ResponseWriter> writer) {
  const std::string& path = request.path;
  absl::StatusOr<openai::ParsedRequest> parsed =
      path == "/v1/embeddings" ? ParseEmbedding(request.body, PoolingKind::kEmbed)
      : ClassifyRoute(path)    ? ParseEmbedding(request.body, PoolingKind::kClassify)
      : path == "/pooling"     ? ParseEmbedding(request.body, PoolingKind::kPooling)
      : path == "/score" || path == "/v1/score" ? openai::ParseScoreRequest(request.body)
                                                : openai::ParseRerankRequest(request.body);
  if (!parsed.ok()) {
    return RespondOpenAiError(*writer, 400, std::string(parsed.status().message()),
                              openai::ErrorParam(parsed.status()));
  }
  if (absl::Status st = TakeRequestIdHeader(request, *parsed); !st.ok()) {
    return RespondOpenAiError(*writer, 400, std::string(st.message()));
  }
  // A classifier scores pairs as vLLM's cross-encoders do (one label, its score the pair's): a
  // reranker (a causal LM converted with classifier_from_token) classifies the two texts
  // joined, a native one the pair encoded with the tokenizer's pair template.
  std::vector<std::pair<std::string, std::string>> pair_texts;
  bool encode_pairs = false;
  if (parsed->endpoint == openai::Endpoint::kScore ||
      parsed->endpoint == openai::Endpoint::kRerank) {
    if (const ServedClassifier served = ServedKind(); served.classifier) {
      if (served.num_labels != 1) {
        return RespondOpenAiError(
            *writer, 400,
            absl::StrCat(
                "this model classifies into ", served.num_labels,
                " labels; scoring a pair needs a classifier of one label (use /classify)"));
      }
      pair_texts = openai::JoinScorePairs(*parsed);
      encode_pairs = !served.reranker;
    }
  }
  const int32_t inputs = openai::ChoiceCount(*parsed);
  std::vector<v1::GenerateRequest> choices;
  choices.reserve(static_cast<size_t>(inputs));
  for (int32_t i = 0; i < inputs; ++i) {
    v1::GenerateRequest& choice = choices.emplace_back(openai::ChoiceRequest(*parsed, i));
    // Text inputs are tokenized here (add_special_tokens as asked), not by the Inference service,
    // whose handler pool would count each input of a long list as a queued request.
    if (choice.has_token_ids()) continue;
    const EncodeOptions encode{.add_special_tokens = parsed->add_special_tokens};
    absl::StatusOr<std::vector<int32_t>> ids =
        encode_pairs
            ? options_.tokenizer->EncodePair(pair_texts[static_cast<size_t>(i)].first,
                                             pair_texts[static_cast<size_t>(i)].second, encode)
            : options_.tokenizer->Encode(choice.text(), encode);
    if (!ids.ok()) {
      const std::string field = !parsed->choice_names.empty()
                                    ? parsed->choice_names[static_cast<size_t>(i)]
                                : inputs > 1 ? absl::StrCat("input[", i, "]")
                                             : "input";
      return RespondOpenAiError(*writer, 400, absl::StrCat(field, ": ", ids.status().message()),
                                field);
    }
    choice.mutable_token_ids()->mutable_ids()->Assign(ids->begin(), ids->end());
  }
  StartGeneration(*parsed, std::move(choices), std::move(writer));
}

std::optional<GenerationHooks> HttpFrontend::OpenCall(std::string& model,
                                                      http::ResponseWriter& writer) {
  if (model.empty()) model = options_.model_name();
  std::function<void(int32_t, int64_t)> finished_prompt;
  if (options_.on_request_finished) {
    finished_prompt = [this, model](int32_t samples, int64_t max_generation_tokens) {
      options_.on_request_finished(model, samples, max_generation_tokens);
    };
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) {
      RespondOpenAiError(writer, 503, "the router is shutting down; retry on another replica", "",
                         {{"Retry-After", "1"}});
      return std::nullopt;
    }
    ++open_calls_;
  }
  return GenerationHooks{.stub = stub_.get(),
                         .tokenizer = options_.tokenizer,
                         .shutting_down = [this] { return ShuttingDown(); },
                         .ended = [this] { CallEnded(); },
                         .finished_prompt = std::move(finished_prompt)};
}

void HttpFrontend::StartGeneration(const openai::ParsedRequest& parsed,
                                   std::vector<v1::GenerateRequest> choices,
                                   std::shared_ptr<http::ResponseWriter> writer) {
  std::string model = parsed.generate.model();
  std::optional<GenerationHooks> hooks = OpenCall(model, *writer);
  if (!hooks.has_value()) return;
  const std::string id = ResponseId(parsed);
  auto generation =
      std::make_shared<Generation>(*std::move(hooks), std::move(writer), parsed, std::move(choices),
                                   id, UnixSeconds(), std::move(model));
  generation->Start();
}

void HttpFrontend::StartBeamSearch(const openai::ParsedRequest& parsed,
                                   std::vector<v1::GenerateRequest> choices,
                                   std::shared_ptr<http::ResponseWriter> writer) {
  const v1::SamplingParams& sampling = parsed.generate.sampling();
  BeamSearchOptions options{
      .width = parsed.n,
      .max_tokens = sampling.has_max_tokens() ? sampling.max_tokens() : kCompletionsMaxTokens,
      .length_penalty = parsed.length_penalty,
      .ending_tokens = {sampling.stop_token_ids().begin(), sampling.stop_token_ids().end()},
      .top_logprobs = parsed.logprobs ? parsed.top_logprobs : 0};
  if (const std::optional<int32_t> eos = options_.tokenizer->eos_token_id();
      eos.has_value() && !sampling.ignore_eos()) {
    options.ending_tokens.push_back(*eos);
  }
  if (options.max_tokens < 1) {
    return RespondOpenAiError(
        *writer, 400, absl::StrCat("max_tokens must be at least 1, got ", options.max_tokens),
        "max_tokens");
  }
  const int64_t max_model_len = options_.max_model_len();
  std::vector<std::vector<int32_t>> prompts;
  for (size_t first = 0; first < choices.size(); first += static_cast<size_t>(parsed.n)) {
    const auto& ids = choices[first].token_ids().ids();
    // Each step asks for one token after the prompt and the beam: the last must fit too.
    const int64_t prompt_tokens = ids.size();
    if (max_model_len > 0 && prompt_tokens + options.max_tokens > max_model_len) {
      return RespondOpenAiError(
          *writer, 400,
          absl::StrCat("prompt (", prompt_tokens, " tokens) + max_tokens (", options.max_tokens,
                       ") exceeds max_model_len (", max_model_len, ")"),
          "max_tokens");
    }
    prompts.emplace_back(ids.begin(), ids.end());
  }
  std::string model = parsed.generate.model();
  std::optional<GenerationHooks> hooks = OpenCall(model, *writer);
  if (!hooks.has_value()) return;
  v1::GenerateRequest step;
  step.set_model(parsed.generate.model());
  step.set_cache_salt(parsed.generate.cache_salt());
  step.set_priority(parsed.generate.priority());
  if (sampling.has_skip_special_tokens()) {
    step.mutable_sampling()->set_skip_special_tokens(sampling.skip_special_tokens());
  }
  const std::string id = ResponseId(parsed);
  auto search = std::make_shared<BeamSearch>(
      *std::move(hooks), std::move(writer), parsed, std::move(step), std::move(prompts),
      std::move(options), sampling.include_stop_str_in_output(), id, UnixSeconds(),
      std::move(model));
  search->Start();
}

void HttpFrontend::SetReasoning(std::string_view prompt, openai::ParsedRequest& parsed) const {
  // A reply held to a grammar from its first token cannot think: a named or "required" call, a
  // guided choice, allowed_token_ids. It is not split.
  const openai::ToolChoice::Kind calls = parsed.tools.choice.kind;
  v1::SamplingParams& sampling = *parsed.generate.mutable_sampling();
  if (calls == openai::ToolChoice::Kind::kRequired ||
      calls == openai::ToolChoice::Kind::kFunction || sampling.guided_choice_size() > 0 ||
      sampling.allowed_token_ids_size() > 0) {
    return;
  }
  parsed.reasoning_parser = options_.reasoning_parser;
  parsed.prompt_reasoning = openai::ReasoningInPrompt(prompt, *options_.reasoning_parser);
  // Structured output (json_object, json_schema, guided_regex, guided_grammar, structural_tag)
  // applies to the answer: from the end of the reasoning, unless the prompt already closed it
  // (vLLM's rule).
  const bool structured = sampling.json_object() || !sampling.json_schema().empty() ||
                          !sampling.guided_regex().empty() || !sampling.guided_grammar().empty() ||
                          !sampling.structural_tag().empty();
  if (structured && parsed.prompt_reasoning != openai::PromptReasoning::kClosed) {
    sampling.set_constraint_after(std::string(openai::ReasoningEndOf(*options_.reasoning_parser)));
  }
}

absl::StatusOr<std::vector<int32_t>> HttpFrontend::ChatPromptIds(
    const openai::ParsedRequest& parsed, std::string* rendered,
    std::optional<std::string>* end_of_turn) const {
  const openai::ChatTemplate* chat_template =
      options_.chat_template.has_value() ? &*options_.chat_template : nullptr;
  std::optional<openai::ChatTemplate> requested;
  if (parsed.chat_template.has_value()) {
    if (!options_.trust_request_chat_template) {
      return openai::Bad("chat_template",
                         "Chat template is passed with request, but "
                         "--trust-request-chat-template is not set. Refused request with "
                         "untrusted chat template.");
    }
    // The name of one of the model's templates ("rag"), as transformers takes a name there;
    // else the template itself.
    const openai::ChatTemplate* named =
        chat_template != nullptr ? chat_template->Named(*parsed.chat_template) : nullptr;
    if (named != nullptr) {
      chat_template = named;
    } else {
      absl::StatusOr<openai::ChatTemplate> parsed_template = openai::ChatTemplate::Create(
          *parsed.chat_template, chat_template != nullptr
                                     ? chat_template->tokens()
                                     : openai::TokenizerSpecialTokens(*options_.tokenizer));
      if (!parsed_template.ok()) {
        return openai::Bad("chat_template",
                           absl::StrCat("chat_template: ", parsed_template.status().message()));
      }
      requested = *std::move(parsed_template);
      if (options_.content_format.has_value()) {
        requested->set_content_format(*options_.content_format);
      }
      chat_template = &*requested;
    }
  }
  // The tools the template sees: the request's list when it gave one ([] too, as vLLM), None
  // without one or for tool_choice "none" under vLLM's --exclude-tools-when-tool-choice-none.
  static const nlohmann::ordered_json kNoTools = nullptr;
  const nlohmann::ordered_json& tools =
      !parsed.tools.given || (options_.exclude_tools_when_tool_choice_none &&
                              parsed.tools.choice.kind == openai::ToolChoice::Kind::kNone)
          ? kNoTools
          : parsed.tools.tools;
  if (!parsed.chat_template.has_value() && chat_template != nullptr) {
    // A request that gives tools (a list, even empty) renders with the model's "tool_use"
    // template when it has one, as transformers' get_chat_template picks it.
    chat_template = &chat_template->ForRequest(tools.is_array());
  }
  if (chat_template == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("model \"", options_.model_name(),
                     "\" has no chat template (neither chat_template.jinja nor a chat_template "
                     "in tokenizer_config.json, or it did not parse: see the router's log); use "
                     "/v1/completions, or start the router with --chat-template"));
  }
  if (end_of_turn != nullptr) *end_of_turn = chat_template->end_of_turn();
  absl::StatusOr<std::string> prompt =
      parsed.continue_final_message
          ? chat_template->RenderContinuingFinalMessage(parsed.messages, tools,
                                                        parsed.chat_template_kwargs)
          : chat_template->Render(parsed.messages, parsed.add_generation_prompt, tools,
                                  parsed.chat_template_kwargs);
  if (!prompt.ok()) return absl::InvalidArgumentError(prompt.status().message());
  // The template already holds the special tokens (BOS, headers): add none.
  absl::StatusOr<std::vector<int32_t>> ids =
      options_.tokenizer->Encode(*prompt, {.add_special_tokens = false});
  if (!ids.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("messages: ", ids.status().message()));
  }
  if (rendered != nullptr) *rendered = *std::move(prompt);
  return ids;
}

absl::StatusOr<openai::ParsedRequest> HttpFrontend::ParseEmbedding(std::string_view body,
                                                                   PoolingKind kind) const {
  absl::StatusOr<RequestJson> obj = openai::ParseObject(body);
  if (!obj.ok()) return obj.status();
  if (obj->contains("messages")) HR_RETURN_IF_ERROR(RenderEmbeddingChat(*obj));
  switch (kind) {
    case PoolingKind::kEmbed:
      return openai::ParseEmbeddingObject(*obj);
    case PoolingKind::kClassify:
      return openai::ParseClassifyObject(*obj);
    case PoolingKind::kPooling:
      break;
  }
  return openai::ParsePoolingObject(*obj, ServedKind().classifier);
}

absl::Status HttpFrontend::RenderEmbeddingChat(RequestJson& obj) const {
  if (obj.contains("input")) return openai::Bad("input", "give input or messages, not both");
  // The chat parser reads the messages and the template's settings (type-checking them);
  // vLLM's embedding chat requests default add_generation_prompt to false.
  RequestJson chat = {{"add_generation_prompt", false}};
  for (const char* key : {"messages", "add_generation_prompt", "continue_final_message",
                          "chat_template", "chat_template_kwargs"}) {
    if (const auto it = obj.find(key); it != obj.end() && !it->is_null()) chat[key] = *it;
  }
  absl::StatusOr<openai::ParsedRequest> parsed = openai::ParseChatObject(chat);
  if (!parsed.ok()) return parsed.status();
  bool add_special = false;
  if (const auto it = obj.find("add_special_tokens"); it != obj.end()) {
    if (!it->is_boolean()) {
      return openai::Bad("add_special_tokens", "add_special_tokens must be a boolean");
    }
    add_special = it->get<bool>();
  }
  std::string prompt;
  absl::StatusOr<std::vector<int32_t>> ids = ChatPromptIds(*parsed, &prompt);
  if (!ids.ok()) {
    return openai::Bad(ChatErrorParam(ids.status()), std::string(ids.status().message()));
  }
  if (add_special) {
    // On top of what the template holds, as vLLM's add_special_tokens adds them.
    ids = options_.tokenizer->Encode(prompt, {.add_special_tokens = true});
    if (!ids.ok()) return openai::Bad("messages", std::string(ids.status().message()));
  }
  for (const char* key : {"messages", "add_generation_prompt", "chat_template_kwargs",
                          "chat_template", "continue_final_message", "add_special_tokens"}) {
    obj.erase(key);
  }
  obj["input"] = *ids;
  return absl::OkStatus();
}

void HttpFrontend::UpdateLora(const http::HttpRequest& request, http::ResponseWriter& writer) {
  std::optional<RequestJson> body = ParseObject(request, writer);
  if (!body.has_value()) return;
  const bool load = request.path == "/v1/load_lora_adapter";
  const auto text = [&](const char* field) {
    const auto it = body->find(field);
    return it != body->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string name = text("lora_name");
  const std::string path = text("lora_path");
  // vLLM's messages.
  if (load && (name.empty() || path.empty())) {
    return RespondOpenAiError(writer, 400, "Both 'lora_name' and 'lora_path' must be provided.");
  }
  if (!load && name.empty()) {
    return RespondOpenAiError(writer, 400,
                              "'lora_name' needs to be provided to unload a LoRA adapter.");
  }
  const auto inplace = body->find("load_inplace");
  if (inplace != body->end() && !inplace->is_boolean() && !inplace->is_null()) {
    return RespondOpenAiError(writer, 400, "load_inplace must be a boolean", "load_inplace");
  }
  const grpc::Status status = options_.update_lora(
      {.load = load,
       .name = name,
       .path = path,
       .load_inplace = inplace != body->end() && inplace->is_boolean() && inplace->get<bool>()});
  if (!status.ok()) {
    // vLLM answers 400 for an adapter already loaded (gRPC keeps ALREADY_EXISTS).
    const int code = status.error_code() == grpc::StatusCode::ALREADY_EXISTS
                         ? 400
                         : HttpStatusOf(status.error_code());
    return RespondOpenAiError(writer, code, status.error_message());
  }
  writer.Respond(200, "text/plain", status.error_message());
}

void HttpFrontend::Tokenize(const http::HttpRequest& request, http::ResponseWriter& writer) {
  std::optional<RequestJson> body = ParseObject(request, writer);
  if (!body.has_value()) return;
  // vLLM's return_token_strs: the tokens' vocabulary strings beside their ids.
  bool token_strs = false;
  if (const auto it = body->find("return_token_strs"); it != body->end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return RespondOpenAiError(writer, 400, "return_token_strs must be a boolean",
                                "return_token_strs");
    }
    token_strs = it->get<bool>();
  }
  const auto answer = [&](const std::vector<int32_t>& ids) {
    Json out = {
        {"count", ids.size()}, {"max_model_len", options_.max_model_len()}, {"tokens", ids}};
    out["token_strs"] = nullptr;
    if (token_strs) {
      Json& strs = out["token_strs"] = Json::array();
      for (const int32_t id : ids) strs.push_back(options_.tokenizer->IdToToken(id).value_or(""));
    }
    writer.Respond(200, kJson, out.dump());
  };
  // vLLM's chat form: {"messages": [...], "add_generation_prompt", "tools", ...} tokenized as the
  // chat request would be.
  if (body->contains("messages")) {
    absl::StatusOr<openai::ParsedRequest> parsed = openai::ParseChatObject(*body);
    if (!parsed.ok()) {
      return RespondOpenAiError(writer, 400, std::string(parsed.status().message()),
                                openai::ErrorParam(parsed.status()));
    }
    absl::StatusOr<std::vector<int32_t>> ids = ChatPromptIds(*parsed);
    if (!ids.ok()) {
      return RespondOpenAiError(writer, 400, std::string(ids.status().message()),
                                ChatErrorParam(ids.status()));
    }
    return answer(*ids);
  }
  const auto prompt = body->find("prompt");
  if (prompt == body->end() || !prompt->is_string()) {
    return RespondOpenAiError(writer, 400, "prompt must be a string", "prompt");
  }
  bool add_special = true;
  if (const auto it = body->find("add_special_tokens"); it != body->end()) {
    if (!it->is_boolean()) {
      return RespondOpenAiError(writer, 400, "add_special_tokens must be a boolean",
                                "add_special_tokens");
    }
    add_special = it->get<bool>();
  }
  absl::StatusOr<std::vector<int32_t>> ids =
      options_.tokenizer->Encode(prompt->get<std::string>(), {.add_special_tokens = add_special});
  if (!ids.ok()) {
    return RespondOpenAiError(writer, 400, absl::StrCat("prompt: ", ids.status().message()),
                              "prompt");
  }
  answer(*ids);
}

void HttpFrontend::Detokenize(const http::HttpRequest& request, http::ResponseWriter& writer) {
  std::optional<RequestJson> body = ParseObject(request, writer);
  if (!body.has_value()) return;
  const auto tokens = body->find("tokens");
  if (tokens == body->end() || !tokens->is_array()) {
    return RespondOpenAiError(writer, 400, "tokens must be an array of integers", "tokens");
  }
  std::vector<int32_t> ids;
  const int64_t vocab = options_.tokenizer->vocab_size();
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Json& t = (*tokens)[i];
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
      return RespondOpenAiError(writer, 400,
                                absl::StrCat("tokens[", i, "] must be a token id in [0, ", vocab,
                                             "), got ", t.is_number() ? t.dump() : t.type_name()),
                                "tokens");
    }
    ids.push_back(t.get<int32_t>());
  }
  Json out = {{"prompt", options_.tokenizer->Decode(ids)}};
  writer.Respond(200, kJson, out.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void HttpFrontend::BeginShutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
}

bool HttpFrontend::ShuttingDown() {
  std::lock_guard<std::mutex> lock(mu_);
  return shutting_down_;
}

void HttpFrontend::CallEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--open_calls_ == 0) idle_.notify_all();
}

bool HttpFrontend::WaitForIdle(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_until(lock, absl::ToChronoTime(deadline), [this] { return open_calls_ == 0; });
}

}  // namespace headroom::router
