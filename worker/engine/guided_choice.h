// Guided choice (vLLM's guided_choice / structured_outputs.choice): a request's output must be one
// of several token sequences, the choices as the router tokenized them. Pure functions over the
// choices and the output so far, so the state survives preemption (the output is kept) and needs
// no copy per step.
//
// At each step the sampler may take only the next token of every choice the output is a proper
// prefix of, plus `end_token` (EOS, or a stop token) when the output already equals a choice that
// a longer one extends ("yes" and "yes!"). When the output equals a choice nothing extends, the
// request is done (the engine has the scheduler stop it: FinishReason::kStop, no stop token).
// A choice is followed as tokenized: another tokenization of the same text is not offered.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace headroom::worker {

using GuidedChoices = std::vector<std::vector<int32_t>>;

// Writes to `allowed` (cleared first) the tokens that may follow `output`, sorted and distinct:
// see above; `end_token` < 0 offers no end. Empty when `output` left every choice (it cannot,
// when every token was chosen from this set).
void GuidedChoiceAllowed(const GuidedChoices& choices, std::span<const int32_t> output,
                         int32_t end_token, std::vector<int32_t>* allowed);

// True when `output` equals a choice and no choice extends it.
[[nodiscard]] bool GuidedChoiceComplete(const GuidedChoices& choices,
                                        std::span<const int32_t> output);

}  // namespace headroom::worker
