#!/usr/bin/env python3
"""Builds the YaRN rope fixtures for kernels/cpu's YarnInvFreq with transformers' own function.

For each case, transformers' ROPE_INIT_FUNCTIONS["yarn"] (modeling_rope_utils.
_compute_yarn_parameters) is called on a LlamaConfig holding the case's rope_theta, head_dim and
rope_scaling block, and its inv_freq (float32, exact) and attention factor are written.

transformers 4.46 finds YaRN's correction range at config.max_position_embeddings; vLLM and
transformers since huggingface/transformers#40320 at rope_scaling's
original_max_position_embeddings, the pretrained context. Each case sets max_position_embeddings
to that original length, so the numbers are the same under every reading (Qwen3's config.json,
whose max_position_embeddings 40960 exceeds its 32768, is a case where they would not be).

Cases: the real shapes of Qwen2.5-7B-Instruct and Qwen3-8B with the yarn block their model cards
give (factor 4 over 32768, default betas), a Llama-3-8B-like head with non-default betas and an
explicit attention_factor, and small pretrained lengths where the correction range degenerates
(low == high, and high below 0).

Writes tests/kernels/fixtures/yarn_inv_freq.json. Install as for scripts/gen_model_fixtures.py
(build/venv-fixtures, Debian's python3-torch + transformers).
"""
import json
import os

import numpy as np
import torch
import transformers
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "kernels",
                   "fixtures", "yarn_inv_freq.json")

CASES = [
    # name, head_dim, rope_theta, original context, rope_scaling extras
    ("qwen2.5-7b-instruct", 128, 1000000.0, 32768, {"factor": 4.0}),
    ("qwen3-8b", 128, 1000000.0, 32768, {"factor": 4.0}),
    ("llama-head-betas-attention", 128, 500000.0, 8192,
     {"factor": 8.0, "beta_fast": 16.0, "beta_slow": 2.0, "attention_factor": 0.9}),
    ("factor-2-head-64", 64, 10000.0, 2048, {"factor": 2.0}),
    ("low-equals-high", 16, 10000.0, 4, {"factor": 4.0}),
    ("high-below-zero", 16, 10000.0, 1, {"factor": 3.0}),
]


def main():
    cases = []
    for name, head_dim, theta, original, extras in CASES:
        scaling = {"rope_type": "yarn", "original_max_position_embeddings": original, **extras}
        config = LlamaConfig(hidden_size=head_dim * 4, num_attention_heads=4, head_dim=head_dim,
                             max_position_embeddings=original, rope_theta=theta,
                             rope_scaling=scaling)
        inv_freq, attention_factor = ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
        assert inv_freq.dtype == torch.float32 and inv_freq.shape == (head_dim // 2,)
        default, _ = ROPE_INIT_FUNCTIONS["default"](config, "cpu")
        print(f"{name}: attention factor {attention_factor:.6f}, "
              f"{int((inv_freq == default).sum())} of {head_dim // 2} frequencies unscaled")
        cases.append({"name": name, "head_dim": head_dim, "rope_theta": theta,
                      "rope_scaling": scaling,
                      "inv_freq": [float(np.float32(v)) for v in inv_freq.tolist()],
                      "attention_factor": float(attention_factor)})
    with open(OUT, "w") as f:
        json.dump({"generator": "scripts/gen_rope_fixtures.py", "torch": torch.__version__,
                   "transformers": transformers.__version__, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
