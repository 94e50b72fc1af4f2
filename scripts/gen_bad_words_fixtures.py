#!/usr/bin/env python3
"""Builds the fixtures of vLLM's `bad_words` sampling parameter.

vLLM (SamplingParams.update_from_tokenizer) turns each bad word into token sequences: the word
with its leading whitespace removed (Python's str.lstrip), tokenized without special tokens; and
" " + that, kept only when it has as many tokens as the first and a different first token (the
word in the middle of text). While sampling (vllm/v1/sample/ops/bad_words.py) a sequence's last
token is banned (logit -inf) at a step whose output so far ends with the sequence's other tokens;
only the output counts, not the prompt, so a one-token word is banned at every step.

Two parts, each run with the interpreter that has its library:

  tokenizers   tests/router/tokenizer/fixtures/bad_words.json: the token sequences of a list of
               words (ASCII, a contraction, accents, CJK, Unicode spaces Python strips, each
               tokenizer's own added token) for every tokenizer fixture, from Hugging Face
               `tokenizers` (the version of scripts/requirements-fixtures.txt, as the parity
               fixtures). Run: build/venv/bin/python scripts/gen_bad_words_fixtures.py tokenizers
  model        tests/worker/fixtures/llama-gqa/bad_words.json: greedy generations of the llama-gqa
               fixture with bad words, by transformers (float32 CPU over the saved weights, as
               its other fixtures), the ban written out as vLLM's rule over the output. The words
               are bytes (the router's byte tokenizer serves that fixture: one token per byte, so
               the spaced form never has as many tokens). Where the prompt plays no part,
               transformers' own generate(bad_words_ids=...) is asserted to give the same tokens;
               where it does (a word that starts at the prompt's end), it is asserted to differ:
               transformers matches over prompt + output, vLLM over the output only. A case is
               kept only if every step's chosen token leads the next by MARGIN in logit.
               Run: build/venv-fixtures/bin/python scripts/gen_bad_words_fixtures.py model
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZERS = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures")
MODEL = os.path.join(ROOT, "tests", "worker", "fixtures", "llama-gqa")
MARGIN = 2e-3

WORDS = ["hello", " hello", "Hello world", "the", "don't", "über", "日本語", "a", "x7",
         "\u3000hello", "\xa0 tab\tbed", "\n\nnew"]
# Each fixture's own added token (matched in the text even without special tokens).
ADDED = {"gpt2": "hello_world", "llama3": "<|eot_id|>", "qwen2": "foo", "llama2": "wow",
         "mistral": "[INST]", "phi4": "<|end|>", "gemma": "<end_of_turn>"}


def bad_words_token_ids(words, encode):
    """vLLM's rule: a list of token sequences for `words`."""
    out = []
    for word in words:
        plain = encode(word.lstrip())
        assert plain, f"{word!r} tokenizes to nothing"
        out.append(plain)
        spaced = encode(" " + word.lstrip())
        if spaced[0] != plain[0] and len(spaced) == len(plain):
            out.append(spaced)
    return out


def tokenizers_part():
    import tokenizers
    cases = {}
    for name in sorted(ADDED):
        tok = tokenizers.Tokenizer.from_file(os.path.join(TOKENIZERS, name, "tokenizer.json"))

        def encode(text, tok=tok):
            return tok.encode(text, add_special_tokens=False).ids

        cases[name] = [{"word": w, "ids": bad_words_token_ids([w], encode)}
                       for w in WORDS + [ADDED[name]]]
    out = {"generator": "scripts/gen_bad_words_fixtures.py tokenizers",
           "tokenizers": tokenizers.__version__,
           "notes": "vLLM's bad_words token sequences per tokenizer fixture: the word lstripped, "
                    "tokenized without special tokens; then ' ' + it where that has as many "
                    "tokens and a different first one",
           "tokenizers_cases": cases}
    path = os.path.join(TOKENIZERS, "bad_words.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


def model_part():
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    model.generation_config.eos_token_id = None  # the cases run with ignore_eos

    def encode(text):  # the router's byte tokenizer
        return list(text.encode())

    def generate(prompt, banned_sequences, max_tokens, min_tokens_banned=()):
        """Greedy, vLLM's ban over the output (and min_tokens' ban of stop tokens, here for the
        whole output); returns (tokens, smallest margin)."""
        out, margin = [], float("inf")
        for _ in range(max_tokens):
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([prompt + out]),
                               use_cache=False).logits[0, -1].float()
            for token in min_tokens_banned:
                logits[token] = float("-inf")
            for seq in banned_sequences:
                if len(seq) - 1 <= len(out) and (len(seq) == 1 or out[-(len(seq) - 1):] == seq[:-1]):
                    logits[seq[-1]] = float("-inf")
            top = torch.topk(logits, 2)
            margin = min(margin, float(top.values[0] - top.values[1]))
            out.append(int(top.indices[0]))
        return out, margin

    def transformers_generate(prompt, banned_sequences, max_tokens):
        sequences = model.generate(torch.tensor([prompt]), max_new_tokens=max_tokens,
                                   do_sample=False, bad_words_ids=banned_sequences,
                                   pad_token_id=0)
        return sequences[0, len(prompt):].tolist()

    prompt = [34, 2, 239, 195, 71, 163, 54]  # expected.json's second prompt; it ends with "6"
    max_tokens = 12
    plain, margin = generate(prompt, [], max_tokens)
    assert margin >= MARGIN, margin
    # Words from the plain greedy output's bytes: "D" is its first token, "DT" its first two,
    # ">1" two later ones (given with a leading space, which vLLM strips), "6D" runs from the
    # prompt's last token into the first generated one; with "DT", "V" bans the token that
    # replaces "T".
    assert plain[:2] == [ord("D"), ord("T")] and plain[7:9] == [ord(">"), ord("1")], plain
    # With min_tokens = max_tokens a stop token id is banned at every step too: the token "D"'s
    # ban leaves first.
    stop = generate(prompt, [[ord("D")]], 1)[0][0]
    cases = []
    for name, words, prompt_matters, stops in [
            ("a one-token word is banned at every step", ["D"], False, []),
            ("a two-token word bans its second token after its first", ["DT"], False, []),
            ("leading whitespace is stripped from a word", [" >1"], False, []),
            ("every word bans", ["DT", "V"], False, []),
            ("only the output counts, not the prompt", ["6D"], True, []),
            ("with min_tokens banning a stop token id", ["D"], False, [stop])]:
        sequences = bad_words_token_ids(words, encode)
        tokens, margin = generate(prompt, sequences, max_tokens, stops)
        assert margin >= MARGIN, (name, margin)
        theirs = transformers_generate(prompt, sequences + [[t] for t in stops], max_tokens)
        if prompt_matters:
            assert theirs != tokens and tokens == plain, (name, theirs, tokens)
        else:
            assert theirs == tokens != plain, (name, theirs, tokens, plain)
        cases.append({"name": name, "bad_words": words, "token_ids": sequences,
                      "stop_token_ids": stops, "min_tokens": max_tokens if stops else 0,
                      "tokens": tokens, "margin": margin,
                      "checked_against_transformers_generate": not prompt_matters})
    out = {"generator": "scripts/gen_bad_words_fixtures.py model",
           "torch": torch.__version__, "transformers": transformers.__version__,
           "margin": MARGIN,
           "notes": "greedy, ignore_eos, vLLM's bad-word ban over the output; the words are bytes "
                    "(the byte tokenizer)",
           "prompt": prompt, "max_tokens": max_tokens, "plain": plain, "cases": cases}
    path = os.path.join(MODEL, "bad_words.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for case in cases:
        print(case["name"], round(case["margin"], 4), case["tokens"])
    print("wrote", path)


if __name__ == "__main__":
    part = sys.argv[1] if len(sys.argv) > 1 else ""
    if part == "tokenizers":
        tokenizers_part()
    elif part == "model":
        model_part()
    else:
        sys.exit("usage: gen_bad_words_fixtures.py tokenizers|model")
