#include "worker/model/classifier.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kClassifierSuffix = "ForSequenceClassification";
// transformers' PretrainedConfig default when config.json has neither id2label nor num_labels.
constexpr int64_t kDefaultNumLabels = 2;
// A bound on num_labels, so a typo cannot ask for a huge head (score.weight's shape is checked
// against it too).
constexpr int64_t kMaxNumLabels = 1 << 20;

absl::Status FieldError(std::string_view path, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(path), ": field \"", std::string(field), "\" ", std::string(what)));
}

// `field` of `root`; null when absent or null.
const Json* Member(const Json& root, std::string_view field) {
  const auto it = root.find(field);
  if (it == root.end() || it->is_null()) return nullptr;
  return &*it;
}

// Default labels: LABEL_0 .. LABEL_{n-1}, as transformers names them.
std::vector<std::string> DefaultLabels(int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(absl::StrCat("LABEL_", i));
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadLabels(const Json& root, std::string_view path) {
  if (const Json* id2label = Member(root, "id2label"); id2label != nullptr) {
    if (!id2label->is_object() || id2label->empty() ||
        id2label->size() > static_cast<size_t>(kMaxNumLabels)) {
      return FieldError(
          path, "id2label",
          absl::StrCat("must be an object of 1 to ", kMaxNumLabels, " label ids to names"));
    }
    std::vector<std::optional<std::string>> labels(id2label->size());
    for (auto it = id2label->begin(); it != id2label->end(); ++it) {
      const std::string& key = it.key();
      const Json& value = it.value();
      int64_t id = -1;
      if (!absl::SimpleAtoi(key, &id) || id < 0 || id >= static_cast<int64_t>(labels.size())) {
        return FieldError(
            path, "id2label",
            absl::StrCat("has key \"", key, "\"; its keys must be the ids 0..", labels.size() - 1));
      }
      if (!value.is_string()) {
        return FieldError(path, "id2label",
                          absl::StrCat("maps \"", key, "\" to ", value.dump(), ", not a string"));
      }
      if (labels[static_cast<size_t>(id)].has_value()) {
        return FieldError(path, "id2label", absl::StrCat("names id ", id, " twice"));
      }
      labels[static_cast<size_t>(id)] = value.get<std::string>();
    }
    std::vector<std::string> out;
    out.reserve(labels.size());
    for (std::optional<std::string>& label : labels) {
      // Keys are distinct ids in [0, size), so every slot is filled.
      out.push_back(std::move(label).value_or(""));
    }
    return out;
  }
  int64_t num_labels = kDefaultNumLabels;
  if (const Json* n = Member(root, "num_labels"); n != nullptr) {
    if (!n->is_number_integer() || n->get<int64_t>() < 1 || n->get<int64_t>() > kMaxNumLabels) {
      return FieldError(
          path, "num_labels",
          absl::StrCat("must be an integer in [1, ", kMaxNumLabels, "], got ", n->dump()));
    }
    num_labels = n->get<int64_t>();
  }
  return DefaultLabels(num_labels);
}

// vLLM's conversion keys: classifier_from_token, method, is_original_qwen3_reranker (which sets
// method from_2_way_softmax, as vLLM's Qwen3ForSequenceClassification config hook does). The
// label count follows the method, as vLLM sets num_labels (transformers then renames them).
absl::Status ReadConversion(const Json& root, std::string_view path, Classifier& out) {
  const Json* tokens = Member(root, "classifier_from_token");
  const Json* method = Member(root, "method");
  if (method != nullptr && !method->is_string()) {
    return FieldError(path, "method", absl::StrCat("must be a string, got ", method->dump()));
  }
  if (method != nullptr) out.method = method->get<std::string>();
  if (const Json* qwen3 = Member(root, "is_original_qwen3_reranker"); qwen3 != nullptr) {
    if (!qwen3->is_boolean()) {
      return FieldError(path, "is_original_qwen3_reranker",
                        absl::StrCat("must be a boolean, got ", qwen3->dump()));
    }
    if (qwen3->get<bool>()) out.method = "from_2_way_softmax";
  }
  if (tokens == nullptr && out.method.empty()) return absl::OkStatus();
  if (tokens == nullptr) {
    return FieldError(path, "classifier_from_token",
                      absl::StrCat("is missing: method \"", out.method,
                                   "\" builds the score head from these tokens' LM-head rows"));
  }
  if (!tokens->is_array() || tokens->empty() ||
      tokens->size() > static_cast<size_t>(kMaxNumLabels)) {
    return FieldError(path, "classifier_from_token",
                      absl::StrCat("must be a list of 1 to ", kMaxNumLabels, " tokens, got ",
                                   tokens->dump().substr(0, 80)));
  }
  for (const Json& token : *tokens) {
    if (!token.is_string()) {
      return FieldError(path, "classifier_from_token",
                        absl::StrCat("holds ", token.dump(), ", not a token string"));
    }
    out.from_tokens.push_back(token.get<std::string>());
  }
  if (out.method == "from_2_way_softmax") {
    if (out.from_tokens.size() != 2) {
      return FieldError(path, "classifier_from_token",
                        absl::StrCat("has ", out.from_tokens.size(),
                                     " tokens; from_2_way_softmax takes two (the negative, then "
                                     "the positive)"));
    }
    if (out.labels.size() != 1) out.labels = DefaultLabels(1);
  } else if (out.method == "no_post_processing") {
    if (out.labels.size() != out.from_tokens.size()) {
      out.labels = DefaultLabels(static_cast<int64_t>(out.from_tokens.size()));
    }
  } else {
    return FieldError(
        path, "method",
        out.method.empty()
            ? std::string("is missing: classifier_from_token needs from_2_way_softmax "
                          "or no_post_processing")
            : absl::StrCat("is \"", out.method,
                           "\"; vLLM's are from_2_way_softmax and "
                           "no_post_processing"));
  }
  return absl::OkStatus();
}

// The activations: vLLM's get_classification_act_fn from problem_type (with its PoolerClassify's
// one-label sigmoid), and get_cross_encoder_act_fn's for a pair's score.
absl::Status ReadActivations(const Json& root, std::string_view path, Classifier& out) {
  const ClassifierActivation classify =
      out.num_labels() < 2 ? ClassifierActivation::kSigmoid : ClassifierActivation::kSoftmax;
  if (out.problem_type == "regression") {
    out.activation = ClassifierActivation::kNone;
  } else if (out.problem_type == "multi_label_classification") {
    out.activation = ClassifierActivation::kSigmoid;
  } else if (out.problem_type.empty() || out.problem_type == "single_label_classification") {
    out.activation = classify;
  } else {
    return FieldError(path, "problem_type",
                      absl::StrCat("is \"", out.problem_type,
                                   "\"; transformers knows regression, "
                                   "single_label_classification and multi_label_classification"));
  }
  // vLLM's get_cross_encoder_act_fn.
  out.score_activation = out.activation;
  std::string field = "sentence_transformers.activation_fn";
  const Json* name = nullptr;
  if (const Json* st = Member(root, "sentence_transformers"); st != nullptr && st->is_object()) {
    name = Member(*st, "activation_fn");
  }
  if (name == nullptr) {
    field = "sbert_ce_default_activation_function";
    name = Member(root, field);
  }
  if (name == nullptr) return absl::OkStatus();
  const std::string fn = name->is_string() ? name->get<std::string>() : name->dump();
  if (fn == "torch.nn.modules.linear.Identity") {
    out.score_activation = ClassifierActivation::kNone;
  } else if (fn == "torch.nn.modules.activation.Sigmoid" ||
             fn == "torch.nn.modules.activation.Softmax") {
    out.score_activation = classify;  // vLLM's PoolerActivation.wraps: PoolerClassify
  } else if (fn == "torch.nn.modules.activation.Tanh") {
    out.score_activation = ClassifierActivation::kTanh;
  } else {
    return FieldError(path, field,
                      absl::StrCat("names ", fn,
                                   "; headroom applies torch.nn.modules.linear.Identity and "
                                   "torch.nn.modules.activation's Sigmoid, Softmax and Tanh"));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<std::string> ClassifierDecoder(std::string_view architecture) {
  if (!architecture.ends_with(kClassifierSuffix) ||
      architecture.size() == kClassifierSuffix.size()) {
    return std::nullopt;
  }
  architecture.remove_suffix(kClassifierSuffix.size());
  return absl::StrCat(std::string(architecture), "ForCausalLM");
}

absl::StatusOr<Classifier> ReadClassifier(const Json& root, std::string_view path,
                                          std::string architecture) {
  Classifier out;
  out.architecture = std::move(architecture);
  absl::StatusOr<std::vector<std::string>> labels = ReadLabels(root, path);
  if (!labels.ok()) return labels.status();
  out.labels = *std::move(labels);
  if (absl::Status st = ReadConversion(root, path, out); !st.ok()) return st;
  if (const Json* type = Member(root, "problem_type"); type != nullptr) {
    if (!type->is_string()) {
      return FieldError(path, "problem_type", absl::StrCat("must be a string, got ", type->dump()));
    }
    out.problem_type = type->get<std::string>();
  }
  if (absl::Status st = ReadActivations(root, path, out); !st.ok()) return st;
  return out;
}

absl::Status ResolveClassifierTokens(
    const std::function<std::optional<int32_t>(std::string_view)>& token_to_id, int64_t vocab_size,
    Classifier& classifier) {
  classifier.from_token_ids.clear();
  for (const std::string& token : classifier.from_tokens) {
    const std::optional<int32_t> id = token_to_id(token);
    if (!id.has_value() || *id < 0 || *id >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "classifier_from_token: \"", token, "\" ",
          id.has_value()
              ? absl::StrCat("is id ", *id, ", outside the model's vocabulary of ", vocab_size)
              : std::string("is not a token of the model's tokenizer")));
    }
    classifier.from_token_ids.push_back(*id);
  }
  return absl::OkStatus();
}

std::vector<float> ConvertedHead(const Classifier& classifier, std::span<const float> rows,
                                 int64_t hidden) {
  const auto width = static_cast<size_t>(hidden);
  if (classifier.method != "from_2_way_softmax") return {rows.begin(), rows.end()};
  std::vector<float> head(width);
  for (size_t i = 0; i < width; ++i) head[i] = rows[width + i] - rows[i];
  return head;
}

std::vector<float> ClassScores(const Classifier& classifier, std::span<const float> weight,
                               std::span<const float> hidden, ClassifierActivation activation) {
  const size_t labels = static_cast<size_t>(classifier.num_labels());
  const size_t width = hidden.size();
  std::vector<double> scores(labels, 0.0);
  for (size_t l = 0; l < labels; ++l) {
    const float* row = weight.data() + l * width;
    double sum = 0;
    for (size_t i = 0; i < width; ++i) {
      sum += static_cast<double>(row[i]) * static_cast<double>(hidden[i]);
    }
    scores[l] = sum;
  }
  switch (activation) {
    case ClassifierActivation::kSoftmax: {
      const double top = *std::max_element(scores.begin(), scores.end());
      double total = 0;
      for (double& s : scores) total += (s = std::exp(s - top));
      for (double& s : scores) s /= total;
      break;
    }
    case ClassifierActivation::kSigmoid:
      for (double& s : scores) s = 1.0 / (1.0 + std::exp(-s));
      break;
    case ClassifierActivation::kTanh:
      for (double& s : scores) s = std::tanh(s);
      break;
    case ClassifierActivation::kNone:
      break;
  }
  return {scores.begin(), scores.end()};
}

const std::string& TopLabel(const Classifier& classifier, std::span<const float> scores) {
  const auto top = std::max_element(scores.begin(), scores.end());
  return classifier.labels.at(static_cast<size_t>(top - scores.begin()));
}

}  // namespace headroom::worker
