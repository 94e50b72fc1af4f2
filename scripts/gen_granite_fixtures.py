#!/usr/bin/env python3
"""Builds the fixture for the granite tool-call parser (router/openai/tool_parser.h;
tests/router/openai/granite_calls_test.cc).

Granite 3.x writes its calls as the whole reply: a JSON array of {"name", "arguments"} objects,
after `<|tool_call|>` (Granite 3.0's special token, present only when special tokens are kept)
or the plain string `<tool_call>` (Granite 3.1 and later):

    <tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]

vLLM's `granite` parser strips the reply (Python's str.strip), removes the token and then the
string as prefixes (str.removeprefix, in that order, with no strip between), strips the start
again, and requires what is left to start with '[' and to be, under json.loads, a list whose
every element has a "name" (a string, as its FunctionCall model requires) and "arguments" (any
JSON, given back as json.dumps(..., ensure_ascii=False)). Anything else, or an exception, returns
the reply unchanged as content. The labels here are that algorithm run by Python's own str and
json modules.

Differences of headroom's own, applied here so the fixture states them (docs/router.md):
  - an empty array `[]` is content (vLLM answers neither content nor calls, losing the text);
  - the JSON must be what the router holds: integers within int64, finite numbers (json.loads
    also takes NaN and Infinity), strings without lone surrogates, at most 128 levels deep; an
    array that is not is content;
  - a key given twice in one object: both keep the last value, at the first key's place (as
    json.dumps(json.loads(...)) writes it).

Inputs: hand-written replies and random mutations of them (a character dropped, replaced or
inserted), which probe the prefixes, the brackets and the JSON.

Writes tests/router/openai/fixtures/granite_calls.json: {generator, cases: [{text, content,
calls: [{name, arguments}], repeated_key}]}, one case per line; repeated_key says some object of
the reply's JSON gives a key twice (which a stream that sent the first cannot follow). Standard
library only; deterministic (seeded).
"""
import json
import os
import platform
import random

import text_mutation
from router_json import dumps_in_random_style, fits, random_calls, write_cases

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "router", "openai",
                   "fixtures", "granite_calls.json")

BOT_TOKEN = "<|tool_call|>"
BOT_STRING = "<tool_call>"


def expected(text):
    """(content, calls) as vLLM's extract_tool_calls computes them, with the differences above."""
    stripped = text.strip().removeprefix(BOT_TOKEN).removeprefix(BOT_STRING).lstrip()
    if not stripped or stripped[0] != "[":
        return text, []
    try:
        raw = json.loads(stripped)
        if not isinstance(raw, list):
            raise ValueError("not a list")
        calls = []
        for call in raw:
            name = call["name"]
            if not isinstance(name, str):
                raise ValueError("name is not a string")
            calls.append({"name": name,
                          "arguments": json.dumps(call["arguments"], ensure_ascii=False)})
    except Exception:  # noqa: BLE001 (vLLM catches everything the same way)
        return text, []
    if not calls or not fits(raw, 1):
        return text, []
    return None, calls


def repeated_key(text):
    """Whether the JSON the reply's array would be read from gives some key twice."""
    found = []

    def hook(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            found.append(True)
        return dict(pairs)

    stripped = text.strip().removeprefix(BOT_TOKEN).removeprefix(BOT_STRING).lstrip()
    try:
        json.loads(stripped, object_pairs_hook=hook)
    except ValueError:
        return False
    return bool(found)


def array(*calls):
    return json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False)


REPLIES = [
    BOT_STRING + array(("get_weather", {"city": "Paris", "days": 3})),
    array(("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "CET"})),
    BOT_TOKEN + array(("ping", {})),
    BOT_TOKEN + BOT_STRING + array(("ping", {"n": 1})),
    BOT_TOKEN + " " + BOT_STRING + array(("ping", {"n": 1})),  # no strip between: content
    "  \n" + BOT_STRING + "\n  " + array(("search", {"q": "a \"quoted\" term", "k": 5})) + "\n\n",
    array(("f", {"x": 1.5, "y": -2, "z": 1e21, "w": 0.1, "big": 12345678901234567890})),
    array(("f", {"nested": {"a": [1, {"b": None}], "t": True, "f": False}})),
    array(("f", "a string argument")),
    array(("f", [1, 2, 3])),
    array(("f", None)),
    array(("unicode", {"s": "naïve café ☕ 中文 \U0001F600"})),
    '[{"name": "f", "arguments": {"s": "\\u00e9\\ud83d\\ude00\\n\\t\\/"}}]',
    '[{"name": "f", "arguments": {"s": "\\ud800"}}]',
    '[{"name": "f", "arguments": {"a": NaN}}]',
    '[{"name": "f", "arguments": {"a": 1}, "arguments": {"a": 2}}]',
    '[{"arguments": {"a": 1}, "name": "f"}]',
    '[{"name": "f", "arguments": {"a": 1, "a": 2, "b": 3}}]',
    '[{"name": 7, "arguments": {}}]',
    '[{"name": "f"}]',
    '[{"name": "f", "arguments": {}}, 5]',
    "[]",
    "[ ]",
    '{"name": "f", "arguments": {}}',
    "I will call a tool: " + array(("f", {})),
    array(("f", {})) + " and some text after",
    array(("f", {})) + "\n" + array(("g", {})),
    "Sure, the weather in Paris is sunny.",
    "[1, 2, 3] are the numbers.",
    "\u00a0" + array(("f", {"nbsp": "before"})),
    "\u3000" + BOT_STRING + array(("f", {})),
    BOT_STRING,
    BOT_STRING + "[",
    BOT_STRING + '[{"name": "f", "arguments": {"a": 1}',
    "",
    "   ",
]

def generated_replies(rng, count):
    """Valid call arrays of random calls, written with json.dumps' and other spacings."""
    out = []
    for _ in range(count):
        body = dumps_in_random_style(rng, random_calls(rng, "arguments"))
        out.append(rng.choice(["", BOT_STRING, BOT_STRING + "\n", " "]) + body +
                   rng.choice(["", "\n", " \n\n"]))
    return out


ALPHABET = '[]{}":, \n\\-+.0123456789eEnulltrfas_<>|/'


def main():
    rng = random.Random(20261124)
    cases = []
    replies = REPLIES + generated_replies(random.Random(7), 80)
    for text in text_mutation.with_mutations(rng, replies, ALPHABET, per_text=6):
        content, calls = expected(text)
        cases.append({"text": text, "content": content, "calls": calls,
                      "repeated_key": repeated_key(text)})
    write_cases(OUT, {"generator": f"scripts/gen_granite_fixtures.py, Python "
                                   f"{platform.python_version()}"}, cases)


if __name__ == "__main__":
    main()
