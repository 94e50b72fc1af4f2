#!/usr/bin/env python3
"""Builds the fixtures for the qwen3_coder and seed_oss tool-call parsers
(router/openai/qwen3_coder_calls.h; tests/router/openai/qwen3_coder_calls_test.cc).

Qwen3-Coder writes a call as XML-like tags, each parameter's value as bare text:

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

vLLM's `qwen3_coder` parser reads such a reply with regular expressions and converts each value
by the type the request's tool gives the parameter (int(), float(), json.loads,
ast.literal_eval, ...). The labels here are what that algorithm, as vLLM publishes it, computes
with Python's own `re`, `int`, `float`, `json` and `ast`: the regular expressions below are vLLM's
patterns, so their lazy matches and `$` (which also matches before a final newline) decide where a
call or a value ends. The router returns the arguments as `json.dumps(..., ensure_ascii=False)`.

Seed-OSS writes the same functions inside <seed:tool_call> tags, and vLLM's `seed_oss` parser
(adapted from qwen3_coder's) reads them with these changes: a parameter's value ends only at
</parameter> or the function's end (`<parameter=(.*?)</parameter>|<parameter=(.*?)$`); a
parameter whose schema has no "type" is a string (an anyOf too); array and list types go to
ast.literal_eval alone (object and dict types try json.loads first).

Differences of headroom's own, applied here so the fixture states them (docs/router.md):
  - a reply in which no call is read is content whole (vLLM answers only the text before the
    first tag when there is some);
  - a value json.loads or ast.literal_eval makes must be JSON the router holds: integers within
    int64, finite floats, string dict keys, strings without lone surrogates, no sets, bytes or
    complex numbers, nesting at most 128 deep. A json.loads value that is not goes on to
    ast.literal_eval (as a json.loads failure does); a literal_eval value that is not leaves the
    parameter its text (vLLM: the text, or for sets, bytes and complex numbers, which json.dumps
    refuses, the whole reply as content);
  - int() and float() read ASCII digits and whitespace only (Python also takes other Unicode
    digits and spaces); the replies here are ASCII where a number is read.

Inputs: hand-written replies and random mutations of them (a character dropped, replaced or
inserted), which probe the edges of the tags and of the conversions.

Writes tests/router/openai/fixtures/qwen3_coder_calls.json and seed_oss_calls.json (the replies
below with Seed-OSS's tags, and its template's own shape): {generator, tools, cases: [{text,
content, calls: [{name, arguments}], raised}]}, raised saying vLLM's parser raised on the reply
(so it is content). Standard library only; deterministic (seeded).
"""
import ast
import json
import os
import platform
import random
import re

import text_mutation
from router_json import fits, write_cases

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "router",
                        "openai", "fixtures")

# The request's tools, as the router normalizes them (docs/router.md, "Function calling").
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": None, "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "temp": {"type": "number"},
            "metric": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object"},
            "maybe": {"type": ["integer", "null"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "untyped": {"description": "no type"},
            "unit": {"type": "enum"},
            "odd": {"type": "null"},
        }}}},
    {"type": "function", "function": {"name": "write_file", "description": "Writes a file",
                                      "parameters": {"type": "object", "properties": {
                                          "path": {"type": "string"},
                                          "content": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "ping", "description": None, "parameters": None}},
    # Parameters without "properties": vLLM takes the dict itself as the parameters' types.
    {"type": "function", "function": {"name": "flat", "description": None, "parameters": {
        "count": {"type": " Int64 "}, "ratio": {"type": "float"}, "flag": {"type": "bool"},
        "items": {"type": "list"}, "map": {"type": "dict"}, "big": {"type": "uint"}}}},
]

# vLLM's patterns (qwen3coder_tool_parser.py).
TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*?)$", re.DOTALL)
FUNCTION = re.compile(r"<function=(.*?)</function>|<function=(.*)$", re.DOTALL)
PARAMETER = re.compile(r"<parameter=(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)",
                       re.DOTALL)
# vLLM's seed_oss patterns (seed_oss_tool_parser.py).
SEED_TOOL_CALL = re.compile(r"<seed:tool_call>(.*?)</seed:tool_call>|<seed:tool_call>(.*?)$",
                            re.DOTALL)
SEED_PARAMETER = re.compile(r"<parameter=(.*?)</parameter>|<parameter=(.*?)$", re.DOTALL)


class WholeReplyIsContent(Exception):
    """vLLM's parser raised: the reply is returned as content."""


def arguments_config(name):
    for tool in TOOLS:
        if tool["function"]["name"] == name:
            params = tool["function"]["parameters"]
            if isinstance(params, dict) and "properties" in params:
                return params["properties"]
            return params if isinstance(params, dict) else {}
    return {}


def convert(value, name, config, seed=False):
    if value.lower() == "null":
        return None
    if name not in config:
        return value
    entry = config[name]
    if isinstance(entry, dict) and "type" in entry:
        kind = str(entry["type"]).strip().lower()
    elif isinstance(entry, dict) and "anyOf" in entry and not seed:
        kind = "object"
    else:
        kind = "string"
    if kind in ["string", "str", "text", "varchar", "char", "enum"]:
        return value
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(value)
        except (ValueError, TypeError):
            return value
    if kind.startswith(("num", "float")):
        try:
            number = float(value)
            # int(inf) raises OverflowError, which vLLM does not catch here.
            try:
                whole = int(number)
            except OverflowError as e:
                raise WholeReplyIsContent() from e
            return number if number - whole != 0 else whole
        except (ValueError, TypeError):
            return value
    if kind in ["boolean", "bool", "binary"]:
        return value.lower() == "true"
    json_first = (kind == "object" or kind.startswith("dict")) if seed else (
        kind in ["object", "array", "arr"] or kind.startswith(("dict", "list")))
    if json_first:
        try:
            loaded = json.loads(value)
            if fits(loaded):
                return loaded
        except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
            pass
    try:
        literal = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value
    return literal if fits(literal) else value


def parse_function(text, seed):
    end = text.find(">")
    if end == -1:
        if seed:
            raise ValueError("seed_oss's str.index raises: the whole reply is content")
        return None
    name = text[:end]
    config = arguments_config(name)
    arguments = {}
    matches = [m[0] if m[0] else m[1] for m in SEED_PARAMETER.findall(text[end + 1:])] if seed \
        else PARAMETER.findall(text[end + 1:])
    for match in matches:
        split = match.index(">")  # ValueError: the whole reply is content
        key = match[:split]
        value = match[split + 1:]
        if value.startswith("\n"):
            value = value[1:]
        if value.endswith("\n"):
            value = value[:-1]
        arguments[key] = convert(value, key, config, seed)
    return {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}


def expected(text, seed=False):
    """(content, calls, raised) as the router must return them for the whole reply `text`;
    raised: vLLM's parser raised (the reply is content)."""
    start_tag = "<seed:tool_call>" if seed else "<tool_call>"
    if "<function=" not in text:
        return text, [], False
    try:
        blocks = [m[0] if m[0] else m[1] for m in (SEED_TOOL_CALL if seed else TOOL_CALL).findall(text)]
        if not blocks:
            blocks = [text]
        bodies = []
        for block in blocks:
            bodies.extend(m[0] if m[0] else m[1] for m in FUNCTION.findall(block))
        if not bodies:
            return text, [], False
        calls = [parse_function(body, seed) for body in bodies]
        for call in calls:
            if call is not None:
                call["arguments"].encode("utf-8")
    except (WholeReplyIsContent, ValueError, UnicodeEncodeError):
        return text, [], True
    start = text.find(start_tag)
    if start < 0:
        start = text.find("<function=")
    content = text[:start] or None
    calls = [c for c in calls if c is not None]
    if not calls:
        # No call read: the whole reply is content. (vLLM's chat server answers the text before
        # the tag when there is some, dropping the rest; headroom keeps it, as its other parsers
        # do with a reply whose call does not parse.)
        return text, [], False
    return content, calls, False


def call(name, *params, close=True):
    """A call as Qwen3-Coder's chat template writes it."""
    out = f"<tool_call>\n<function={name}>\n"
    for key, value in params:
        out += f"<parameter={key}>\n{value}\n</parameter>\n"
    return out + ("</function>\n</tool_call>" if close else "")


REPLIES = [
    call("get_weather", ("city", "Paris")),
    call("get_weather", ("city", "San Francisco"), ("days", "3"), ("metric", "true")),
    "I'll check.\n\n" + call("get_weather", ("city", "Oslo")),
    "\n" + call("get_weather", ("city", "Oslo")),
    call("get_weather", ("city", "Paris")) + "\n" + call("write_file", ("path", "a.txt"),
                                                         ("content", "line 1\nline 2\n")),
    call("write_file", ("path", "x.py"), ("content", "def f():\n    return '<b>' \\ \"q\"\n\n")),
    call("write_file", ("content", "\n\nblank lines around\n\n")),
    call("get_weather", ("days", "1_000"), ("temp", "21.5")),
    call("get_weather", ("days", " -7 "), ("temp", "-0.0")),
    call("get_weather", ("days", "007"), ("temp", "1e3")),
    call("get_weather", ("days", "3.0"), ("temp", "abc")),
    call("get_weather", ("days", "99999999999999999999999"), ("temp", "1e23")),
    call("get_weather", ("temp", "1e400")),
    call("get_weather", ("temp", "nan")),
    call("get_weather", ("temp", "-inf")),
    call("get_weather", ("temp", ".5"), ("days", "+4")),
    call("get_weather", ("temp", "1_0.2_5"), ("days", "1__0")),
    call("get_weather", ("metric", "True")),
    call("get_weather", ("metric", "yes")),
    call("get_weather", ("city", "null"), ("days", "NULL")),
    call("get_weather", ("tags", '["a", "b"]'), ("opts", '{"x": 1, "y": [true, null]}')),
    call("get_weather", ("tags", "['a', 'b']"), ("opts", "{'x': (1, 2)}")),
    call("get_weather", ("tags", "not json"), ("opts", '{"a": 1, "a": 2}')),
    call("get_weather", ("tags", "[1e999]"), ("opts", "[NaN]")),
    call("get_weather", ("tags", "[99999999999999999999]"), ("opts", "{1, 2}")),
    call("get_weather", ("tags", '"just a string"'), ("opts", "5")),
    call("get_weather", ("maybe", "5"), ("either", "'quoted'")),
    call("get_weather", ("maybe", "Paris"), ("either", "[1, 2]")),
    call("get_weather", ("maybe", "1, 2"), ("either", "True")),
    call("get_weather", ("maybe", "b'x'"), ("either", "1j")),
    call("get_weather", ("maybe", "-5 # a comment"), ("either", "{'k': None}")),
    call("get_weather", ("maybe", "  7"), ("either", "\n  7")),
    call("get_weather", ("untyped", "42"), ("unit", "celsius"), ("odd", "[1]")),
    call("get_weather", ("unknown", "7"), ("city", "x")),
    call("get_weather", ("city", "a"), ("city", "b"), ("days", "1")),
    call("get_weather", ("city", "é ☃ 😀 \"quotes\" and \\ backslash"), ("days", "2")),
    call("ping"),
    call("ping", ("x", "1")),
    call("not_a_tool", ("a", "1"), ("b", "[1]")),
    call("flat", ("count", "12"), ("ratio", "2.50"), ("flag", "FALSE"), ("items", "[1, 2]"),
         ("map", "{}"), ("big", "18446744073709551616")),
    call("flat", ("items", "[true, null]"), ("map", '{"a": false}')),
    call("get_weather", ("city", "Paris"), close=False),
    call("get_weather", ("city", "Paris\n"), close=False),
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n\n",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n\n\n",
    "<tool_call>\n<function=get_weather</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather</function>\n<function=ping>\n</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather</tool_call>\n<tool_call><function=ping>\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n\n</function>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n3\n"
    "</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>",
    "<tool_call><function=get_weather><parameter=city>Paris</parameter><parameter=days>2"
    "</parameter></function></tool_call>",
    "<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>",
    "Sure: <function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>",
    "<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n"
    + call("write_file", ("path", "b")),
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n</function>\n"
    "<function=write_file>\n<parameter=path>\nB\n</parameter>\n</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather\n</tool_call>",
    "Hi <tool_call>\n<function=get_weather\n</tool_call>",
    "<tool_call>\n<function=>\n</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city\nParis\n</parameter>\n</function>\n"
    "</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=>\nx\n</parameter>\n</function>\n"
    "</tool_call>",
    "<tool_call>\n<tool_call>\n<function=ping>\n</function>\n</tool_call>",
    "<tool_call>\n</tool_call>",
    "<tool_call>\nno function here\n</tool_call>",
    "Plain text, no calls at all.",
    "<function=",
    "The tag <function= alone.",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nA</parameter>junk<parameter=days>\n5"
    "</parameter>\n</function>\n</tool_call> trailing text",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\n\n\nA\n\n\n</parameter>\n"
    "</function>\n</tool_call>",
    "<tool_call>\n<function=write_file>\n<parameter=content>\n<html>\n</parameter>\n"
    "</function>\n</tool_call>",
    "<tool_call>\n<function=a>b>\n<parameter=x>y>z\n</parameter>\n</function>\n</tool_call>",
]

ALPHABET = "<>/=\n _tolcaufnrime0123.,[]{}\"'\\-+eTN#"


def seed_call(name, *params):
    """A call as Seed-OSS's chat template writes it."""
    out = f"<seed:tool_call>\n<function={name}>\n"
    for key, value in params:
        out += f"<parameter={key}>{value}</parameter>\n"
    return out + "</function>\n</seed:tool_call>"


SEED_REPLIES = [r.replace("<tool_call>", "<seed:tool_call>").replace("</tool_call>", "</seed:tool_call>")
                for r in REPLIES] + [
    seed_call("get_weather", ("city", "Paris"), ("days", "3")),
    "\n" + seed_call("search_docs", ("tags", "['a', 'b']"), ("opts", "{'x': True}")),
    seed_call("get_weather", ("tags", '["a"]'), ("opts", '{"a": null}'), ("either", "[1]")),
    seed_call("get_weather", ("maybe", "True"), ("untyped", "None"), ("metric", "False")),
    seed_call("get_weather", ("city", "a\nb"), ("days", "4")) + seed_call("ping"),
    "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Oslo\n<parameter=days>2</parameter>\n"
    "</function>\n</seed:tool_call>",
    "<seed:tool_call>\n<function=get_weather\n</seed:tool_call>",
    "<seed:tool_call><function=get_weather><parameter=city>Rome",
]


def labelled(replies, seed, rng):
    cases = []
    for text in text_mutation.with_mutations(rng, replies, ALPHABET, per_text=8):
        content, calls, raised = expected(text, seed)
        cases.append({"text": text, "content": content, "calls": calls, "raised": raised})
    return cases


def main():
    header = {"generator": f"scripts/gen_qwen3_coder_fixtures.py, Python {platform.python_version()}",
              "tools": TOOLS}
    write_cases(os.path.join(FIXTURES, "qwen3_coder_calls.json"), header,
                labelled(REPLIES, False, random.Random(20261124)))
    write_cases(os.path.join(FIXTURES, "seed_oss_calls.json"), header,
                labelled(SEED_REPLIES, True, random.Random(20261128)))


if __name__ == "__main__":
    main()
