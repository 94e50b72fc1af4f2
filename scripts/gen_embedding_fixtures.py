#!/usr/bin/env python3
"""Builds the embedding fixtures with Hugging Face transformers + torch (CPU, no downloads).

For each committed model fixture named below (tests/worker/fixtures/<name>/, written by
scripts/gen_model_fixtures.py), reloads the saved checkpoint upcast to float32 and writes
tests/worker/fixtures/<name>/embeddings.json: for every prompt of its expected.json, the model's
last hidden state at the prompt's last token (transformers' `model.model(ids).last_hidden_state`,
i.e. after the final norm and before the LM head), which is what vLLM's and sentence-transformers'
last-token pooling returns before normalization. Also, per prompt, the same vector L2-normalized,
and normalized after keeping only its first 16 values (Matryoshka truncation: sentence-
transformers' truncate_dim cuts before its Normalize module); and the mean of the last hidden
state over all positions and its first row (sentence-transformers' mean and CLS pooling).

  llama-gqa       Llama with GQA and llama3 rope scaling, stored bfloat16 in 2 shards
  qwen2-bias      Qwen2 with q/k/v biases, stored float16
  gemma2-softcap  Gemma 2: sqrt(hidden)-scaled embeddings, (1 + w) final norm, and a logit softcap
                  that must NOT touch the hidden state

Install as for gen_model_fixtures.py (build/venv-fixtures), then run:
  build/venv-fixtures/bin/python scripts/gen_embedding_fixtures.py
"""
import json
import os

import torch
import transformers
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "worker", "fixtures")
MODELS = ["llama-gqa", "qwen2-bias", "gemma2-softcap"]
TRUNCATE_DIM = 16


def g7(x):
    """A float rounded to 7 significant digits (about float32's precision), as a Python float."""
    return float("%.7g" % float(x))


def vector(t):
    return [g7(v) for v in t.tolist()]


def main():
    for name in MODELS:
        out_dir = os.path.join(FIXTURES, name)
        with open(os.path.join(out_dir, "expected.json")) as f:
            expected = json.load(f)
        model = AutoModelForCausalLM.from_pretrained(out_dir, torch_dtype=torch.float32,
                                                     attn_implementation="eager")
        model.eval()
        prompts = []
        for prompt in expected["prompts"]:
            ids = prompt["ids"]
            with torch.no_grad():
                hidden = model.model(input_ids=torch.tensor([ids]), use_cache=False)
                last = hidden.last_hidden_state[0, -1].float()
                # The hidden state is what the LM head reads: its logits must be the fixture's.
                logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
                assert int(torch.argmax(logits)) == prompt["greedy"][0], name
            prompts.append({
                "ids": ids,
                "last_hidden": vector(last),
                "normalized": vector(torch.nn.functional.normalize(last, dim=0)),
                "truncated_normalized": vector(
                    torch.nn.functional.normalize(last[:TRUNCATE_DIM], dim=0)),
                # sentence-transformers' pooling_mode_mean_tokens (every position, mask all
                # ones) and pooling_mode_cls_token (the first position), not normalized.
                "mean": vector(hidden.last_hidden_state[0].float().mean(dim=0)),
                "first": vector(hidden.last_hidden_state[0, 0].float()),
            })
        doc = {
            "model": name,
            "generator": "scripts/gen_embedding_fixtures.py",
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "compute_dtype": "float32",
            "pooling": "last token; mean and first (CLS) too",
            "truncate_dim": TRUNCATE_DIM,
            "notes": ("last_hidden is model.model(ids).last_hidden_state[0, -1] (after the final "
                      "norm); normalized is it divided by its L2 norm; truncated_normalized is its "
                      "first truncate_dim values, then normalized; mean is the mean of "
                      "last_hidden_state[0] over all positions, first its row 0 (mean and CLS "
                      "pooling, unnormalized); 7 significant digits"),
            "prompts": prompts,
        }
        with open(os.path.join(out_dir, "embeddings.json"), "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        print(f"{name}: {len(prompts)} prompts, hidden {len(prompts[0]['last_hidden'])}")


if __name__ == "__main__":
    main()
