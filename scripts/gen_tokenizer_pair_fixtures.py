#!/usr/bin/env python3
"""Builds the text-pair tokenizer fixture with Hugging Face transformers (no downloads).

For each tokenizer fixture in tests/router/tokenizer/fixtures/<name>/ (written by
scripts/gen_tokenizer_fixtures.py), loads it with transformers' AutoTokenizer, as vLLM loads a
model's tokenizer, and writes tests/router/tokenizer/fixtures/pairs.json: for a list of text pairs,
tokenizer(text=first, text_pair=second)["input_ids"] with and without special tokens, which is how
vLLM tokenizes a cross-encoder's /score and /rerank pairs. Also two small word-level tokenizers
built here with `tokenizers`' BertProcessing and RobertaProcessing post-processors (their
tokenizer.json text in the file) with what encode(first, second) gives.

Install as for gen_model_fixtures.py (build/venv-fixtures), then run:
  build/venv-fixtures/bin/python scripts/gen_tokenizer_pair_fixtures.py
"""
import json
import os

import transformers
from tokenizers import Tokenizer, models, processors
from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures")
NAMES = ["gemma", "gpt2", "llama2", "llama3", "mistral", "phi4", "qwen2"]

PAIRS = [
    ("what is the capital of France?", "Paris is the capital of France."),
    ("query", ""),
    ("", "document"),
    (" leading space", "  two spaces\nand a newline"),
    ("Crème brûlée", "東京 🙂 done"),
    ("a", "b"),
]


def main():
    doc = {"generator": "scripts/gen_tokenizer_pair_fixtures.py",
           "transformers": transformers.__version__,
           "notes": "ids: tokenizer(text=first, text_pair=second)['input_ids']; ids_plain: the "
                    "same with add_special_tokens=False",
           "tokenizers": {}}
    for name in NAMES:
        tok = AutoTokenizer.from_pretrained(os.path.join(FIXTURES, name))
        cases = []
        for first, second in PAIRS:
            cases.append({
                "first": first,
                "second": second,
                "ids": tok(text=first, text_pair=second)["input_ids"],
                "ids_plain": tok(text=first, text_pair=second,
                                 add_special_tokens=False)["input_ids"],
            })
        doc["tokenizers"][name] = {"class": type(tok).__name__, "pairs": cases}
        print(name, type(tok).__name__, cases[0]["ids"][:6], "...")
    doc["processors"] = {}
    # Character-level BPE (no merges, no pre-tokenizer): the texts use only its letters.
    vocab = {w: i for i, w in enumerate(["[CLS]", "[SEP]", "<s>", "</s>", "a", "b", "c"])}
    for name, processor in [("bert", processors.BertProcessing(("[SEP]", 1), ("[CLS]", 0))),
                            ("roberta", processors.RobertaProcessing(("</s>", 3), ("<s>", 2)))]:
        tok = Tokenizer(models.BPE(vocab, []))
        tok.post_processor = processor
        cases = []
        # No empty second text: transformers reads one as no pair, `tokenizers` as an empty one.
        for first, second in [("ab", "c"), ("cc", "bab"), ("", "a")]:
            cases.append({"first": first, "second": second,
                          "ids": tok.encode(first, second).ids,
                          "ids_plain": tok.encode(first, second, add_special_tokens=False).ids})
        doc["processors"][name] = {"tokenizer_json": tok.to_str(), "pairs": cases}
        print(name, cases[0]["ids"])
    with open(os.path.join(FIXTURES, "pairs.json"), "w") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
