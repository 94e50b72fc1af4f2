#!/usr/bin/env python3
"""Builds the fixtures for the pythonic tool-call parser (router/openai/tool_parser.h;
tests/router/openai/tools_test.cc, whole replies; pythonic_calls_test.cc, streamed).

vLLM's `pythonic` and `llama4_pythonic` parsers (Llama 3.2, Llama 4, ToolACE) read a reply that
is a Python list of calls with keyword arguments, `[get_weather(city="Paris", days=3)]`, as
Python's own parser reads it. The labels here come from Python itself: `ast.parse` of the reply
(after the optional <|python_start|> ... <|python_end|> tags of Llama 4), a list of calls to plain
names with keyword arguments only, each value what `ast.literal_eval` makes of it; the calls'
arguments then written by `json.dumps(ensure_ascii=False)` (what the router returns). Anything
else (text around the list, positional arguments, a non-literal value, a repeated keyword, a
value JSON cannot hold) makes the reply ordinary content. One restriction of headroom's own:
dict keys must be strings (json.dumps would write 1 as "1", but Python also merges 1 and True
into one key, which the router does not model), so other keys make the reply content too.

Inputs: hand-written replies (strings with every quote and escape style, numbers, nested lists,
dicts and tuples, unary signs) and random mutations of them (a character dropped, replaced or
inserted), which probe the edges of the syntax.

Writes tests/router/openai/fixtures/pythonic_calls.json: {generator, cases: [{text, calls:
[{name, arguments}] or null, repeated_key}]}; repeated_key says a call of the reply gives a keyword
twice (the dict keeps its first place and its last value, which a stream that sent the first
cannot follow). Standard library only; deterministic (seeded).
"""
import ast
import json
import os
import platform
import random

import text_mutation
from router_json import fits

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "router", "openai",
                   "fixtures", "pythonic_calls.json")

REPLIES = [
    '[get_weather(city="Paris")]',
    "[get_weather(city='San Francisco', metric='celsius'), get_time()]",
    '[get_time()]',
    '[f(a=1, b=-2, c=+3, d=1.5, e=-0.25, f=1e3, g=2E-2, h=.5, i=5., j=1_000, k=0x1F)]',
    '[f(t=True, u=False, n=None)]',
    '[f(a=9223372036854775807, b=-9223372036854775808)]',
    '[f(a=9223372036854775808)]',
    '[f(a=0x_1F, b=0b_101, c=0o_17, d=0XfF, e=00, f=0_0, g=0e5, h=01.5)]',
    '[f(a=0777)]',
    '[f(a=1_)]',
    '[f(a=-(2), b=+( (1.5) ), c=-((0x10)))]',
    '[f(c=-(-1))]',
    '[f(c=-(1,))]',
    '[f(a=--1)]',
    '[f(a=-True)]',
    '[f(if=1)]',
    '[f(True=1)]',
    '[None(a=1)]',
    '[f(match=1, case=2, _=3)]',
    '[f(a="x" \'y\' r"\\z", b=("p"\n "q"))]',
    '[f(a="\\d\\ \\q")]',
    '[f(a=r"\\"")]',
    '[f(a="\\ud83d\\ude00")]',
    '[f(a="\\U00110000")]',
    '[f(a="\\x4")]',
    '[f(a==1)]',
    '[f(a=' + '(' * 50 + '1,' + ')' * 50 + ', b=' + '(' * 40 + '2' + ')' * 40 + ')]',
    '[f(a="line\nbreak")]',
    '[f(a=\'\'\'line\nbreak\'\'\')]',
    '[f (a = 1) , g( )]',
    '[f(xs=[1, [2, 3], []], d={"k": "v", "n": {"m": [1]}}, tup=(1, 2), one=(5,))]',
    '[f(s="tab\\there", q=\'it\\\'s\', dq="say \\"hi\\"", bs="back\\\\slash", nl="a\\nb")]',
    '[f(u="\\u00e9t\\u00e9", x="\\x41", big="\\U0001F600", oct="\\101", raw=r"C:\\dir\\n")]',
    '[f(e="é ☃ 😀", empty="", d={"a": 1, "a": 2, "b": {}})]',
    '[f(d={1: "int key"})]',
    '[f(t="""triple "quoted" text""", t2=\'\'\'other\'\'\')]',
    '  \n[f(a=1)]\n  ',
    '[\n  f(\n    a=1,\n    b="x",\n  ),\n  g(c=[1,\n 2]),\n]',
    '<|python_start|>[get_weather(city="Oslo")]<|python_end|>',
    '<|python_start|>[a(x=1), b(y="z")]<|python_end|>',
    '[f(a=1), g(b=2), h(c=3)]',
    'Sure! [get_weather(city="Paris")]',
    '[get_weather(city="Paris")] done',
    '[get_weather("Paris")]',
    '[obj.method(a=1)]',
    '[f(a=1, a=2)]',
    '[f(a=x)]',
    '[f(a=1 + 2)]',
    '[f(a={1, 2})]',
    '[f(a=b"bytes")]',
    '[f(a=f"{x}")]',
    '[f(a=1j)]',
    '[f(a=1e999)]',
    '[f(a=99999999999999999999)]',
    '[f(**kw)]',
    '[]',
    'get_weather(city="Paris")',
    '[f(a="unterminated)]',
    '[f(a=[1, 2)]',
    'The answer is 42.',
    '[1, 2, 3]',
]

ALPHABET = "[](){},=:'\"\\ abcfnx0123._-+eTN\n"


def list_body(text):
    """The reply without the whitespace and Llama 4's tags around it."""
    body = text.strip()
    if body.startswith("<|python_start|>"):
        body = body[len("<|python_start|>"):]
        if body.endswith("<|python_end|>"):
            body = body[:-len("<|python_end|>")]
        body = body.strip()
    return body


def expected(text):
    """What the router must read out of `text`: its calls, or None (the reply is content)."""
    body = list_body(text)
    if not body.startswith("["):
        return None
    try:
        module = ast.parse(body)
    except (SyntaxError, ValueError):
        return None
    if len(module.body) != 1 or not isinstance(module.body[0], ast.Expr):
        return None
    value = module.body[0].value
    if not isinstance(value, ast.List) or not value.elts:
        return None
    calls = []
    for call in value.elts:
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
            return None
        arguments = {}
        for keyword in call.keywords:
            if keyword.arg is None:  # **kwargs
                return None
            try:
                arguments[keyword.arg] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
        try:
            text_arguments = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
            text_arguments.encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError):
            return None
        if not fits(arguments):
            return None
        calls.append({"name": call.func.id, "arguments": text_arguments})
    return calls


def repeated_key(text, calls):
    """Some call of the reply `calls` were read from gives a keyword twice."""
    if calls is None:
        return False
    return any(len({k.arg for k in call.keywords}) < len(call.keywords)
               for call in ast.parse(list_body(text)).body[0].value.elts)


def main():
    rng = random.Random(20261124)
    cases = []
    for text in text_mutation.with_mutations(rng, REPLIES, ALPHABET):
        calls = expected(text)
        cases.append({"text": text, "calls": calls, "repeated_key": repeated_key(text, calls)})
    fixture = {"generator": f"scripts/gen_pythonic_fixtures.py, Python {platform.python_version()}",
               "cases": cases}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")
    read = sum(1 for c in cases if c["calls"] is not None)
    print(f"wrote {OUT}: {len(cases)} replies, {read} read as calls")


if __name__ == "__main__":
    main()
