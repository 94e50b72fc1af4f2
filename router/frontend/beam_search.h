// Beam search: vLLM's use_beam_search for completions and chat, run by the router's HTTP front as
// vLLM's API server runs it, over single-token generations. Each step sends every live beam
// (prompt + its tokens) to the Inference service as a greedy request of one token with the top 2k
// logprobs (k = the beam width, the request's n); each beam's candidates are its tokens extended
// by each of those; a candidate that ends on an ending token (EOS, a stop token id) is complete,
// and the k best of the others by cumulative logprob are the next live beams. After max_tokens
// steps (or when none is live), the complete and live beams are ranked by vLLM's score,
// cumulative logprob / (prompt + generated tokens, the ending token not counted) ^ length_penalty,
// and the k best are the choices, best first.
//
// The steps' requests go through admission and placement like any other (the prompt's prefix
// keeps them on the group that caches it, so a step prefills only what its beam added since the
// last full block); the router holds nothing but the beams, O(k * max_tokens) tokens per prompt.
//
// BeamSearchState is the algorithm alone (tested against transformers' beam search); BeamSearch
// runs it for each prompt of a request and writes the answer (streamed: every choice at the end,
// as vLLM streams beam search), all or nothing like a Generation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "router/frontend/generation.h"
#include "router/http/http_server.h"
#include "router/openai/openai_protocol.h"
#include "router/openai/openai_response.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::router {

struct BeamSearchOptions {
  int32_t width = 1;       // k: beams kept, and choices returned
  int32_t max_tokens = 1;  // steps at most
  double length_penalty = 1.0;
  // A candidate ending on one of these is complete (empty: none ends, as with ignore_eos).
  std::vector<int32_t> ending_tokens;
  // Alternatives kept with each token for the answer's logprobs (the request's top_logprobs).
  int32_t top_logprobs = 0;
};

// One hypothesis: the tokens generated after the prompt, each with its logprob (and the
// alternatives kept), their sum, and whether an ending token (the last) completed it.
struct Beam {
  std::vector<int32_t> tokens;
  std::vector<v1::Logprob> logprobs;
  double cumulative_logprob = 0.0;
  bool ended = false;
};

class BeamSearchState {
 public:
  BeamSearchState(int32_t prompt_tokens, BeamSearchOptions options);

  // Top logprobs each step's request asks for: 2k (as vLLM and transformers take), or the
  // answer's top_logprobs when more.
  [[nodiscard]] int32_t logprobs_per_step() const;
  // The beams the next step extends; empty when the search is over.
  [[nodiscard]] const std::vector<Beam>& live() const { return live_; }
  [[nodiscard]] bool done() const { return live_.empty(); }
  // One step: `next[i]` is live beam i's next-token distribution (its top_logprobs, best first).
  void Expand(const std::vector<v1::Logprob>& next);
  // The answer: the k best of the complete and live beams by vLLM's score, best first.
  [[nodiscard]] std::vector<Beam> Best() const;
  // vLLM's score of `beam` (get_beam_search_score).
  [[nodiscard]] double Score(const Beam& beam) const;
  // Beams held: the live ones and the complete ones kept (at most 2k).
  [[nodiscard]] size_t beams_held() const { return live_.size() + complete_.size(); }

 private:
  // `parent` extended by candidate `candidate` of its distribution `next`.
  [[nodiscard]] Beam Extend(const Beam& parent, const v1::Logprob& next, int candidate) const;
  // `token` completes a beam (an ending token).
  [[nodiscard]] bool Ends(int32_t token) const;
  // Adds `beams` to the complete ones, keeping the k best by score.
  void Complete(std::vector<Beam> beams);

  const int32_t prompt_tokens_;
  const BeamSearchOptions options_;
  int32_t steps_ = 0;
  std::vector<Beam> live_;
  std::vector<Beam> complete_;
};

class BeamSearch : public std::enable_shared_from_this<BeamSearch> {
 public:
  // `step` is the request every step's call starts from (model, cache_salt, priority,
  // skip_special_tokens); its prompt and sampling are set per call. `prompts[p]` gives choices
  // [p * k, (p + 1) * k).
  BeamSearch(GenerationHooks hooks, std::shared_ptr<http::ResponseWriter> writer,
             const openai::ParsedRequest& parsed, v1::GenerateRequest step,
             std::vector<std::vector<int32_t>> prompts, BeamSearchOptions options,
             bool include_stop_str_in_output, std::string id, int64_t created, std::string model);
  ~BeamSearch();

  BeamSearch(const BeamSearch&) = delete;
  BeamSearch& operator=(const BeamSearch&) = delete;

  // Starts every prompt's first step; keeps itself alive until the answer is written and the
  // last call ended.
  void Start();

 private:
  class StepCall;
  struct PromptSearch {
    std::vector<int32_t> ids;
    BeamSearchState state;
    std::vector<v1::Logprob> next;  // this step's answers, by live beam
    int32_t pending = 0;            // this step's calls not ended
  };

  // Calls for every live beam of `prompt` (mu_ held); the caller starts them outside mu_.
  std::vector<std::shared_ptr<StepCall>> StepCallsLocked(size_t prompt);
  // A step call ended. Returns hooks_.ended when it was the last thing outstanding.
  std::function<void()> OnStepDone(size_t prompt, size_t beam, const grpc::Status& status,
                                   const std::string& retry_after, v1::Logprob next);
  // Every prompt's search is over: the answer (mu_ held).
  void AnswerLocked();
  void AnswerErrorLocked(const grpc::Status& status, const std::string& retry_after);
  // The message choice `beam` of `prompt` would have streamed, whole.
  [[nodiscard]] v1::GenerateResponse ChoiceMessage(const PromptSearch& search,
                                                   const Beam& beam) const;
  void CancelAll();

  const GenerationHooks hooks_;
  const std::shared_ptr<http::ResponseWriter> writer_;
  const bool stream_;
  const bool return_token_ids_;
  const bool include_stop_str_in_output_;
  const bool skip_special_tokens_;
  const v1::GenerateRequest step_;
  const int32_t width_;

  std::mutex mu_;
  openai::ResponseBuilder builder_;                 // guarded by mu_
  std::vector<PromptSearch> prompts_;               // guarded by mu_
  std::vector<std::weak_ptr<StepCall>> in_flight_;  // guarded by mu_: calls started, maybe ended
  int32_t open_calls_ = 0;                          // guarded by mu_
  int32_t searching_ = 0;                           // guarded by mu_: prompts not done
  bool answered_ = false;                           // guarded by mu_
  bool client_gone_ = false;                        // guarded by mu_
};

}  // namespace headroom::router
