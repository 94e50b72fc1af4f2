#!/usr/bin/env python3
"""Builds the sampling-penalty fixtures for kernels/cpu's Sample and ApplyPenalties.

For random rows of logits (vocabularies of 7, 64 and 1000 tokens, with exact zeros and negative
values), a prompt, an output so far and penalty parameters, computes with Hugging Face
transformers' own logits processors (torch, float32, CPU):

  penalized  SequenceBiasLogitsProcessor with one-token sequences (OpenAI's logit_bias: a bias
             added to a token's logit; vLLM applies it before the penalties), then
             RepetitionPenaltyLogitsProcessor(repetition_penalty) over prompt + output, then
             OpenAI's frequency/presence penalties over the output (transformers has no processor
             for those; OpenAI defines them as logit[t] -= frequency_penalty * count[t] +
             presence_penalty * (count[t] > 0), and vLLM applies them after the repetition
             penalty): the logits every later step works on
  greedy     argmax of the penalized row (ties to the lower id, as torch.argmax)
  min_p_kept the tokens TemperatureLogitsWarper(temperature) + MinPLogitsWarper(min_p) keep
             (not -inf afterwards), ascending ids

Writes tests/kernels/fixtures/penalties.json: {generator, cases: [...]}. Install as for
scripts/gen_model_fixtures.py (build/venv-fixtures, Debian's python3-torch + transformers).
"""
import json
import os
import random

import torch
import transformers
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    SequenceBiasLogitsProcessor,
    TemperatureLogitsWarper,
)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "kernels",
                   "fixtures", "penalties.json")


def case(rng, vocab, prompt_len, output_len, repetition, frequency, presence, temperature, min_p):
    logits = [round(rng.gauss(0.0, 3.0), 3) for _ in range(vocab)]
    for i in rng.sample(range(vocab), max(1, vocab // 10)):
        logits[i] = 0.0  # exact zeros: the repetition penalty's sign rule
    # Repeats within the prompt and the output: counts above one.
    prompt = [rng.randrange(vocab) for _ in range(prompt_len)]
    output = [rng.randrange(max(1, vocab // 2)) for _ in range(output_len)]
    bias = {t: round(rng.uniform(-5.0, 5.0), 2) for t in rng.sample(range(vocab), min(3, vocab))}
    scores = torch.tensor([logits], dtype=torch.float32)
    history = torch.tensor([prompt + output], dtype=torch.long)
    scores = SequenceBiasLogitsProcessor({(t,): b for t, b in bias.items()})(history, scores)
    if len(prompt) + len(output) > 0:
        scores = RepetitionPenaltyLogitsProcessor(penalty=repetition)(history, scores)
    counts = torch.zeros(vocab, dtype=torch.float32)
    for t in output:
        counts[t] += 1
    scores = scores - frequency * counts - presence * (counts > 0).to(torch.float32)
    penalized = scores[0]
    warped = TemperatureLogitsWarper(temperature)(history, scores.clone())
    warped = MinPLogitsWarper(min_p=min_p)(history, warped)
    kept = [i for i in range(vocab) if warped[0, i].item() != float("-inf")]
    return {
        "vocab": vocab,
        "logits": logits,
        "prompt": prompt,
        "output": output,
        "logit_bias": [[t, b] for t, b in sorted(bias.items())],
        "repetition_penalty": repetition,
        "frequency_penalty": frequency,
        "presence_penalty": presence,
        "temperature": temperature,
        "min_p": min_p,
        # float32 values, written with the 9 significant digits that round-trip them.
        "penalized": [float(f"{x:.9g}") for x in penalized.tolist()],
        "greedy": int(torch.argmax(penalized).item()),
        "min_p_kept": kept,
    }


def main():
    rng = random.Random(20261123)
    cases = []
    penalties = [(1.0, 0.0, 0.0), (1.3, 0.0, 0.0), (0.7, 0.0, 0.0), (1.0, 0.5, 0.0),
                 (1.0, 0.0, -1.5), (2.0, 1.25, 0.75)]
    warpers = [(1.0, 0.05), (0.6, 0.2), (1.7, 0.0)]
    for vocab, prompt_len, output_len in [(7, 3, 4), (64, 20, 30), (64, 0, 0)]:
        for repetition, frequency, presence in penalties:
            for temperature, min_p in warpers:
                cases.append(case(rng, vocab, prompt_len, output_len, repetition, frequency,
                                  presence, temperature, min_p))
    # A larger vocabulary, fewer combinations (the file stays small).
    for repetition, frequency, presence in [penalties[1], penalties[5]]:
        for temperature, min_p in warpers[:2]:
            cases.append(case(rng, 1000, 50, 200, repetition, frequency, presence, temperature,
                              min_p))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"generator": f"transformers {transformers.__version__}, torch "
                                f"{torch.__version__}", "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
