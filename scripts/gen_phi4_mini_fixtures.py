#!/usr/bin/env python3
"""Builds the fixture for the phi4_mini_json tool-call parser (router/openai/tool_parser.h;
tests/router/openai/phi4_mini_calls_test.cc).

Phi-4-mini-instruct writes its calls as `functools` and a JSON array of {"name", "arguments"}
objects, after any text:

    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]

vLLM's `phi4_mini_json` parser searches the reply for the regex `functools\\[(.*?)\\]` (DOTALL,
non-greedy), json.loads '[' + the group + ']', and gives each element's "arguments" (or, when it
has none, "parameters") back as json.dumps(..., ensure_ascii=False); with no match the reply is
content; with a match the content is None, and text after the match is dropped.

headroom reads the same format with these differences, which the labels here state
(docs/router.md):
  - the array is read whole (json.JSONDecoder.raw_decode from its '['), not up to the first ']'
    (vLLM's group stops inside a call whose arguments hold an array, and then answers no calls
    and no content);
  - the text before `functools[` is content (vLLM drops it), and a reply whose array does not
    parse, is empty or holds something that is not a call is content whole;
  - an object with both "arguments" and "parameters" gives whichever comes first (as a stream
    that sent it must; vLLM takes "arguments");
  - the JSON must be what the router holds: integers within int64, finite numbers, strings
    without lone surrogates, at most 128 levels deep; an array that is not is content;
  - a key given twice in one object: the last value at the first key's place, as json.loads
    reads it.

Inputs: hand-written replies, generated ones and random mutations of them (a character dropped,
replaced or inserted), which probe the tag, the brackets and the JSON.

Writes tests/router/openai/fixtures/phi4_mini_calls.json: {generator, cases: [{text, content,
calls: [{name, arguments}], repeated_key}]}, one case per line. Standard library only;
deterministic (seeded).
"""
import json
import os
import platform
import random

import text_mutation
from router_json import STRINGS, dumps_in_random_style, fits, random_calls, write_cases

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "router", "openai",
                   "fixtures", "phi4_mini_calls.json")

TAG = "functools["


def read_array(text, hook=None):
    """The JSON array after the first `functools[` (None when there is no tag); raises
    ValueError when what follows the tag is not JSON."""
    at = text.find(TAG)
    if at < 0:
        return None, at
    decoder = json.JSONDecoder(object_pairs_hook=hook)
    value, _ = decoder.raw_decode(text, at + len(TAG) - 1)
    return value, at


def expected(text):
    """(content, calls) by headroom's rule (the docstring's differences from vLLM applied)."""
    try:
        raw, at = read_array(text)
        if raw is None:
            return text, []
        if not isinstance(raw, list) or not raw:
            raise ValueError("not a non-empty list")
        calls = []
        for call in raw:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise ValueError("not a call")
            key = next(k for k in call if k in ("arguments", "parameters"))
            calls.append({"name": call["name"],
                          "arguments": json.dumps(call[key], ensure_ascii=False)})
    except (ValueError, StopIteration, RecursionError):
        return text, []
    if not fits(raw, 1):
        return text, []
    return (text[:at] or None), calls


def repeated_key(text):
    """Whether the array after the tag gives some key twice in one object."""
    found = []

    def hook(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            found.append(True)
        return dict(pairs)

    try:
        read_array(text, hook)
    except (ValueError, RecursionError):
        return False
    return bool(found)


def array(*calls, key="arguments"):
    return json.dumps([{"name": n, key: a} for n, a in calls], ensure_ascii=False)


REPLIES = [
    "functools" + array(("get_weather", {"city": "Paris", "days": 3})),
    "functools" + array(("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "CET"})),
    "functools" + array(("ping", {})),
    "functools" + array(("search", {"tags": ["a", "b"], "k": 5})),  # vLLM stops at "b"]
    "functools" + array(("f", {"m": [[1, 2], [3]]}), ("g", {"xs": []})),
    "functools" + array(("f", {"q": "a ] in a string", "r": "[not an array"})),
    "functools" + array(("lookup", {"id": 7}), key="parameters"),
    'functools[{"name": "f", "parameters": {"a": 1}, "arguments": {"a": 2}}]',
    'functools[{"name": "f", "arguments": {"a": 1}, "parameters": {"a": 2}}]',
    'functools[{"arguments": {"a": 1}, "name": "f"}]',
    'functools[{"name": "f", "arguments": {"a": 1}, "arguments": {"a": 2}}]',
    'functools[{"name": "f", "arguments": {"a": 1, "a": 2, "b": 3}}]',
    'functools[{"name": 7, "arguments": {}}]',
    'functools[{"name": "f"}]',
    'functools[{"name": "f", "arguments": {}}, 5]',
    'functools[{"name": "f", "arguments": {"a": NaN}}]',
    'functools[{"name": "f", "arguments": {"s": "\\ud800"}}]',
    'functools[{"name": "f", "arguments": {"s": "\\u00e9\\ud83d\\ude00\\n\\t\\/"}}]',
    "functools" + array(("f", {"x": 1.5, "y": -2, "z": 1e21, "w": 0.1,
                              "big": 12345678901234567890})),
    "functools" + array(("f", "a string argument")),
    "functools" + array(("f", None)),
    "functools" + array(("unicode", {"s": "naïve café ☕ 中文 \U0001F600"})),
    "functools[]",
    "functools[ ]",
    "functools []",
    "Functools" + array(("f", {})),
    "I will look that up. functools" + array(("get_weather", {"city": "Rome"})),
    "  \nfunctools" + array(("f", {})),
    "functools" + array(("f", {})) + " and text after the array",
    "functools" + array(("f", {})) + "\nfunctools" + array(("g", {})),
    "functools" + array(("f", {})) + "]",
    "import functools\nfunctools.reduce(lambda a, b: a + b, [1, 2, 3])",
    "Use functools[0] to index it.",
    "The weather in Paris is sunny.",
    "functools",
    "functools[",
    'functools[{"name": "f", "arguments": {"a": 1}',
    'functools[{"name": "f", "arguments": {"a": [1, 2}}]',
    "",
]


def generated_replies(rng, count):
    """Valid call arrays of random calls, written with json.dumps' and other spacings."""
    strings = STRINGS + ["x]y", "[z"]  # brackets inside strings
    out = []
    for _ in range(count):
        key = rng.choice(["arguments", "arguments", "parameters"])
        body = dumps_in_random_style(rng, random_calls(rng, key, strings))
        out.append(rng.choice(["", "", "Let me check.\n", " "]) + "functools" + body +
                   rng.choice(["", "\n", " done"]))
    return out


ALPHABET = '[]{}":, \n\\-+.0123456789eEnulltrfas_functools'


def main():
    rng = random.Random(20261124)
    cases = []
    replies = REPLIES + generated_replies(random.Random(11), 80)
    for text in text_mutation.with_mutations(rng, replies, ALPHABET, per_text=6):
        content, calls = expected(text)
        cases.append({"text": text, "content": content, "calls": calls,
                      "repeated_key": repeated_key(text)})
    write_cases(OUT, {"generator": f"scripts/gen_phi4_mini_fixtures.py, Python "
                                   f"{platform.python_version()}"}, cases)


if __name__ == "__main__":
    main()
