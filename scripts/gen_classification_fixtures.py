#!/usr/bin/env python3
"""Builds the sequence-classification fixtures with Hugging Face transformers + torch (CPU).

Writes tests/worker/fixtures/<name>/ for two small SEEDED RANDOM classifier checkpoints, the shape
of the models vLLM serves on /classify (jason9693/Qwen2.5-1.5B-apeach, reward models):

  llama-classify  LlamaForSequenceClassification: 2 layers, hidden 64, 4 heads / 2 kv heads,
                  vocab 256 (the byte tokenizer's), 3 labels named in id2label, problem_type
                  single_label_classification; saved in bfloat16. No lm_head.weight: the score
                  head (score.weight [3, 64], no bias) reads the final-normed hidden state.
  qwen2-reward    Qwen2ForSequenceClassification with q/k/v biases and ONE label (a reward /
                  relevance score) and no problem_type: vLLM applies a sigmoid to a single
                  label; saved in float16.

and classification.json in each: for every prompt (UTF-8 bytes as token ids, the byte tokenizer's
encoding), transformers' logits (`model(ids).logits[0]`, batch of one, so the pooled row is the
last token's, as vLLM pools) and the activations vLLM applies (its PoolerClassify: softmax over
2+ labels, sigmoid over one; PoolerMultiLabelClassify: sigmoid; regression: none), with the label
id2label gives the highest probability.

And, for vLLM's "LLM as reranker" conversion (a causal LM read as a classifier whose score head is
built from LM-head rows of given tokens), classification_from_token.json in the committed causal
fixtures llama-gqa (untied LM head) and llama-tied (the head is the embedding), which this script
reads and does not rewrite: for every prompt, the last position's logits of the tokens "a" and "b"
(ids 97 and 98, the byte tokenizer's) and the 2-way softmax's probability of "b"
(from_2_way_softmax: one label, sigmoid of the difference), and of "x", "y", "z" with their
softmax (no_post_processing: a label per token).

Install as for gen_model_fixtures.py (build/venv-fixtures), then run:
  build/venv-fixtures/bin/python scripts/gen_classification_fixtures.py
"""
import json
import os
import shutil

import torch
import transformers
from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForSequenceClassification,
                          Qwen2Config, Qwen2ForSequenceClassification)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "worker", "fixtures")

PROMPTS = [
    "I loved this film.",
    "x",
    "The service was slow and the food was cold; I will not come back.",
    "Crème brûlée, 東京, and a 🙂 walk into a bar",
    "neutral",
    # Longer than the engine tests' prefill chunk (32 tokens), so it is computed in pieces.
    "A long review that goes on for a while, so that its prompt spans several prefill chunks "
    "and several KV blocks of sixteen tokens each before the last token is pooled.",
]


def g7(x):
    """A float rounded to 7 significant digits (about float32's precision), as a Python float."""
    return float("%.7g" % float(x))


def vector(t):
    return [g7(v) for v in t.tolist()]


def llama_classify():
    config = LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-5, initializer_range=0.25,
        bos_token_id=1, eos_token_id=2, pad_token_id=None,
        id2label={0: "negative", 1: "neutral", 2: "positive"},
        label2id={"negative": 0, "neutral": 1, "positive": 2},
        problem_type="single_label_classification")
    config.architectures = ["LlamaForSequenceClassification"]
    return LlamaForSequenceClassification(config), torch.bfloat16


def qwen2_reward():
    config = Qwen2Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=1e6, rms_norm_eps=1e-6, initializer_range=0.25, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2, pad_token_id=None, num_labels=1)
    config.architectures = ["Qwen2ForSequenceClassification"]
    return Qwen2ForSequenceClassification(config), torch.float16


def randomize(model):
    # HF init leaves norms at 1 and biases at 0, which would leave those code paths untested.
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.copy_(1.0 + 0.2 * torch.randn_like(param))
            elif name.endswith(".bias"):
                param.copy_(0.2 * torch.randn_like(param))
            elif name == "score.weight":
                # Scores of a few units, so the activations are far from flat.
                param.copy_(0.5 * torch.randn_like(param))


def write_doc(path, name, fields):
    """A fixture file: who made it and with what, then `fields`."""
    doc = {
        "model": name,
        "generator": "scripts/gen_classification_fixtures.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "compute_dtype": "float32",
    }
    doc.update(fields)
    with open(path, "w") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


def activations(logits, num_labels, problem_type):
    """vLLM's classify activation for the config, and the two others, by name."""
    out = {
        "softmax": torch.softmax(logits, dim=-1),
        "sigmoid": torch.sigmoid(logits),
        "identity": logits,
    }
    if problem_type == "regression":
        default = "identity"
    elif problem_type == "multi_label_classification" or num_labels < 2:
        default = "sigmoid"
    else:
        default = "softmax"
    return out, default


def generate(name, build, seed):
    torch.manual_seed(seed)
    model, dtype = build()
    randomize(model)
    out_dir = os.path.join(FIXTURES, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    model.to(dtype).save_pretrained(out_dir, safe_serialization=True)
    gen_config = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(gen_config):
        os.remove(gen_config)
    # The reference is the saved checkpoint upcast to float32, as the worker computes it.
    model = type(model).from_pretrained(out_dir, torch_dtype=torch.float32,
                                        attn_implementation="eager")
    model.eval()
    config = model.config
    with open(os.path.join(out_dir, "config.json")) as f:
        saved = json.load(f)
    assert "lm_head.weight" not in model.state_dict(), name
    prompts = []
    for text in PROMPTS:
        ids = list(text.encode("utf-8"))
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()
            # The same as the score head over the last token's final-normed hidden state.
            hidden = model.model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1]
            assert torch.allclose(model.score(hidden), logits, atol=1e-5), name
        acts, default = activations(logits, config.num_labels, config.problem_type)
        probs = acts[default]
        prompts.append({
            "text": text,
            "ids": ids,
            "logits": vector(logits),
            "softmax": vector(acts["softmax"]),
            "sigmoid": vector(acts["sigmoid"]),
            "probs": vector(probs),
            "label": config.id2label[int(torch.argmax(probs))],
        })
    labels = [p["label"] for p in prompts]
    if config.num_labels > 1:
        # The fixture must tell labels apart: not every prompt may land on one.
        assert len(set(labels)) > 1, (name, labels)
    write_doc(os.path.join(out_dir, "classification.json"), name, {
        "architecture": saved["architectures"][0],
        "num_labels": config.num_labels,
        "id2label": [config.id2label[i] for i in range(config.num_labels)],
        "problem_type": config.problem_type,
        "activation": default,
        "notes": ("logits is model(ids).logits[0] (batch of one: the last token's row, as vLLM "
                  "pools); probs is vLLM's activation for the config (activation); softmax and "
                  "sigmoid are both for other problem_types; label is id2label of probs' argmax; "
                  "ids are the text's UTF-8 bytes (the byte tokenizer); 7 significant digits"),
        "prompts": prompts,
    })
    print(f"{name}: {len(prompts)} prompts, labels {labels}")


def from_token(name):
    out_dir = os.path.join(FIXTURES, name)
    model = AutoModelForCausalLM.from_pretrained(out_dir, torch_dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    two_way = [ord("a"), ord("b")]
    per_token = [ord("x"), ord("y"), ord("z")]
    prompts = []
    for text in PROMPTS:
        ids = list(text.encode("utf-8"))
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
        pair = logits[two_way]
        prompts.append({
            "text": text,
            "ids": ids,
            "two_way_logits": vector(pair),
            # softmax([no, yes])[yes] = sigmoid(yes - no): what vLLM's one label scores.
            "two_way_score": g7(torch.softmax(pair, dim=-1)[1]),
            "per_token_logits": vector(logits[per_token]),
            "per_token_probs": vector(torch.softmax(logits[per_token], dim=-1)),
        })
    write_doc(os.path.join(out_dir, "classification_from_token.json"), name, {
        "two_way_tokens": ["a", "b"],
        "per_token_tokens": ["x", "y", "z"],
        "notes": ("logits are AutoModelForCausalLM(ids).logits[0, -1] at the tokens' ids (their "
                  "bytes); two_way_score is the softmax over the two of the second; "
                  "per_token_probs the softmax over the three; 7 significant digits"),
        "prompts": prompts,
    })
    print(f"{name}: from_token, {len(prompts)} prompts")


def main():
    generate("llama-classify", llama_classify, seed=31)
    generate("qwen2-reward", qwen2_reward, seed=32)
    from_token("llama-gqa")
    from_token("llama-tied")


if __name__ == "__main__":
    main()
