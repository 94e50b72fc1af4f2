#!/usr/bin/env python3
"""Builds the structural-tag fixtures for vLLM's response_format {"type": "structural_tag",
"structures": [{"begin", "schema", "end"}], "triggers": [...]} (structured_outputs.structural_tag),
labelled by the real xgrammar library (vLLM's default backend compiles it with
Grammar.from_structural_tag), so that headroom's StructuralTagMatcher is checked against xgrammar
rather than against itself.

For each tag below (vLLM's docs example; several tools under one trigger; Qwen's and Llama's
tool-call shapes; two triggers with an empty end after a number, where the value may go on or the
free text begin; begins shared by two structures and a begin that starts another; a trigger whose
bytes repeat, for the automaton's fallbacks; non-ASCII triggers and values; xgrammar's newer
"format" form, triggered_tags, alone and with at_least_one, stop_after_first and both), inputs as
bytes: the
tag's hand-picked texts, random texts made of free text and tags (each structure's sample values,
valid and not), prefixes of them cut at a random byte, and random one-character edits. Each input
is labelled with:
  complete: xgrammar takes the whole input (GrammarMatcher.accept_string then is_completed),
  viable:   the length in bytes of the longest prefix xgrammar still accepts (fed one byte at a
            time, cross-checked with fresh matchers).
Texts where headroom's JSON reading differs from xgrammar's by design are not generated:
properties out of the schema's order (xgrammar takes them only in order; headroom in any order,
so a required property missing before another is refused later, at the closing brace)
and more than 16 whitespace bytes in a row (headroom's bound). Also: tags xgrammar refuses, and
token masks (GrammarMatcher.fill_next_token_bitmask after a prefix, stop and special tokens left
out, as gen_grammar_fixtures.py does) for two of the tokenizer fixtures.

Writes tests/worker/fixtures/structural_tag.json: {generator, xgrammar, tags: [{name, tag, cases:
[{hex, text?, complete, viable}]}], refused: [{name, tag, error}], masks: [{tokenizer, name,
prefix_hex, prefix_text?, allowed, can_end}]}, with `tag` the JSON text vLLM would hand
xgrammar. Deterministic (seeded).

Needs xgrammar 0.2.8 next to the fixtures venv, as gen_grammar_fixtures.py does. Run from the
repository root:
  PYTHONPATH=build/pydeps-xgr build/venv-fixtures/bin/python \
      scripts/gen_structural_tag_fixtures.py
"""
import json
import os
import random
import re
from importlib.metadata import version

import transformers
import xgrammar as xgr

import text_mutation

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "worker", "fixtures", "structural_tag.json")
TOKENIZERS = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures")

MAX_CASES = 60

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city"]}
TIME = {"type": "object",
        "properties": {"zone": {"type": "string", "pattern": "^[A-Z][a-z]+/[A-Z][a-z]+$"},
                       "hour24": {"type": "boolean"}},
        "required": ["zone"], "additionalProperties": False}
SEARCH = {"type": "object",
          "properties": {"query": {"type": "string", "maxLength": 12},
                         "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
          "required": ["query"]}
NUMBER = {"type": "number"}
NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}


def structure(begin, schema, end, values):
    return {"begin": begin, "schema": schema, "end": end, "values": values}


# (name, structures with sample values (text after begin, before end), triggers, free texts,
# hand-picked inputs[, the newer form's flags: the tag is then written as xgrammar's
# {"format": {"type": "triggered_tags", ...}}])
TAGS = [
    ("vllm_docs_weather",
     [structure("<function=get_weather>", CITY, "</function>",
                ['{"city": "Boston"}', '{"city":"New York City"}', '{ "city" : "SF" }',
                 '{"city": "a\\"b\\u00e9"}', '{"city": 1}', '{"town": "x"}', ' {"city":"x"}',
                 '{"city":"x"} ', '{}', '{"city":"x",}'])],
     ["<function="],
     ["", "The weather: ", "<", "<func", "<function", "\n", "é中", "function=", "Sure. "],
     ['The weather is <function=get_weather>{"city": "Boston"}</function> there.',
      "<function=get_time>", "hello", "abc<func", "<<function=get_weather>{\"city\":\"B\"}</function>",
      "<function=get_weather>{\"city\":\"B\"}</function><function=get_weather>{\"city\":\"C\"}"
      "</function>", "<function=get_weather>{\"city\":\"B\"}</function", "",
      '<function=get_weather> {"city":"B"}</function>', '<function=get_weather>{"city":"B"} </function>',
      '<function=get_weather>\n{"city":"B"}</function>']),
    ("tools_share_a_trigger",
     [structure("<function=get_weather>", WEATHER, "</function>",
                ['{"city": "Paris", "unit": "celsius"}', '{"city":"Oslo"}',
                 '{"city":"Rome","unit":"kelvin"}', '{"city":"Rome","unit":"fahrenheit"}']),
      structure("<function=get_time>", TIME, "</function>",
                ['{"zone": "Europe/Paris"}', '{"zone":"America/New_York","hour24":true}',
                 '{"zone":"europe/paris"}', '{"zone":"Asia/Tokyo","hour24":false}',
                 '{"zone":"Asia/Tokyo","extra":1}'])],
     ["<function="],
     ["", "Let me check. ", "<function", "=", " and "],
     ["<function=get_", "<function=get_w", "<function=get_x",
      '<function=get_time>{"zone":"Europe/Paris"}</function>',
      '<function=get_weather>{"zone":"Europe/Paris"}</function>']),
    ("qwen_tool_call",
     [structure('<tool_call>\n{"name": "search", "arguments": ', SEARCH, "}\n</tool_call>",
                ['{"query": "kv cache"}', '{"query": "x", "limit": 5}', '{"query":"y","limit":51}',
                 '{"query":"y","limit":0}', '{"query":"0123456789abc"}', '{"query":"ok","limit":50}',
                 '{"query": 5}'])],
     ["<tool_call>"],
     ["", "I'll search.\n", "<tool", "\n\n", "<tool_call"],
     ['<tool_call>\n{"name": "search", "arguments": {"query": "a"}}\n</tool_call>',
      '<tool_call>\n{"name": "other", "arguments": {}}\n</tool_call>']),
    ("llama_json_call",
     [structure('{"name": "lookup", "parameters": ', NAMES, "}",
                ['["ada"]', '["ada", "grace", "linus"]', '[]', '["a","b","c","d"]', '[1]'])],
     ['{"name": '],
     ["", "ok ", "{", '{"name"', '{"name": "x"}'],
     ['{"name": "lookup", "parameters": ["x"]}', '{"name": "other"}']),
    ("number_then_free_text",
     [structure("[[n=", NUMBER, "", ["12", "-0.5", "1e5", "1e", "3.", "007", "-", "42"]),
      structure("<a>", CITY, "</a>", ['{"city":"x"}', '{"city":"y"}'])],
     ["[[", "<a>"],
     ["", "x", "1", "e5", "ex", " ", "[", "<", "]]"],
     ["[[n=1ex", "[[n=1e5x", "[[n=12", "[[n=-", "[[n=1e", "[[n=1e+", "[[n=0x", "[[x"]),
    ("shared_and_prefix_begins",
     [structure("<f=a>", CITY, "</f>", ['{"city":"q"}']),
      structure("<f=a>", {"type": "string", "maxLength": 3}, "</f>", ['"abc"', '"abcd"']),
      structure("<f=ab>", {"type": "integer"}, ";", ["7", "-3", "x"]),
      structure("<f=", {"type": "boolean"}, "!", ["true", "false"])],
     ["<f="],
     ["", "z", "<f", "<f=a"],
     ['<f=a>{"city":"q"}</f>', '<f=a>"s"</f>', '<f=ab>7;', "<f=true!", "<f=a>7;",
      '<f=ab>"s"</f>']),
    ("repeating_trigger",
     [structure("aab:", {"enum": ["x", 1, None]}, ".", ['"x"', "1", "null", '"y"', "2"])],
     ["aab"],
     ["", "a", "aa", "aaa", "ab", "b", "aaab"],
     ["aaab:1.", "aaaab:null.", "aabaab", "aa", 'aab:"x".aab:1.']),
    ("non_ascii",
     [structure("<｜tool▁call▁begin｜>名前", {"type": "object",
                                             "properties": {"名": {"type": "string"}}},
                "<｜tool▁call▁end｜>", ['{"名": "東京"}', '{}', '{"名":"é"}', '{"x":1}'])],
     ["<｜tool▁call▁begin｜>"],
     ["", "こんにちは", "<｜", "<｜tool", "é"],
     ["<｜tool▁call▁begin｜>名前{}<｜tool▁call▁end｜>", "<｜tool▁call▁begin｜>名"]),
    # xgrammar's newer form: the same reading, then each flag and both.
    ("format_triggered_tags",
     [structure("<function=get_weather>", CITY, "</function>",
                ['{"city": "Boston"}', '{"city": 1}', ' {"city":"x"}'])],
     ["<function="],
     ["", "Hi ", "<func", "\n"],
     ['x<function=get_weather>{"city":"B"}</function>y', "abc<function="], {}),
    ("format_at_least_one",
     [structure("<function=get_weather>", WEATHER, "</function>",
                ['{"city": "Paris", "unit": "celsius"}', '{"city":"Oslo"}', '{"city":"Rome"}']),
      structure("<function=get_time>", TIME, "</function>",
                ['{"zone": "Europe/Paris"}', '{"zone":"x"}', '{"zone":"Asia/Tokyo"}'])],
     ["<function="],
     ["", "", "Sure. ", " "],
     ["", "x", '<function=get_time>{"zone":"Asia/Tokyo"}</function>',
      '<function=get_time>{"zone":"Asia/Tokyo"}</function> then <function=get_weather>'
      '{"city":"Rome"}</function>', "<function=get_weather>"], {"at_least_one": True}),
    ("format_stop_after_first",
     [structure("[[n=", NUMBER, "", ["12", "-0.5", "1e5", "1e", "3."]),
      structure("<a>", CITY, "</a>", ['{"city":"x"}', '{"city":2}'])],
     ["[[", "<a>"],
     ["", "x", "1", " ", "[", "<"],
     ["[[n=12", "[[n=12x", "ab<a>{\"city\":\"x\"}</a>", "<a>{\"city\":\"x\"}</a>z",
      "[[n=1e5", "[[n=1e"], {"stop_after_first": True}),
    ("format_both_flags",
     [structure("<tool_call>", SEARCH, "</tool_call>", ['{"query": "kv"}', '{"query":"x","limit":3}',
                                                         '{"query": 5}'])],
     ["<tool_call>"],
     ["", "", "ok "],
     ['<tool_call>{"query":"a"}</tool_call>', '<tool_call>{"query":"a"}</tool_call>x', "x"],
     {"at_least_one": True, "stop_after_first": True}),
]

# (name, structures, triggers): what xgrammar refuses.
REFUSED = [
    ("begin_without_trigger", [{"begin": "<x>", "schema": CITY, "end": "</x>"}], ["<f="]),
    ("empty_trigger", [{"begin": "<f=a>", "schema": CITY, "end": "</f>"}], [""]),
    ("no_structures", [], ["<f="]),
    ("no_triggers", [{"begin": "<f=a>", "schema": CITY, "end": "</f>"}], []),
    ("schema_not_an_object", [{"begin": "<f=a>", "schema": 3, "end": "</f>"}], ["<f="]),
]

MASK_TOKENIZERS = ["gpt2", "llama3"]
# (tag name, prefixes)
MASKS = [
    ("vllm_docs_weather", [b"", b"<function=", b'<function=get_weather>{"city": "Bo',
                           b'<function=get_weather>{"city": "Boston"}',
                           b'<function=get_weather>{"city": "Boston"}</function>']),
    ("number_then_free_text", [b"[[n=1", b"[[n=1e", b"[["]),
    ("shared_and_prefix_begins", [b"<f=", b"<f=a"]),
    ("format_at_least_one", [b"", b"<function=get_time>{\"zone\":\"Asia/Tokyo\"}</function>"]),
    ("format_stop_after_first", [b"[[n=12", b"<a>{\"city\":\"x\"}</a>"]),
]


def tag_json(structures, triggers, form=None):
    """The tag as vLLM hands it to xgrammar (response_format's structural_tag, dumped): the older
    form, or with `form` (the flags) the newer one."""
    if form is None:
        return json.dumps({"type": "structural_tag",
                           "structures": [{"begin": s["begin"], "schema": s["schema"],
                                           "end": s["end"]} for s in structures],
                           "triggers": triggers}, ensure_ascii=False)
    tags = [{"type": "tag", "begin": s["begin"],
             "content": {"type": "json_schema", "json_schema": s["schema"]}, "end": s["end"]}
            for s in structures]
    return json.dumps({"type": "structural_tag",
                       "format": {"type": "triggered_tags", "triggers": triggers, "tags": tags,
                                  **form}}, ensure_ascii=False)


def xgrammar_tag(structures, triggers, form=None):
    if form is not None:
        return xgr.Grammar.from_structural_tag(tag_json(structures, triggers, form))
    items = [xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"])
             for s in structures]
    return xgr.Grammar.from_structural_tag(items, triggers)


EMPTY_COMPILER = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def label(compiled, data):
    """(complete, viable) of `data` under the compiled tag."""
    matcher = xgr.GrammarMatcher(compiled)
    viable = 0
    while viable < len(data) and matcher.accept_string(data[viable:viable + 1]):
        viable += 1
    assert xgr.GrammarMatcher(compiled).accept_string(data[:viable]), data
    if viable < len(data):
        assert not xgr.GrammarMatcher(compiled).accept_string(data[:viable + 1]), data
    whole = xgr.GrammarMatcher(compiled)
    complete = whole.accept_string(data) and whole.is_completed()
    assert complete == (viable == len(data) and matcher.is_completed()), data
    return complete, viable


def random_text(rng, structures, free, form):
    """Free text and structures; under the newer form's flags, mostly what they allow (a
    structure first, nothing after the first one)."""
    flags = form or {}
    parts = []
    for i in range(1 if flags.get("stop_after_first") else rng.randint(1, 3)):
        if not (i == 0 and flags.get("at_least_one") and rng.random() < 0.8):
            parts.append(rng.choice(free))
        if rng.random() < 0.8:
            s = rng.choice(structures)
            parts.append(s["begin"] + rng.choice(s["values"]) + s["end"])
    if rng.random() < (0.1 if flags.get("stop_after_first") else 0.5):
        parts.append(rng.choice(free))
    return "".join(parts)


# Headroom reads JSON inside a tag as its json_schema matcher does: at most 16 whitespace bytes
# in a row; xgrammar takes any number. Such texts are left out.
LONG_WHITESPACE = re.compile(rb"[ \t\n\r]{17,}")


def text_fields(key, data):
    try:
        return {key: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {}


def build_tags(rng):
    tags = []
    for name, structures, triggers, free, hand, *form in TAGS:
        form = form[0] if form else None
        compiled = EMPTY_COMPILER.compile_grammar(xgrammar_tag(structures, triggers, form))
        inputs = {}
        for text in hand:
            inputs[text.encode("utf-8")] = None
        made = [random_text(rng, structures, free, form).encode("utf-8") for _ in range(16)]
        for t in made:
            inputs[t] = None
        for _ in range(8):
            t = rng.choice(made)
            if len(t) > 1:
                inputs[t[:rng.randint(1, len(t) - 1)]] = None
        units = {}
        for t in list(inputs):
            for ch in t.decode("utf-8", errors="ignore"):
                units[ch] = None
        units = list(units) + [" ", "é", "\x00"]
        attempts = 0
        while len(inputs) < MAX_CASES and attempts < 400:
            attempts += 1
            text = rng.choice(made).decode("utf-8")
            inputs[text_mutation.mutate(rng, text, units).encode("utf-8")] = None
        cases = []
        for data in list(inputs)[:MAX_CASES]:
            if LONG_WHITESPACE.search(data):
                continue
            complete, viable = label(compiled, data)
            cases.append({"hex": data.hex(), **text_fields("text", data), "complete": complete,
                          "viable": viable})
        tags.append({"name": name, "tag": tag_json(structures, triggers, form), "cases": cases})
        print(f"tag {name}: {len(cases)} cases, {sum(c['complete'] for c in cases)} complete")
    return tags


def build_refused():
    refused = []
    for name, structures, triggers in REFUSED:
        try:
            items = [xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]),
                                           end=s["end"]) for s in structures]
            EMPTY_COMPILER.compile_grammar(xgr.Grammar.from_structural_tag(items, triggers))
        except Exception as e:  # xgrammar raises RuntimeError, or pydantic's ValidationError
            message = re.sub(r"^\[[0-9:]+\] \S+:\d+: ", "", str(e)).strip().splitlines()[0]
            refused.append({"name": name, "tag": json.dumps(
                {"structures": structures, "triggers": triggers}), "error": message})
            continue
        raise AssertionError(f"xgrammar accepts {name}")
    print(f"refused: {len(refused)}")
    return refused


def build_masks():
    by_name = {t[0]: (t[1], t[2], t[5] if len(t) > 5 else None) for t in TAGS}
    masks = []
    for tok_name in MASK_TOKENIZERS:
        tok = transformers.AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, tok_name))
        info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
        stop = sorted(info.stop_token_ids)
        excluded = set(stop) | set(info.special_token_ids) | set(tok.all_special_ids) | {
            i for i, added in tok.added_tokens_decoder.items() if added.special}
        compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        for name, prefixes in MASKS:
            compiled = compiler.compile_grammar(xgrammar_tag(*by_name[name]))
            for prefix in prefixes:
                matcher = xgr.GrammarMatcher(compiled)
                assert matcher.accept_string(prefix), (name, prefix)
                bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
                matcher.fill_next_token_bitmask(bitmask)
                rejected = set(xgr.testing._get_masked_tokens_from_bitmask(bitmask,
                                                                            info.vocab_size))
                can_end = any(i not in rejected for i in stop)
                assert can_end == matcher.is_completed(), (tok_name, name, prefix)
                masks.append({"tokenizer": tok_name, "name": name, "prefix_hex": prefix.hex(),
                              **text_fields("prefix_text", prefix),
                              "allowed": [i for i in range(info.vocab_size)
                                          if i not in rejected and i not in excluded],
                              "can_end": can_end})
    print(f"masks: {len(masks)}")
    return masks


def compact_int_lists(text):
    """json.dumps(indent=1) puts every list item on its own line; keep integer lists on one."""
    return re.sub(r"\[\n\s*(-?\d+(?:,\n\s*-?\d+)*)\n\s*\]",
                  lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)


def main():
    rng = random.Random(20261126)
    doc = {"generator": "scripts/gen_structural_tag_fixtures.py", "xgrammar": version("xgrammar"),
           "tags": build_tags(rng), "refused": build_refused(), "masks": build_masks()}
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(compact_int_lists(json.dumps(doc, ensure_ascii=False, indent=1)))
        f.write("\n")


if __name__ == "__main__":
    main()
