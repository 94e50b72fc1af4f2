#!/usr/bin/env python3
"""Builds the LoRA adapter fixtures with PEFT + transformers + torch (CPU, no downloads).

Writes tests/worker/fixtures/lora/<base>-<name>/ for seeded random LoRA adapters of the committed
base fixtures (scripts/gen_model_fixtures.py), saved by PEFT's own save_pretrained (the
adapter_config.json and adapter_model.safetensors a fine-tuning run leaves, which vLLM's
--lora-modules serves):

  llama-gqa-all     r 8, lora_alpha 16 (scale 2) on every projection (q/k/v/o_proj,
                    gate/up/down_proj), saved in bfloat16.
  llama-gqa-rslora  r 4, lora_alpha 8 with use_rslora (scale 8 / sqrt 4 = 4, not 8 / 4 = 2) on
                    q_proj, v_proj and down_proj, saved in float32: another rank and other targets
                    than llama-gqa-all, so the two stack with padding in one server.
  phi3-fused-all    r 8, lora_alpha 8 on Phi-3's fused qkv_proj and gate_up_proj (whose B rows
                    split into q/k/v and gate/up) and o_proj, down_proj; bfloat16.
  granite-mup-out   r 4, lora_alpha 256 (scale 64) on o_proj and down_proj of Granite, whose
                    residual_multiplier (0.22) scales those projections' whole outputs, the
                    adapter's update included (a smaller scale left the greedy tokens as they
                    were); bfloat16.
  glm4-sandwich-all r 8, lora_alpha 16 on GLM-4's q/k/v_proj, o_proj, fused gate_up_proj and
                    down_proj; bfloat16. GLM rotates interleaved pairs of q and k, which the server
                    reorders in the base weights, and so in the adapter's q and k B rows too.
                    Needs transformers >= 4.51, so it is written only when named:
                      PYTHONPATH=build/pydeps-tf457 build/venv-fixtures/bin/python \
                        scripts/gen_lora_fixtures.py glm4-sandwich-all

PEFT initializes B to zeros, which would make every adapter the base model: init_lora_weights=False
keeps torch's default init for A and B instead (seeded), so each adapter changes the greedy tokens
(the script asserts that against the base fixture's).

Each directory also holds expected.json in gen_model_fixtures.py's format, computed in float32 by
the PEFT model reloaded from the SAVED adapter on the base fixture's saved weights: the base
fixture's 4 prompts, full prompt logits of prompts 1 and 2, and 32-token greedy continuations
with top-5 logprobs.

Install: scripts/setup-deps --fixtures (PEFT is in scripts/requirements-model-fixtures.txt).
Run:     build/venv-fixtures/bin/python scripts/gen_lora_fixtures.py
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

import peft
from peft import LoraConfig, PeftModel, get_peft_model

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_model_fixtures as base_fixtures  # noqa: E402

OUT = os.path.join(base_fixtures.OUT, "lora")

ALL_SPLIT = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ADAPTERS = [
    # name, base fixture, LoraConfig arguments, save dtype, seed
    ("llama-gqa-all", "llama-gqa", dict(r=8, lora_alpha=16, target_modules=ALL_SPLIT),
     torch.bfloat16, 4321),
    ("llama-gqa-rslora", "llama-gqa",
     dict(r=4, lora_alpha=8, use_rslora=True, target_modules=["q_proj", "v_proj", "down_proj"]),
     torch.float32, 4322),
    ("phi3-fused-all", "phi3-fused",
     dict(r=8, lora_alpha=8, target_modules=["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]),
     torch.bfloat16, 4323),
    ("granite-mup-out", "granite-mup", dict(r=4, lora_alpha=256, target_modules=["o_proj", "down_proj"]),
     torch.bfloat16, 4324),
]
# Written only when named (a base fixture of NAMED_ONLY).
NAMED_ONLY = [
    ("glm4-sandwich-all", "glm4-sandwich",
     dict(r=8, lora_alpha=16,
          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_up_proj", "down_proj"]),
     torch.bfloat16, 4325),
]


def base_seed(base):
    """The seed gen_model_fixtures.py built `base` with: its prompts are drawn from it."""
    for name, _, _, _, seed in base_fixtures.MODELS + base_fixtures.NAMED_ONLY:
        if name == base:
            return seed
    raise KeyError(base)


def load_base(base):
    model = AutoModelForCausalLM.from_pretrained(os.path.join(base_fixtures.OUT, base),
                                                 torch_dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    return model


def generate(name, base, lora_args, dtype, seed):
    out_dir = os.path.join(OUT, name)
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(seed)
    config = LoraConfig(lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                        init_lora_weights=False, **lora_args)
    model = get_peft_model(load_base(base), config)
    with torch.no_grad():
        for param_name, param in model.named_parameters():
            if "lora_" in param_name:
                param.data = param.data.to(dtype)
    model.save_pretrained(out_dir, safe_serialization=True)
    # The absolute path of this machine's checkout would leak into the committed file.
    config_path = os.path.join(out_dir, "adapter_config.json")
    with open(config_path) as f:
        saved_config = json.load(f)
    saved_config["base_model_name_or_path"] = f"tests/worker/fixtures/{base}"
    with open(config_path, "w") as f:
        json.dump(saved_config, f, indent=2, sort_keys=True)
        f.write("\n")
    for extra in os.listdir(out_dir):  # PEFT's model card is not a fixture
        if extra not in ("adapter_config.json", "adapter_model.safetensors"):
            os.remove(os.path.join(out_dir, extra))

    # Reload what was saved onto a fresh float32 base: the reference runs on the stored numbers.
    ref = PeftModel.from_pretrained(load_base(base), out_dir)
    ref.eval()
    saved = load_file(os.path.join(out_dir, "adapter_model.safetensors"))
    assert all(t.dtype == dtype for t in saved.values()), name
    state = ref.state_dict()
    for tensor_name, tensor in saved.items():
        key = tensor_name.replace(".weight", ".default.weight")
        assert torch.equal(state[key], tensor.float()), tensor_name
    prompts, min_margin = base_fixtures.reference_outputs(ref, ref.config.vocab_size,
                                                          base_seed(base))
    with open(os.path.join(base_fixtures.OUT, base, "expected.json")) as f:
        base_prompts = json.load(f)["prompts"]
    changed = sum(p["greedy"] != b["greedy"] for p, b in zip(prompts, base_prompts))
    assert all(p["ids"] == b["ids"] for p, b in zip(prompts, base_prompts)), name
    assert changed >= 2, f"{name} changes only {changed} greedy continuations of {base}"
    expected = {
        "adapter": name,
        "base": base,
        "generator": "scripts/gen_lora_fixtures.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "saved_dtype": str(dtype).replace("torch.", ""),
        "compute_dtype": "float32",
        "scale": config.lora_alpha / (config.r ** 0.5 if config.use_rslora else config.r),
        "greedy_tokens": base_fixtures.GREEDY_TOKENS,
        "ignore_eos": True,
        "top_k": base_fixtures.TOP_K,
        "min_margin": base_fixtures.g7(min_margin),
        "changed_greedy_prompts": changed,
        "notes": "as tests/worker/fixtures/<base>/expected.json, for the base model with this "
                 "adapter",
        "prompts": prompts,
    }
    base_fixtures.write_json(os.path.join(out_dir, "expected.json"), expected)
    size = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    print(f"{name}: {size} bytes, {changed} of {len(prompts)} greedy continuations differ from "
          f"{base}'s, min top-1/top-2 margin {min_margin:.4f}")


def main():
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"transformers {transformers.__version__}, peft {peft.__version__}")
    torch.set_num_threads(1)
    only = set(sys.argv[1:])
    for name, base, lora_args, dtype, seed in ADAPTERS:
        if not only or name in only:
            generate(name, base, lora_args, dtype, seed)
    for name, base, lora_args, dtype, seed in NAMED_ONLY:
        if name in only:
            generate(name, base, lora_args, dtype, seed)


if __name__ == "__main__":
    main()
