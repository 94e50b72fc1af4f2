#include "router/openai/openai_protocol.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "router/openai/json_fields.h"
#include "router/tokenizer/string_util.h"
#include "worker/engine/constraint_check.h"

namespace headroom::router::openai {
namespace {

// A schema, pattern or grammar given at `param` that does not compile: a 400 naming the field
// with the compiler's reason. The verdict is kept for the request's validation, which checks it
// again, and for the next request that repeats it.
absl::Status CheckConstraint(worker::ConstraintKind kind, std::string_view text,
                             std::string_view param) {
  const absl::Status st = worker::ConstraintChecks::Default().Check(kind, text);
  return st.ok() ? st : Bad(param, absl::StrCat(Sv(param), ": ", st.message()));
}

absl::StatusOr<int32_t> TopLogprobsValue(const Json& v, std::string_view param) {
  HEADROOM_OPENAI_ASSIGN(n, ToInt64(v, param));
  if (n < 0 || n > kMaxTopLogprobs) {
    return Bad(param, absl::StrCat(Sv(param), " must be in [0, ", kMaxTopLogprobs, "], got ", n));
  }
  return static_cast<int32_t>(n);
}

// A JSON Schema given at `param` (an object or a boolean; vLLM's guided_json also takes it as a
// JSON string) into sampling.json_schema, compiled here so that a schema headroom cannot enforce
// is refused naming the field it came in.
absl::Status SetJsonSchema(const Json& schema, std::string_view param, v1::SamplingParams& s) {
  if (!s.json_schema().empty()) {
    return Bad(param, absl::StrCat("give one JSON schema (response_format json_schema, "
                                   "guided_json or structured_outputs.json), got a second at ",
                                   Sv(param)));
  }
  std::string text;
  if (schema.is_string()) {
    text = schema.get<std::string>();
  } else if (schema.is_object() || schema.is_boolean()) {
    text = schema.dump();
  } else {
    return WrongType(param, "a JSON schema (an object)", schema);
  }
  HR_RETURN_IF_ERROR(CheckConstraint(worker::ConstraintKind::kJsonSchema, text, param));
  s.set_json_schema(std::move(text));
  return absl::OkStatus();
}

// vLLM's guided_regex / structured_outputs.regex (a pattern the whole output must match) and
// guided_grammar / structured_outputs.grammar (an EBNF grammar in xgrammar's dialect, or Lark's
// syntax where no line holds `::=`, as vLLM reads it; lark_grammar.h) at `param`: the text, into
// `*field`, compiled here so that one headroom cannot enforce is refused naming the field.
// `what` is the noun the errors use ("regex", "grammar"), `type` what the field must be.
absl::Status SetConstraintText(const Json& value, std::string_view param,
                               worker::ConstraintKind kind, std::string_view what,
                               std::string_view type, std::string* field) {
  if (!value.is_string()) return WrongType(param, type, value);
  if (!field->empty()) {
    return Bad(param, absl::StrCat("give one ", Sv(what), " (guided_", Sv(what),
                                   " or structured_outputs.", Sv(what), ")"));
  }
  const auto& text = value.get_ref<const std::string&>();
  if (text.empty()) return Bad(param, absl::StrCat(Sv(param), " must not be empty"));
  HR_RETURN_IF_ERROR(CheckConstraint(kind, text, param));
  *field = text;
  return absl::OkStatus();
}

absl::Status SetGuidedRegex(const Json& regex, std::string_view param, v1::SamplingParams& s) {
  return SetConstraintText(regex, param, worker::ConstraintKind::kGuidedRegex, "regex",
                           "a string (a regular expression)", s.mutable_guided_regex());
}

absl::Status SetGuidedGrammar(const Json& grammar, std::string_view param, v1::SamplingParams& s) {
  return SetConstraintText(grammar, param, worker::ConstraintKind::kGrammar, "grammar",
                           "a string (an EBNF or Lark grammar)", s.mutable_guided_grammar());
}

// vLLM's structural tag at `param`: response_format's object ({"type": "structural_tag",
// "structures": [...], "triggers": [...]}) or structured_outputs.structural_tag (that JSON as a
// string, as vLLM takes it, or the object), into sampling.structural_tag, compiled here so that
// one headroom cannot enforce is refused naming the field (worker/engine/structural_tag.h).
absl::Status SetStructuralTag(const Json& tag, std::string_view param, v1::SamplingParams& s) {
  if (!s.structural_tag().empty()) {
    return Bad(param,
               "give one structural tag (response_format or "
               "structured_outputs.structural_tag)");
  }
  std::string text;
  if (tag.is_string()) {
    text = tag.get<std::string>();
  } else if (tag.is_object()) {
    text = tag.dump();
  } else {
    return WrongType(param, "a structural tag (an object)", tag);
  }
  HR_RETURN_IF_ERROR(CheckConstraint(worker::ConstraintKind::kStructuralTag, text, param));
  s.set_structural_tag(std::move(text));
  return absl::OkStatus();
}

// Structured output: OpenAI's response_format (text, json_object or json_schema; vLLM's
// structural_tag) and vLLM's guided_json / guided_choice / guided_regex / guided_grammar /
// structured_outputs ({"json": schema}, {"choice": [...]}, {"regex": pattern}, {"grammar": ebnf},
// {"json_object": true} or {"structural_tag": tag}). Other kinds are refused: generating without
// the constraint would silently differ from what was asked.
absl::Status ParseStructuredOutput(const Json& obj, v1::SamplingParams& s) {
  if (const Json* format = Member(obj, "response_format"); format != nullptr) {
    if (!format->is_object()) return WrongType("response_format", "an object", *format);
    const Json* type = Member(*format, "type");
    const std::string kind = type != nullptr && type->is_string() ? type->get<std::string>() : "";
    if (kind == "json_object") {
      s.set_json_object(true);
    } else if (kind == "json_schema") {
      const Json* spec = Member(*format, "json_schema");
      if (spec == nullptr || !spec->is_object()) {
        return Bad("response_format.json_schema",
                   "response_format.json_schema must be an object with the schema in \"schema\"");
      }
      const Json* schema = Member(*spec, "schema");
      if (schema == nullptr) {
        return Bad("response_format.json_schema.schema",
                   "response_format.json_schema.schema (the JSON schema) is required");
      }
      HR_RETURN_IF_ERROR(SetJsonSchema(*schema, "response_format.json_schema.schema", s));
    } else if (kind == "structural_tag") {
      HR_RETURN_IF_ERROR(SetStructuralTag(*format, "response_format", s));
    } else if (type != nullptr && kind != "text") {
      return Bad("response_format",
                 "response_format.type must be \"text\", \"json_object\", \"json_schema\" or "
                 "\"structural_tag\"");
    }
  }
  if (const Json* schema = Member(obj, "guided_json"); schema != nullptr) {
    HR_RETURN_IF_ERROR(SetJsonSchema(*schema, "guided_json", s));
  }
  if (const Json* regex = Member(obj, "guided_regex"); regex != nullptr) {
    HR_RETURN_IF_ERROR(SetGuidedRegex(*regex, "guided_regex", s));
  }
  if (const Json* grammar = Member(obj, "guided_grammar"); grammar != nullptr) {
    HR_RETURN_IF_ERROR(SetGuidedGrammar(*grammar, "guided_grammar", s));
  }
  const Json* choice = Member(obj, "guided_choice");
  std::string choice_path = "guided_choice";
  if (const Json* structured = Member(obj, "structured_outputs"); structured != nullptr) {
    if (!structured->is_object()) return WrongType("structured_outputs", "an object", *structured);
    for (const auto& [key, value] : structured->items()) {
      if (value.is_null()) continue;
      if (key == "json_object") {
        if (!value.is_boolean()) {
          return WrongType("structured_outputs.json_object", "a boolean", value);
        }
        if (value.get<bool>()) s.set_json_object(true);
        continue;
      }
      if (key == "json") {
        HR_RETURN_IF_ERROR(SetJsonSchema(value, "structured_outputs.json", s));
        continue;
      }
      if (key == "regex") {
        HR_RETURN_IF_ERROR(SetGuidedRegex(value, "structured_outputs.regex", s));
        continue;
      }
      if (key == "grammar") {
        HR_RETURN_IF_ERROR(SetGuidedGrammar(value, "structured_outputs.grammar", s));
        continue;
      }
      if (key == "structural_tag") {
        HR_RETURN_IF_ERROR(SetStructuralTag(value, "structured_outputs.structural_tag", s));
        continue;
      }
      if (key != "choice") {
        return Bad(absl::StrCat("structured_outputs.", key),
                   absl::StrCat("structured_outputs.", key,
                                " is not supported (choice, json, regex, grammar, json_object and "
                                "structural_tag are)"));
      }
      if (choice != nullptr) {
        return Bad("structured_outputs",
                   "give guided_choice or structured_outputs.choice, not both");
      }
      choice = &value;
      choice_path = "structured_outputs.choice";
    }
  }
  if (choice != nullptr) {
    if (!choice->is_array() || choice->empty()) {
      return Bad(choice_path, absl::StrCat(choice_path, " must be a non-empty array of strings"));
    }
    for (size_t i = 0; i < choice->size(); ++i) {
      const Json& c = (*choice)[i];
      if (!c.is_string()) return WrongType(Path(choice_path, i), "a string", c);
      s.add_guided_choice(c.get<std::string>());  // emptiness and size checked with the rest
    }
  }
  return absl::OkStatus();
}

// use_beam_search: n is the beam width, whose 2n candidates per step are top logprobs (at most 20,
// so n <= 10, as in vLLM), and the fields that would change which tokens a beam may take, or
// what its prompt is, are refused rather than ignored (beam search ranks the model's own
// logprobs). Sampling fields (temperature, top_p, top_k, min_p, seed) mean nothing to it and are
// ignored, as vLLM ignores them.
absl::Status CheckBeamSearch(const ParsedRequest& out) {
  if (!out.beam_search) return absl::OkStatus();
  constexpr int32_t kMaxBeamWidth = 10;
  if (out.n > kMaxBeamWidth) {
    return Bad("n", absl::StrCat("n is the beam width with use_beam_search and must be at most ",
                                 kMaxBeamWidth, " (each step asks for the top 2n logprobs, ",
                                 "at most 20), got ", out.n));
  }
  const v1::GenerateRequest& g = out.generate;
  const v1::SamplingParams& s = g.sampling();
  const std::pair<const char*, bool> refused[] = {
      {"echo", out.echo},
      {"prompt_logprobs", out.prompt_logprobs >= 0},
      {"stop", s.stop_size() > 0},
      {"min_tokens", s.min_tokens() > 0},
      {"logit_bias", s.logit_bias_size() > 0},
      {"allowed_token_ids", s.allowed_token_ids_size() > 0},
      {"bad_words", s.bad_words_size() > 0},
      {"repetition_penalty", s.has_repetition_penalty() && s.repetition_penalty() != 1.0f},
      {"frequency_penalty", s.frequency_penalty() != 0.0f},
      {"presence_penalty", s.presence_penalty() != 0.0f},
      {"truncate_prompt_tokens", g.has_truncate_prompt_tokens()},
      {out.tools.choice.kind == ToolChoice::Kind::kRequired ||
               out.tools.choice.kind == ToolChoice::Kind::kFunction
           ? "tool_choice"
           : "response_format",
       HasStructuredOutput(s)},
  };
  for (const auto& [field, given] : refused) {
    if (given) {
      return Bad(field, absl::StrCat("use_beam_search cannot be combined with ", field,
                                     ": beam search ranks the model's own logprobs, with "
                                     "max_tokens, ignore_eos, stop_token_ids, length_penalty "
                                     "and logprobs"));
    }
  }
  return absl::OkStatus();
}

// The fields both endpoints share: model, sampling, stream, n, penalties, cache_salt.
absl::Status ParseCommon(const Json& obj, ParsedRequest& out) {
  v1::GenerateRequest& g = out.generate;
  v1::SamplingParams& s = *g.mutable_sampling();

  HEADROOM_OPENAI_ASSIGN(model, OptString(obj, "model"));
  if (model.has_value()) g.set_model(*model);
  HEADROOM_OPENAI_ASSIGN(request_id, OptString(obj, "request_id"));
  if (request_id.has_value()) {
    if (request_id->empty() || request_id->size() > kMaxRequestIdBytes) {
      return Bad("request_id", absl::StrCat("request_id must be 1 to ", kMaxRequestIdBytes,
                                            " bytes, got ", request_id->size()));
    }
    out.request_id = *std::move(request_id);
  }

  HEADROOM_OPENAI_ASSIGN(n, OptInt64(obj, "n"));
  if (n.has_value() && (*n < 1 || *n > kMaxChoices)) {
    return Bad("n", absl::StrCat("n must be in [1, ", kMaxChoices, "], got ", *n));
  }
  out.n = static_cast<int32_t>(n.value_or(1));
  // vLLM's V0 best_of (sample best_of, return the n most likely) is gone from vLLM V1; headroom
  // returns every sample, so only best_of <= n means what was asked.
  HEADROOM_OPENAI_ASSIGN(best_of, OptInt64(obj, "best_of"));
  if (best_of.has_value() && *best_of > out.n) {
    return Bad("best_of", absl::StrCat("best_of > n is not supported (every sample is returned), "
                                       "got best_of ",
                                       *best_of, " with n ", out.n));
  }
  HEADROOM_OPENAI_ASSIGN(echo, OptBool(obj, "echo"));
  out.echo = echo.value_or(false);
  HEADROOM_OPENAI_ASSIGN(beam_search, OptBool(obj, "use_beam_search"));
  out.beam_search = beam_search.value_or(false);
  if (const Json* penalty = Member(obj, "length_penalty"); penalty != nullptr) {
    if (!penalty->is_number()) return WrongType("length_penalty", "a number", *penalty);
    out.length_penalty = penalty->get<double>();
  }

  if (const Json* bias = Member(obj, "logit_bias"); bias != nullptr) {
    if (!bias->is_object()) return WrongType("logit_bias", "an object", *bias);
    // {"token id": bias}; the ids and ranges are checked with the other sampling fields.
    for (const auto& [key, value] : bias->items()) {
      int32_t token = 0;
      if (!absl::SimpleAtoi(key, &token)) {
        return Bad("logit_bias",
                   absl::StrCat("logit_bias keys must be token ids, got \"", key, "\""));
      }
      if (!value.is_number()) {
        return WrongType(absl::StrCat("logit_bias.", key), "a number", value);
      }
      (*s.mutable_logit_bias())[token] = value.get<float>();
    }
  }

  // Numeric sampling fields, copied when given; their ranges are checked with the other sampling
  // fields (request_validation.h), so both APIs give the same messages.
  using Sampling = v1::SamplingParams;
  for (const auto& [key, set] : {std::pair{"max_tokens", &Sampling::set_max_tokens},
                                 std::pair{"top_k", &Sampling::set_top_k},
                                 std::pair{"min_tokens", &Sampling::set_min_tokens}}) {
    HEADROOM_OPENAI_ASSIGN(value, OptInt32(obj, key));
    if (value.has_value()) (s.*set)(*value);
  }
  for (const auto& [key, set] :
       {std::pair{"temperature", &Sampling::set_temperature},
        std::pair{"top_p", &Sampling::set_top_p}, std::pair{"min_p", &Sampling::set_min_p},
        std::pair{"repetition_penalty", &Sampling::set_repetition_penalty},
        std::pair{"frequency_penalty", &Sampling::set_frequency_penalty},
        std::pair{"presence_penalty", &Sampling::set_presence_penalty}}) {
    HEADROOM_OPENAI_ASSIGN(value, OptFloat(obj, key));
    if (value.has_value()) (s.*set)(*value);
  }

  if (const Json* seed = Member(obj, "seed"); seed != nullptr) {
    if (seed->is_number_unsigned()) {
      s.set_seed(seed->get<uint64_t>());
    } else {
      HEADROOM_OPENAI_ASSIGN(value, ToInt64(*seed, "seed"));
      // A negative seed keeps its two's-complement bits: still one fixed seed per value.
      s.set_seed(static_cast<uint64_t>(value));
    }
  }

  if (const Json* stop = Member(obj, "stop"); stop != nullptr) {
    if (stop->is_string()) {
      if (stop->get_ref<const std::string&>().empty()) {
        return Bad("stop", "stop must not contain an empty string");
      }
      s.add_stop(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (size_t i = 0; i < stop->size(); ++i) {
        const Json& e = (*stop)[i];
        const std::string path = Path("stop", i);
        if (!e.is_string()) return WrongType(path, "a string", e);
        if (e.get_ref<const std::string&>().empty()) {
          return Bad(path, absl::StrCat(path, " must not be an empty string"));
        }
        s.add_stop(e.get<std::string>());
      }
    } else {
      return WrongType("stop", "a string or an array of strings", *stop);
    }
  }
  if (const Json* ids = Member(obj, "stop_token_ids"); ids != nullptr) {
    if (!ids->is_array()) return WrongType("stop_token_ids", "an array of integers", *ids);
    for (size_t i = 0; i < ids->size(); ++i) {
      HEADROOM_OPENAI_ASSIGN(id, ToInt32((*ids)[i], Path("stop_token_ids", i)));
      s.add_stop_token_ids(id);
    }
  }
  HEADROOM_OPENAI_ASSIGN(ignore_eos, OptBool(obj, "ignore_eos"));
  s.set_ignore_eos(ignore_eos.value_or(false));
  HEADROOM_OPENAI_ASSIGN(include_stop, OptBool(obj, "include_stop_str_in_output"));
  s.set_include_stop_str_in_output(include_stop.value_or(false));
  HEADROOM_OPENAI_ASSIGN(cache_salt, OptString(obj, "cache_salt"));
  if (cache_salt.has_value()) g.set_cache_salt(*cache_salt);
  HEADROOM_OPENAI_ASSIGN(priority, OptInt32(obj, "priority"));
  g.set_priority(priority.value_or(0));
  HEADROOM_OPENAI_ASSIGN(truncate, OptInt32(obj, "truncate_prompt_tokens"));
  if (truncate.has_value()) g.set_truncate_prompt_tokens(*truncate);  // range checked later
  HEADROOM_OPENAI_ASSIGN(skip_special, OptBool(obj, "skip_special_tokens"));
  if (skip_special.has_value()) s.set_skip_special_tokens(*skip_special);
  if (const Json* allowed = Member(obj, "allowed_token_ids"); allowed != nullptr) {
    if (!allowed->is_array())
      return WrongType("allowed_token_ids", "an array of integers", *allowed);
    if (allowed->empty()) {
      return Bad("allowed_token_ids", "allowed_token_ids must not be empty (omit it for all)");
    }
    for (size_t i = 0; i < allowed->size(); ++i) {
      HEADROOM_OPENAI_ASSIGN(id, ToInt32((*allowed)[i], Path("allowed_token_ids", i)));
      s.add_allowed_token_ids(id);
    }
  }
  if (const Json* words = Member(obj, "bad_words"); words != nullptr) {
    if (!words->is_array()) return WrongType("bad_words", "an array of strings", *words);
    for (size_t i = 0; i < words->size(); ++i) {
      const Json& w = (*words)[i];
      if (!w.is_string()) return WrongType(Path("bad_words", i), "a string", w);
      s.add_bad_words(w.get<std::string>());  // tokenized and checked with the other fields
    }
  }
  if (absl::Status st = ParseStructuredOutput(obj, s); !st.ok()) return st;

  HEADROOM_OPENAI_ASSIGN(stream, OptBool(obj, "stream"));
  out.stream = stream.value_or(false);
  HEADROOM_OPENAI_ASSIGN(return_token_ids, OptBool(obj, "return_token_ids"));
  out.return_token_ids = return_token_ids.value_or(false);
  g.set_return_prompt_token_ids(out.return_token_ids);
  HEADROOM_OPENAI_ASSIGN(tokens_as_ids, OptBool(obj, "return_tokens_as_token_ids"));
  out.return_tokens_as_token_ids = tokens_as_ids.value_or(false);
  if (const Json* prompt_logprobs = Member(obj, "prompt_logprobs"); prompt_logprobs != nullptr) {
    HEADROOM_OPENAI_ASSIGN(top, TopLogprobsValue(*prompt_logprobs, "prompt_logprobs"));
    if (out.stream) {
      return Bad("prompt_logprobs", "prompt_logprobs are not available when stream is true");
    }
    out.prompt_logprobs = top;
    s.set_prompt_logprobs(top);
  }
  if (const Json* options = Member(obj, "stream_options"); options != nullptr) {
    if (!options->is_object()) return WrongType("stream_options", "an object", *options);
    if (!out.stream) {
      return Bad("stream_options", "stream_options is only allowed when stream is true");
    }
    if (const Json* usage = Member(*options, "include_usage"); usage != nullptr) {
      if (!usage->is_boolean()) {
        return WrongType("stream_options.include_usage", "a boolean", *usage);
      }
      out.include_usage = usage->get<bool>();
    }
    if (const Json* continuous = Member(*options, "continuous_usage_stats");
        continuous != nullptr) {
      if (!continuous->is_boolean()) {
        return WrongType("stream_options.continuous_usage_stats", "a boolean", *continuous);
      }
      out.continuous_usage = continuous->get<bool>();
    }
  }
  return absl::OkStatus();
}

// Token ids of a prompt given as an array; `path` names it in errors.
absl::Status ParseTokenIds(const Json& ids, const std::string& path, v1::GenerateRequest& g) {
  if (ids.empty()) return Bad(path, absl::StrCat(path, " must not be an empty array"));
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string id_path = Path(path, i);
    if (!ids[i].is_number()) return WrongType(id_path, "a token id (integer)", ids[i]);
    HEADROOM_OPENAI_ASSIGN(id, ToInt32(ids[i], id_path));
    g.mutable_token_ids()->add_ids(id);
  }
  return absl::OkStatus();
}

// OpenAI's prompt (completions' `prompt`, embeddings' `input`, named `field`): a string, token
// ids, or a list of either (one choice set per prompt).
absl::Status ParsePrompts(const Json& obj, std::string_view field_view, ParsedRequest& out) {
  const std::string field(field_view);
  const Json* prompt = Member(obj, field);
  if (prompt == nullptr) return Bad(field, absl::StrCat(field, " is required"));
  if (prompt->is_string()) {
    out.generate.set_text(prompt->get<std::string>());
    return absl::OkStatus();
  }
  constexpr std::string_view kShape =
      "a string, an array of token ids, or an array of strings or of token id arrays";
  if (!prompt->is_array()) return WrongType(field, kShape, *prompt);
  if (prompt->empty()) return Bad(field, absl::StrCat(field, " must not be an empty array"));
  const Json& first = prompt->front();
  if (!first.is_string() && !first.is_array()) {
    return ParseTokenIds(*prompt, field, out.generate);
  }
  // A list of prompts (strings, or token id lists).
  const size_t choices = prompt->size() * static_cast<size_t>(out.n);
  if (Embeds(out.endpoint)) {
    if (choices > static_cast<size_t>(kMaxEmbeddingInputs)) {
      return Bad(field, absl::StrCat(field, " may hold at most ", kMaxEmbeddingInputs,
                                     " inputs, got ", prompt->size()));
    }
  } else if (choices > static_cast<size_t>(kMaxChoices)) {
    return Bad(field, absl::StrCat("prompts x n must be at most ", kMaxChoices, ", got ",
                                   prompt->size(), " prompts x n ", out.n, " = ", choices));
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const Json& p = (*prompt)[i];
    const std::string path = Path(field, i);
    v1::GenerateRequest& g = i == 0 ? out.generate : out.more_prompts.emplace_back();
    if (p.is_string()) {
      g.set_text(p.get<std::string>());
    } else if (p.is_array()) {
      if (absl::Status st = ParseTokenIds(p, path, g); !st.ok()) return st;
    } else {
      return WrongType(path, "a string or an array of token ids", p);
    }
  }
  return absl::OkStatus();
}

// The text of a message's content part, as vLLM reads one: a plain string, or an object whose type
// is "text", "input_text" or "output_text" (its `text`), "refusal" (its `refusal`: an assistant's
// refusal sent back) or "thinking" (its `thinking`). Images, audio and video are refused: headroom
// serves text models.
absl::StatusOr<std::string> PartText(const Json& part, const std::string& path) {
  if (part.is_string()) return part.get<std::string>();
  if (!part.is_object()) return WrongType(path, "a string or an object", part);
  const std::string type_path = absl::StrCat(path, ".type");
  const Json* type = Member(part, "type");
  if (type == nullptr || !type->is_string()) {
    return Bad(type_path, absl::StrCat(type_path, " must be \"text\""));
  }
  const std::string& name = type->get_ref<const std::string&>();
  const char* key = nullptr;
  if (name == "text" || name == "input_text" || name == "output_text") key = "text";
  if (name == "refusal" || name == "thinking") key = name.c_str();
  if (key == nullptr) {
    return Bad(type_path, absl::StrCat(type_path, " \"", name,
                                       "\" is not supported (text parts only: text, input_text, "
                                       "output_text, refusal or thinking)"));
  }
  const std::string text_path = absl::StrCat(path, ".", key);
  const Json* text = Member(part, key);
  if (text == nullptr) return Bad(text_path, absl::StrCat(text_path, " is required"));
  if (!text->is_string()) return WrongType(text_path, "a string", *text);
  return text->get<std::string>();
}

absl::StatusOr<ChatMessage> ParseMessage(const Json& m, size_t index) {
  const std::string path = Path("messages", index);
  if (!m.is_object()) return WrongType(path, "an object", m);
  ChatMessage out;
  const std::string role_path = absl::StrCat(path, ".role");
  const Json* role = Member(m, "role");
  if (role == nullptr) return Bad(role_path, absl::StrCat(role_path, " is required"));
  if (!role->is_string()) return WrongType(role_path, "a string", *role);
  out.role = role->get<std::string>();
  if (out.role != "system" && out.role != "user" && out.role != "assistant" && out.role != "tool") {
    return Bad(role_path, absl::StrCat(role_path, " \"", out.role,
                                       "\" is not supported (system, user, assistant or tool)"));
  }
  // What else vLLM hands the template, in its order: an assistant's tool_calls (arguments
  // parsed) and its earlier reasoning, a tool result's tool_call_id, a name.
  if (const Json* calls = Member(m, "tool_calls"); calls != nullptr && out.role == "assistant") {
    HEADROOM_OPENAI_ASSIGN(parsed, ParseToolCalls(*calls, absl::StrCat(path, ".tool_calls")));
    out.fields["tool_calls"] = std::move(parsed);
  }
  if (out.role == "assistant") {
    // The reasoning a reply carried, sent back for interleaved thinking: vLLM's `reasoning`, or
    // its older name `reasoning_content` (what DeepSeek's API and most clients send). The
    // template sees it under both names, as vLLM passes it: Qwen3's and GLM's templates read
    // reasoning_content, newer ones reasoning.
    for (const char* key : {"reasoning", "reasoning_content"}) {
      const Json* reasoning = Member(m, key);
      if (reasoning == nullptr) continue;
      if (!reasoning->is_string()) {
        return WrongType(absl::StrCat(path, ".", key), "a string", *reasoning);
      }
      out.fields["reasoning"] = *reasoning;
      out.fields["reasoning_content"] = *reasoning;
      break;
    }
  }
  if (const Json* id = Member(m, "tool_call_id"); id != nullptr && out.role == "tool") {
    if (!id->is_string()) return WrongType(absl::StrCat(path, ".tool_call_id"), "a string", *id);
    out.fields["tool_call_id"] = *id;
  }
  if (const Json* name = Member(m, "name"); name != nullptr) {
    if (!name->is_string()) return WrongType(absl::StrCat(path, ".name"), "a string", *name);
    out.fields["name"] = *name;
  }
  const std::string content_path = absl::StrCat(path, ".content");
  const Json* content = Member(m, "content");
  if (content == nullptr) return out;  // null content (an assistant turn): no parts
  if (content->is_string()) {
    out.parts.push_back(content->get<std::string>());
    return out;
  }
  if (!content->is_array()) {
    return WrongType(content_path, "a string or an array of text parts", *content);
  }
  for (size_t j = 0; j < content->size(); ++j) {
    HEADROOM_OPENAI_ASSIGN(text, PartText((*content)[j], Path(content_path, j)));
    out.parts.push_back(std::move(text));
  }
  return out;
}

}  // namespace

std::string ErrorParam(const absl::Status& status) {
  const auto param = status.GetPayload(kParamPayload);
  return param.has_value() ? std::string(*param) : std::string();
}

bool HasStructuredOutput(const v1::SamplingParams& s) {
  return s.json_object() || !s.json_schema().empty() || s.guided_choice_size() > 0 ||
         !s.guided_regex().empty() || !s.guided_grammar().empty() || !s.structural_tag().empty();
}

absl::StatusOr<ParsedRequest> ParseCompletionRequest(std::string_view body) {
  HEADROOM_OPENAI_ASSIGN(obj, ParseObject(body));
  ParsedRequest out;
  out.endpoint = Endpoint::kCompletions;
  if (absl::Status st = ParseCommon(obj, out); !st.ok()) return st;
  if (absl::Status st = ParsePrompts(obj, "prompt", out); !st.ok()) return st;
  // vLLM's add_special_tokens (completions default true): false tokenizes a text prompt without
  // the tokenizer's BOS and the like (the front then tokenizes it).
  HEADROOM_OPENAI_ASSIGN(add_special_tokens, OptBool(obj, "add_special_tokens"));
  out.add_special_tokens = add_special_tokens.value_or(true);
  HEADROOM_OPENAI_ASSIGN(suffix, OptString(obj, "suffix"));
  if (suffix.has_value() && !suffix->empty()) return Bad("suffix", "suffix is not supported");
  if (const Json* logprobs = Member(obj, "logprobs"); logprobs != nullptr) {
    if (logprobs->is_boolean()) return WrongType("logprobs", "an integer", *logprobs);
    HEADROOM_OPENAI_ASSIGN(n, TopLogprobsValue(*logprobs, "logprobs"));
    out.logprobs = true;
    out.top_logprobs = n;
    out.generate.mutable_sampling()->set_logprobs(n);
  }
  // The echoed prompt is the one sent, which a truncation would contradict.
  if (out.echo && out.generate.has_truncate_prompt_tokens()) {
    return Bad("echo", "echo is not supported with truncate_prompt_tokens");
  }
  // echo with logprobs also returns the prompt's logprobs (how evaluation harnesses score text).
  if (out.echo && out.logprobs) {
    out.generate.mutable_sampling()->set_prompt_logprobs(
        std::max(out.top_logprobs, out.prompt_logprobs));
  }
  HR_RETURN_IF_ERROR(CheckBeamSearch(out));
  return out;
}

absl::StatusOr<ParsedRequest> ParseEmbeddingRequest(std::string_view body) {
  HEADROOM_OPENAI_ASSIGN(obj, ParseObject(body));
  return ParseEmbeddingObject(obj);
}

namespace {

// The fields /v1/embeddings and /classify share: model, input, add_special_tokens, user,
// priority, truncate_prompt_tokens.
absl::Status ParsePoolingCommon(const Json& obj, Endpoint endpoint, ParsedRequest& out) {
  out.endpoint = endpoint;
  v1::GenerateRequest& g = out.generate;
  HEADROOM_OPENAI_ASSIGN(model, OptString(obj, "model"));
  if (model.has_value()) g.set_model(*model);
  if (absl::Status st = ParsePrompts(obj, "input", out); !st.ok()) return st;
  g.mutable_embedding();  // set, whatever the request's own fields
  HEADROOM_OPENAI_ASSIGN(add_special_tokens, OptBool(obj, "add_special_tokens"));
  out.add_special_tokens = add_special_tokens.value_or(true);
  HEADROOM_OPENAI_ASSIGN(user, OptString(obj, "user"));  // type-checked, then unused (as vLLM)
  HEADROOM_OPENAI_ASSIGN(priority, OptInt32(obj, "priority"));
  if (priority.has_value()) g.set_priority(*priority);
  HEADROOM_OPENAI_ASSIGN(truncate, OptInt32(obj, "truncate_prompt_tokens"));
  if (truncate.has_value()) g.set_truncate_prompt_tokens(*truncate);  // range checked later
  return absl::OkStatus();
}

// vLLM's get_use_activation: the first of `fields` given (the deprecated names come first)
// becomes EmbeddingParams.normalize (normalizing an embedding, activating a classifier's scores).
absl::Status ParseActivation(const Json& obj, std::initializer_list<const char*> fields,
                             ParsedRequest& out) {
  for (const char* field : fields) {
    HEADROOM_OPENAI_ASSIGN(activate, OptBool(obj, field));
    if (activate.has_value()) {
      out.generate.mutable_embedding()->set_normalize(*activate);
      break;
    }
  }
  return absl::OkStatus();
}

// encoding_format: "float" (the default) or "base64".
absl::Status ParseEncodingFormat(const Json& obj, ParsedRequest& out) {
  HEADROOM_OPENAI_ASSIGN(format, OptString(obj, "encoding_format"));
  if (format.has_value() && *format != "float" && *format != "base64") {
    return Bad("encoding_format", absl::StrCat("encoding_format must be \"float\" or \"base64\", "
                                               "got \"",
                                               *format, "\""));
  }
  out.embedding_base64 = format == "base64";
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ParsedRequest> ParseClassifyObject(const Json& obj) {
  ParsedRequest out;
  HR_RETURN_IF_ERROR(ParsePoolingCommon(obj, Endpoint::kClassify, out));
  out.generate.mutable_embedding()->set_classify(true);
  HR_RETURN_IF_ERROR(ParseActivation(obj, {"softmax", "activation", "use_activation"}, out));
  return out;
}

absl::StatusOr<ParsedRequest> ParseEmbeddingObject(const Json& obj) {
  ParsedRequest out;
  HR_RETURN_IF_ERROR(ParsePoolingCommon(obj, Endpoint::kEmbeddings, out));
  v1::EmbeddingParams& embedding = *out.generate.mutable_embedding();
  HEADROOM_OPENAI_ASSIGN(dimensions, OptInt32(obj, "dimensions"));
  if (dimensions.has_value()) {
    // OpenAI's and vLLM's floor; the model's width is the worker's to check.
    if (*dimensions < 1) {
      return Bad("dimensions", absl::StrCat("dimensions must be at least 1, got ", *dimensions));
    }
    embedding.set_dimensions(*dimensions);
  }
  HR_RETURN_IF_ERROR(ParseActivation(obj, {"normalize", "use_activation"}, out));
  HR_RETURN_IF_ERROR(ParseEncodingFormat(obj, out));
  return out;
}

absl::StatusOr<ParsedRequest> ParsePoolingObject(const Json& obj, bool classifier) {
  const char* served = classifier ? "classify" : "embed";
  HEADROOM_OPENAI_ASSIGN(task, OptString(obj, "task"));
  if (task.has_value() && *task != served) {
    return Bad("task", absl::StrCat("unsupported task: \"", *task,
                                    "\"; this model's pooling task is \"", served,
                                    "\" (per-token outputs, token_embed and token_classify, are "
                                    "not served)"));
  }
  if (const Json* dimensions = Member(obj, "dimensions");
      dimensions != nullptr && !dimensions->is_null()) {
    return Bad("dimensions",
               "dimensions is currently not supported by /pooling (use /v1/embeddings)");
  }
  absl::StatusOr<ParsedRequest> out =
      classifier ? ParseClassifyObject(obj) : ParseEmbeddingObject(obj);
  if (!out.ok()) return out;
  if (classifier) HR_RETURN_IF_ERROR(ParseEncodingFormat(obj, *out));
  out->endpoint = Endpoint::kPooling;
  return out;
}

namespace {

// The fields /score and /rerank share with /v1/embeddings: model, truncate_prompt_tokens,
// priority; every choice embeds without normalizing (a cosine similarity does not need it).
absl::Status ParseScoringCommon(const Json& obj, Endpoint endpoint, ParsedRequest& out) {
  out.endpoint = endpoint;
  v1::GenerateRequest& g = out.generate;
  HEADROOM_OPENAI_ASSIGN(model, OptString(obj, "model"));
  if (model.has_value()) g.set_model(*model);
  HEADROOM_OPENAI_ASSIGN(priority, OptInt32(obj, "priority"));
  if (priority.has_value()) g.set_priority(*priority);
  HEADROOM_OPENAI_ASSIGN(truncate, OptInt32(obj, "truncate_prompt_tokens"));
  if (truncate.has_value()) g.set_truncate_prompt_tokens(*truncate);  // range checked later
  g.mutable_embedding()->set_normalize(false);
  return absl::OkStatus();
}

// A string or a list of strings named `field` (at least one, `max` at most).
absl::StatusOr<std::vector<std::string>> Texts(const Json& obj, std::string_view field_view,
                                               bool list_only, size_t max) {
  const std::string field(field_view);
  const Json* value = Member(obj, field);
  if (value == nullptr) return Bad(field, absl::StrCat(field, " is required"));
  if (value->is_string() && !list_only) return std::vector<std::string>{value->get<std::string>()};
  if (!value->is_array()) {
    return WrongType(field, list_only ? "an array of strings" : "a string or an array of strings",
                     *value);
  }
  if (value->empty()) return Bad(field, absl::StrCat(field, " must not be empty"));
  if (value->size() > max) {
    return Bad(field,
               absl::StrCat(field, " may hold at most ", max, " texts, got ", value->size()));
  }
  std::vector<std::string> texts;
  for (size_t i = 0; i < value->size(); ++i) {
    if (!(*value)[i].is_string()) return WrongType(Path(field, i), "a string", (*value)[i]);
    texts.push_back((*value)[i].get<std::string>());
  }
  return texts;
}

// One embedding choice per text, in order, named for errors.
void AddTextChoices(const std::vector<std::string>& texts, const std::string& field, bool indexed,
                    ParsedRequest& out) {
  for (size_t i = 0; i < texts.size(); ++i) {
    const bool first = out.choice_names.empty();
    v1::GenerateRequest& g = first ? out.generate : out.more_prompts.emplace_back();
    g.set_text(texts[i]);
    out.choice_names.push_back(indexed ? Path(field, i) : field);
  }
}

}  // namespace

absl::StatusOr<ParsedRequest> ParseScoreRequest(std::string_view body) {
  HEADROOM_OPENAI_ASSIGN(obj, ParseObject(body));
  ParsedRequest out;
  HR_RETURN_IF_ERROR(ParseScoringCommon(obj, Endpoint::kScore, out));
  const size_t max = static_cast<size_t>(kMaxEmbeddingInputs) / 2;
  HEADROOM_OPENAI_ASSIGN(first, Texts(obj, "text_1", /*list_only=*/false, max));
  HEADROOM_OPENAI_ASSIGN(second, Texts(obj, "text_2", /*list_only=*/false, max));
  // vLLM's rule: one against one, one against many, or many against as many.
  if (first.size() > 1 && first.size() != second.size()) {
    return Bad("text_1", absl::StrCat("text_1 has ", first.size(), " texts and text_2 ",
                                      second.size(), ": give 1:1, 1:N or N:N"));
  }
  const bool listed_1 = Member(obj, "text_1")->is_array();
  const bool listed_2 = Member(obj, "text_2")->is_array();
  AddTextChoices(first, "text_1", listed_1, out);
  AddTextChoices(second, "text_2", listed_2, out);
  const auto size_1 = static_cast<int32_t>(first.size());
  for (int32_t j = 0; j < static_cast<int32_t>(second.size()); ++j) {
    out.score_pairs.emplace_back(size_1 == 1 ? 0 : j, size_1 + j);
  }
  return out;
}

absl::StatusOr<ParsedRequest> ParseRerankRequest(std::string_view body) {
  HEADROOM_OPENAI_ASSIGN(obj, ParseObject(body));
  ParsedRequest out;
  HR_RETURN_IF_ERROR(ParseScoringCommon(obj, Endpoint::kRerank, out));
  const Json* query = Member(obj, "query");
  if (query == nullptr) return Bad("query", "query is required");
  if (!query->is_string()) return WrongType("query", "a string", *query);
  HEADROOM_OPENAI_ASSIGN(documents, Texts(obj, "documents", /*list_only=*/true,
                                          static_cast<size_t>(kMaxEmbeddingInputs) - 1));
  HEADROOM_OPENAI_ASSIGN(top_n, OptInt32(obj, "top_n"));
  if (top_n.has_value() && *top_n < 0) {
    return Bad("top_n", absl::StrCat("top_n must be >= 0 (0 returns all), got ", *top_n));
  }
  out.top_n = top_n.value_or(0);
  AddTextChoices({query->get<std::string>()}, "query", /*indexed=*/false, out);
  AddTextChoices(documents, "documents", /*indexed=*/true, out);
  for (int32_t j = 0; j < static_cast<int32_t>(documents.size()); ++j) {
    out.score_pairs.emplace_back(0, 1 + j);
  }
  out.documents = std::move(documents);
  return out;
}

std::vector<std::pair<std::string, std::string>> JoinScorePairs(ParsedRequest& request) {
  std::vector<std::string> texts = {request.generate.text()};
  for (const v1::GenerateRequest& p : request.more_prompts) texts.push_back(p.text());
  const std::vector<std::string> names = std::move(request.choice_names);
  const std::vector<std::pair<int32_t, int32_t>> pairs = std::move(request.score_pairs);
  request.more_prompts.clear();
  request.choice_names.clear();
  request.score_pairs.clear();
  std::vector<std::pair<std::string, std::string>> halves;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto a = static_cast<size_t>(pairs[i].first);
    const auto b = static_cast<size_t>(pairs[i].second);
    (i == 0 ? request.generate : request.more_prompts.emplace_back()).set_text(texts[a] + texts[b]);
    request.choice_names.push_back(absl::StrCat(names[a], " + ", names[b]));
    halves.emplace_back(texts[a], texts[b]);
  }
  v1::EmbeddingParams& params = *request.generate.mutable_embedding();
  params.clear_normalize();  // the classifier's activation for scores
  params.set_classify(true);
  params.set_score_pair(true);
  request.cross_encoder = true;
  return halves;
}

absl::StatusOr<ParsedRequest> ParseChatRequest(std::string_view body) {
  HEADROOM_OPENAI_ASSIGN(obj, ParseObject(body));
  return ParseChatObject(obj);
}

absl::StatusOr<ParsedRequest> ParseChatObject(const Json& obj) {
  ParsedRequest out;
  out.endpoint = Endpoint::kChat;
  if (absl::Status st = ParseCommon(obj, out); !st.ok()) return st;

  const Json* messages = Member(obj, "messages");
  if (messages == nullptr) return Bad("messages", "messages is required");
  if (!messages->is_array()) return WrongType("messages", "an array", *messages);
  if (messages->empty()) return Bad("messages", "messages must not be empty");
  for (size_t i = 0; i < messages->size(); ++i) {
    HEADROOM_OPENAI_ASSIGN(message, ParseMessage((*messages)[i], i));
    out.messages.push_back(std::move(message));
  }

  // max_completion_tokens is OpenAI's newer name; it wins over the deprecated max_tokens.
  HEADROOM_OPENAI_ASSIGN(max_completion, OptInt32(obj, "max_completion_tokens"));
  if (max_completion.has_value()) out.generate.mutable_sampling()->set_max_tokens(*max_completion);

  HEADROOM_OPENAI_ASSIGN(add_generation_prompt, OptBool(obj, "add_generation_prompt"));
  out.add_generation_prompt = add_generation_prompt.value_or(true);
  HEADROOM_OPENAI_ASSIGN(request_template, OptString(obj, "chat_template"));
  out.chat_template = std::move(request_template);
  HEADROOM_OPENAI_ASSIGN(continue_final, OptBool(obj, "continue_final_message"));
  out.continue_final_message = continue_final.value_or(false);
  if (out.continue_final_message && out.add_generation_prompt) {
    return Bad("continue_final_message",
               "Cannot set both continue_final_message and add_generation_prompt to true (the "
               "default): give add_generation_prompt false to continue the final message");
  }
  // vLLM's chat_template_kwargs: more variables for the template (Qwen3's enable_thinking).
  if (const Json* kwargs = Member(obj, "chat_template_kwargs");
      kwargs != nullptr && !kwargs->is_null()) {
    if (!kwargs->is_object()) return WrongType("chat_template_kwargs", "an object", *kwargs);
    if (kwargs->contains("messages")) {
      return Bad("chat_template_kwargs.messages",
                 "chat_template_kwargs.messages cannot replace the request's messages");
    }
    out.chat_template_kwargs = *kwargs;
  }
  // vLLM's documents (retrieval templates: Granite, Command R): the template's `documents`, as
  // apply_chat_template(documents=...) passes them.
  if (const Json* documents = Member(obj, "documents");
      documents != nullptr && !documents->is_null()) {
    if (!documents->is_array()) return WrongType("documents", "an array of objects", *documents);
    for (size_t i = 0; i < documents->size(); ++i) {
      const Json& document = (*documents)[i];
      if (!document.is_object()) return WrongType(Path("documents", i), "an object", document);
    }
    if (out.chat_template_kwargs.is_object() && out.chat_template_kwargs.contains("documents")) {
      return Bad("documents", "give documents or chat_template_kwargs.documents, not both");
    }
    if (!out.chat_template_kwargs.is_object()) out.chat_template_kwargs = Json::object();
    out.chat_template_kwargs["documents"] = *documents;
  }

  HEADROOM_OPENAI_ASSIGN(tools, ParseToolRequest(obj));
  // vLLM's chat echo prepends the last message to the reply's content; a reply that calls tools
  // has its calls instead.
  if (out.echo && tools.choice.kind != ToolChoice::Kind::kNone) {
    return Bad("echo", "echo is not supported with tools (give tool_choice \"none\")");
  }
  const bool calls = tools.choice.kind == ToolChoice::Kind::kFunction ||
                     tools.choice.kind == ToolChoice::Kind::kRequired;
  if (calls) {
    // The reply is the call: its schema is the constraint, so another one cannot also apply.
    const v1::SamplingParams& s = out.generate.sampling();
    if (HasStructuredOutput(s)) {
      return Bad("tool_choice",
                 "tool_choice \"required\" or a named function constrains the reply to the "
                 "call; it cannot be combined with response_format, guided_json, guided_choice, "
                 "guided_regex, guided_grammar or structured_outputs");
    }
    absl::StatusOr<std::string> schema = ToolChoiceSchema(tools.tools, tools.choice);
    if (!schema.ok()) return Bad("tools", std::string(schema.status().message()));
    HR_RETURN_IF_ERROR(
        SetJsonSchema(Json::parse(*schema), "tools", *out.generate.mutable_sampling()));
  }
  out.tools = std::move(tools);

  HEADROOM_OPENAI_ASSIGN(logprobs, OptBool(obj, "logprobs"));
  out.logprobs = logprobs.value_or(false);
  if (const Json* top = Member(obj, "top_logprobs"); top != nullptr) {
    HEADROOM_OPENAI_ASSIGN(n, TopLogprobsValue(*top, "top_logprobs"));
    if (!out.logprobs && n > 0) {
      return Bad("top_logprobs", "top_logprobs requires logprobs to be true");
    }
    out.top_logprobs = n;
  }
  if (out.logprobs) out.generate.mutable_sampling()->set_logprobs(out.top_logprobs);
  HR_RETURN_IF_ERROR(CheckBeamSearch(out));
  return out;
}

int32_t ChoiceCount(const ParsedRequest& request) {
  return static_cast<int32_t>(1 + request.more_prompts.size()) * request.n;
}

v1::GenerateRequest ChoiceRequest(const ParsedRequest& request, int32_t choice) {
  const int32_t prompt = choice / request.n;
  const int32_t sample = choice % request.n;
  v1::GenerateRequest out = request.generate;
  if (prompt > 0) {
    const v1::GenerateRequest& p = request.more_prompts[static_cast<size_t>(prompt - 1)];
    if (p.has_token_ids()) {
      *out.mutable_token_ids() = p.token_ids();
    } else {
      out.set_text(p.text());
    }
  }
  // Wraps at 2^64 like any uint64 seed. (An embedding has no sampling, and must not get one.)
  if (out.has_sampling() && out.sampling().has_seed()) {
    out.mutable_sampling()->set_seed(out.sampling().seed() + static_cast<uint64_t>(sample));
  }
  return out;
}

}  // namespace headroom::router::openai
