// Sequence classifiers: a Hugging Face *ForSequenceClassification checkpoint (reward models,
// vLLM's /classify models such as jason9693/Qwen2.5-1.5B-apeach) is the decoder of its
// *ForCausalLM counterpart with a score head, score.weight [num_labels, hidden] and no bias, in
// place of the LM head. transformers reads the head over the final-normed hidden state of the
// last (non-padding) token; vLLM pools the last token and applies the activation its
// get_classification_act_fn picks from config.json's problem_type:
//   "regression"                     none (the raw scores);
//   "multi_label_classification"     a sigmoid per label;
//   "single_label_classification"    softmax over the labels,
//   or none given                    softmax, a sigmoid when there is one label.
// The head runs on the host, over the pooled row the engine already copies there for embeddings,
// so a classifier needs no device memory beyond its decoder's.
//
// vLLM's "LLM as reranker" conversion reads a *ForCausalLM checkpoint as a classifier when
// config.json (usually through --hf-overrides) names the architecture *ForSequenceClassification
// with classifier_from_token and a method (Qwen3-Reranker: ["no", "yes"] and
// is_original_qwen3_reranker; mxbai-rerank-v2: ["0", "1"] and from_2_way_softmax). The head is
// then built from the LM head's rows of those tokens:
//   "from_2_way_softmax"   two tokens, one label: the second's row minus the first's, so the
//                          label's sigmoid is the 2-way softmax's probability of the second;
//   "no_post_processing"   one label per token, its row.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace headroom::worker {

enum class ClassifierActivation : uint8_t { kSoftmax, kSigmoid, kNone, kTanh };

struct Classifier {
  // The checkpoint's architecture, e.g. "Qwen2ForSequenceClassification" (ModelConfig's
  // architecture is its decoder's *ForCausalLM).
  std::string architecture;
  // config.json's id2label in id order; num_labels is its size. Without id2label, transformers'
  // default: LABEL_0 and LABEL_1 (or config.json's num_labels of them).
  std::vector<std::string> labels;
  std::string problem_type;  // "" when config.json gives none
  ClassifierActivation activation = ClassifierActivation::kSoftmax;
  // A pair's score (vLLM's score task, get_cross_encoder_act_fn): config.json's
  // sentence_transformers.activation_fn, else sbert_ce_default_activation_function, where one
  // names torch.nn's Identity (none), Sigmoid or Softmax (as `activation` picks them: a sigmoid
  // for one label, else softmax) or Tanh; else `activation`.
  ClassifierActivation score_activation = ClassifierActivation::kSoftmax;
  // The conversion from LM-head rows (empty `method`: the checkpoint has score.weight).
  std::string method;
  std::vector<std::string> from_tokens;
  // Their ids (ResolveClassifierTokens, with the model's tokenizer), in from_tokens order.
  std::vector<int32_t> from_token_ids;
  // Where those rows are: the embedding matrix when the checkpoint ties it to the LM head, else
  // lm_head.weight.
  bool rows_from_embedding = false;

  [[nodiscard]] int64_t num_labels() const { return static_cast<int64_t>(labels.size()); }
};

// The *ForCausalLM architecture whose decoder `architecture` classifies with
// ("Qwen2ForSequenceClassification" -> "Qwen2ForCausalLM"); nullopt for any other name.
[[nodiscard]] std::optional<std::string> ClassifierDecoder(std::string_view architecture);

// Reads id2label (or num_labels) and problem_type from config.json's top-level object `root`.
// InvalidArgument naming `path` and the field: id2label not an object of "0".."n-1" to strings,
// num_labels not positive, an unknown problem_type.
[[nodiscard]] absl::StatusOr<Classifier> ReadClassifier(const nlohmann::json& root,
                                                        std::string_view path,
                                                        std::string architecture);

// Resolves from_tokens to ids with `token_to_id` (the tokenizer's vocabulary, added tokens
// included, as transformers' convert_tokens_to_ids); InvalidArgument naming a token the
// vocabulary lacks or an id outside [0, vocab_size).
[[nodiscard]] absl::Status ResolveClassifierTokens(
    const std::function<std::optional<int32_t>(std::string_view)>& token_to_id, int64_t vocab_size,
    Classifier& classifier);

// The head of a converted classifier from the LM head's `rows` ([from_tokens, hidden], in
// from_tokens order): [num_labels, hidden] as `method` says.
[[nodiscard]] std::vector<float> ConvertedHead(const Classifier& classifier,
                                               std::span<const float> rows, int64_t hidden);

// The head over one pooled row: `weight` [num_labels, hidden] (row-major) times `hidden`, in
// double precision, then `activation` (kNone for vLLM's use_activation false).
[[nodiscard]] std::vector<float> ClassScores(const Classifier& classifier,
                                             std::span<const float> weight,
                                             std::span<const float> hidden,
                                             ClassifierActivation activation);

// The label of the highest score (the first of equals), as vLLM names a classification.
[[nodiscard]] const std::string& TopLabel(const Classifier& classifier,
                                          std::span<const float> scores);

}  // namespace headroom::worker
