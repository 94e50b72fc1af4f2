#!/usr/bin/env python3
"""Builds tests/worker/fixtures/llama-gqa/beam_search.json: vLLM's beam search on the llama-gqa
fixture, its logprobs from Hugging Face transformers (CPU, float32 compute over the saved bf16
weights, as the other fixtures).

vLLM's algorithm (vllm/beam_search.py and its EngineClient.beam_search): each step takes every
live beam's top 2k next tokens (k = beam width); a candidate ending on an ending token (EOS, or
here a stop token id) is complete, the k best other candidates by cumulative logprob live on;
after max_tokens steps the complete and live beams are ranked by cumulative logprob /
(prompt + generated tokens, an ending token not counted) ** length_penalty, and the k best are
the answer. It is written out here over transformers' log_softmax, and for the case without an
ending token checked against transformers' own `generate(num_beams=k)`, which keeps the same k
beams when nothing ends (its first step also expands only the prompt).

Each case is kept only if every decision it took has a margin of at least MARGIN in logprob
(the k-th against the (k+1)-th candidate at each step, the 2k-th against the next in each beam's
candidate list, the final ranking), so float differences between implementations cannot flip it.

Run: scripts/setup-deps --fixtures && build/venv-fixtures/bin/python scripts/gen_beam_search_fixtures.py
"""
import itertools
import json
import os

import torch
import transformers
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "worker", "fixtures", "llama-gqa")
MARGIN = 2e-3


def next_logprobs(model, ids):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
    return torch.log_softmax(logits, dim=-1)


def beam_search(model, prompt, width, max_tokens, length_penalty, ending):
    """vLLM's beam search; returns (best beams, smallest decision margin)."""
    per_beam = 2 * width
    live = [{"tokens": [], "cum": 0.0, "ended": False}]
    complete = []
    margin = float("inf")
    for step in range(max_tokens):
        grown = []
        for beam in live:
            logprobs = next_logprobs(model, prompt + beam["tokens"])
            values, indices = torch.topk(logprobs, per_beam + 1)
            margin = min(margin, float(values[per_beam - 1] - values[per_beam]))
            for value, token in zip(values[:per_beam].tolist(), indices[:per_beam].tolist()):
                cand = {"tokens": beam["tokens"] + [token], "cum": beam["cum"] + value,
                        "ended": token in ending}
                (complete if cand["ended"] else grown).append(cand)
        grown.sort(key=lambda b: b["cum"], reverse=True)
        if len(grown) > width:
            margin = min(margin, grown[width - 1]["cum"] - grown[width]["cum"])
        live = grown[:width]
    everything = complete + live

    def score(b):
        length = len(prompt) + len(b["tokens"]) - (1 if b["ended"] else 0)
        return b["cum"] / length ** length_penalty

    everything.sort(key=score, reverse=True)
    ranked = everything[: width + 1]
    for a, b in zip(ranked, ranked[1:]):
        margin = min(margin, score(a) - score(b))
    best = everything[:width]
    return [{"tokens": b["tokens"], "cumulative_logprob": b["cum"], "score": score(b),
             "finish_reason": "stop" if b["ended"] else "length"} for b in best], margin


def transformers_beams(model, prompt, width, max_tokens):
    model.generation_config.eos_token_id = None
    out = model.generate(torch.tensor([prompt]), num_beams=width, num_return_sequences=width,
                         do_sample=False, max_new_tokens=max_tokens, length_penalty=0.0,
                         early_stopping=False, pad_token_id=0, output_scores=True,
                         return_dict_in_generate=True)
    seqs = [s[len(prompt):].tolist() for s in out.sequences]
    return seqs, out.sequences_scores.tolist()


def main():
    model = AutoModelForCausalLM.from_pretrained(FIXTURE, torch_dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    with open(os.path.join(FIXTURE, "expected.json")) as f:
        prompts = [p["ids"] for p in json.load(f)["prompts"] if len(p["ids"]) > 1]
    cases = []

    # Nothing ends: the k beams are transformers' own.
    for prompt in prompts:
        width, max_tokens = 3, 6
        beams, margin = beam_search(model, prompt, width, max_tokens, 1.0, set())
        if margin < MARGIN:
            continue
        seqs, scores = transformers_beams(model, prompt, width, max_tokens)
        assert seqs == [b["tokens"] for b in beams], (seqs, beams)
        for s, b in zip(scores, beams):
            assert abs(s - b["cumulative_logprob"]) < 1e-4, (s, b)
        cases.append({"name": "no ending token, checked against transformers' generate",
                      "prompt": prompt, "width": width, "max_tokens": max_tokens,
                      "length_penalty": 1.0, "stop_token_ids": [], "beams": beams,
                      "margin": margin})
        break

    # An ending token (a stop token id): one of the prompt's likely next tokens (not the most
    # likely, after the prompt or along its greedy path), so a hypothesis is complete early and
    # competes with the long ones by its score; kept only where the length penalty decides the
    # order (ranked by cumulative logprob alone, the beams would come in another order).
    def found():
        for prompt in prompts:
            # Tokens ranked 2nd to 4th after the prompt and after each token of its greedy path.
            stops, path = [], list(prompt)
            for _ in range(8):
                top = torch.topk(next_logprobs(model, path), 4).indices.tolist()
                stops += [t for t in top[1:] if t not in stops]
                path.append(top[0])
            for stop, width, max_tokens, length_penalty in itertools.product(
                    stops, (2, 3), (5, 8), (2.0, 1.5, 3.0, 0.5, 0.25)):
                beams, margin = beam_search(model, prompt, width, max_tokens, length_penalty,
                                            {stop})
                by_cum = sorted(beams, key=lambda b: b["cumulative_logprob"], reverse=True)
                if (margin < MARGIN or by_cum == beams or
                        all(b["finish_reason"] == "length" for b in beams)):
                    continue
                return {"name": "a stop token ends a beam; the length penalty ranks",
                        "prompt": prompt, "width": width, "max_tokens": max_tokens,
                        "length_penalty": length_penalty, "stop_token_ids": [stop],
                        "beams": beams, "margin": margin}
        return None

    case = found()
    assert case is not None, "no prompt gave the stop-token case with its margins"
    cases.append(case)
    assert len(cases) == 2, "no prompt gave the case without an ending token with its margins"

    out = {"generator": "scripts/gen_beam_search_fixtures.py", "torch": torch.__version__,
           "transformers": transformers.__version__, "margin": MARGIN,
           "notes": "vLLM's beam search over transformers' float32 log_softmax of the llama-gqa "
                    "fixture; beams best first; cumulative_logprob sums the tokens' logprobs; "
                    "score = cumulative_logprob / (prompt + tokens - ended) ** length_penalty",
           "cases": cases}
    path = os.path.join(FIXTURE, "beam_search.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for case in cases:
        print(case["name"], "margin", round(case["margin"], 5),
              [(b["tokens"], b["finish_reason"]) for b in case["beams"]])
    print("wrote", path)


if __name__ == "__main__":
    main()
