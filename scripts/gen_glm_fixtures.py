#!/usr/bin/env python3
"""Builds the fixtures for the glm45 and glm47 tool-call parsers (router/openai/glm_calls.h;
tests/router/openai/glm_calls_test.cc).

GLM-4.5 / 4.6 write a call as the name on the line after <tool_call>, then key and value tags,
each value bare text (the format their chat template writes, tests/router/jinja/fixtures):

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>

vLLM's `glm45` parser (glm4_moe_tool_parser.py) reads such a reply with three regular expressions:
each block `<tool_call>.*?</tool_call>`; in it `<tool_call>([^\\n]*)\\n(.*)</tool_call>` (a block
without a line break is skipped), the name being the first group stripped; and the arguments'
pairs `<arg_key>(.*?)</arg_key>\\s*<arg_value>(.*?)</arg_value>`. A key is stripped; a value whose
parameter the request's tool types "string" is kept as written; any other is stripped and read by
json.loads, else ast.literal_eval, else kept as text. The arguments are json.dumps(...,
ensure_ascii=False) of the pairs (a key given twice keeps its first place and its last value). A
reply with no call is content whole; otherwise the content is the text before the first
<tool_call>, none when that is only whitespace. The labels here are that algorithm run by Python's
own `re`, `json` and `ast`.

GLM-4.7 writes the same tags with nothing between them,
`<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>`, and
vLLM's `glm47` parser reads it with two patterns changed: the name is the block's text up to its
first <arg_key> (`<tool_call>(.*?)(<arg_key>.*?)?</tool_call>`: no line break needed), and a
key and its value may be separated by whitespace or by literal backslash-n pairs
(`(?:\\n|\s)*`).

Differences of headroom's own, applied here so the fixture states them (docs/router.md):
  - a block whose stripped name is empty is no call (vLLM's whole-reply parse calls a function
    named "", its streaming never starts one);
  - a value json.loads or ast.literal_eval makes must be JSON the router holds (router_json.fits:
    integers within int64, finite floats, string keys, no sets, bytes or complex numbers); a
    json.loads value that is not goes on to ast.literal_eval, a literal_eval value that is not
    leaves the text (vLLM: NaN written out, or the reply as content where json.dumps raises);
  - a tool whose properties, or whose property for the key, is not an object types nothing
    (vLLM's .get raises there and the reply is content).
Python's re is the reference for `\\s` (str.isspace's characters; vLLM's `regex` module leaves
out \\x1c-\\x1f, which the replies here do not hold).

Inputs: hand-written replies and random mutations of them (a character dropped, replaced or
inserted), which probe the edges of the tags and of the conversions.

Writes tests/router/openai/fixtures/glm45_calls.json and glm47_calls.json (the replies below and
GLM-4.7-style ones, read by glm47): {generator, tools, cases: [{text, content, calls: [{name,
arguments}], repeated_key, open_block}]}, the last two saying where a stream may differ from the
whole parse (a key given twice; a block cut by the reply's end). Standard library only;
deterministic (seeded).
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
            "either": {"type": ["string", "null"]},
            "untyped": {"description": "no type"},
            "odd": "not an object",
        }}}},
    {"type": "function", "function": {"name": "write_file", "description": "Writes a file",
                                      "parameters": {"type": "object", "properties": {
                                          "path": {"type": "string"},
                                          "content": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "ping", "description": None, "parameters": None}},
    # No "properties": nothing is typed string.
    {"type": "function", "function": {"name": "flat", "description": None, "parameters": {
        "count": {"type": "string"}}}},
]

# vLLM's patterns.
BLOCK = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)
DETAIL = re.compile(r"<tool_call>([^\n]*)\n(.*)</tool_call>", re.DOTALL)
PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
# vLLM's glm47 patterns (glm47_moe_tool_parser.py): the name ends at the first <arg_key>.
DETAIL_47 = re.compile(r"<tool_call>(.*?)(<arg_key>.*?)?</tool_call>", re.DOTALL)
PAIR_47 = re.compile(r"<arg_key>(.*?)</arg_key>(?:\\n|\s)*<arg_value>(.*?)</arg_value>", re.DOTALL)


def name_and_pairs(block, glm47):
    """(name, [(key, value)]) of a block's call, or None where the block is skipped."""
    detail = (DETAIL_47 if glm47 else DETAIL).search(block)
    if detail is None:
        return None
    args = detail.group(2)
    return detail.group(1).strip(), (PAIR_47 if glm47 else PAIR).findall(args) if args else []


def is_string_type(function, key):
    for tool in TOOLS:
        if tool["function"]["name"] != function:
            continue
        params = tool["function"]["parameters"]
        if params is None:
            return False
        properties = params.get("properties", {})
        entry = properties.get(key, {}) if isinstance(properties, dict) else {}
        return isinstance(entry, dict) and entry.get("type") == "string"
    return False


def deserialize(value):
    try:
        loaded = json.loads(value)
        if fits(loaded):
            return loaded
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        literal = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value
    return literal if fits(literal) else value


def has_repeated_key(text, glm47):
    """A call of the reply gives a key twice (the stream sends both; the whole parse keeps one)."""
    for block in BLOCK.findall(text):
        call = name_and_pairs(block, glm47)
        keys = [key.strip() for key, _ in call[1]] if call else []
        if len(keys) != len(set(keys)):
            return True
    return False


def expected(text, glm47):
    """(content, calls) as the router must return them for the whole reply `text`."""
    calls = []
    for block in BLOCK.findall(text):
        call = name_and_pairs(block, glm47)
        if call is None or not call[0]:
            continue
        name, pairs = call
        arguments = {}
        for key, value in pairs:
            key = key.strip()
            arguments[key] = value if is_string_type(name, key) else deserialize(value.strip())
        calls.append({"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)})
    if not calls:
        return text, []
    content = text[:text.find("<tool_call>")]
    return (content if content.strip() else None), calls


def call(name, *pairs, close=True, sep="\n", line="\n"):
    """A call as GLM-4.5's chat template writes it (GLM-4.7's: sep and line empty)."""
    out = f"<tool_call>{name}{line}"
    for key, value in pairs:
        out += f"<arg_key>{key}</arg_key>{sep}<arg_value>{value}</arg_value>{line}"
    return out + ("</tool_call>" if close else "")


def call47(name, *pairs, **kw):
    return call(name, *pairs, sep=kw.pop("sep", ""), line="", **kw)


REPLIES = [
    call("get_weather", ("city", "Paris")),
    "\n" + call("get_weather", ("city", "Paris"), ("days", "3"), ("metric", "true")),
    "I'll check.\n" + call("get_weather", ("city", "Oslo")),
    "  \n\t" + call("get_weather", ("city", "Oslo")),
    call("get_weather", ("city", "Paris")) + "\n" + call("write_file", ("path", "a.txt"),
                                                         ("content", "line 1\nline 2\n")),
    call("write_file", ("path", " x.py "), ("content", "def f():\n    return '<b>' \\ \"q\"\n\n")),
    call("get_weather", ("days", " 7 "), ("temp", "21.5")),
    call("get_weather", ("days", "007"), ("temp", "1e3")),
    call("get_weather", ("days", "3.0"), ("temp", "abc")),
    call("get_weather", ("days", "99999999999999999999999"), ("temp", "1e400")),
    call("get_weather", ("temp", "NaN"), ("days", "-Infinity")),
    call("get_weather", ("metric", "True"), ("days", "None")),
    call("get_weather", ("metric", "yes"), ("days", "null")),
    call("get_weather", ("tags", '["a", "b"]'), ("opts", '{"x": 1, "y": [true, null]}')),
    call("get_weather", ("tags", "['a', 'b']"), ("opts", "{'x': (1, 2)}")),
    call("get_weather", ("tags", "not json"), ("opts", '{"a": 1, "a": 2}')),
    call("get_weather", ("tags", "[99999999999999999999]"), ("opts", "{1, 2}")),
    call("get_weather", ("tags", '"just a string"'), ("opts", "5")),
    call("get_weather", ("either", "5"), ("untyped", "'quoted'"), ("odd", "[1]")),
    call("get_weather", ("city", "5"), ("city", "null")),
    call("get_weather", ("unknown", "7"), ("city", "x")),
    call("get_weather", ("city", "a"), ("days", "1"), ("city", "b")),
    call("get_weather", ("city", "é ☃ 😀 \"quotes\" and \\ backslash"), ("days", "2")),
    call("get_weather", ("city", "  padded  "), ("days", "\n 4 \n")),
    call("get_weather", (" city ", "Rome"), ("\tdays", "5")),
    call("get_weather", ("city", "Rome"), ("days", "5"), sep=""),
    call("get_weather", ("city", "Rome"), ("days", "5"), sep="\n \t\n"),
    call("get_weather", ("city", "Rome"), ("days", "5"), sep="\u3000\u00a0"),
    call("get_weather", ("city", "Rome"), sep=" x "),
    call("ping"),
    call("ping", ("x", "1"), ("y", "two")),
    call("not_a_tool", ("a", "1"), ("b", "[1]"), ("c", "word")),
    call("flat", ("count", "12")),
    call("  get_weather  ", ("city", "Lyon")),
    call("", ("city", "Lyon")),
    call("get_weather", ("city", "Paris"), close=False),
    call("get_weather", ("city", "Paris")) + "\n" + call("ping", close=False),
    "<tool_call>get_weather</tool_call>",
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
    "<tool_call>get_weather\n</tool_call>",
    "<tool_call>\nget_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris\n</tool_call>",
    "<tool_call>get_weather\n<arg_key>city\n<arg_value>Paris</arg_value>\n</tool_call>",
    "<tool_call>get_weather\n<arg_key>a</arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</tool_call>"
    "<tool_call>ping\n<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>",
    "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value><arg_value>P</arg_value>\n</tool_call>",
    "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>a</arg_value>junk<arg_key>days"
    "</arg_key><arg_value>2</arg_value>\n</tool_call> trailing text",
    "<tool_call><tool_call>ping\n</tool_call>",
    "<tool_call>a<tool_call>ping\n<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>",
    "<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_value><html>\n</html></arg_value>\n"
    "</tool_call>",
    "<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_value>\n\n</arg_value>\n</tool_call>",
    "Text <tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "</tool_call> between <tool_call>ping\n</tool_call> after",
    "Plain text, no calls at all.",
    "<tool_call>",
    "The tag <tool_call> alone.",
    "</tool_call><tool_call>ping\n</tool_call>",
]

# GLM-4.7's calls, and the literal backslash-n its parser also skips between a key and a value.
REPLIES_47 = [
    call47("get_weather", ("city", "Paris")),
    "</think>" + call47("get_weather", ("city", "Paris"), ("days", "3"), ("metric", "true")),
    "I'll check." + call47("get_weather", ("city", "Oslo")) + call47("ping"),
    call47("write_file", ("path", "a.txt"), ("content", "line 1\nline 2\n")),
    call47("get_weather", ("city", "Rome"), ("days", "5"), sep="\\n"),
    call47("get_weather", ("city", "Rome"), ("days", "5"), sep="\\n \\n\n"),
    call47("get_weather", ("city", "Rome"), sep="\\"),
    call47("get_weather", ("city", "Rome"), sep="\\x"),
    call47("get_weather", ("city", "Rome"), sep="n"),
    call47(" get_weather\n", ("city", "Rome")),
    call47("get weather", ("days", "[1, 2]")),
    "<tool_call>ping</tool_call>",
    "<tool_call></tool_call>",
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>",
    "<tool_call>a<arg_key>x</arg_key><arg_key>y</arg_key><arg_value>1</arg_value></tool_call>",
]

ALPHABET = "<>/\n _tolcaufnrimegkyv0123.,[]{}\"'\\-+eTN#"


def labelled(replies, glm47, seed):
    rng = random.Random(seed)
    cases = []
    for text in text_mutation.with_mutations(rng, replies, ALPHABET, per_text=12):
        content, calls = expected(text, glm47)
        cases.append({"text": text, "content": content, "calls": calls,
                      "repeated_key": has_repeated_key(text, glm47),
                      # a <tool_call> after the last </tool_call>: the stream may have started a
                      # call the whole parse leaves out
                      "open_block": text.rfind("<tool_call>") > text.rfind("</tool_call>")})
    return cases


def main():
    header = {"generator": f"scripts/gen_glm_fixtures.py, Python {platform.python_version()}",
              "tools": TOOLS}
    write_cases(os.path.join(FIXTURES, "glm45_calls.json"), header,
                labelled(REPLIES, False, 20261126))
    write_cases(os.path.join(FIXTURES, "glm47_calls.json"), header,
                labelled(REPLIES_47 + REPLIES, True, 20261127))


if __name__ == "__main__":
    main()
