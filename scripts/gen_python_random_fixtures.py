#!/usr/bin/env python3
"""Builds the fixture for cli/python_random: what CPython's own `random` module draws.

`vllm bench serve` samples ShareGPT with Python's global `random` (vllm/benchmarks/datasets.py):
ShareGPTDataset.load_data calls random.seed(seed) and random.shuffle(conversations), and
maybe_oversample_requests calls random.seed(seed) again, then random.choice(samples) once per
missing request. headroom's PythonRandom replays those draws so that the same --seed picks the
same conversations. This script records, from CPython itself, for seeds 0, 1, 42, 2^32 + 7,
2^63 - 1 and -5 (Python seeds by the absolute value):

  getrandbits  the first 8 getrandbits(32) after random.seed(seed), and getrandbits(k) for
               k = 1, 5, 17, 31, 33, 64 after reseeding (one draw after another)
  shuffles     random.seed(seed); random.shuffle(list(range(n))) for n = 0, 1, 2, 3, 10, 257
  choices      random.seed(seed); [random.choice(range(m)) for 40 draws] for m = 1, 7, 8, 1000
  sharegpt     vLLM's whole ShareGPT sampling over 60 conversations whose lengths (in words,
               one token each) are given: the shuffle, its is_valid_sequence filter (a prompt and
               a reply of at least 4 tokens, a prompt of at most 1024, at most 2048 in all) up to
               num_prompts, then the oversampling; the prompt lengths in the order they are sent

Writes tests/cli/fixtures/python_random.json. Standard library only.
"""
import json
import os
import random
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli", "fixtures",
                   "python_random.json")
SEEDS = [0, 1, 42, 2**32 + 7, 2**63 - 1, -5]


def is_valid_sequence(prompt_len, output_len, skip_min_output_len_check):
    # vllm/benchmarks/dataset_utils.py's defaults: min_len 4, max_prompt_len 1024,
    # max_total_len 2048.
    if prompt_len < 4 or (not skip_min_output_len_check and output_len < 4):
        return False
    return prompt_len <= 1024 and prompt_len + output_len <= 2048


def sharegpt(seed, lengths, num_prompts, output_len=None):
    """vLLM's ShareGPTDataset.load_data + sample + maybe_oversample_requests on (prompt, reply)
    token counts; returns the (prompt_len, output_len) pairs in the order they are sent."""
    data = list(lengths)
    random.seed(seed)
    random.shuffle(data)
    samples = []
    for prompt_len, reply_len in data:
        if len(samples) >= num_prompts:
            break
        new_output_len = reply_len if output_len is None else output_len
        if not is_valid_sequence(prompt_len, new_output_len, output_len is not None):
            continue
        samples.append([prompt_len, new_output_len])
    if len(samples) < num_prompts:
        random.seed(seed)
        samples.extend([random.choice(samples) for _ in range(num_prompts - len(samples))])
    return samples


def main():
    rng = random.Random(2024)  # the synthetic conversations' lengths
    lengths = []
    for _ in range(60):
        lengths.append([rng.choice([2, 3, 4, 5, 9, 40, 300, 1024, 1100]),
                        rng.choice([1, 3, 4, 8, 100, 1024, 1500])])
    cases = []
    for seed in SEEDS:
        random.seed(seed)
        first = [random.getrandbits(32) for _ in range(8)]
        random.seed(seed)
        small = [[k, random.getrandbits(k)] for k in (1, 5, 17, 31, 33, 64)]
        shuffles = []
        for n in (0, 1, 2, 3, 10, 257):
            random.seed(seed)
            x = list(range(n))
            random.shuffle(x)
            shuffles.append(x)
        choices = []
        for m in (1, 7, 8, 1000):
            random.seed(seed)
            choices.append([m, [random.choice(range(m)) for _ in range(40)]])
        cases.append({"seed": seed, "getrandbits32": first, "getrandbits": small,
                      "shuffles": shuffles, "choices": choices,
                      "sharegpt": [
                          {"num_prompts": 10, "output_len": None,
                           "sent": sharegpt(seed, lengths, 10)},
                          {"num_prompts": 100, "output_len": None,
                           "sent": sharegpt(seed, lengths, 100)},
                          {"num_prompts": 30, "output_len": 2,
                           "sent": sharegpt(seed, lengths, 30, output_len=2)}]})
    with open(OUT, "w") as f:
        json.dump({"generator": "scripts/gen_python_random_fixtures.py",
                   "python": sys.version.split()[0], "conversations": lengths, "cases": cases},
                  f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
